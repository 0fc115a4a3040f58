// SPDX-License-Identifier: GPL-2.0
/* The mapping from the BPF program's ABI to perf records: events, samples, losses, side-band. */
#include <errno.h>
#include <time.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "record_int.h"
#include "sideband.h"
#include "summary.h"
#include "synth.h"
#include "../perfdata/sample.h"
#include "../perfdata/wakers.h"
#include "../perfdata/waits.h"
#include "userstacks.h"
#include "../util/hashmap.h"
#include "../util/util.h"

/*
 * A block's call chain in perf's layout: kernel frames after
 * PERF_CONTEXT_KERNEL, user frames after PERF_CONTEXT_USER. Returns the
 * entries written to @chain (2 * OFFCPU_MAX_STACK_DEPTH + 3 at most), with
 * its innermost frame in @ip (0: none) and, in @unw, 1 + how the table walk
 * of its user stack ended (0: no walk).
 */
/* A stack finished in user space replaces the walk's: complete, or marked where libdw stopped. */
static void late_stack(struct record *r, const uint64_t *late, size_t nl, const uint64_t **uips,
		       uint32_t *nu, uint64_t *mark, unsigned *unw)
{
	*uips = late;
	*nu = (uint32_t)nl;
	*mark = 0;
	if (OFFCPU_UNW_IS_MARK(late[nl - 1])) {
		*mark = late[nl - 1];
		--*nu;
	}
	if (r->tables)
		*unw = 1 + (*mark ? OFFCPU_UNW_MARK_REASON(*mark) : UNW_FINISHED_LATE);
}

/*
 * A stack finished in user space (@late, @nl frames) in place of the walk's
 * first @nw frames @walk: the JavaScript frames the walk named (v8.bpf.h)
 * stay, where the two agree frame for frame up to them (both unwound the
 * same stack from the same registers). Returns @late, or @buf with them.
 */
static const uint64_t *keep_named(const uint64_t *walk, uint32_t nw, const uint64_t *late,
				  size_t nl, uint64_t *buf)
{
	uint32_t i, last = 0;

	for (i = 0; i < nw && i < nl; i++) {
		if (OFFCPU_IS_JSFRAME(walk[i]))
			last = i + 1;
		else if (walk[i] != late[i])
			break;
	}
	if (!last)
		return late;
	memcpy(buf, late, nl * sizeof(*buf));
	for (i = 0; i < last; i++)
		if (OFFCPU_IS_JSFRAME(walk[i]))
			buf[i] = walk[i];
	return buf;
}

static uint32_t callchain(struct record *r, uint32_t tgid, uint32_t tid, uint64_t kkey,
			  uint64_t ukey, uint64_t *chain, uint64_t *ip, unsigned *unw)
{
	const uint64_t *kips = NULL, *uips = NULL;
	uint32_t nk = stackstore__kernel(r->stacks, kkey, &kips);
	uint32_t nu = stackstore__user(r->stacks, ukey, &uips);
	uint32_t n = 0, i, np;
	const uint64_t *pyf;
	uint64_t mark;
	bool before;

	/* the Python frames the program walked, after the native ones and the mark:
	 * spliced in once the native frames are known (finished in user space too) */
	np = python__frames(uips, nu);
	nu -= np;
	pyf = uips + nu;
	*ip = 0;
	if (nk) {
		chain[n++] = PERF_CONTEXT_KERNEL;
		memcpy(&chain[n], kips, nk * sizeof(*kips));
		n += nk;
		*ip = kips[0];
	}
	/* A frame-pointer walk through code without frame pointers (Debian's
	 * libc) can run into data: stop at the first word that cannot be a user
	 * address (above 2^56, the top of 5-level user space, or in page 0), but
	 * for the table walk's mark, which ends a stack it did not complete. */
	*unw = 0;
	mark = nu && OFFCPU_UNW_IS_MARK(uips[nu - 1]) ? uips[nu - 1] : 0;
	/* a table walk's mark, or the one of a stack taken before offcpu ran */
	before = mark && OFFCPU_UNW_MARK_REASON(mark) == OFFCPU_UNW_BEFORE_START;
	if (mark && !r->tables && !before)
		mark = 0;
	if (mark)
		nu--;
	/* finished in user space: a walk that met code with no table yet, or a
	 * block under way at the start (userstacks.c) */
	if (r->us && nu && OFFCPU_UNW_IS_DEFER(uips[nu - 1])) {
		static __thread uint64_t kept[OFFCPU_MAX_STACK_DEPTH + 1];
		const uint64_t *late;
		size_t nl = userstacks__deferred(r->us, tid,
						 (uint32_t)(uips[nu - 1] - OFFCPU_UNW_DEFER_LO), &late);

		nu--;
		if (nl && nl <= OFFCPU_MAX_STACK_DEPTH + 1)
			late = keep_named(uips, nu, late, nl, kept);
		if (nl)
			late_stack(r, late, nl, &uips, &nu, &mark, unw);
	} else if (r->us && before) {
		const uint64_t *late;
		size_t nl = userstacks__start_stack(r->us, tid, &late, NULL, NULL);
		uint32_t lp = python__frames(late, (uint32_t)nl);

		/* its Python frames read from the sleeping thread's memory, after its native ones */
		if (nl > lp) {
			pyf = late + nl - lp;
			np = lp;
			late_stack(r, late, nl - lp, &uips, &nu, &mark, unw);
			before = false;
		}
	}
	nu = python__splice(r->py, tgid, uips, nu, pyf, np, &uips);
	for (i = 0; i < nu; i++)
		if (uips[i] < 4096 || (uips[i] >= (1ULL << 56) && !OFFCPU_IS_NAMED_FRAME(uips[i])))
			break;
	nu = i;
	perfmap__name_frames(r->perfmap, tgid, uips, nu);
	v8__note(r->v8, tgid, uips, nu);
	if (nu && r->tables && !*unw)
		*unw = 1 + (mark ? OFFCPU_UNW_MARK_REASON(mark) : OFFCPU_UNW_COMPLETE);
	if (before) {
		chain[n++] = PERF_CONTEXT_USER;
		chain[n++] = mark;
		if (!nk)
			*ip = mark;
	} else if (nu) {
		chain[n++] = PERF_CONTEXT_USER;
		memcpy(&chain[n], uips, nu * sizeof(*uips));
		n += nu;
		/* the mark ends the stack it marks, after a cut too */
		if (mark)
			chain[n++] = mark;
		if (!nk)
			*ip = uips[0];
		for (i = 0; i < nu; i++)
			maptab__mark(r->maps, (int)tgid, uips[i]);
	}
	return n;
}

