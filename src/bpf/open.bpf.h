/* SPDX-License-Identifier: GPL-2.0 */
/*
 * open.bpf.h - blocks that span the start or the end of the recording,
 * found by the task iterators user space runs (open_blocks): at the start
 * the threads of the targets already blocked are noted (and with snap_start
 * their registers sent, for user space to walk their user stacks), for
 * their own next switch to take as a recorded block; at the end the blocks
 * still under way are summed. Also the calibration of the scheduler's clock
 * against ktime, which dates a noted block's start.
 *
 * Needs: common.bpf.h, filters.bpf.h, stacks.bpf.h, account.bpf.h,
 * udefer.bpf.h (the snapshots' ring), wakers.bpf.h (task_stack_size()),
 * waits.bpf.h (what the blocks under way wait on).
 */
#ifndef OFFCPU_OPEN_BPF_H
#define OFFCPU_OPEN_BPF_H

#include "common.bpf.h"
#include "filters.bpf.h"
#include "stacks.bpf.h"
#include "account.bpf.h"
#include "udefer.bpf.h"
#include "wakers.bpf.h"
#include "waits.bpf.h"

/*
 * Blocks that span the start or the end of the recording, found by walking
 * every task once (a task iterator, run by user space):
 *   OFFCPU_OPEN_START (once attached): a thread of the targets blocked since
 *     before the program was attached has no switch-out on record; its block
 *     is noted as begun now, with its state, and an unknown user stack
 *     (taken before offcpu ran; its kernel stack is taken at its switch-in,
 *     as any other), for its own next switch to take (open_take()).
 *   OFFCPU_OPEN_END: a block still under way (the program is detached by
 *     then) ends now, and is summed with its kernel stack as of now.
 * open_now is the time both use, set by user space with open_mode.
 */
__u32 open_mode;
/* the start iterator sends the registers of the threads it notes */
const volatile bool snap_start = false;
/*
 * While calibrate is set, the switch program measures how far the rq clock
 * (sched_info, where a block's start is known) lags bpf_ktime_get_ns(): the
 * smallest difference seen right after __schedule() updated that clock.
 */
__u32 calibrate;
__u32 clock_off_set;
__u64 clock_off;
/* the start or end of the recording, for the task iterator (see open_block()) */
__u64 open_now;

/*
 * Blocks under way when the recording started (see open_start()): the start
 * iterator notes them in the task's open_* fields, which no other program
 * writes, while this program may already run for the task on another CPU.
 * The task's own next switch makes the note its recorded block, as if its
 * switch-out had been seen (the switch program is then the only writer of
 * the task's state): at its switch-in when it has not run since it was seen
 * blocked (the usual case), the block ends there; or, when the note was not
 * there yet at its switch-in, at its first switch-out after that, where
 * recover() rebuilds it from its CPU time. Anything else is counted as lost.
 */

/* Whether @t holds a noted block, its fields read after open (set last). */
static __always_inline bool open_noted(struct offcpu_task *t)
{
	/* an atomic read orders the loads after it where plain loads may pass
	 * each other (arm64); only taken for a task with a note */
	return t->open && __sync_fetch_and_or(&t->open, 0);
}

/* The noted block becomes @t's recorded block (its user stack: taken before offcpu ran). */
static __always_inline void open_take(struct offcpu_task *t)
{
	t->open = 0;
	t->ts = t->open_ts;
	t->ran_ns = t->open_ran_ns;
	t->state = t->open_state;
	t->user_stack = user_stacks ? OFFCPU_STACK_UNKNOWN : 0;
	t->cgroup_id = t->open_cgroup;
	t->wait = t->open_wait;
	/* a wakeup stamped before the block began was an earlier block's */
	if (t->wake_ts < t->ts)
		forget_wakeup(t);
}

static __always_inline __u64 task_switches(struct task_struct *task, bool btf)
{
	return TASK_FIELD(btf, task, nvcsw) + TASK_FIELD(btf, task, nivcsw);
}

/*
 * @prev switches out with its note untaken: its switch-in came before the
 * note. If this is its first switch since it was seen blocked (the kernel
 * counts this one already), recover() rebuilds the block; else it is lost.
 */
