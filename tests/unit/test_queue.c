// SPDX-License-Identifier: GPL-2.0
/* The time-ordered record queue shared by record and report. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "unit.h"
#include "perfdata/queue.h"

/*
 * The unit tests link with -Wl,--wrap=realloc: fail_realloc_in > 0 makes
 * the realloc that many calls later fail, once.
 */
static int fail_realloc_in;
void *__real_realloc(void *p, size_t size);

void *__wrap_realloc(void *p, size_t size)
{
	if (fail_realloc_in > 0 && !--fail_realloc_in)
		return NULL;
	return __real_realloc(p, size);
}

/* A record of @size bytes (at least 24) carrying @seq, its size and a pattern. */
static const struct perf_event_header *make_rec(uint64_t seq, uint16_t size)
{
	static union {
		struct perf_event_header h;
		uint8_t b[65536];
	} u;
	uint16_t i;

	u.h.type = PERF_RECORD_SAMPLE;
	u.h.misc = 0;
	u.h.size = size;
	memcpy(u.b + 8, &seq, 8);
	for (i = 16; i < size; i++)
		u.b[i] = (uint8_t)(seq * 31 + i);
	return &u.h;
}

static uint64_t rec_seq(const struct perf_event_header *h)
{
	uint64_t seq;

	memcpy(&seq, (const uint8_t *)h + 8, 8);
	return seq;
}

static bool rec_intact(const struct perf_event_header *h, uint16_t size)
{
	const uint8_t *b = (const void *)h;
	uint64_t seq = rec_seq(h);
	uint16_t i;

	if (h->type != PERF_RECORD_SAMPLE || h->size != size)
		return false;
	for (i = 16; i < size; i++)
		if (b[i] != (uint8_t)(seq * 31 + i))
			return false;
	return true;
}

/* What a flush handed out. */
struct seen {
	uint64_t seq[1024];
	uint64_t time[1024];
	size_t nr;
	int fail_at; /* fail with -EIO on this record (1-based); 0: never */
	int bad;
};

static int collect(const struct perf_event_header *rec, uint64_t time, int kind, void *arg)
{
	struct seen *s = arg;

	if (s->fail_at && (int)s->nr + 1 == s->fail_at)
		return -EIO;
	if (s->nr == 1024 || (int)rec_seq(rec) != kind || !rec_intact(rec, rec->size)) {
		s->bad++;
		return 0;
	}
	s->seq[s->nr] = rec_seq(rec);
	s->time[s->nr++] = time;
	return 0;
}

static void push(struct perf_queue *q, uint64_t seq, uint64_t time, uint16_t size)
{
	CHECK(perf_queue__push(q, make_rec(seq, size), time, (int)seq) == 0);
}

static void test_queue_stable(void)
{
	struct perf_queue q = { 0 };
	uint64_t prev_time = 0, prev_seq = 0;
	size_t i;
	int kind, bad = 0;

	/* three times, interleaved: equal times come out in arrival order, each
	 * with the aux words its pusher set (every other one: the rest stay 0) */
	for (i = 0; i < 3000; i++) {
		push(&q, i, 100 - (i % 3) * 10, (uint16_t)(24 + (i % 5) * 4));
		if (i & 1)
			perf_queue__set_aux(&q, i * 7, i + 1);
	}
	perf_queue__sort(&q);
	CHECK_EQ_U64(q.nr, 3000);
	for (i = 0; i < q.nr; i++) {
		const struct perf_event_header *h = perf_queue__get(&q, i, &kind);
		uint64_t t = q.refs[i].time, seq = rec_seq(h);

		if ((seq & 1 ? q.refs[i].aux[0] != seq * 7 || q.refs[i].aux[1] != seq + 1 :
			       q.refs[i].aux[0] || q.refs[i].aux[1]) ||
		    (int)seq != kind || !rec_intact(h, (uint16_t)(24 + (seq % 5) * 4)) ||
		    t != 100 - (seq % 3) * 10 || t < prev_time ||
		    (i && t == prev_time && seq <= prev_seq))
			bad++;
		prev_time = t;
		prev_seq = seq;
	}
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(rec_seq(perf_queue__get(&q, 0, &kind)), 2);
	/* cleared, it starts over */
	perf_queue__clear(&q);
	CHECK_EQ_U64(q.nr, 0);
	push(&q, 7, 5, 24);
	perf_queue__sort(&q);
	CHECK_EQ_U64(rec_seq(perf_queue__get(&q, 0, &kind)), 7);
	perf_queue__free(&q);
	CHECK(!q.buf && !q.refs && !q.nr);
}