/*
 * Encode one offcpu-time sample; the innermost frame is its ip, its state the
 * weight, and summed blocks (@kind SRC_SUMMED) and blocks under way at the
 * end (SRC_OPEN_END) are told in the CPU field's reserved half.
 */
int encode_offcpu(struct record *r, const struct offcpu_key *k, uint64_t time,
			 uint64_t period, uint32_t cpu, int kind, char *buf, size_t cap, unsigned *unw)
{
	uint64_t chain[2 * OFFCPU_MAX_STACK_DEPTH + 4];
	struct perf_sample s = {
		.id = r->ev.offcpu_id,
		.pid = k->tgid,
		.tid = k->pid,
		.time = time,
		.cpu = cpu,
		.cpu_res = kind == SRC_SUMMED ? OFFCPU_CPU_RES_SUMMED :
			   kind == SRC_OPEN_END ? OFFCPU_CPU_RES_OPEN_END : 0,
		.period = period,
		.cgroup = k->cgroup_id,
		.weight = (uint64_t)k->state + 1,
		.ips = chain,
	};
	struct perf_event_header *h = (void *)buf;
	int size;

	s.nr_ips = callchain(r, k->tgid, k->pid, k->kern_stack, k->user_stack, chain, &s.ip, unw);
	if ((r->ev.sample_type & PERF_SAMPLE_ADDR) && k->wait) {
		const struct offcpu_wait *w = waitstore__get(r->waits, k->wait);

		s.addr = w && w->tgid == k->tgid ? w->addr : 0;
	}
	if (s.nr_ips) {
		/* distinct stacks, as the file has them (finished in user space too);
		 * the set holds values above 1 */
		uint64_t hash = hash_bytes(chain, s.nr_ips * sizeof(*chain));

		r->st.stacks.max = DISTINCT_STACKS_MAX;
		u64set__add(&r->st.stacks, hash > 1 ? hash : 2);
	}
	size = perf_sample__encode(r->ev.sample_type, &s, buf, cap);
	if (size < 0)
		return size;
	h->misc = s.nr_ips && chain[0] == PERF_CONTEXT_KERNEL ? PERF_RECORD_MISC_KERNEL :
								  PERF_RECORD_MISC_USER;
	return size;
}

