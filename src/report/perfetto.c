// SPDX-License-Identifier: GPL-2.0
/*
 * Perfetto output (perfetto.h): a protobuf Trace, encoded by hand and
 * written packet by packet as the session hands out its samples. Field
 * numbers are those of Perfetto's protos (trace_packet.proto,
 * track_descriptor.proto, track_event.proto, debug_annotation.proto).
 *
 * Tracks: one per process (uuid PROC | pid), one per thread (THREAD | pid,
 * tid; its parent the process's), each declared before its first event and
 * again when its name changes; a waking thread's track is declared from the
 * waker's pid, tid and name. Summed blocks go to a counter track under
 * their thread (COUNTER | pid, tid).
 *
 * Blocks (their real start and end, the run queue part of a block split at
 * its wakeup, perf's placeholder times) are blocks.h's: each thread's last
 * block is held there until its next sample says where it ended.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "blocks.h"
#include "pb.h"
#include "perfetto.h"
#include "perfetto_sched.h"
#include "../util/hashmap.h"
#include "../util/util.h"

/* Field numbers. */
enum {
	TRACE_PACKET = 1,
	PKT_TIMESTAMP = 8,
	PKT_SEQ_ID = 10,
	PKT_TRACK_EVENT = 11,
	PKT_SEQ_FLAGS = 13,
	PKT_TRACK_DESCRIPTOR = 60,
	TD_UUID = 1,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT = 5,
	TD_COUNTER = 8,
	PD_PID = 1,
	PD_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_NAME = 5,
	TE_ANNOTATION = 4,
	TE_TYPE = 9,
	TE_TRACK = 11,
	TE_NAME = 23,
	TE_COUNTER_VALUE = 30,
	TE_FLOW = 47,
	TE_TERMINATING_FLOW = 48,
	TE_CALLSTACK = 55,
	CS_FRAME = 1,
	FR_FUNCTION = 1,
	FR_FILE = 2,
	FR_LINE = 3,
	DA_UINT = 3,
	DA_STRING = 6,
	DA_NAME = 10,
};

enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_ID 1

#define UUID_PROC (1ULL << 60)
#define UUID_THREAD (2ULL << 60)
#define UUID_COUNTER (3ULL << 60)

struct pf_proc {
	uint32_t pid;
	uint32_t name; /* strtab, as declared; 0: declared without a name */
	bool by_leader; /* named by its main thread's command */
};

struct pf_thread {
	uint32_t pid, tid;
	uint32_t idx; /* its track's id: pids and tids of a damaged file may be any value */
	uint32_t name; /* strtab, as declared */
	bool counter; /* its counter track is declared */
	bool has_sum;
	uint64_t last_end; /* where its last slice ended: the next begins no earlier */
	uint32_t last_cpu; /* where it last ran (its last switch-in); UINT32_MAX: not known */
	uint64_t sum_time, sum_ns; /* summed blocks of one interval, until it ends */
	uint64_t sum_start; /* where that interval began, as far as known */
};

struct perfetto {
	struct sample_consumer c;
	const struct profile *p;
	FILE *f;
	struct pb pkt, ev, sub, sub2, sub3;
	struct blocks blocks;
	struct pf_sched *sched; /* Perfetto's own thread states, kept until the end */
	bool first; /* no packet written yet */
	struct hashmap thread_idx, proc_idx;
	struct pf_thread **threads; /* each its own: a pointer stays valid */
	struct pf_proc *procs;
	size_t nr_threads, cap_threads, nr_procs, cap_procs;
	uint64_t next_flow;
	int werr; /* the first write error */
	struct perfetto_stats st;
	char *buf; /* names and stacks as text */
	size_t buf_cap;
};