static void test_queue_flush_boundary(void)
{
	struct perf_queue q = { 0 };
	struct seen s = { 0 };

	push(&q, 0, 30, 40);
	push(&q, 1, 20, 24);
	push(&q, 2, 10, 32);
	push(&q, 3, 20, 28);
	push(&q, 4, 21, 24);
	/* exactly at the limit goes out, in arrival order; later stays */
	CHECK(perf_queue__flush_until(&q, 20, collect, &s) == 0);
	CHECK_EQ_U64(s.bad, 0);
	CHECK_EQ_U64(s.nr, 3);
	CHECK(s.seq[0] == 2 && s.seq[1] == 1 && s.seq[2] == 3);
	CHECK(s.time[0] == 10 && s.time[1] == 20 && s.time[2] == 20);
	CHECK_EQ_U64(q.nr, 2);
	CHECK_EQ_U64(q.len, 40 + 24);
	/* nothing below the limit: nothing happens */
	s.nr = 0;
	CHECK(perf_queue__flush_until(&q, 20, collect, &s) == 0);
	CHECK_EQ_U64(s.nr, 0);
	CHECK_EQ_U64(q.nr, 2);
	/* a later record of an equal time still comes after the kept one */
	push(&q, 5, 30, 24);
	push(&q, 6, 0, 24);
	CHECK(perf_queue__flush_until(&q, 29, collect, &s) == 0);
	CHECK(s.nr == 2 && s.seq[0] == 6 && s.seq[1] == 4);
	s.nr = 0;
	CHECK(perf_queue__flush_until(&q, UINT64_MAX, collect, &s) == 0);
	CHECK(s.nr == 2 && s.seq[0] == 0 && s.seq[1] == 5);
	CHECK_EQ_U64(s.bad, 0);
	CHECK(q.nr == 0 && q.len == 0);
	/* an empty queue flushes nothing */
	s.nr = 0;
	CHECK(perf_queue__flush_until(&q, UINT64_MAX, collect, &s) == 0);
	CHECK_EQ_U64(s.nr, 0);
	perf_queue__free(&q);
}

/*
 * perf's rounds: every round pushes records with times scattered around a
 * moving clock and flushes up to the newest time before the round. Over
 * many flushes every record comes out once, intact, in time order, and the
 * buffer holds only what is kept.
 */