int encode_waker(struct record *r, const struct offcpu_key *k, uint64_t time, uint64_t period,
		 uint32_t cpu, char *buf, size_t cap)
{
	uint64_t chain[2 * OFFCPU_MAX_STACK_DEPTH + 4];
	char raw[sizeof(struct offcpu_waker_raw) + 8];
	const struct offcpu_wakeup *wk = r->o.wakers ? stackstore__wakeup(r->stacks, k->wakeup) : NULL;
	const struct offcpu_chain *ch;
	struct offcpu_waker w = {
		.wakee_pid = k->tgid,
		.wakee_tid = k->pid,
		.state = k->state,
	};
	struct perf_sample s = {
		.id = r->ev.waker_id,
		.time = time,
		.cpu = cpu,
		.period = period,
		.ips = chain,
		.raw = raw,
	};
	struct perf_event_header *h = (void *)buf;
	unsigned unw;
	uint32_t i;
	int size;

	if (!wk || !wk->kind)
		return 0;
	w.kind = wk->kind;
	s.pid = wk->tgid;
	s.tid = wk->pid;
	ch = stackstore__chain(r->stacks, wk->chain);
	w.nr_chain = ch ? ch->nr : 1;
	if (w.nr_chain < 1 || w.nr_chain > OFFCPU_CHAIN_MAX)
		w.nr_chain = 1;
	for (i = 0; i < w.nr_chain; i++)
		snprintf(w.chain[i], sizeof(w.chain[i]), "%.16s", ch ? ch->names[i] : "[unknown]");
	/* the wait it ended is the offcpu-time sample right before it: not repeated */
	size = waker__encode(&w, NULL, 0, raw, sizeof(raw));
	if (size < 0)
		return size;
	s.raw_size = (uint32_t)size;
	s.nr_ips = callchain(r, wk->tgid, wk->pid, wk->kstack, wk->ustack, chain, &s.ip, &unw);
	size = perf_sample__encode(WAKER_SAMPLE_TYPE, &s, buf, cap);
	if (size < 0)
		return size;
	h->misc = s.nr_ips && chain[0] == PERF_CONTEXT_KERNEL ? PERF_RECORD_MISC_KERNEL :
								  PERF_RECORD_MISC_USER;
	return size;
}

/*
 * The named records just pushed into @q (from @first on) are known to
 * named.c at once: a file may end before they are written (a split in the
 * middle of a round), and a sample written into it before them needs them.
 */
static void names_seen(struct record *r, struct perf_queue *q, size_t first)
{
	int kind;

	for (; first < q->nr; first++)
		named__seen(r->named, perf_queue__get(q, first, &kind));
}

int encode_wait(struct record *r, const struct offcpu_key *k, uint64_t time, uint64_t period,
		uint32_t cpu, char *buf, size_t cap)
{
	char raw[sizeof(struct offcpu_wait_raw) + 8];
	const struct offcpu_wait *w = waitstore__get(r->waits, k->wait);
	struct perf_sample s = {
		.id = r->ev.wait_id,
		.pid = k->tgid,
		.tid = k->pid,
		.time = time,
		.cpu = cpu,
		.period = period,
		.raw = raw,
	};
	struct perf_event_header *h = (void *)buf;
	int size;

	/* an object of another process (a stale key) is none of this wait's */
	if (!w || w->tgid != k->tgid)
		return 0;
	s.addr = w->addr;
	size = wait__encode(w, k->tgid, k->pid,
			    (w->flags & OFFCPU_WAIT_AT_END) ? r->end_ns : 0, raw, sizeof(raw));
	if (size < 0)
		return size;
	s.raw_size = (uint32_t)size;
	size = perf_sample__encode(WAIT_SAMPLE_TYPE, &s, buf, cap);
	if (size < 0)
		return size;
	h->misc = PERF_RECORD_MISC_USER;
	return size;
}

/* One offcpu-time sample (and its offcpu-wait and offcpu-waker samples) into @q. */
static int push_one(struct record *r, struct perf_queue *q, const struct offcpu_key *k,
		    uint64_t time, uint64_t period, uint32_t cpu, int kind, bool lock)
{
	/* writer threads encode too (under the lock), each in its own buffer */
	static __thread char b[(4 * OFFCPU_MAX_STACK_DEPTH + 64) * 8 + 256];
	unsigned unw;
	size_t first;
	int size;

	if (lock)
		pthread_mutex_lock(&r->lock);
	size = encode_offcpu(r, k, time, period, cpu, kind, b, sizeof(b), &unw);
	if (lock)
		pthread_mutex_unlock(&r->lock);
	if (size < 0)
		return size;
	first = q->nr;
	size = python__flush(r->py, r, q, r->files, time, kind) ?:
	       perfmap__flush(r->perfmap, q, r->ev.sideband_id, r->files, time, kind) ?:
	       v8__flush(r->v8, q, r->ev.sideband_id, r->files, time, kind);
	names_seen(r, q, first);
	size = size ?: perf_queue__push(q, (const void *)b, time, kind);
	if (size)
		return size;
	/* what account() counts, known here */
	perf_queue__set_aux(q, period, k->pid | (uint64_t)unw << 32);
	if (k->wait) {
		if (lock)
			pthread_mutex_lock(&r->lock);
		size = encode_wait(r, k, time, period, cpu, b, sizeof(b));
		if (lock)
			pthread_mutex_unlock(&r->lock);
		if (size < 0)
			return size;
		/* right after its block: equal times keep their order */
		if (size && (size = perf_queue__push(q, (const void *)b, time, SRC_WAIT)))
			return size;
	}
	if (lock)
		pthread_mutex_lock(&r->lock);
	size = encode_waker(r, k, time, period, cpu, b, sizeof(b));
	if (lock)
		pthread_mutex_unlock(&r->lock);
	if (size <= 0)
		return size;
	first = q->nr;
	size = python__flush(r->py, r, q, r->files, time, SRC_WAKER) ?:
	       perfmap__flush(r->perfmap, q, r->ev.sideband_id, r->files, time, SRC_WAKER) ?:
	       v8__flush(r->v8, q, r->ev.sideband_id, r->files, time, SRC_WAKER);
	names_seen(r, q, first);
	if (size)
		return size;
	/* right after its block: equal times keep their order */
	return perf_queue__push(q, (const void *)b, time, SRC_WAKER);
}

