// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "queue.h"

int perf_queue__push(struct perf_queue *q, const struct perf_event_header *rec, uint64_t time,
		     int kind)
{
	if (q->len + rec->size > q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 1 << 20;
		char *p;

		while (cap < q->len + rec->size)
			cap *= 2;
		p = realloc(q->buf, cap);
		if (!p)
			return -ENOMEM;
		q->buf = p;
		q->cap = cap;
	}
	if (q->nr == q->cap_refs) {
		size_t cap = q->cap_refs ? q->cap_refs * 2 : 4096;
		struct perf_queue_ref *p = realloc(q->refs, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		q->refs = p;
		q->cap_refs = cap;
	}
	memcpy(q->buf + q->len, rec, rec->size);
	q->refs[q->nr].time = time;
	q->refs[q->nr].off = q->len;
	q->refs[q->nr].kind = kind;
	q->nr++;
	q->len += rec->size;
	return 0;
}

static int cmp_ref(const void *a, const void *b)
{
	const struct perf_queue_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->off < y->off ? -1 : (x->off > y->off);
}

void perf_queue__sort(struct perf_queue *q)
{
	qsort(q->refs, q->nr, sizeof(*q->refs), cmp_ref);
}

const struct perf_event_header *perf_queue__get(const struct perf_queue *q, size_t i, int *kind)
{
	*kind = q->refs[i].kind;
	return (const void *)(q->buf + q->refs[i].off);
}

void perf_queue__clear(struct perf_queue *q)
{
	q->len = 0;
	q->nr = 0;
}

void perf_queue__free(struct perf_queue *q)
{
	free(q->buf);
	free(q->refs);
	memset(q, 0, sizeof(*q));
}
