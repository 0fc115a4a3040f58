// SPDX-License-Identifier: GPL-2.0
/*
 * One round: every source pushes into a batch, the batch is sorted by time,
 * filtered, counted and written.
 */
#include <errno.h>
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
#include "../util/util.h"

/* The LOST record's count, 0 for any other record. */
uint64_t lost_count(const struct perf_event_header *h)
{
	struct perf_record_lost l;

	return h->type == PERF_RECORD_LOST && perf_record__copy(h, &l, sizeof(l)) ? l.lost : 0;
}



int push_sideband(const struct perf_event_header *h, void *arg)
{
	struct sink *k = arg;
	struct perf_sample s = { 0 };

	perf_sample_id__parse(SIDEBAND_SAMPLE_TYPE, h, &s);
	return perf_queue__push(k->batch, h, s.time, SRC_SIDEBAND);
}

/*
 * An on-CPU sample is parsed here once: its process and thread go with it
 * (aux[0]: 1 + pid, 0 when it did not parse; aux[1]: tid) for keep().
 */
int push_oncpu(const struct perf_event_header *h, void *arg)
{
	struct sink *k = arg;
	struct perf_sample s = { 0 };
	const char *why;
	bool parsed = false;
	int err;

	if (h->type == PERF_RECORD_SAMPLE)
		parsed = !perf_sample__parse(&k->r->ev.oncpu_attr, h, &s, &why);
	else
		perf_sample_id__parse(k->r->ev.oncpu_attr.sample_type, h, &s);
	err = perf_queue__push(k->batch, h, s.time, SRC_ONCPU);
	if (!err && parsed)
		perf_queue__set_aux(k->batch, 1 + (uint64_t)s.pid, s.tid);
	return err;
}

int push_stream(const struct offcpu_event *e, void *arg)
{
	struct sink *k = arg;

	return push_block(k->r, k->batch, &e->key, e->time, e->period, e->runq_ns, e->cpu, SRC_OFFCPU,
			  k->shared);
}

/*
 * Count what is written, not what was read: a snapshot skips what it wrote
 * before. A streamed block's period and thread come with it from the queue.
 */
static void account(struct record *r, const struct perf_event_header *h, int kind,
		    const uint64_t *aux)
{
	if (h->type == PERF_RECORD_LOST) {
		if (kind == SRC_SIDEBAND)
			r->st.sideband_lost += lost_count(h);
		else
			r->st.oncpu_lost += lost_count(h);
		return;
	}
	if (h->type != PERF_RECORD_SAMPLE)
		return;
	if (kind == SRC_ONCPU) {
		r->st.oncpu_samples++;
	} else if (kind == SRC_OFFCPU || kind == SRC_SUMMED || kind == SRC_OPEN_END) {
		if (kind != SRC_SUMMED)
			r->st.streamed_samples++;
		else
			r->st.summed_samples++;
		r->st.offcpu_ns += aux[0];
		intset__add(&r->st.threads, (int)(uint32_t)aux[1]);
		if (aux[1] >> 32)
			r->st.unwind_ns[((aux[1] >> 32) - 1) % UNW_REASONS] += aux[0];
	}
}

/* A process exited (seen in time order): what record keeps of it can go. */
static void process_exited(struct record *r, const struct perf_event_header *h)
{
	struct perf_record_task task;

	if (!perf_record__copy(h, &task, sizeof(task)) || task.pid != task.tid)
		return;
	perfmap__exit(r->perfmap, (int)task.pid);
	python__exit(r->py, task.pid);
	v8__exit(r->v8, task.pid);
	named__exit(r->named, task.pid);
}

/*
 * The process filter, in time order: a FORK is seen before its child's
 * records. A writer thread keeps side-band whole (a FORK on another thread's
 * CPUs may make its child followed) and asks rd->follows about on-CPU samples.
 */
static bool keep(struct record *r, struct round *rd, const struct perf_event_header *h, int kind,
		 const uint64_t *aux)
{
	bool tracked;
	int pid, tid;

	if (kind == SRC_SIDEBAND)
		return rd->follows || targets__keep_sideband(&r->tg, h);
	if (kind != SRC_ONCPU || h->type != PERF_RECORD_SAMPLE)
		return true;
	if (!aux[0])
		return false; /* it did not parse (push_oncpu()) */
	pid = (int)(aux[0] - 1);
	tid = (int)aux[1];
	if (pid == r->self)
		return false; /* offcpu itself, on a cpu of -a or -C */
	tracked = rd->follows ? rd->follows(rd->arg, pid) : intset__has(&r->tg.tracked, pid);
	return targets__keep_sample(&r->tg, tid, tracked);
}

/* The sample_type of the samples of source @kind whose frames may be named; 0: none. */
static uint64_t sample_type_of(const struct record *r, int kind)
{
	if (kind == SRC_OFFCPU || kind == SRC_SUMMED)
		return r->ev.sample_type;
	return kind == SRC_WAKER ? WAKER_SAMPLE_TYPE : 0;
}

