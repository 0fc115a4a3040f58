/* SPDX-License-Identifier: GPL-2.0 */
/*
 * switch.bpf.h - the switch core, run at every sched_switch: at the
 * switch-out of a thread that passes the filters, remember when it left, in
 * which state and with which user stack; at the switch-in of a thread with a
 * block, take its kernel stack and account the block. Where the kernel did
 * not call this program at a switch-in (it happens while other programs
 * attach), the block is rebuilt from the thread's CPU time (recover()); a
 * skipped switch-out is counted. A block noted by the start iterator is taken
 * at the thread's first switch.
 *
 * Needs: common.bpf.h, faults.bpf.h, filters.bpf.h, stacks.bpf.h,
 * account.bpf.h, open.bpf.h, waits.bpf.h.
 */
#ifndef OFFCPU_SWITCH_BPF_H
#define OFFCPU_SWITCH_BPF_H

#include "common.bpf.h"
#include "faults.bpf.h"
#include "filters.bpf.h"
#include "stacks.bpf.h"
#include "account.bpf.h"
#include "open.bpf.h"
#include "waits.bpf.h"

static __always_inline void switch_out(void *ctx, struct task_struct *prev,
				       struct offcpu_task *t, __u32 state, __u64 now, __u64 ran_ns,
				       bool btf)
{
	t->ran_ns = ran_ns;
	t->state = state;
	t->user_stack = user_stacks ? user_stack(ctx, prev, t, btf) : 0;
	/* after the walk, which notes the stack mapping it saw */
	t->wait = record_waits && btf && (state == OFFCPU_STATE_S || state == OFFCPU_STATE_D) ?
			  wait_object(prev, t, true, 0) :
			  0;
	t->cgroup_id = record_cgroup ? bpf_get_current_cgroup_id() : 0;
	forget_wakeup(t);
	t->chain = 0; /* it blocks: what it does next is not caused by its last waker */
	t->ts = now;
}

static __always_inline void switch_in(void *ctx, struct task_struct *next, struct offcpu_task *t,
				      __u64 now, bool btf)
{
	struct offcpu_key key = {};
	__u64 delta, runq;

	delta = now - t->ts;
	block_key(&key, next, t, btf);
	if (kernel_stacks && btf)
		key.kern_stack = kernel_stack(next);
	runq = runq_part(next, t, key.state, now, &delta, btf);
	t->ts = 0;
	/* as a waker from now on, it passes on who woke it */
	if (record_wakers) {
		t->chain = t->wake_chain;
		t->chain_ts = now;
	}
	account(ctx, &key, delta, runq, now, kernel_stacks && btf);
}

/*
 * @prev blocks again while its last block is still open: the kernel ran it
 * without calling this program at its switch-in. That happens, rarely, while
 * another BPF program attaches to or detaches from sched_switch (measured:
 * 18 in 9 recordings with a program attaching every 60 ms, 0 in 9 without).
 * The block is recovered from the scheduler's own account of the task's CPU
 * time: since it blocked it has run for (ran_ns now - ran_ns then), so it was
 * off-CPU for the rest and ran again at (now - that). Its kernel stack is
 * gone (the task has run since); its user stack was taken when it blocked.
 * The CPU time leaves out time stolen by the hypervisor (and irq time where
 * that is accounted): a recovered block includes those of the run after it.
 */
static __always_inline void recover(void *ctx, struct task_struct *prev, struct offcpu_task *t,
				    __u64 now, __u64 ran_ns, bool btf)
{
	struct offcpu_key key = {};
	__u64 ran = ran_ns - t->ran_ns, gone = now - t->ts;

	if (ran_ns < t->ran_ns || ran > gone) {
		count(OFFCPU_CNT_UNPAIRED);
		return;
	}
	block_key(&key, prev, t, btf);
	count(OFFCPU_CNT_RECOVERED);
	/* written at the time it was recovered, not at its switch-in (now -
	 * ran): after a long run that would be older than rounds already
	 * written, out of order for perf */
	account(ctx, &key, gone - ran, 0, now, false);
}

