/* SPDX-License-Identifier: GPL-2.0 */
/* A set of non-negative ints (pids), open addressing. */
#ifndef OFFCPU_INTSET_H
#define OFFCPU_INTSET_H

#include <stdbool.h>
#include <stddef.h>

struct intset {
	int *slots; /* -1 is empty */
	size_t cap, len;
};

/* Add @v (>= 0). Returns 1 if added, 0 if present, -ENOMEM. */
int intset__add(struct intset *s, int v);
bool intset__has(const struct intset *s, int v);
void intset__free(struct intset *s);

#endif
