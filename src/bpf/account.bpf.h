/* SPDX-License-Identifier: GPL-2.0 */
/*
 * account.bpf.h - where a block goes when it ends: streamed to user space at
 * once when long enough (a ring buffer, or a perf buffer with --perf-buffer),
 * else added to the summed map user space drains at every flush; every block
 * and every loss counted with its time. Also the key a block is kept under,
 * and with R recorded the split of its wait for a CPU after the wakeup.
 *
 * Needs: common.bpf.h.
 */
#ifndef OFFCPU_ACCOUNT_BPF_H
#define OFFCPU_ACCOUNT_BPF_H

#include "common.bpf.h"

/* R recorded: a block's wait for a CPU after its wakeup is split off (OFFCPU_STATE_RUNQ) */
const volatile bool runq_split = false;
/* with it: the run queue wait from the scheduler's enqueue time (else from
 * the sched_waking program's stamp) */
const volatile bool runq_queued = false;
const volatile __u64 thresh_ns = ~0ULL; /* blocks this long or longer are streamed */
const volatile __u32 transport = OFFCPU_TRANSPORT_RINGBUF;
const volatile __u64 wakeup_bytes = 0; /* ring buffer fill that wakes user space */

/*
 * Short blocks summed by context, in one of two maps: the program adds to the
 * one summed_sel holds, user space takes the other out. A swap is a map-in-map
 * update, which returns only once every program that may still see the old
 * map has finished: the map drained is never written meanwhile.
 */
struct summed_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_val);
	__uint(max_entries, 16384);
} summed_a SEC(".maps"), summed_b SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct summed_map);
} summed_sel SEC(".maps") = {
	.values = { &summed_a },
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* resized by user space */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} perf_events SEC(".maps");

/* Add a block to the summed map; false when the map is full. */
static __always_inline bool add_summed(struct offcpu_key *key, __u64 delta, __u64 runq)
{
	struct offcpu_val *val, init = {};
	__u32 zero = 0;
	void *summed = bpf_map_lookup_elem(&summed_sel, &zero);

	if (!summed)
		return false;
	val = bpf_map_lookup_elem(summed, key);
	if (!val) {
		/* EEXIST means another cpu created it first; the lookup tells. */
		bpf_map_update_elem(summed, key, &init, BPF_NOEXIST);
		val = bpf_map_lookup_elem(summed, key);
		if (!val)
			return false;
	}
	/* A key's blocks come from one thread, one after another: no atomics. */
	val->total_ns += delta;
	val->runq_ns += runq;
	val->count++;
	val->last_cpu = bpf_get_smp_processor_id();
	return true;
}