static __always_inline void on_switch_common(void *ctx, bool preempt, struct task_struct *prev,
					     struct task_struct *next, bool btf)
{
	struct offcpu_task *t;
	__u64 now = 0, ran_ns; /* read the clock only for a switch that needs it */
	__u32 state;
	bool want = wanted(ctx, prev, preempt, &state, btf);

	if (calibrate && btf)
		calibrate_clock(prev, next, bpf_ktime_get_ns());

	/*
	 * A recorded block starts here; and any switch-out of a thread whose
	 * block is still open (its switch-in skipped) ends that block's
	 * recovery, also when this switch-out itself is not recorded (a
	 * preemption, or its exit). raw_tp looks only at recorded blocks: a
	 * lookup on every switch would cost it a hash lookup and two reads.
	 */
	t = want || btf ? task_of(prev, btf, want) : NULL;
	/* (only threads seen before: a thread's first block, if the kernel
	 * skips it, leaves no trace to find) */
	if (want && t && t->nvcsw && fault_skip_switch_out())
		return; /* as if the kernel had not called this program */
	if (t && btf) {
		/*
		 * It already counts this switch, if voluntary. More than that
		 * since the thread was last seen: the kernel skipped this
		 * program when it blocked and again when it ran (the check at
		 * the switch-in below did not see it), and this is the last
		 * chance to count that block (its exit is such a switch too).
		 */
		long st = has_prev_state ? (long)(unsigned int)((__u64 *)ctx)[3] : task_state(prev);
		__u64 seen = t->nvcsw + (!preempt && st ? 1 : 0);

		if (t->nvcsw && prev->nvcsw > seen && prev->nvcsw - seen < 1000000)
			count_n(OFFCPU_CNT_MISSED_OUT, prev->nvcsw - seen);
		t->nvcsw = prev->nvcsw;
	}
	if (t && (want || t->ts || t->open)) {
		/* its CPU time so far, just brought up to date by the scheduler */
		ran_ns = TASK_FIELD(btf, prev, se.sum_exec_runtime);
		now = bpf_ktime_get_ns();
		if (open_noted(t))
			open_out(prev, t, now, ran_ns, btf);
		if (t->ts)
			recover(ctx, prev, t, now, ran_ns, btf);
		if (want)
			switch_out(ctx, prev, t, state, now, ran_ns, btf);
		else
			t->ts = 0;
	} else if (want) {
		count(OFFCPU_CNT_NO_STORAGE);
	}
	t = task_of(next, btf, false);
	if (!t)
		return;
	/*
	 * The kernel counts a thread's voluntary switches: more than the last
	 * switch-out seen counted means the kernel skipped this program when
	 * the thread blocked (see recover()); that block cannot be rebuilt
	 * (neither its start nor its stack is known), so it is counted.
	 */
	if (btf && t->nvcsw && next->nvcsw != t->nvcsw) {
		if (next->nvcsw - t->nvcsw < 1000000)
			count_n(OFFCPU_CNT_MISSED_OUT, next->nvcsw - t->nvcsw);
		t->nvcsw = next->nvcsw;
	}
	if (!t->ts) {
		if (!open_noted(t))
			return;
		/* a block under way at the start: its switch-in takes it, if it
		 * has not run since it was seen blocked (neither its switch-in nor
		 * its switch-out after that saw the note) */
		if (TASK_FIELD(btf, next, se.sum_exec_runtime) != t->open_ran_ns) {
			t->open = 0;
			count(OFFCPU_CNT_OPEN_LOST);
			return;
		}
		open_take(t);
		now = now ?: bpf_ktime_get_ns();
		count(OFFCPU_CNT_OPEN_START);
		count_n(OFFCPU_CNT_OPEN_START_NS, now - t->ts);
	}
	if (fault_skip_switch_in())
		return;
	/* it ran since its recorded switch-out: both its switch-in and its
	 * switch-out since were skipped; that block's end is not known */
	if (TASK_FIELD(btf, next, se.sum_exec_runtime) != t->ran_ns) {
		count(OFFCPU_CNT_UNPAIRED);
		t->ts = 0;
		return;
	}
	switch_in(ctx, next, t, now ?: bpf_ktime_get_ns(), btf);
}

#endif /* OFFCPU_SWITCH_BPF_H */
