// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "batch.h"

int batch__push(struct batch *b, const struct perf_event_header *rec, uint64_t time, int kind)
{
	if (b->len + rec->size > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 1 << 20;
		char *p;

		while (cap < b->len + rec->size)
			cap *= 2;
		p = realloc(b->buf, cap);
		if (!p)
			return -ENOMEM;
		b->buf = p;
		b->cap = cap;
	}
	if (b->nr == b->cap_refs) {
		size_t cap = b->cap_refs ? b->cap_refs * 2 : 4096;
		struct batch_ref *p = realloc(b->refs, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		b->refs = p;
		b->cap_refs = cap;
	}
	memcpy(b->buf + b->len, rec, rec->size);
	b->refs[b->nr].time = time;
	b->refs[b->nr].off = b->len;
	b->refs[b->nr].kind = kind;
	b->nr++;
	b->len += rec->size;
	return 0;
}

static int cmp_ref(const void *a, const void *b)
{
	const struct batch_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->off < y->off ? -1 : (x->off > y->off);
}

void batch__sort(struct batch *b)
{
	qsort(b->refs, b->nr, sizeof(*b->refs), cmp_ref);
}

const struct perf_event_header *batch__get(const struct batch *b, size_t i, int *kind)
{
	*kind = b->refs[i].kind;
	return (const void *)(b->buf + b->refs[i].off);
}

void batch__clear(struct batch *b)
{
	b->len = 0;
	b->nr = 0;
}

void batch__free(struct batch *b)
{
	free(b->buf);
	free(b->refs);
	memset(b, 0, sizeof(*b));
}