int write_to_writer(void *arg, const struct perf_event_header *h)
{
	return perf_writer__write(arg, h);
}

int round__write(struct record *r, struct round *rd)
{
	static const struct perf_event_header fin = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
	size_t i, written = 0;
	int err = 0, kind;

	perf_queue__sort(rd->batch);
	for (i = 0; i < rd->batch->nr && !err; i++) {
		const struct perf_event_header *h = perf_queue__get(rd->batch, i, &kind);
		uint64_t t = rd->batch->refs[i].time;

		if (t && t <= rd->after) {
			named__seen(r->named, h); /* for its samples that are not */
			continue; /* already in an earlier snapshot */
		}
		if (!keep(r, rd, h, kind, rd->batch->refs[i].aux))
			continue;
		if (rd->shared)
			pthread_mutex_lock(&r->lock);
		account(r, h, kind, rd->batch->refs[i].aux);
		err = maptab__observe(r->maps, h);
		if (kind == SRC_SIDEBAND && h->type == PERF_RECORD_EXIT)
			process_exited(r, h);
		if (rd->shared)
			pthread_mutex_unlock(&r->lock);
		if (h->type == PERF_RECORD_SAMPLE)
			perf_writer__note_time(rd->w, t);
		/* a sample's named frames this file lacks (a file after the first, a
		 * split, a snapshot): written before it; a named mapping: kept */
		err = err ?: named__before(r->named, h, sample_type_of(r, kind), t, rd->stream,
					   write_to_writer, rd->w);
		err = err ?: perf_writer__write(rd->w, h);
		err = err ?: named__after(r->named, h, rd->stream, write_to_writer, rd->w);
		written += !err;
		if (!err && t > rd->newest)
			rd->newest = t;
		/* a size limit holds within a round too: the rest goes to a new file */
		if (!err && rd->split && i + 1 < rd->batch->nr &&
		    rd->batch->refs[i + 1].kind != SRC_WAKER && rd->batch->refs[i + 1].kind != SRC_WAIT) {
			err = rd->split(r);
			rd->w = r->w;
		}
	}
	if (!err && written && rd->finish)
		err = perf_writer__write(rd->w, &fin);
	/*
	 * Whatever ends offcpu from now on (SIGKILL, the OOM killer, a crash),
	 * a reader gets this round: on disk, and in the header (a flush for a
	 * pipe or a data.N stream).
	 */
	if (!err && written)
		err = perf_writer__checkpoint(rd->w);
	return err;
}

int push_summed(const struct offcpu_key *key, const struct offcpu_val *v, void *arg)
{
	struct summed_sink *ss = arg;

	return push_block(ss->k->r, ss->k->batch, key, ss->time, v->total_ns, v->runq_ns, v->last_cpu,
			  ss->open_end ? SRC_OPEN_END : SRC_SUMMED, false);
}

/*
 * --overwrite: the summed blocks drained for a snapshot, kept until a
 * snapshot is on disk (r->files counts it). One that failed for lack of
 * space (flight.c) leaves them to the next: the kernel has let them go.
 */
static struct {
	struct perf_queue q;
	size_t files; /* r->files when they were drained */
} unsaved;

/*
 * The summed blocks alone, stamped now, as one round into r->w: with writer
 * threads (whose files hold the streamed blocks; perf merges the files by
 * time), in a snapshot, and when a file ends mid-round. The stack caches are
 * shared with writer threads: locked while they are read and pruned.
 */
int round__write_sums(struct record *r)
{
	/* a queue of its own: a file ended mid-round still has r->batch to write */
	struct perf_queue local = { 0 }, *q = &local;
	struct sink k = { r, q, false };
	struct summed_sink ss = { &k, now_ns() };
	struct round rd = { .w = r->w, .batch = q, .shared = r->wt != NULL };
	long n;
	int err;

	if (r->o.overwrite) {
		if (unsaved.files != r->files)
			perf_queue__clear(&unsaved.q); /* the last snapshot has them */
		else if (unsaved.q.nr)
			pr_debug("%zu summed blocks of a skipped snapshot go into this one",
				 unsaved.q.nr);
		unsaved.files = r->files;
		k.batch = rd.batch = q = &unsaved.q;
	}
	if (r->wt)
		pthread_mutex_lock(&r->lock);
	n = collector__drain(r->coll, push_summed, &ss);
	if (n >= 0) {
		stackstore__prune(r->stacks);
		waitstore__prune(r->waits);
		r->st.flushes++;
	}
	if (r->wt)
		pthread_mutex_unlock(&r->lock);
	err = n < 0 ? (int)n : round__write(r, &rd);
	perf_queue__free(&local);
	return err;
}
