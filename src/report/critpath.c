// SPDX-License-Identifier: GPL-2.0
/*
 * The critical path (critpath.h): every thread's timed blocks, on-CPU
 * samples and summed intervals kept as the session hands them out, then
 * each wait of the roots walked back through its wakers.
 *
 * The walk of thread T over [a, b), T running at b (it woke the thread
 * before it on the path then): from b back to a, T's time is either a
 * block of T's (its part in [a, b)) or a run between two blocks. A run is
 * charged to T running (its on-CPU samples there, else the stack where it
 * stopped), save where T's short blocks were summed (unknown) or before T is
 * known to exist. A block is charged by what it was: a run queue wait or a
 * preemption to T itself; a wait ended by an interrupt to the interrupt;
 * a wait ended by a thread W to the walk of W over that block's part, one
 * hop deeper. Each level splits its interval into disjoint parts that sum
 * to it, so the whole root's wait is charged exactly once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "blocks.h"
#include "critpath.h"
#include "../util/hashmap.h"
#include "../util/util.h"

#define CPB_ROOT (1u << 16) /* a wait of a root thread (blocks.h's flags below) */
#define NONE UINT32_MAX

struct cp_block {
	uint64_t start, end;
	uint32_t state, stack, comm;
	uint32_t waker, wstack, wpid, wtid; /* strtab, stack, the waking thread (0: an interrupt) */
	uint32_t flags; /* BLOCK_*, CPB_ROOT */
};

struct cp_tick {
	uint64_t time;
	uint32_t stack;
};

/* Summed samples: the interval they were summed in; a root's also count as its wait. */
struct cp_sum {
	uint64_t start, end, ns; /* start 0: the first interval, from the recording's start */
	uint32_t state, stack, comm;
	bool root;
};

/* A thread's part of the path still to walk: [a, b), it woke the thread before it at b. */
struct cp_work {
	struct cp_thread *t; /* NULL: nothing of it recorded */
	uint32_t pid, tid, who;
	uint32_t hint; /* its stack at b, if known */
	uint64_t a, b;
	uint32_t depth; /* hops from the root's wait */
	uint32_t stall; /* hops in a row that did not end earlier than the one before */
};

struct cp_thread {
	uint32_t pid, tid, comm;
	uint64_t forked; /* when the recording saw it begin; 0: before the recording */
	struct cp_block *b;
	size_t nb, cb;
	struct cp_tick *k;
	size_t nk, ck;
	struct cp_sum *u;
	size_t nu, cu;
	bool root;
	bool seen; /* a sample of it is in the file, in the window or not */
};

struct critpath {
	struct sample_consumer c;
	struct profile *p;
	const struct critpath_opts *o;
	struct blocks blocks;
	struct hashmap idx; /* pid, tid -> thread */
	struct cp_thread *th;
	size_t nr, cap;
	struct hashmap comm_ok; /* strtab index -> 1 + whether --comm lets it through */
	struct cp_has has;
	uint64_t nblocks;
	/* the walk */
	uint64_t rec_start, w0, w1;
	struct hashmap entry_idx;
	struct cp_entry *e;
	size_t ne, ce;
	struct cp_root *roots;
	size_t nroots, croots;
	struct cp_root *root; /* the root being walked */
	struct cp_work *work; /* the stack of parts still to walk */
	size_t nwork, cwork;
	uint32_t root_comm;
	uint64_t by_kind[CP_NR];
};

static struct cp_thread *thread_of(struct critpath *c, uint32_t pid, uint32_t tid, bool add)
{
	uint32_t key[2] = { pid, tid };
	struct cp_thread *t;
	uint64_t *v;
	int created;

	if (!add) {
		v = hashmap__find(&c->idx, key, sizeof(key));
		return v ? &c->th[*v] : NULL;
	}
	v = hashmap__upsert(&c->idx, key, sizeof(key), &created);
	if (!v)
		return NULL;
	if (created) {
		if (grow_array((void **)&c->th, &c->cap, c->nr + 1, sizeof(*c->th)))
			return NULL;
		t = &c->th[c->nr];
		memset(t, 0, sizeof(*t));
		t->pid = pid;
		t->tid = tid;
		*v = c->nr++;
	}
	return &c->th[*v];
}

