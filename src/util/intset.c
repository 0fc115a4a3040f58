// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "intset.h"

static size_t slot_of(int v, size_t cap)
{
	return ((unsigned int)v * 2654435761u) & (cap - 1);
}

static int grow(struct intset *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64, i;
	int *slots = malloc(cap * sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	memset(slots, 0xff, cap * sizeof(*slots));
	for (i = 0; i < s->cap; i++) {
		size_t k;

		if (s->slots[i] < 0)
			continue;
		for (k = slot_of(s->slots[i], cap); slots[k] >= 0; k = (k + 1) & (cap - 1))
			;
		slots[k] = s->slots[i];
	}
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

int intset__add(struct intset *s, int v)
{
	size_t k;

	if (v < 0)
		return -EINVAL;
	if ((s->len + 1) * 2 > s->cap && grow(s))
		return -ENOMEM;
	for (k = slot_of(v, s->cap); s->slots[k] >= 0; k = (k + 1) & (s->cap - 1))
		if (s->slots[k] == v)
			return 0;
	s->slots[k] = v;
	s->len++;
	return 1;
}

bool intset__has(const struct intset *s, int v)
{
	size_t k;

	if (!s->cap || v < 0)
		return false;
	for (k = slot_of(v, s->cap); s->slots[k] >= 0; k = (k + 1) & (s->cap - 1))
		if (s->slots[k] == v)
			return true;
	return false;
}

void intset__free(struct intset *s)
{
	free(s->slots);
	memset(s, 0, sizeof(*s));
}