static void test_queue_compaction(void)
{
	struct perf_queue q = { 0 };
	struct seen s = { 0 };
	uint64_t seq = 0, out = 0, last_time = 0, round_max = 0, prev_max = 0, rnd = 1;
	size_t round, i, kept_len;
	int bad = 0;

	for (round = 0; round < 400; round++) {
		for (i = 0; i < 50; i++) {
			uint64_t t;
			uint16_t size;

			rnd = rnd * 6364136223846793005ULL + 1442695040888963407ULL;
			t = round * 100 + (rnd >> 33) % 200; /* within two rounds, as perf's are */
			size = (uint16_t)(24 + (rnd >> 20) % 200); /* not all multiples of 8 */
			if (perf_queue__push(&q, make_rec(seq, size), t, (int)seq))
				bad++;
			seq++;
			if (t > round_max)
				round_max = t;
		}
		s.nr = 0;
		if (perf_queue__flush_until(&q, prev_max, collect, &s))
			bad++;
		for (i = 0; i < s.nr; i++) {
			if (s.time[i] < last_time || s.time[i] > prev_max)
				bad++;
			last_time = s.time[i];
		}
		for (i = 0; i < q.nr; i++)
			if (q.refs[i].time <= prev_max)
				bad++;
		prev_max = round_max;
		out += s.nr;
		kept_len = 0;
		for (i = 0; i < q.nr; i++) {
			const struct perf_event_header *h = (const void *)(q.buf + q.refs[i].off);

			if (q.refs[i].off != kept_len || !rec_intact(h, h->size))
				bad++;
			kept_len += (h->size + 7) & ~7;
		}
		if (q.len != kept_len)
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(s.bad, 0);
	CHECK(out > 0 && q.nr > 0);
	CHECK_EQ_U64(out + q.nr, seq);
	perf_queue__free(&q);
}

static void test_queue_errors(void)
{
	struct perf_queue q = { 0 };
	struct perf_event_header tiny = { PERF_RECORD_SAMPLE, 0, 4 };
	struct seen s = { 0 };
	size_t i, len;
	int bad = 0;

	CHECK(perf_queue__push(&q, &tiny, 1, 0) == -EINVAL);
	/* the first buffer, then the first refs */
	fail_realloc_in = 1;
	CHECK(perf_queue__push(&q, make_rec(0, 24), 1, 0) == -ENOMEM);
	CHECK(q.nr == 0 && q.len == 0);
	fail_realloc_in = 2;
	CHECK(perf_queue__push(&q, make_rec(0, 24), 1, 0) == -ENOMEM);
	CHECK(q.nr == 0 && q.len == 0);
	fail_realloc_in = 0;
	/* growing the refs past 4096 */
	for (i = 0; i < 4096; i++)
		bad += perf_queue__push(&q, make_rec(i, 24), 4096 - i, (int)i) != 0;
	CHECK_EQ_U64(bad, 0);
	fail_realloc_in = 1;
	CHECK(perf_queue__push(&q, make_rec(4096, 24), 0, 4096) == -ENOMEM);
	CHECK_EQ_U64(q.nr, 4096);
	CHECK(perf_queue__push(&q, make_rec(4096, 24), 0, 4096) == 0);
	/* growing the buffer past 1 MiB */
	while (q.len + 65528 <= q.cap)
		CHECK(perf_queue__push(&q, make_rec(q.nr, 65528), 5000, (int)q.nr) == 0);
	len = q.len;
	i = q.nr;
	fail_realloc_in = 1;
	CHECK(perf_queue__push(&q, make_rec(i, 65528), 5000, (int)i) == -ENOMEM);
	CHECK(q.nr == i && q.len == len);
	fail_realloc_in = 0;
	CHECK(perf_queue__push(&q, make_rec(i, 65528), 5000, (int)i) == 0);
	/* everything pushed before a failure is still there, in order */
	s.fail_at = 0;
	CHECK(perf_queue__flush_until(&q, 1, collect, &s) == 0);
	CHECK(s.nr == 2 && s.seq[0] == 4096 && s.seq[1] == 4095);
	/* an error of the callback stops the flush, keeps the record it failed on */
	s.nr = 0;
	s.fail_at = 3;
	CHECK(perf_queue__flush_until(&q, 10, collect, &s) == -EIO);
	CHECK(s.nr == 2 && s.seq[0] == 4094 && s.seq[1] == 4093);
	CHECK_EQ_U64(q.nr, i + 1 - 4);
	s.nr = 0;
	s.fail_at = 0;
	CHECK(perf_queue__flush_until(&q, 10, collect, &s) == 0);
	CHECK(s.nr == 7 && s.seq[0] == 4092 && s.seq[6] == 4086);
	CHECK_EQ_U64(s.bad, 0);
	perf_queue__free(&q);
}

const struct unit_test queue_tests[] = {
	{ "queue: equal times keep arrival order", test_queue_stable },
	{ "queue: flush up to and including the limit", test_queue_flush_boundary },
	{ "queue: compaction over many rounds", test_queue_compaction },
	{ "queue: memory and callback errors", test_queue_errors },
	{ 0 },
};