/* Whether a wait of this thread, under command @comm, is a root's: 1, 0, or -ENOMEM. */
static int is_root(struct critpath *c, uint32_t pid, uint32_t tid, uint32_t comm)
{
	const struct critpath_opts *o = c->o;
	uint64_t *v;
	int created;
	size_t i;

	if (o->nr_pids && !int_list_has(o->pids, o->nr_pids, pid))
		return 0;
	if (o->nr_tids && !int_list_has(o->tids, o->nr_tids, tid))
		return 0;
	if (!o->nr_comms)
		return 1;
	v = hashmap__upsert(&c->comm_ok, &comm, sizeof(comm), &created);
	if (!v)
		return -ENOMEM;
	if (created) {
		const char *name = strtab__get(&c->p->str, comm);

		for (i = 0; i < o->nr_comms && strcmp(o->comms[i], name); i++)
			;
		*v = 1 + (i < o->nr_comms);
	}
	return *v == 2;
}

static int on_block(void *arg, const struct block *k)
{
	struct critpath *c = arg;
	const struct report_sample *s = k->s;
	struct cp_thread *t;
	struct cp_block *b;
	int root;

	if (c->has.cut)
		return 0;
	t = thread_of(c, s->pid, s->tid, true);
	if (!t)
		return -ENOMEM;
	t->seen = true;
	if (s->comm != NONE && s->comm)
		t->comm = s->comm;
	/* the walk stays within the window: what is all before or after it is not kept */
	if (c->o->time_filter && (k->end <= c->o->time_start || k->start >= c->o->time_end))
		return 0;
	if (c->nblocks >= CRITPATH_MAX_BLOCKS) {
		c->has.cut = k->end; /* the analysis stops about here */
		return 0;
	}
	root = is_root(c, s->pid, s->tid, s->comm);
	if (root < 0 || grow_array((void **)&t->b, &t->cb, t->nb + 1, sizeof(*t->b)))
		return -ENOMEM;
	b = &t->b[t->nb++];
	*b = (struct cp_block){ .start = k->start, .end = k->end, .state = s->state,
				.stack = s->stack, .comm = s->comm, .waker = s->waker,
				.wstack = s->waker_stack, .wpid = s->waker_pid,
				.wtid = s->waker_tid, .flags = k->flags | (root ? CPB_ROOT : 0) };
	t->root |= root;
	c->nblocks++;
	c->has.blocks++;
	c->has.wakers += s->waker != 0;
	c->has.runq += (k->flags & BLOCK_RUNQ) || s->state == OFFCPU_STATE_R + 1;
	return 0;
}

static int on_sample(struct sample_consumer *cs, const struct report_sample *s)
{
	struct critpath *c = consumer_of(cs, struct critpath, c);
	struct cp_thread *t;
	int kind, root;

	if (!(s->flags & SAMPLE_ROWS) && s->role != SAMPLE_BEFORE)
		return 0;
	kind = blocks__sample(&c->blocks, s);
	if (kind < 0)
		return kind;
	if (c->has.cut || s->role == SAMPLE_BEFORE || kind == BLOCKS_BLOCK ||
	    kind == BLOCKS_UNTIMED || !(s->flags & SAMPLE_TIME))
		return 0;
	t = thread_of(c, s->pid, s->tid, true);
	if (!t)
		return -ENOMEM;
	t->seen = true;
	if (s->comm != NONE && s->comm)
		t->comm = s->comm;
	if (s->role == SAMPLE_OTHER) { /* an on-CPU sample */
		if (c->o->time_filter && (s->time < c->o->time_start || s->time >= c->o->time_end))
			return 0;
		if (grow_array((void **)&t->k, &t->ck, t->nk + 1, sizeof(*t->k)))
			return -ENOMEM;
		t->k[t->nk++] = (struct cp_tick){ s->time, s->stack };
		c->has.ticks++;
		return 0;
	}
	if (kind != BLOCKS_SUMMED ||
	    (c->o->time_filter && (s->time < c->o->time_start || s->interval_start >= c->o->time_end)))
		return 0;
	root = is_root(c, s->pid, s->tid, s->comm);
	if (root < 0 || grow_array((void **)&t->u, &t->cu, t->nu + 1, sizeof(*t->u)))
		return -ENOMEM;
	t->u[t->nu++] = (struct cp_sum){ .start = s->interval_start, .end = s->time,
					 .ns = s->period, .state = s->state, .stack = s->stack,
					 .comm = s->comm, .root = root };
	t->root |= root;
	c->has.summed++;
	return 0;
}