static __always_inline void open_out(struct task_struct *prev, struct offcpu_task *t, __u64 now,
				     __u64 ran_ns, bool btf)
{
	__u64 ran = ran_ns - t->open_ran_ns, gone = now - t->open_ts;

	if (t->ts || task_switches(prev, btf) != t->open_switches + 1 || ran_ns < t->open_ran_ns ||
	    now < t->open_ts || ran > gone) {
		t->open = 0;
		count(OFFCPU_CNT_OPEN_LOST);
		return;
	}
	open_take(t);
	count(OFFCPU_CNT_OPEN_START);
	count_n(OFFCPU_CNT_OPEN_START_NS, gone - ran);
}

#ifdef __TARGET_ARCH_x86
/* When the block of @task (not on a CPU) began: ktime ns, or 0 when not known. */
static __always_inline __u64 block_began(struct task_struct *task)
{
	__u64 arrival, sum, prev_sum, b;
	int policy;

	if (!clock_off_set || !bpf_core_field_exists(task->sched_info.last_arrival))
		return 0;
	/* the time it last left a CPU: when it last arrived on one, plus what
	 * it ran then; only the fair classes keep that slice's start
	 * (prev_sum_exec_runtime) on every kernel */
	policy = BPF_CORE_READ(task, policy);
	if (policy != 0 && policy != 3 && policy != 5) /* NORMAL, BATCH, IDLE */
		return 0;
	arrival = BPF_CORE_READ(task, sched_info.last_arrival);
	sum = BPF_CORE_READ(task, se.sum_exec_runtime);
	prev_sum = BPF_CORE_READ(task, se.prev_sum_exec_runtime);
	if (!arrival || sum < prev_sum)
		return 0;
	b = arrival + (sum - prev_sum) + clock_off;
	return b < open_now ? b : 0;
}

/* OFFCPU_OPEN_START with snap_start: the registers of a thread just noted blocked. */
static __always_inline void send_start(struct task_struct *task, __u32 state, __u64 switches)
{
	struct pt_regs *regs = user_regs(task);
	struct offcpu_snap *sn;

	if (!regs)
		return;
	sn = bpf_ringbuf_reserve(&snaps, sizeof(*sn), 0);
	if (!sn) {
		count(OFFCPU_CNT_SNAP_LOST);
		return;
	}
	sn->kind = OFFCPU_SNAP_START;
	sn->tgid = task->tgid;
	sn->tid = task->pid;
	sn->id = 0;
	sn->switches = switches;
	sn->began = block_began(task);
	sn->state = state;
	sn->copy_len = 0;
	sn->fsbase = BPF_CORE_READ(task, thread.fsbase); /* its Python frames: its TSS slots */
	snap_regs(sn, regs);
	bpf_ringbuf_submit(sn, 0);
}

/* Keep the smallest lag of the rq clock behind ktime (see calibrate). */
static __always_inline void calibrate_clock(struct task_struct *prev, struct task_struct *next,
					    __u64 now)
{
	struct task_struct *p = prev->pid ? prev : next;
	struct cfs_rq *cfs = p->se.cfs_rq;
	__u64 clock, off;

	if (!cfs || !bpf_core_field_exists(cfs->rq))
		return;
	clock = BPF_CORE_READ(cfs, rq, clock);
	if (!clock)
		return;
	off = now - clock;
	/* (signed: ktime may be behind the rq clock) */
	if (!clock_off_set || (__s64)off < (__s64)clock_off) {
		clock_off = off;
		clock_off_set = 1;
	}
}
#else
static __always_inline void send_start(struct task_struct *task, __u32 state, __u64 switches)
{
}

static __always_inline void calibrate_clock(struct task_struct *prev, struct task_struct *next,
					    __u64 now)
{
}
#endif

/*
 * The state of @task for the start iterator, created if it has none. raw_tp:
 * an entry left by an earlier task with this id is its switch program's to
 * reset, not the iterator's (the task is then skipped).
 */