/* Send one long block to user space; false when the buffer is full. */
static __always_inline bool stream(void *ctx, struct offcpu_key *key, __u64 delta, __u64 runq,
				   __u64 now)
{
	struct offcpu_event *e, ev;

	if (transport == OFFCPU_TRANSPORT_PERFBUF) {
		ev.time = now;
		ev.period = delta;
		ev.runq_ns = runq;
		ev.key = *key;
		ev.cpu = bpf_get_smp_processor_id();
		ev.pad = 0;
		return bpf_perf_event_output(ctx, &perf_events, BPF_F_CURRENT_CPU, &ev,
					     sizeof(ev)) == 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return false;
	e->time = now;
	e->period = delta;
	e->runq_ns = runq;
	e->key = *key;
	e->cpu = bpf_get_smp_processor_id();
	e->pad = 0;
	/* Wake the reader only when the buffer fills up: it polls anyway. */
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
				      BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return true;
}

/*
 * A block is kept (in the file): count what it was kept without, with its
 * time. @kstack: a kernel stack was to be taken at its end (recovered blocks
 * have none, and are counted as recovered).
 */
static __always_inline void kept(const struct offcpu_key *key, __u64 ns, bool kstack)
{
	if (user_stacks && !key->user_stack) {
		count(OFFCPU_CNT_STACK_FAIL);
		count_n(OFFCPU_CNT_STACK_FAIL_NS, ns);
	}
	if (kstack && !key->kern_stack) {
		count(OFFCPU_CNT_KSTACK_FAIL);
		count_n(OFFCPU_CNT_KSTACK_FAIL_NS, ns);
	}
}

/*
 * Account one block: streamed at once when long enough, else summed. @runq
 * is its wait for a CPU after the wakeup, split off (user space writes it as
 * a sample of its own, OFFCPU_STATE_RUNQ): one map update for both parts.
 * Every block and its time are counted, kept or lost: the summary's totals
 * are the run's, whatever the maps could hold. A short block that the summed
 * map has no room for is streamed instead; only when the output buffer is
 * full as well is it lost. @time is the block's end.
 */
static __always_inline void account(void *ctx, struct offcpu_key *key, __u64 delta, __u64 runq,
				    __u64 time, bool kstack)
{
	__u64 ns = delta + runq;
	/* a block under way at the start goes out whole, whatever its length:
	 * when it ended is what the report says of a thread found waiting */
	bool is_long = ns >= thresh_ns || key->user_stack == OFFCPU_STACK_UNKNOWN;

	count(OFFCPU_CNT_BLOCKS);
	count_n(OFFCPU_CNT_BLOCKS_NS, ns);
	if (!is_long && add_summed(key, delta, runq))
		goto kept;
	if (stream(ctx, key, delta, runq, time)) {
		if (is_long) {
			count(OFFCPU_CNT_STREAMED);
		} else {
			count(OFFCPU_CNT_SUMMED_FULL);
			count_n(OFFCPU_CNT_SUMMED_FULL_NS, ns);
		}
		goto kept;
	}
	if (is_long) {
		count(OFFCPU_CNT_OUTPUT_FULL);
		count_n(OFFCPU_CNT_OUTPUT_FULL_NS, ns);
		if (add_summed(key, delta, runq))
			goto kept;
	}
	count(OFFCPU_CNT_DROP_MAP_FULL);
	count_n(OFFCPU_CNT_DROP_MAP_FULL_NS, ns);
	return;
kept:
	kept(key, ns, kstack);
}

/* The key of @task's open block, as its switch-out left it in @t. */
static __always_inline void block_key(struct offcpu_key *key, struct task_struct *task,
				      const struct offcpu_task *t, bool btf)
{
	key->pid = TASK_FIELD(btf, task, pid);
	key->tgid = TASK_FIELD(btf, task, tgid);
	key->user_stack = t->user_stack;
	key->state = t->state;
	key->cgroup_id = t->cgroup_id;
	key->wakeup = t->wakeup;
	key->wait = t->wait;
}

/*
 * With R recorded, the part of a block after its wakeup, waiting for a CPU,
 * is a wait of its own (OFFCPU_STATE_RUNQ) without the waker: returns its
 * length, taken off *@delta. The block's end is @end.
 */
static __always_inline __u64 runq_part(struct task_struct *next, const struct offcpu_task *t,
				       __u32 state, __u64 end, __u64 *delta, bool btf)
{
	__u64 runq = 0, queued;

	if (!runq_split || state == OFFCPU_STATE_R)
		return 0;
	if (runq_queued) {
		/*
		 * The scheduler's own account: when the task was queued (its
		 * wakeup; cleared when it runs, after this tracepoint), on the
		 * clock of this run queue, which __schedule() has just updated.
		 */
		if (!bpf_core_field_exists(next->sched_info.last_queued) ||
		    !bpf_core_field_exists(next->se.cfs_rq))
			return 0;
		/* (direct loads on tp_btf: a helper call each costs more) */
		queued = btf ? next->sched_info.last_queued :
			       BPF_CORE_READ(next, sched_info.last_queued);
		if (queued)
			runq = (btf ? next->se.cfs_rq->rq->clock :
				      BPF_CORE_READ(next, se.cfs_rq, rq, clock)) - queued;
		if (!queued || (__s64)runq < 0 || runq > *delta)
			return 0;
	} else {
		if (!t->wake_ts || t->wake_ts < t->ts || t->wake_ts > end)
			return 0;
		runq = end - t->wake_ts;
	}
	*delta -= runq;
	count(OFFCPU_CNT_RUNQ);
	count_n(OFFCPU_CNT_RUNQ_NS, runq);
	return runq;
}

#endif /* OFFCPU_ACCOUNT_BPF_H */