static int on_task(struct sample_consumer *cs, const struct report_task *k)
{
	struct critpath *c = consumer_of(cs, struct critpath, c);
	struct cp_thread *t;

	if (k->kind == TASK_EXIT)
		return blocks__exit(&c->blocks, k->pid, k->tid);
	t = thread_of(c, k->pid, k->tid, true);
	if (!t)
		return -ENOMEM;
	/* a thread begun during the recording: nothing of it before (a reused id: its last start) */
	t->forked = k->time;
	return 0;
}

struct critpath *critpath__new(struct profile *p, const struct critpath_opts *o)
{
	struct critpath *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->p = p;
	c->o = o;
	c->c.sample = on_sample;
	c->c.task = on_task;
	blocks__init(&c->blocks, on_block, c);
	return c;
}

struct sample_consumer *critpath__consumer(struct critpath *c)
{
	return &c->c;
}

/* ---- the walk ---- */

static int charge(struct critpath *c, enum cp_kind kind, const struct cp_thread *t, uint32_t pid,
		  uint32_t tid, uint32_t who, uint32_t state, uint32_t stack, uint64_t ns)
{
	struct cp_entry key;
	uint64_t *v;
	int created;

	if (!ns)
		return 0;
	memset(&key, 0, sizeof(key)); /* the key's bytes, padding too */
	key.root_comm = c->root_comm;
	key.kind = kind;
	key.pid = pid;
	key.tid = tid;
	key.comm = t && t->comm ? t->comm : who;
	key.who = who;
	key.state = state;
	key.stack = stack;
	v = hashmap__upsert(&c->entry_idx, &key, offsetof(struct cp_entry, ns), &created);
	if (!v)
		return -ENOMEM;
	if (created) {
		if (grow_array((void **)&c->e, &c->ce, c->ne + 1, sizeof(*c->e)))
			return -ENOMEM;
		c->e[c->ne] = key;
		*v = c->ne++;
	}
	c->e[*v].ns += ns;
	c->root->charged += ns;
	c->by_kind[kind] += ns;
	return 0;
}

static int charge_thread(struct critpath *c, enum cp_kind kind, const struct cp_thread *t,
			 uint32_t state, uint32_t stack, uint64_t ns)
{
	return charge(c, kind, t, t->pid, t->tid, t->comm, state, stack, ns);
}

/* T ran over [x, y): its on-CPU samples there share it, else the stack @hint it stopped in. */
static int run_part(struct critpath *c, const struct cp_thread *t, uint64_t x, uint64_t y,
		    uint32_t hint)
{
	size_t lo = 0, hi = t->nk, end, j, n;
	int err = 0;

	while (lo < hi) { /* the first sample at x or later */
		size_t m = (lo + hi) / 2;

		if (t->k[m].time < x)
			lo = m + 1;
		else
			hi = m;
	}
	for (end = lo; end < t->nk && t->k[end].time < y; end++)
		;
	n = end - lo;
	if (!n)
		return charge_thread(c, CP_RUN_UNSAMPLED, t, 0, hint, y - x);
	for (j = 0; j < n && !err; j++) {
		unsigned __int128 len = y - x;
		uint64_t share = (uint64_t)(len * (j + 1) / n - len * j / n);

		err = charge_thread(c, CP_RUN, t, 0, t->k[lo + j].stack, share);
	}
	return err;
}

/*
 * T between two blocks over [x, y): running, save before it is known to
 * exist and where its short blocks were summed. @hint: its stack at @y.
 */
static int running(struct critpath *c, const struct cp_thread *t, uint64_t x, uint64_t y,
		   uint32_t hint)
{
	uint64_t known = t->forked ? t->forked : c->rec_start;
	size_t lo = 0, hi = t->nu;
	int err = 0;

	if (x < known) {
		uint64_t e = y < known ? y : known;

		err = charge_thread(c, CP_NOT_RECORDED, t, 0, NONE, e - x);
		x = e;
	}
	while (lo < hi) { /* the first summed interval ending after x */
		size_t m = (lo + hi) / 2;

		if (t->u[m].end <= x)
			lo = m + 1;
		else
			hi = m;
	}
	for (; lo < t->nu && x < y && !err; lo++) {
		uint64_t u0 = t->u[lo].start ? t->u[lo].start : c->rec_start, u1 = t->u[lo].end;

		if (u0 >= y)
			break;
		if (u0 < x)
			u0 = x;
		if (u1 > y)
			u1 = y;
		if (u0 >= u1)
			continue;
		if (x < u0)
			err = run_part(c, t, x, u0, NONE);
		err = err ?: charge_thread(c, CP_SUMMED, t, 0, NONE, u1 - u0);
		x = u1;
	}
	return err || x >= y ? err : run_part(c, t, x, y, hint);
}