static __always_inline struct offcpu_task *open_task_of(struct task_struct *task, bool btf)
{
	struct offcpu_task *t, init = {};
	__u32 pid;

	if (btf)
		return bpf_task_storage_get(&task_store, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	pid = BPF_CORE_READ(task, pid);
	init.start_time = BPF_CORE_READ(task, start_time);
	t = bpf_map_lookup_elem(&tasks, &pid);
	if (!t) {
		bpf_map_update_elem(&tasks, &pid, &init, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&tasks, &pid);
	}
	return t && t->start_time == init.start_time ? t : NULL;
}

/*
 * OFFCPU_OPEN_START: note the block of @task, a thread of the targets blocked
 * since before the program was attached, in its open_* fields (see
 * open_take()). The switch program may run for the task meanwhile on another
 * CPU: this writes no field that program writes, and sets open last.
 */
static __always_inline void open_start(struct task_struct *task, bool btf)
{
	/* read before the task is seen blocked: had it run since, its
	 * switch-out after the attach would be on record (t->ts) */
	__u64 ran_ns = BPF_CORE_READ(task, se.sum_exec_runtime);
	__u64 switches = BPF_CORE_READ(task, nvcsw) + BPF_CORE_READ(task, nivcsw);
	struct offcpu_task *t;
	__u32 state;

	if (!wanted_open(task, &state))
		return;
	t = open_task_of(task, btf);
	if (!t) {
		count(OFFCPU_CNT_NO_STORAGE);
		return;
	}
	if (t->ts || t->open)
		return; /* blocked since the program was attached: it has the block */
	t->open_ts = open_now;
	t->open_ran_ns = ran_ns;
	t->open_switches = switches;
	t->open_state = state;
	t->open_cgroup = record_cgroup ? BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id) : 0;
	t->open_wait = iter_waits && btf ? wait_object(task, t, false, OFFCPU_WAIT_AT_START) : 0;
	/* an atomic exchange: the stores above are seen before it (arm64 too) */
	__sync_lock_test_and_set(&t->open, 1);
	if (snap_start && btf)
		send_start(task, state, switches);
}

/*
 * OFFCPU_OPEN_END: the block of @task, still under way, ends now, summed;
 * with what it waits on now (its own wait object, AT_END: the summed entry
 * is this block's alone, and the report lists the thread as still waiting).
 */
static __always_inline void end_block(struct task_struct *task, struct offcpu_task *t,
				      struct offcpu_key *key, bool btf)
{
	__u64 delta = open_now - t->ts, runq, w;

	if (kernel_stacks && btf)
		key->kern_stack = kernel_stack(task);
	runq = runq_part(task, t, key->state, open_now, &delta, btf);
	count(OFFCPU_CNT_BLOCKS);
	count_n(OFFCPU_CNT_BLOCKS_NS, delta + runq);
	count(OFFCPU_CNT_OPEN_END);
	count_n(OFFCPU_CNT_OPEN_END_NS, delta + runq);
	/* what it waits on now (its owner read by user space while it still waits) */
	if (iter_waits && btf) {
		w = wait_object(task, t, false, OFFCPU_WAIT_AT_END);
		if (w)
			key->wait = w;
	}
	if (add_summed(key, delta, runq)) {
		kept(key, delta + runq, kernel_stacks && btf);
	} else {
		count(OFFCPU_CNT_DROP_MAP_FULL);
		count_n(OFFCPU_CNT_DROP_MAP_FULL_NS, delta + runq);
	}
}

/*
 * OFFCPU_OPEN_END runs once the programs are detached: nothing else writes
 * the task's state then. (Waiting for an RCU grace period first, for a run
 * still under way on another CPU, made it worse: a thread that runs again in
 * those 12 ms cannot be told from one whose switch-in the kernel skipped.)
 */
static __always_inline void open_end(struct task_struct *task, bool btf)
{
	struct offcpu_task *t = task_of(task, btf, false);
	struct offcpu_key key = {};

	if (!t)
		return;
	if (t->open) {
		/* noted at the start, and it has not run since: under way all along */
		if (!t->ts && BPF_CORE_READ(task, se.sum_exec_runtime) == t->open_ran_ns &&
		    BPF_CORE_READ(task, nvcsw) + BPF_CORE_READ(task, nivcsw) == t->open_switches) {
			open_take(t);
			count(OFFCPU_CNT_OPEN_START);
			count_n(OFFCPU_CNT_OPEN_START_NS, open_now - t->ts);
		} else {
			t->open = 0;
			count(OFFCPU_CNT_OPEN_LOST);
		}
	}
	if (!t->ts || open_now < t->ts)
		return;
	/* it ran since: its switch-in was skipped, this block's end is not known */
	if (BPF_CORE_READ(task, se.sum_exec_runtime) != t->ran_ns) {
		count(OFFCPU_CNT_UNPAIRED);
		t->ts = 0;
		return;
	}
	block_key(&key, task, t, btf);
	end_block(task, t, &key, btf);
	t->ts = 0;
}

static __always_inline void open_block(struct task_struct *task, bool btf)
{
	/* for user space to tell with -v (wakers from interrupts need it) */
	if (!thread_size)
		task_stack_size(task);
	if (open_mode == OFFCPU_OPEN_START)
		open_start(task, btf);
	else
		open_end(task, btf);
}

#endif /* OFFCPU_OPEN_BPF_H */
