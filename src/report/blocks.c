// SPDX-License-Identifier: GPL-2.0
/*
 * Blocks from the stream of samples (blocks.h): each thread's last block
 * held until its next sample says whether a run queue part follows it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "blocks.h"
#include "../offcpu.h"
#include "../util/util.h"

/* perf record --off-cpu's samples carry this time, not theirs (session.c) */
#define PERF_OFFCPU_TIME (~0ULL << 32)

struct blocks_thread {
	uint32_t pid, tid;
	bool held;
	bool before_used; /* its offcpu-before sample marked a block, or cannot any more */
	struct report_sample pending; /* its last block, until its next sample */
	uint64_t before_time, before_ns; /* its offcpu-before sample: the start, how long by then */
	bool has_before;
};

void blocks__init(struct blocks *b, block_fn fn, void *arg)
{
	memset(b, 0, sizeof(*b));
	b->fn = fn;
	b->arg = arg;
}

void blocks__free(struct blocks *b)
{
	hashmap__free(&b->idx);
	free(b->th);
	memset(b, 0, sizeof(*b));
}

static struct blocks_thread *thread_of(struct blocks *b, uint32_t pid, uint32_t tid, bool add)
{
	uint32_t key[2] = { pid, tid };
	struct blocks_thread *t;
	uint64_t *v;
	int created;

	if (!add) {
		v = hashmap__find(&b->idx, key, sizeof(key));
		return v ? &b->th[*v] : NULL;
	}
	v = hashmap__upsert(&b->idx, key, sizeof(key), &created);
	if (!v)
		return NULL;
	if (created) {
		if (grow_array((void **)&b->th, &b->cap, b->nr + 1, sizeof(*b->th)))
			return NULL;
		t = &b->th[b->nr];
		memset(t, 0, sizeof(*t));
		t->pid = pid;
		t->tid = tid;
		*v = b->nr++;
	}
	return &b->th[*v];
}

/* Out goes @s as a block ending at @end (its time, or where its run queue wait began). */
static int emit(struct blocks *b, struct blocks_thread *t, const struct report_sample *s,
		uint64_t end, uint32_t flags)
{
	struct block k = { .s = s, .flags = flags };

	k.start = end > s->period ? end - s->period : 0;
	k.end = end;
	if (s->flags & SAMPLE_OPEN_END)
		k.flags |= BLOCK_OPEN_END;
	/* the block under way when the recording began: counted from then */
	if (t->has_before && !t->before_used && !(flags & BLOCK_RUNQ)) {
		t->before_used = true;
		if (k.start == t->before_time) {
			k.flags |= BLOCK_BEFORE;
			k.since = t->before_ns && t->before_ns < t->before_time ?
					  t->before_time - t->before_ns : 0;
		}
	}
	return b->fn(b->arg, &k);
}

static int flush(struct blocks *b, struct blocks_thread *t)
{
	if (!t->held)
		return 0;
	t->held = false;
	return emit(b, t, &t->pending, t->pending.time, 0);
}

static bool untimed(const struct report_sample *s)
{
	if (!(s->flags & SAMPLE_TIME) || !s->time || s->time >= PERF_OFFCPU_TIME)
		return true;
	return !(s->flags & SAMPLE_SUMMED) && (s->period >= s->time || s->period >= BLOCK_DUR_MAX);
}

int blocks__sample(struct blocks *b, const struct report_sample *s)
{
	struct blocks_thread *t;
	int err;

	if (s->role == SAMPLE_BEFORE) {
		if (!(s->flags & SAMPLE_TIME))
			return BLOCKS_NONE;
		t = thread_of(b, s->pid, s->tid, true);
		if (!t)
			return -ENOMEM;
		if (!t->has_before) { /* one wait per thread: a second is a damaged file's */
			t->has_before = true;
			t->before_time = s->time;
			t->before_ns = s->period;
		}
		return BLOCKS_NONE;
	}
	if (s->role != SAMPLE_WAIT)
		return BLOCKS_NONE;
	if (untimed(s)) {
		b->untimed++;
		return BLOCKS_UNTIMED;
	}
	if (s->flags & SAMPLE_SUMMED)
		return BLOCKS_SUMMED;
	t = thread_of(b, s->pid, s->tid, true);
	if (!t)
		return -ENOMEM;
	if (s->state == OFFCPU_STATE_RUNQ + 1) {
		/* the run queue part of the block held: that block ended where this began */
		if (t->held && t->pending.time == s->time &&
		    t->pending.state != OFFCPU_STATE_RUNQ + 1) {
			t->held = false;
			err = emit(b, t, &t->pending, s->time - s->period, BLOCK_WOKEN);
		} else {
			err = flush(b, t);
		}
		return err ?: emit(b, t, s, s->time, BLOCK_RUNQ) ?: BLOCKS_BLOCK;
	}
	err = flush(b, t);
	if (err)
		return err;
	t->pending = *s;
	t->held = true;
	return BLOCKS_BLOCK;
}

int blocks__exit(struct blocks *b, uint32_t pid, uint32_t tid)
{
	struct blocks_thread *t = thread_of(b, pid, tid, false);

	return t ? flush(b, t) : 0;
}

int blocks__finish(struct blocks *b)
{
	size_t i;
	int err = 0;

	for (i = 0; i < b->nr && !err; i++)
		err = flush(b, &b->th[i]);
	return err;
}