/* The last block of @t that began before @at, NULL if none. */
static const struct cp_block *block_before(const struct cp_thread *t, uint64_t at)
{
	size_t lo = 0, hi = t->nb;

	while (lo < hi) {
		size_t m = (lo + hi) / 2;

		if (t->b[m].start < at)
			lo = m + 1;
		else
			hi = m;
	}
	return lo ? &t->b[lo - 1] : NULL;
}

/*
 * The part [x, y) of block @k of thread @t, charged by what ended it; @w: the
 * walk it is part of (NULL: the root's own wait).
 */
static int block_part(struct critpath *c, struct cp_thread *t, const struct cp_block *k,
		      uint64_t x, uint64_t y, const struct cp_work *w)
{
	if (k->flags & BLOCK_RUNQ)
		return charge_thread(c, CP_RUNQ, t, k->state, k->stack, y - x);
	if (k->state == OFFCPU_STATE_R + 1)
		return charge_thread(c, CP_PREEMPTED, t, k->state, k->stack, y - x);
	if (k->flags & BLOCK_OPEN_END)
		return charge_thread(c, CP_OPEN, t, k->state, k->stack, y - x);
	if (k->wtid) {
		/* each hop ends earlier than the one before (its waker ran before it
		 * woke it), save for a few cut by the window: more in a row is a
		 * damaged file's loop */
		uint32_t stall = w && y >= w->b ? w->stall + 1 : 0, depth = w ? w->depth + 1 : 1;
		struct cp_thread *wt;

		if (depth > CRITPATH_MAX_DEPTH || stall > CRITPATH_MAX_STALL)
			return charge_thread(c, CP_DEPTH, t, k->state, k->stack, y - x);
		wt = thread_of(c, k->wpid, k->wtid, false);
		/*
		 * The waker ran when it woke @t. The wakeup's time is the run
		 * queue's clock, which lags by microseconds: where the waker's
		 * block already covers it, the wakeup was by that block's start,
		 * and @t has waited for a CPU since.
		 */
		if (wt && y == k->end) {
			const struct cp_block *cov = block_before(wt, y);

			if (cov && cov->end > y && cov->start < y) {
				uint64_t at = cov->start > x ? cov->start : x;
				int err = charge_thread(c, CP_RUNQ, t, OFFCPU_STATE_RUNQ + 1, k->stack,
							y - at);

				if (err)
					return err;
				y = at;
				if (x >= y)
					return 0;
			}
		}
		if (grow_array((void **)&c->work, &c->cwork, c->nwork + 1, sizeof(*c->work)))
			return -ENOMEM;
		/* the waker, running when it woke @t (at the block's end) */
		c->work[c->nwork++] = (struct cp_work){
			.t = wt, .pid = k->wpid, .tid = k->wtid, .who = k->waker,
			.hint = y == k->end ? k->wstack : NONE, .a = x, .b = y, .depth = depth,
			.stall = stall };
		return 0;
	}
	if (k->waker)
		return charge(c, CP_IRQ, t, t->pid, t->tid, k->waker, k->state, k->stack, y - x);
	return charge_thread(c, CP_NO_WAKER, t, k->state, k->stack, y - x);
}

/* What thread w->t did over [w->a, w->b): its blocks' parts and its runs between them. */
static int walk(struct critpath *c, const struct cp_work *w)
{
	struct cp_thread *t = w->t;
	const struct cp_block *k;
	size_t lo;
	uint64_t x = w->b, a = w->a;
	uint32_t next = w->hint;
	int err = 0;

	if (!t || !t->seen)
		return charge(c, CP_NOT_RECORDED, t, w->pid, w->tid, t && t->comm ? t->comm : w->who,
			      0, NONE, w->b - a);
	k = block_before(t, x); /* and the blocks before it */
	lo = k ? (size_t)(k - t->b) + 1 : 0;
	while (x > a && !err) {
		uint64_t kend = k && k->end < x ? k->end : k ? x : a;

		if (kend < a)
			kend = a;
		if (kend < x) { /* between blocks: it ran */
			err = running(c, t, kend, x, next);
			x = kend;
		}
		if (!k || x <= a || err)
			break;
		if (k->start < x) {
			uint64_t s0 = k->start > a ? k->start : a;

			err = block_part(c, t, k, s0, x, w);
			x = s0;
		}
		next = k->stack;
		k = --lo ? &t->b[lo - 1] : NULL;
	}
	return err;
}

