/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A set of 64-bit values (hashes), open addressing, that holds at most @max
 * of them: past that an addition is refused (full), so that counting
 * distinct things costs bounded memory (16 bytes a value at most).
 */
#ifndef OFFCPU_U64SET_H
#define OFFCPU_U64SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct u64set {
	uint64_t *slots; /* 0 is empty (a value 0 is kept as 1) */
	size_t cap, len, max;
	bool full; /* an addition was refused: len is a lower bound */
};

/* Add @v. Returns 1 if added, 0 if present or refused (full), -ENOMEM. */
int u64set__add(struct u64set *s, uint64_t v);
void u64set__free(struct u64set *s);

#endif