int push_block(struct record *r, struct perf_queue *q, const struct offcpu_key *k, uint64_t time,
	       uint64_t period, uint64_t runq, uint32_t cpu, int kind, bool lock)
{
	struct offcpu_key rk;
	int err = 0;

	/* under way at the end and woken: its wait ended, its wait for a CPU did not */
	if (period || !runq)
		err = push_one(r, q, k, time, period, cpu,
			       kind == SRC_OPEN_END && runq ? SRC_OFFCPU : kind, lock);
	if (err || !runq)
		return err;
	/* the wait for a CPU after the wakeup: its own state, no waker, no object */
	rk = *k;
	rk.state = OFFCPU_STATE_RUNQ;
	rk.wakeup = 0;
	rk.wait = 0;
	return push_one(r, q, &rk, time, runq, cpu, kind, lock);
}

/* Events first: pipe mode needs them before any record. */
int declare_events(struct record *r)
{
	struct perf_event_attr attr = { 0 };
	const uint64_t *ids;
	size_t nids;
	int err;

	attr.size = PERFDATA_ATTR_SIZE;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_period = 1;
	attr.sample_type = r->ev.sample_type;
	attr.sample_id_all = 1;
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	if (!(r->o.stacks & STACKS_KERNEL)) {
		attr.exclude_kernel = 1;
		attr.exclude_callchain_kernel = 1;
	}
	if (!(r->o.stacks & STACKS_USER))
		attr.exclude_callchain_user = 1;
	err = perf_writer__add_event(r->w, &attr, OFFCPU_EVENT_NAME, &r->ev.offcpu_id, 1);
	if (!err && r->o.wakers) {
		/* the same event for perf; the waker's stacks, the wakee in its payload */
		attr.sample_type = WAKER_SAMPLE_TYPE;
		err = perf_writer__add_event(r->w, &attr, OFFCPU_WAKER_EVENT_NAME, &r->ev.waker_id,
					     1);
	}
	if (!err && r->ev.wait_id) {
		/* what the waits were on: the block's thread, its object in the payload */
		attr.sample_type = WAIT_SAMPLE_TYPE;
		err = perf_writer__add_event(r->w, &attr, OFFCPU_WAIT_EVENT_NAME, &r->ev.wait_id, 1);
	}
	if (!err && r->us && r->ev.before_id) {
		/* the threads blocked at the start, how long they had been */
		attr.sample_type = r->ev.sample_type;
		err = perf_writer__add_event(r->w, &attr, OFFCPU_BEFORE_EVENT_NAME, &r->ev.before_id,
					     1);
	}
	if (!err && r->oncpu) {
		nids = perf_rings__ids(r->oncpu, &ids);
		err = perf_writer__add_event(r->w, perf_rings__attr(r->oncpu), ONCPU_EVENT_NAME,
					     ids, nids);
	}
	if (!err) {
		nids = perf_rings__ids(r->sb, &ids);
		err = perf_writer__add_event(r->w, perf_rings__attr(r->sb), "dummy:u", ids, nids);
	}
	if (!err)
		err = perf_writer__add_host_features(r->w, cmdline_argc, cmdline_argv);
	if (!err) {
		/* perf's CLOCK_DATA: samples' CLOCK_MONOTONIC against the wall clock, read
		 * together, for perf script -F +tod and the report's "since 14:02:07" */
		struct {
			uint32_t version, clockid;
			uint64_t wall_ns, clock_ns;
		} cd = { 1, CLOCK_MONOTONIC, 0, 0 };
		struct timespec wall, mono;

		clock_gettime(CLOCK_REALTIME, &wall);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		cd.wall_ns = (uint64_t)wall.tv_sec * 1000000000ULL + (uint64_t)wall.tv_nsec;
		cd.clock_ns = (uint64_t)mono.tv_sec * 1000000000ULL + (uint64_t)mono.tv_nsec;
		err = perf_writer__set_feature(r->w, FEAT_CLOCK_DATA, &cd, sizeof(cd));
	}
	return err;
}
