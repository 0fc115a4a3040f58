// SPDX-License-Identifier: GPL-2.0
/* A bounded set of 64-bit values (u64set.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "u64set.h"

static size_t slot_of(uint64_t v, size_t cap)
{
	return (size_t)((v * 0x9e3779b97f4a7c15ULL) >> 17) & (cap - 1);
}

static int grow(struct u64set *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64, i, k;
	uint64_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < s->cap; i++) {
		if (!s->slots[i])
			continue;
		for (k = slot_of(s->slots[i], cap); slots[k]; k = (k + 1) & (cap - 1))
			;
		slots[k] = s->slots[i];
	}
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

int u64set__add(struct u64set *s, uint64_t v)
{
	size_t k;

	v = v ? v : 1;
	if (s->cap) {
		for (k = slot_of(v, s->cap); s->slots[k]; k = (k + 1) & (s->cap - 1))
			if (s->slots[k] == v)
				return 0;
	}
	if (s->max && s->len >= s->max) {
		s->full = true;
		return 0;
	}
	if ((s->len + 1) * 2 > s->cap && grow(s))
		return -ENOMEM;
	for (k = slot_of(v, s->cap); s->slots[k]; k = (k + 1) & (s->cap - 1))
		;
	s->slots[k] = v;
	s->len++;
	return 1;
}

void u64set__free(struct u64set *s)
{
	free(s->slots);
	s->slots = NULL;
	s->cap = s->len = 0;
	s->full = false;
}
