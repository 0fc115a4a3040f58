// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "queue.h"

/* Records start 8-aligned in the buffer, as the reader hands them out. */
#define SLOT(size) (((size_t)(size) + 7) & ~(size_t)7)

int perf_queue__push(struct perf_queue *q, const struct perf_event_header *rec, uint64_t time,
		     int kind)
{
	size_t need = q->len + SLOT(rec->size);

	if (rec->size < sizeof(*rec))
		return -EINVAL;
	if (need > q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 1 << 20;
		char *p;

		while (cap < need)
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
	q->refs[q->nr].aux[0] = q->refs[q->nr].aux[1] = 0;
	q->nr++;
	q->len = need;
	return 0;
}

void perf_queue__set_aux(struct perf_queue *q, uint64_t a, uint64_t b)
{
	if (q->nr) {
		q->refs[q->nr - 1].aux[0] = a;
		q->refs[q->nr - 1].aux[1] = b;
	}
}

/* Buffer offsets follow arrival order: they break ties between equal times. */
static int cmp_ref(const void *a, const void *b)
{
	const struct perf_queue_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->off < y->off ? -1 : (x->off > y->off);
}

static int cmp_off(const void *a, const void *b)
{
	const struct perf_queue_ref *x = a, *y = b;

	return x->off < y->off ? -1 : (x->off > y->off);
}

void perf_queue__sort(struct perf_queue *q)
{
	if (q->nr > 1) /* refs is NULL while the queue never held a record */
		qsort(q->refs, q->nr, sizeof(*q->refs), cmp_ref);
}

const struct perf_event_header *perf_queue__get(const struct perf_queue *q, size_t i, int *kind)
{
	*kind = q->refs[i].kind;
	return (const void *)(q->buf + q->refs[i].off);
}

int perf_queue__flush_until(struct perf_queue *q, uint64_t limit,
			    int (*fn)(const struct perf_event_header *rec, uint64_t time, int kind,
				      void *arg),
			    void *arg)
{
	size_t i, k, len = 0;
	int err = 0;

	perf_queue__sort(q);
	for (i = 0; i < q->nr && q->refs[i].time <= limit; i++) {
		const struct perf_queue_ref *ref = &q->refs[i];

		err = fn((const void *)(q->buf + ref->off), ref->time, ref->kind, arg);
		if (err)
			break;
	}
	if (!i)
		return err;
	if (i == q->nr) {
		perf_queue__clear(q);
		return err;
	}
	/*
	 * Keep the rest, compacted in buffer order: a record only moves down,
	 * over records handed out or already moved, so it overwrites none that
	 * is still to move, and buffer order stays arrival order.
	 */
	q->nr -= i;
	if (q->nr) {
		memmove(q->refs, q->refs + i, q->nr * sizeof(*q->refs));
		qsort(q->refs, q->nr, sizeof(*q->refs), cmp_off);
	}
	for (k = 0; k < q->nr; k++) {
		const struct perf_event_header *h = (const void *)(q->buf + q->refs[k].off);
		size_t size = h->size;

		if (q->refs[k].off != len)
			memmove(q->buf + len, h, size);
		q->refs[k].off = len;
		len += SLOT(size);
	}
	q->len = len;
	return err;
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
