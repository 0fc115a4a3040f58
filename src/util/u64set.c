// SPDX-License-Identifier: GPL-2.0
/* A set of u64 values above 1, bounded if asked (u64set.h). */
#include <errno.h>
#include <stdlib.h>
#include "u64set.h"

static size_t slot_of(uint64_t v, size_t cap)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return (size_t)v & (cap - 1);
}

static int grow(struct u64set *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64, i;
	uint64_t *old = s->slots, *n;

	/* as many removed as live: the same size, rebuilt */
	if (s->len < s->used / 2 && s->cap)
		cap = s->cap;
	n = calloc(cap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (i = 0; i < s->cap; i++) {
		size_t k;

		if (old[i] <= 1)
			continue;
		for (k = slot_of(old[i], cap); n[k]; k = (k + 1) & (cap - 1))
			;
		n[k] = old[i];
	}
	free(old);
	s->slots = n;
	s->cap = cap;
	s->used = s->len;
	return 0;
}

bool u64set__has(const struct u64set *s, uint64_t v)
{
	size_t k;

	if (!s->cap || v <= 1)
		return false;
	for (k = slot_of(v, s->cap); s->slots[k]; k = (k + 1) & (s->cap - 1))
		if (s->slots[k] == v)
			return true;
	return false;
}

int u64set__add(struct u64set *s, uint64_t v)
{
	size_t k;

	if (v <= 1)
		return -EINVAL;
	if (u64set__has(s, v))
		return 0;
	if (s->max && s->len >= s->max) {
		s->full = true;
		return 0;
	}
	if ((s->used + 1) * 4 > s->cap * 3 && grow(s))
		return -ENOMEM;
	for (k = slot_of(v, s->cap); s->slots[k] > 1; k = (k + 1) & (s->cap - 1))
		;
	if (!s->slots[k])
		s->used++;
	s->slots[k] = v;
	s->len++;
	return 1;
}

bool u64set__remove(struct u64set *s, uint64_t v)
{
	size_t k;

	if (!s->cap || v <= 1)
		return false;
	for (k = slot_of(v, s->cap); s->slots[k]; k = (k + 1) & (s->cap - 1))
		if (s->slots[k] == v) {
			s->slots[k] = 1;
			s->len--;
			return true;
		}
	return false;
}

void u64set__free(struct u64set *s)
{
	free(s->slots);
	s->slots = NULL;
	s->cap = s->len = s->used = 0;
	s->full = false;
}
