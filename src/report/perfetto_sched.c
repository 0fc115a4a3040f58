// SPDX-License-Identifier: GPL-2.0
/*
 * Perfetto's own thread states (perfetto_sched.h): each block as the
 * kernel's sched_switch and sched_waking ftrace events would have told it,
 * in FtraceEventBundle packets, which Perfetto's importer turns into its
 * thread_state table (ftrace_sched_event_tracker.cc, thread_state_tracker.cc):
 *
 *   a block's start     sched_switch, prev = the thread (its state), next =
 *                       the idle task, on the CPU its last run was on
 *   its wakeup          sched_waking of it by the waking thread (pid 0, the
 *                       idle task, for an interrupt), where the run queue
 *                       part begins (record --state S,D,R), else at its end
 *   its end             sched_switch, prev = the idle task, next = the
 *                       thread, on the CPU the sample names
 *
 * A thread runs on one CPU from a switch-in to its next switch-out, so when
 * every block is recorded the runs are where the CPU tracks put them; the
 * idle task stands for whatever else (not recorded) ran there. prev_state
 * is read as a 4.4 kernel's when the trace names no kernel (task_state.cc):
 * S 1, D 2, T 4, I 0x402 (D and TASK_NOLOAD), preempted 0x800 (R+).
 *
 * Field numbers: ftrace_event_bundle.proto (cpu 1, event 2),
 * ftrace_event.proto (timestamp 1, pid 2, sched_switch 4, sched_waking
 * 20), sched.proto (SchedSwitchFtraceEvent prev_comm 1, prev_pid 2,
 * prev_prio 3, prev_state 4, next_comm 5, next_pid 6, next_prio 7;
 * SchedWakingFtraceEvent comm 1, pid 2, prio 3, success 4, target_cpu 5),
 * trace_packet.proto (ftrace_events 1).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "perfetto_sched.h"
#include "../offcpu.h"
#include "../util/util.h"

enum {
	TRACE_PACKET = 1,
	PKT_FTRACE_EVENTS = 1,
	PKT_SEQ_ID = 10,
	BUNDLE_CPU = 1,
	BUNDLE_EVENT = 2,
	FE_TIMESTAMP = 1,
	FE_PID = 2,
	FE_SCHED_SWITCH = 4,
	FE_SCHED_WAKING = 20,
	SS_PREV_COMM = 1,
	SS_PREV_PID = 2,
	SS_PREV_PRIO = 3,
	SS_PREV_STATE = 4,
	SS_NEXT_COMM = 5,
	SS_NEXT_PID = 6,
	SS_NEXT_PRIO = 7,
	SW_COMM = 1,
	SW_PID = 2,
	SW_PRIO = 3,
	SW_SUCCESS = 4,
	SW_TARGET_CPU = 5,
};

#define SEQ_ID 2 /* the track events' is 1 */
#define PRIO 120 /* not recorded: the default nice level's */

struct pf_sched {
	FILE *tmp; /* the packets, until the end says whether they go in the trace */
	struct pb pkt, bundle, ev, sub;
	uint64_t events;
	bool preempt_seen; /* a preemption or run queue wait: R was recorded */
	int err;
};

struct pf_sched *pf_sched__new(void)
{
	struct pf_sched *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	/* an unnamed file (O_TMPFILE, or a name of its own made with O_EXCL and unlinked) */
	s->tmp = tmpfile();
	if (!s->tmp)
		s->err = errno ? -errno : -EIO;
	return s;
}

/* A 4.4 kernel's prev_state for offcpu's state + 1 (0: not known, shown as S). */
static int64_t prev_state(uint32_t state)
{
	switch (state) {
	case OFFCPU_STATE_R + 1: return 0x800; /* R+: preempted */
	case OFFCPU_STATE_D + 1: return 0x2;
	case OFFCPU_STATE_T + 1: return 0x4;
	case OFFCPU_STATE_I + 1: return 0x402;
	default: return 0x1;
	}
}

/* The event built in s->ev (its timestamp, pid and one sched event) as a packet of @cpu. */
static void put(struct pf_sched *s, uint32_t cpu)
{
	uint8_t hdr[1 + PB_VARINT_MAX];
	size_t n;

	pb_uint(&s->bundle, BUNDLE_CPU, cpu);
	pb_msg(&s->bundle, BUNDLE_EVENT, &s->ev);
	pb_msg(&s->pkt, PKT_FTRACE_EVENTS, &s->bundle);
	pb_uint(&s->pkt, PKT_SEQ_ID, SEQ_ID);
	if (s->pkt.err && !s->err)
		s->err = s->pkt.err;
	hdr[0] = (TRACE_PACKET << 3) | 2;
	n = 1 + pb_varint_enc(hdr + 1, s->pkt.len);
	if (!s->err && (fwrite(hdr, 1, n, s->tmp) != n ||
			fwrite(s->pkt.d, 1, s->pkt.len, s->tmp) != s->pkt.len))
		s->err = errno ? -errno : -EIO;
	s->pkt.len = 0;
	s->pkt.err = 0;
	s->events++;
}