/* The parts pushed so far, and those they push: a stack, not recursion (paths go deep). */
static int drain(struct critpath *c)
{
	int err = 0;

	while (c->nwork && !err) {
		struct cp_work w = c->work[--c->nwork];

		err = walk(c, &w);
	}
	c->nwork = 0;
	return err;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct cp_entry *x = a, *y = b;

	return (x->ns < y->ns) - (x->ns > y->ns);
}

static struct cp_root *add_root(struct critpath *c, const struct cp_thread *t)
{
	struct cp_root *r;

	if (grow_array((void **)&c->roots, &c->croots, c->nroots + 1, sizeof(*c->roots)))
		return NULL;
	r = &c->roots[c->nroots++];
	*r = (struct cp_root){ .pid = t->pid, .tid = t->tid, .comm = t->comm };
	return r;
}

int critpath__walk(struct critpath *c)
{
	size_t i, j;
	int err;

	err = blocks__finish(&c->blocks);
	if (err)
		return err;
	c->rec_start = c->p->start_time;
	c->w0 = c->o->time_filter ? c->o->time_start : 0;
	c->w1 = c->o->time_filter ? c->o->time_end : UINT64_MAX;
	if (c->has.cut && c->has.cut < c->w1)
		c->w1 = c->has.cut;
	for (i = 0; i < c->nr && !err; i++) {
		struct cp_thread *t = &c->th[i];

		if (!t->root)
			continue;
		c->root = add_root(c, t);
		if (!c->root)
			return -ENOMEM;
		for (j = 0; j < t->nb && !err; j++) {
			const struct cp_block *k = &t->b[j];
			uint64_t x = k->start > c->w0 ? k->start : c->w0;
			uint64_t y = k->end < c->w1 ? k->end : c->w1;

			if (!(k->flags & CPB_ROOT) || x >= y)
				continue;
			c->root->waited += y - x;
			c->root->waits++;
			c->root_comm = k->comm;
			err = block_part(c, t, k, x, y, NULL);
			err = err ?: drain(c);
		}
		/* its summed waits: in the window by their time, as the rows are; unknown */
		for (j = 0; j < t->nu && !err; j++) {
			const struct cp_sum *u = &t->u[j];

			if (!u->root || u->end < c->w0 || u->end >= c->w1)
				continue;
			c->root->waited += u->ns;
			c->root->waits++;
			c->root_comm = u->comm;
			err = charge(c, CP_SUMMED, t, t->pid, t->tid, t->comm, u->state, u->stack,
				     u->ns);
		}
		if (!c->root->waits)
			c->nroots--; /* no wait in the window */
	}
	if (err)
		return err;
	if (c->ne)
		qsort(c->e, c->ne, sizeof(*c->e), cmp_entry);
	return 0;
}

const struct cp_entry *critpath__entries(const struct critpath *c, size_t *nr)
{
	*nr = c->ne;
	return c->e;
}

const struct cp_root *critpath__roots(const struct critpath *c, size_t *nr)
{
	*nr = c->nroots;
	return c->roots;
}

const uint64_t *critpath__by_kind(const struct critpath *c)
{
	return c->by_kind;
}

const struct cp_has *critpath__has(const struct critpath *c)
{
	return &c->has;
}

struct profile *critpath__profile(const struct critpath *c)
{
	return c->p;
}

void critpath__free(struct critpath *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nr; i++) {
		free(c->th[i].b);
		free(c->th[i].k);
		free(c->th[i].u);
	}
	free(c->th);
	free(c->e);
	free(c->roots);
	free(c->work);
	hashmap__free(&c->idx);
	hashmap__free(&c->comm_ok);
	hashmap__free(&c->entry_idx);
	blocks__free(&c->blocks);
	free(c);
}
