/* SPDX-License-Identifier: GPL-2.0 */
/* A set of non-zero u64 values (addresses), open addressing, iterable. */
#ifndef OFFCPU_U64SET_H
#define OFFCPU_U64SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64set {
	uint64_t *slots; /* 0 is empty, 1 a removed one */
	size_t cap, len, used; /* used: len and the removed ones */
};

/* Add @v (> 1). Returns 1 if added, 0 if present, -ENOMEM. */
int u64set__add(struct u64set *s, uint64_t v);
bool u64set__has(const struct u64set *s, uint64_t v);
/* Remove @v; false when it was not there. */
bool u64set__remove(struct u64set *s, uint64_t v);
/* The values, in no order: slot @i (0 <= i < cap) holds one where it is > 1. */
static inline bool u64set__at(const struct u64set *s, size_t i, uint64_t *v)
{
	*v = s->slots[i];
	return *v > 1;
}
/* Bytes it holds. */
static inline size_t u64set__bytes(const struct u64set *s)
{
	return s->cap * sizeof(*s->slots);
}
void u64set__free(struct u64set *s);

#endif