static void idle_comm(char *buf, size_t cap, uint32_t cpu)
{
	snprintf(buf, cap, "swapper/%u", cpu);
}

/* @tid switched out at @ts on @cpu in @state (+ 1), or in at @ts (@out false). */
static void sched_switch(struct pf_sched *s, uint64_t ts, uint32_t cpu, uint32_t tid,
			 const char *comm, uint32_t state, bool out)
{
	char idle[32];

	idle_comm(idle, sizeof(idle), cpu);
	pb_uint(&s->ev, FE_TIMESTAMP, ts);
	pb_uint(&s->ev, FE_PID, out ? tid : 0);
	pb_str(&s->sub, SS_PREV_COMM, out ? comm : idle);
	pb_uint(&s->sub, SS_PREV_PID, out ? tid : 0);
	pb_uint(&s->sub, SS_PREV_PRIO, PRIO);
	pb_uint(&s->sub, SS_PREV_STATE, out ? (uint64_t)prev_state(state) : 0);
	pb_str(&s->sub, SS_NEXT_COMM, out ? idle : comm);
	pb_uint(&s->sub, SS_NEXT_PID, out ? 0 : tid);
	pb_uint(&s->sub, SS_NEXT_PRIO, PRIO);
	pb_msg(&s->ev, FE_SCHED_SWITCH, &s->sub);
	put(s, cpu);
}

static void sched_waking(struct pf_sched *s, uint64_t ts, uint32_t cpu, uint32_t tid,
			 const char *comm, uint32_t waker_tid)
{
	pb_uint(&s->ev, FE_TIMESTAMP, ts);
	pb_uint(&s->ev, FE_PID, waker_tid);
	pb_str(&s->sub, SW_COMM, comm);
	pb_uint(&s->sub, SW_PID, tid);
	pb_uint(&s->sub, SW_PRIO, PRIO);
	pb_uint(&s->sub, SW_SUCCESS, 1);
	pb_uint(&s->sub, SW_TARGET_CPU, cpu);
	pb_msg(&s->ev, FE_SCHED_WAKING, &s->sub);
	put(s, cpu);
}

int pf_sched__block(struct pf_sched *s, const struct block *b, const char *comm,
		    uint32_t *last_cpu)
{
	const struct report_sample *r = b->s;
	uint32_t cpu = r->cpu != UINT32_MAX ? r->cpu : 0;
	uint32_t out_cpu = *last_cpu != UINT32_MAX ? *last_cpu : cpu;
	bool preempted = r->state == OFFCPU_STATE_R + 1;

	if (s->err)
		return 0;
	if (b->flags & BLOCK_RUNQ) {
		/* the run queue part: the block before it was woken at its start */
		s->preempt_seen = true;
	} else {
		uint64_t from = (b->flags & BLOCK_BEFORE) && b->since ? b->since : b->start;

		s->preempt_seen |= preempted;
		sched_switch(s, from, out_cpu, r->tid, comm, r->state, true);
		/* woken (preemption is no sleep): where its run queue part begins,
		 * or at its end; by the idle task when an interrupt woke it, or when
		 * who did is not recorded */
		if (!preempted && !(b->flags & BLOCK_OPEN_END) && (r->waker || (b->flags & BLOCK_WOKEN)))
			sched_waking(s, b->end, cpu, r->tid, comm, r->waker_tid);
	}
	if (!(b->flags & (BLOCK_WOKEN | BLOCK_OPEN_END))) {
		sched_switch(s, b->end, cpu, r->tid, comm, 0, false);
		*last_cpu = cpu;
	}
	return 0;
}

int pf_sched__finish(struct pf_sched *s, FILE *out, bool keep)
{
	char buf[65536];
	size_t n;

	if (!keep || s->err || !s->events)
		return 0;
	if (fflush(s->tmp) || fseek(s->tmp, 0, SEEK_SET))
		return errno ? -errno : -EIO;
	while ((n = fread(buf, 1, sizeof(buf), s->tmp)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			return errno ? -errno : -EIO;
	return ferror(s->tmp) ? -EIO : 0;
}

uint64_t pf_sched__events(const struct pf_sched *s)
{
	return s->err ? 0 : s->events;
}

bool pf_sched__preemptions(const struct pf_sched *s)
{
	return s->preempt_seen;
}

int pf_sched__error(const struct pf_sched *s)
{
	return s->err;
}

void pf_sched__free(struct pf_sched *s)
{
	if (!s)
		return;
	if (s->tmp)
		fclose(s->tmp);
	free(s->pkt.d);
	free(s->bundle.d);
	free(s->ev.d);
	free(s->sub.d);
	free(s);
}
