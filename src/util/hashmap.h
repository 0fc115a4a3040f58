/* SPDX-License-Identifier: GPL-2.0 */
/* A hash map from byte-string keys to a u64 value (often an index), open addressing. */
#ifndef OFFCPU_HASHMAP_H
#define OFFCPU_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap_slot {
	uint64_t hash; /* 0: empty */
	void *key; /* owned copy */
	size_t key_len;
	uint64_t value;
};

struct hashmap {
	struct hashmap_slot *slots;
	size_t cap, len;
};

uint64_t hash_bytes(const void *p, size_t n);
/* Find @key; returns a pointer to its value or NULL. */
uint64_t *hashmap__find(const struct hashmap *m, const void *key, size_t len);
/* Find or insert @key (value 0 when new, *created set). NULL on ENOMEM. */
uint64_t *hashmap__upsert(struct hashmap *m, const void *key, size_t len, int *created);
/* Remove @key; false when it was not there. */
bool hashmap__remove(struct hashmap *m, const void *key, size_t len);
void hashmap__free(struct hashmap *m);

#endif
