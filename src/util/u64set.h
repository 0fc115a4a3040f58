/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A set of u64 values above 1 (addresses, hashes), open addressing,
 * iterable, with removal. With @max set, it holds at most @max values: past
 * that an addition is refused (full), so that counting distinct things costs
 * bounded memory (11 to 22 bytes a value).
 */
#ifndef OFFCPU_U64SET_H
#define OFFCPU_U64SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64set {
	uint64_t *slots; /* 0 is empty, 1 a removed one */
	size_t cap, len, used; /* used: len and the removed ones */
	size_t max; /* 0: no bound */
	bool full; /* an addition was refused: len is a lower bound */
};

/* Add @v (> 1). Returns 1 if added, 0 if present or refused (full), -EINVAL, -ENOMEM. */
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