/* Begin a packet: the sequence id (and the first packet's flag); @ts 0: no timestamp. */
static void packet_start(struct perfetto *t, uint64_t ts)
{
	if (ts)
		pb_uint(&t->pkt, PKT_TIMESTAMP, ts);
	pb_uint(&t->pkt, PKT_SEQ_ID, SEQ_ID);
	if (t->first)
		pb_uint(&t->pkt, PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	t->first = false;
}

/* Write the packet built in t->pkt as one Trace.packet. */
static int put_packet(struct perfetto *t)
{
	uint8_t hdr[1 + PB_VARINT_MAX];
	size_t n, len = t->pkt.len;
	int err = t->pkt.err;

	t->pkt.len = 0;
	t->pkt.err = 0;
	if (err)
		return err;
	hdr[0] = (TRACE_PACKET << 3) | 2;
	n = 1 + pb_varint_enc(hdr + 1, len);
	errno = 0;
	if (fwrite(hdr, 1, n, t->f) != n || fwrite(t->pkt.d, 1, len, t->f) != len) {
		if (!t->werr)
			t->werr = errno ? -errno : -EIO;
		return t->werr;
	}
	return 0;
}

static const char *str(const struct perfetto *t, uint32_t i)
{
	return strtab__get(&t->p->str, i);
}

/* A process's track, declared (again when its main thread names it, or renames it). */
static int declare_proc(struct perfetto *t, uint32_t pid, uint32_t name, bool leader)
{
	struct pf_proc *pr;
	int created;
	uint64_t *v = hashmap__upsert(&t->proc_idx, &pid, sizeof(pid), &created);

	if (!v)
		return -ENOMEM;
	if (created) {
		if (t->nr_procs == t->cap_procs) {
			size_t c = t->cap_procs ? 2 * t->cap_procs : 64;
			struct pf_proc *n = realloc(t->procs, c * sizeof(*n));

			if (!n)
				return -ENOMEM;
			t->procs = n;
			t->cap_procs = c;
		}
		*v = t->nr_procs++;
		t->procs[*v] = (struct pf_proc){ .pid = pid };
		t->st.processes++;
	}
	pr = &t->procs[*v];
	/* the main thread's command names it (again after an exec); another's only until then */
	if (!created && (!name || pr->name == name || (!leader && (pr->by_leader || pr->name))))
		return 0;
	pr->name = name;
	pr->by_leader = leader && name;
	packet_start(t, 0);
	pb_uint(&t->ev, TD_UUID, UUID_PROC | pid);
	pb_uint(&t->sub, PD_PID, pid);
	if (name)
		pb_str(&t->sub, PD_NAME, str(t, name));
	pb_msg(&t->ev, TD_PROCESS, &t->sub);
	pb_msg(&t->pkt, PKT_TRACK_DESCRIPTOR, &t->ev);
	return put_packet(t);
}

static uint64_t thread_uuid(const struct pf_thread *th)
{
	return UUID_THREAD | th->idx;
}

/* The thread's state, its track declared (again when its name changed); NULL: -ENOMEM or a write failed. */
static struct pf_thread *declare_thread(struct perfetto *t, uint32_t pid, uint32_t tid,
					uint32_t name, int *err)
{
	uint32_t key[2] = { pid, tid };
	struct pf_thread *th;
	int created;
	uint64_t *v = hashmap__upsert(&t->thread_idx, key, sizeof(key), &created);

	*err = -ENOMEM;
	if (!v)
		return NULL;
	if (created) {
		if (t->nr_threads == t->cap_threads) {
			size_t c = t->cap_threads ? 2 * t->cap_threads : 64;
			struct pf_thread **n = realloc(t->threads, c * sizeof(*n));

			if (!n)
				return NULL;
			t->threads = n;
			t->cap_threads = c;
		}
		th = calloc(1, sizeof(*th));
		if (!th)
			return NULL;
		th->pid = pid;
		th->tid = tid;
		th->last_cpu = UINT32_MAX;
		th->idx = (uint32_t)t->nr_threads;
		*v = t->nr_threads;
		t->threads[t->nr_threads++] = th;
		t->st.threads++;
	}
	th = t->threads[*v];
	*err = 0;
	if (!created && (!name || name == th->name))
		return th;
	*err = declare_proc(t, pid, name, pid == tid);
	if (*err)
		return NULL;
	th->name = name;
	packet_start(t, 0);
	pb_uint(&t->ev, TD_UUID, thread_uuid(th));
	pb_uint(&t->ev, TD_PARENT, UUID_PROC | pid);
	pb_uint(&t->sub, THD_PID, pid);
	pb_uint(&t->sub, THD_TID, tid);
	if (name)
		pb_str(&t->sub, THD_NAME, str(t, name));
	pb_msg(&t->ev, TD_THREAD, &t->sub);
	pb_msg(&t->pkt, PKT_TRACK_DESCRIPTOR, &t->ev);
	*err = put_packet(t);
	return *err ? NULL : th;
}

static void annotate_str(struct perfetto *t, const char *name, const char *value)
{
	pb_str(&t->sub, DA_NAME, name);
	pb_str(&t->sub, DA_STRING, value);
	pb_msg(&t->ev, TE_ANNOTATION, &t->sub);
}

static void annotate_uint(struct perfetto *t, const char *name, uint64_t value)
{
	pb_str(&t->sub, DA_NAME, name);
	pb_uint(&t->sub, DA_UINT, value);
	pb_msg(&t->ev, TE_ANNOTATION, &t->sub);
}

/* Room for @n bytes of text in t->buf; false when out of memory. */
static bool text_room(struct perfetto *t, size_t n)
{
	char *nb;

	if (n <= t->buf_cap)
		return true;
	nb = realloc(t->buf, n);
	if (!nb)
		return false;
	t->buf = nb;
	t->buf_cap = n;
	return true;
}

/* @stack's frames, outermost first, as the event's callstack. */
static void put_callstack(struct perfetto *t, uint32_t stack)
{
	const struct profile *p = t->p;
	const uint32_t *fr;
	uint32_t nr, i;

	if (stack >= p->nr_stacks)
		return;
	fr = profile__stack_frames(p, stack, &nr);
	if (!nr)
		return;
	for (i = 0; i < nr; i++) {
		const struct profile_frame *f = fr[i] < p->nr_frames ? &p->frames[fr[i]] : NULL;

		pb_str(&t->sub3, FR_FUNCTION, profile__frame_name(p, fr[i]));
		if (f && f->file)
			pb_str(&t->sub3, FR_FILE, str(t, f->file));
		if (f && f->line)
			pb_uint(&t->sub3, FR_LINE, f->line);
		pb_msg(&t->sub2, CS_FRAME, &t->sub3);
	}
	pb_msg(&t->ev, TE_CALLSTACK, &t->sub2);
}

/* @stack as folded text, outermost first: "main;read;..." */
static const char *stack_text(struct perfetto *t, uint32_t stack)
{
	const struct profile *p = t->p;
	const uint32_t *fr;
	uint32_t nr, i;
	size_t len = 0;

	if (!text_room(t, 256))
		return "";
	t->buf[0] = 0;
	if (stack >= p->nr_stacks)
		return t->buf;
	fr = profile__stack_frames(p, stack, &nr);
	for (i = 0; i < nr; i++) {
		const char *name = profile__frame_name(p, fr[i]);
		size_t n = strlen(name);

		if (!text_room(t, len + n + 2))
			return "";
		if (i)
			t->buf[len++] = ';';
		memcpy(t->buf + len, name, n + 1);
		len += n;
	}
	return t->buf;
}

/* "w <- b <- c": the waker and the chain ("b;c") before it */
static const char *waker_text(struct perfetto *t, const struct report_sample *s)
{
	const char *w = str(t, s->waker), *c = s->chain ? str(t, s->chain) : "";
	size_t len = strlen(w), i;

	if (!text_room(t, len + 4 * strlen(c) + 8))
		return "";
	memcpy(t->buf, w, len);
	if (*c) {
		memcpy(t->buf + len, " <- ", 4);
		len += 4;
	}
	for (i = 0; c[i]; i++) {
		if (c[i] == ';') {
			memcpy(t->buf + len, " <- ", 4);
			len += 4;
		} else {
			t->buf[len++] = c[i];
		}
	}
	t->buf[len] = 0;
	return t->buf;
}

/* A slice's name: its state and the function of its own it waits in: "S wakee_pipe_a". */
static const char *slice_name(struct perfetto *t, const struct report_sample *s)
{
	const char *st = profile__state_name(s->state), *fn;
	uint32_t own = s->stack < t->p->nr_stacks ? profile__own_frame(t->p, s->stack) : UINT32_MAX;

	fn = own == UINT32_MAX ? "[no stack]" : profile__frame_name(t->p, own);
	if (!text_room(t, strlen(st) + strlen(fn) + 2))
		return "";
	sprintf(t->buf, "%s %s", st, fn);
	return t->buf;
}

/* A slice on @th's track from @begin to @end for wait @s; with a waker thread, the arrow to its end. */
static int put_slice(struct perfetto *t, struct pf_thread *th, const struct report_sample *s,
		     uint64_t begin, uint64_t end)
{
	struct pf_thread *w = NULL;
	uint64_t flow = 0, uuid = thread_uuid(th);
	uint32_t tid = th->tid;
	char name[96];
	int err;

	if (begin < th->last_end) /* slices of a track nest or follow: none overlaps */
		begin = th->last_end;
	if (end < begin)
		end = begin;
	th->last_end = end;
	if (s->waker_tid) {
		w = declare_thread(t, s->waker_pid, s->waker_tid, s->waker, &err);
		if (!w)
			return err;
		flow = ++t->next_flow;
		/* the waker is running: its instant, the arrow's tail */
		packet_start(t, end);
		pb_uint(&t->ev, TE_TYPE, TYPE_INSTANT);
		pb_uint(&t->ev, TE_TRACK, thread_uuid(w));
		snprintf(name, sizeof(name), "wakes %s %u", str(t, th->name), tid);
		pb_str(&t->ev, TE_NAME, name);
		pb_fixed64(&t->ev, TE_FLOW, flow);
		pb_msg(&t->pkt, PKT_TRACK_EVENT, &t->ev);
		err = put_packet(t);
		if (err)
			return err;
		t->st.flows++;
	}
	packet_start(t, begin);
	pb_uint(&t->ev, TE_TYPE, TYPE_BEGIN);
	pb_uint(&t->ev, TE_TRACK, uuid);
	pb_str(&t->ev, TE_NAME, slice_name(t, s));
	annotate_str(t, "state", profile__state_name(s->state));
	annotate_uint(t, "off_cpu_ns", s->period);
	if (s->waker) {
		annotate_str(t, "waker", waker_text(t, s));
		if (s->waker_tid)
			annotate_uint(t, "waker_tid", s->waker_tid);
		if (s->waker_stack != UINT32_MAX)
			annotate_str(t, "waker_stack", stack_text(t, s->waker_stack));
	}
	put_callstack(t, s->stack);
	pb_msg(&t->pkt, PKT_TRACK_EVENT, &t->ev);
	err = put_packet(t);
	if (err)
		return err;
	packet_start(t, end);
	pb_uint(&t->ev, TE_TYPE, TYPE_END);
	pb_uint(&t->ev, TE_TRACK, uuid);
	if (flow)
		pb_fixed64(&t->ev, TE_TERMINATING_FLOW, flow);
	pb_msg(&t->pkt, PKT_TRACK_EVENT, &t->ev);
	t->st.slices++;
	return put_packet(t);
}

/* A block from blocks.h: its slice on its thread's track. */
static int on_block(void *arg, const struct block *b)
{
	struct perfetto *t = arg;
	const struct report_sample *s = b->s;
	struct pf_thread *th;
	int err;

	th = declare_thread(t, s->pid, s->tid, s->comm == UINT32_MAX ? 0 : s->comm, &err);
	if (!th)
		return err;
	pf_sched__block(t->sched, b, str(t, th->name), &th->last_cpu);
	return put_slice(t, th, s, b->start, b->end);
}

/* The thread's summed blocks of one interval, as its counter's value at the interval's end. */
static int flush_sum(struct perfetto *t, struct pf_thread *th)
{
	if (!th->has_sum)
		return 0;
	th->has_sum = false;
	if (!th->counter) {
		packet_start(t, 0);
		pb_uint(&t->ev, TD_UUID, UUID_COUNTER | (thread_uuid(th) & ~UUID_THREAD));
		pb_uint(&t->ev, TD_PARENT, thread_uuid(th));
		pb_str(&t->ev, TD_NAME, "off-CPU summed, ns");
		pb_msg(&t->ev, TD_COUNTER, &t->sub);
		pb_msg(&t->pkt, PKT_TRACK_DESCRIPTOR, &t->ev);
		int err = put_packet(t);

		if (err)
			return err;
		th->counter = true;
	}
	/* the interval's total over the interval, back to 0 at its end: a
	 * counter holds its value until the next one */
	for (int i = 0; i < 2; i++) {
		int err;

		/* the first interval's start is not known: at least its total before its end */
		uint64_t start = th->sum_start ? th->sum_start :
				 th->sum_time - (th->sum_ns < th->sum_time ? th->sum_ns : th->sum_time - 1);

		packet_start(t, i ? th->sum_time : start);
		pb_uint(&t->ev, TE_TYPE, TYPE_COUNTER);
		pb_uint(&t->ev, TE_TRACK, UUID_COUNTER | (thread_uuid(th) & ~UUID_THREAD));
		pb_uint(&t->ev, TE_COUNTER_VALUE, i ? 0 : th->sum_ns);
		pb_msg(&t->pkt, PKT_TRACK_EVENT, &t->ev);
		err = put_packet(t);
		if (err)
			return err;
	}
	return 0;
}

static int on_sample(struct sample_consumer *c, const struct report_sample *s)
{
	struct perfetto *t = consumer_of(c, struct perfetto, c);
	struct pf_thread *th;
	int err, kind;

	if (!(s->flags & SAMPLE_ROWS) && s->role != SAMPLE_BEFORE)
		return 0;
	kind = blocks__sample(&t->blocks, s);
	if (kind != BLOCKS_SUMMED)
		return kind < 0 ? kind : 0;
	th = declare_thread(t, s->pid, s->tid, s->comm == UINT32_MAX ? 0 : s->comm, &err);
	if (!th)
		return err;
	t->st.summed++;
	t->st.summed_ns += s->period;
	if (th->has_sum && th->sum_time != s->time && (err = flush_sum(t, th)))
		return err;
	if (!th->has_sum) {
		th->sum_ns = 0;
		th->sum_start = s->interval_start;
	}
	th->has_sum = true;
	th->sum_time = s->time;
	th->sum_ns += s->period;
	return 0;
}

static int on_task(struct sample_consumer *c, const struct report_task *k)
{
	struct perfetto *t = consumer_of(c, struct perfetto, c);
	uint32_t key[2] = { k->pid, k->tid };
	uint64_t *v;
	int err;

	if (k->kind != TASK_EXIT)
		return 0;
	err = blocks__exit(&t->blocks, k->pid, k->tid);
	if (err || !(v = hashmap__find(&t->thread_idx, key, sizeof(key))))
		return err;
	return flush_sum(t, t->threads[*v]);
}

struct perfetto *perfetto__new(const struct profile *p, FILE *f)
{
	struct perfetto *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->p = p;
	t->f = f;
	t->first = true;
	t->c.sample = on_sample;
	t->c.task = on_task;
	blocks__init(&t->blocks, on_block, t);
	t->sched = pf_sched__new();
	if (!t->sched) {
		free(t);
		return NULL;
	}
	return t;
}

struct sample_consumer *perfetto__consumer(struct perfetto *t)
{
	return &t->c;
}

int perfetto__finish(struct perfetto *t, struct perfetto_stats *st)
{
	size_t i;
	int err = 0;

	err = blocks__finish(&t->blocks);
	for (i = 0; i < t->nr_threads && !err; i++)
		err = flush_sum(t, t->threads[i]);
	t->st.untimed = t->blocks.untimed;
	/* thread states only where every block has its times: none was summed */
	if (!err)
		err = pf_sched__finish(t->sched, t->f, !t->st.summed);
	if (!t->st.summed)
		t->st.sched_events = pf_sched__events(t->sched);
	if (!err && t->first) { /* an empty trace is still one: a packet that says so */
		packet_start(t, 0);
		err = put_packet(t);
	}
	errno = 0;
	if (!err && (fflush(t->f) || ferror(t->f)))
		err = t->werr = errno ? -errno : -EIO;
	if (st)
		*st = t->st;
	if (err)
		return err;
	if (t->st.summed)
		pr_warn("perfetto: %llu summed samples (%.3f ms off-CPU) are short blocks summed per "
			"interval, without their own times: counters (\"off-CPU summed, ns\"), not "
			"slices; offcpu record --off-cpu-thresh 0 writes every block with its times",
			(unsigned long long)t->st.summed, (double)t->st.summed_ns / 1e6);
	if (t->st.summed)
		pr_warn("perfetto: no thread states (Perfetto's own, which its thread state tracks "
			"and critical path read): with short blocks summed, when each thread ran is "
			"not known; offcpu record --off-cpu-thresh 0 (or --critical-path) writes every "
			"block");
	else if (pf_sched__error(t->sched))
		pr_warn("perfetto: no thread states: cannot keep them in a temporary file: %s",
			strerror(-pf_sched__error(t->sched)));
	else if (t->st.sched_events && !pf_sched__preemptions(t->sched))
		pr_warn("perfetto: thread states: no preemption was recorded (record --state S,D,R): "
			"a preempted thread shows as running");
	if (t->st.untimed)
		pr_warn("perfetto: %llu off-CPU samples have no time of their own (perf record "
			"--off-cpu writes them at the end): not in the trace",
			(unsigned long long)t->st.untimed);
	return 0;
}

int perfetto__error(const struct perfetto *t)
{
	return t->werr;
}

void perfetto__free(struct perfetto *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr_threads; i++)
		free(t->threads[i]);
	blocks__free(&t->blocks);
	pf_sched__free(t->sched);
	hashmap__free(&t->thread_idx);
	hashmap__free(&t->proc_idx);
	free(t->threads);
	free(t->procs);
	free(t->pkt.d);
	free(t->ev.d);
	free(t->sub.d);
	free(t->sub2.d);
	free(t->sub3.d);
	free(t->buf);
	free(t);
}
