// SPDX-License-Identifier: GPL-2.0
/*
 * The off-CPU collector: at a task's switch-out remember when, in which state
 * and with which stack it left; at its switch-in add the blocked time to a
 * hash keyed by (thread, process, stack, state, cgroup, waker), or stream it.
 *
 * Filters run before the stack walk: the walk is what costs. On tp_btf the
 * task fields are plain loads, and both stacks are walked here rather than
 * by the kernel's helpers, whose many function calls cost 4-5x more on a
 * kernel with return-thunk mitigations: the user stack by unwind tables or
 * frame pointers, the kernel stack from the kernel's ORC tables. Both return
 * what the helpers return and leave them the cases they cannot be sure of.
 * raw_tp has neither typed pointers nor task registers and uses the helpers.
 *
 * This file holds the programs; each part is a header with its own maps and
 * knobs, and says what it needs of the others:
 *   common.bpf.h    shared knobs, counters, per-task state
 *   faults.bpf.h    test hooks (fault injection)
 *   filters.bpf.h   which threads are recorded; fork and exec following
 *   python.bpf.h    Python frames, appended to a Python process's user stacks
 *   stackmap.bpf.h  stored stacks: maps, hashing, scratch
 *   ufp.bpf.h       user stacks by frame pointers
 *   urules.bpf.h    unwind tables: rows, rules, the rule cache
 *   uwalk.bpf.h     user stacks by unwind tables
 *   udefer.bpf.h    table walks handed to user space (deferred, verified)
 *   v8.bpf.h        JavaScript frames (node) the table walk named
 *   stacks.bpf.h    taking a block's stacks, helpers as the fallback
 *   korc.bpf.h      kernel stacks from the ORC tables (x86-64)
 *   account.bpf.h   summed map and streaming: where a block goes
 *   wakers.bpf.h    who woke a block, interrupt context
 *   waits.bpf.h     what a block waits on: a futex, a descriptor's file
 *   open.bpf.h      blocks under way at the start and the end (iterators)
 *   switch.bpf.h    the switch core
 */
#include "common.bpf.h"
#include "faults.bpf.h"
#include "filters.bpf.h"
#include "stacks.bpf.h"
#include "account.bpf.h"
#include "wakers.bpf.h"
#include "open.bpf.h"
#include "switch.bpf.h"

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (fault_refuse & FAULT_REFUSE_TP_BTF)
		return REFUSED();
	on_switch_common(ctx, preempt, prev, next, true);
	return 0;
}

SEC("?raw_tp/sched_switch")
int BPF_PROG(on_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	on_switch_common(ctx, preempt, prev, next, false);
	return 0;
}

SEC("?tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	struct offcpu_task *t;
	__u64 now;

	/* most wakeups are of tasks offcpu has no block of: a pointer test */
	if (!p->bpf_storage)
		return 0;
	t = bpf_task_storage_get(&task_store, p, 0, 0);
	if (!t)
		return 0;
	/* a block of its own, or one under way at the start (a stamp before
	 * that began is an earlier block's) */
	if (t->ts ? t->wake_ts != 0 : !open_noted(t) || t->wake_ts >= t->open_ts)
		return 0;
	now = bpf_ktime_get_ns();
	t->wake_ts = now;
	count(OFFCPU_CNT_WAKEUPS);
	if (record_wakers)
		note_waker(ctx, t, now);
	return 0;
}

SEC("?tp_btf/softirq_entry")
int BPF_PROG(on_softirq_entry, unsigned int vec)
{
	set_irq_ctx(IRQ_SOFT, vec + 1);
	return 0;
}

SEC("?tp_btf/softirq_exit")
int BPF_PROG(on_softirq_exit, unsigned int vec)
{
	set_irq_ctx(IRQ_SOFT, 0);
	return 0;
}

SEC("?tp_btf/irq_handler_entry")
int BPF_PROG(on_irq_entry, int irq, struct irqaction *action)
{
	set_irq_ctx(IRQ_HARD, 1);
	return 0;
}

SEC("?tp_btf/irq_handler_exit")
int BPF_PROG(on_irq_exit, int irq, struct irqaction *action, int ret)
{
	set_irq_ctx(IRQ_HARD, 0);
	return 0;
}

SEC("?tp_btf/hrtimer_expire_entry")
int BPF_PROG(on_hrtimer_entry, struct hrtimer *timer, ktime_t *now)
{
	set_irq_ctx(IRQ_HRTIMER, 1);
	return 0;
}

SEC("?tp_btf/hrtimer_expire_exit")
int BPF_PROG(on_hrtimer_exit, struct hrtimer *timer)
{
	set_irq_ctx(IRQ_HRTIMER, 0);
	return 0;
}

SEC("?raw_tp/sched_process_exit")
int BPF_PROG(on_exit_raw, struct task_struct *p)
{
	forget(p);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p)
{
	py_forget(p->tgid);
	v8_forget(p->tgid);
	arm_at_exec(p, true);
	return 0;
}

SEC("?raw_tp/sched_process_exec")
int BPF_PROG(on_exec_raw, struct task_struct *p)
{
	py_forget(BPF_CORE_READ(p, tgid));
	arm_at_exec(p, false);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	if (parent->tgid != child->tgid) {
		py_forget(child->tgid);
		v8_forget(child->tgid);
	}
	follow(parent, child);
	return 0;
}

SEC("?raw_tp/sched_process_fork")
int BPF_PROG(on_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	follow(parent, child);
	return 0;
}

SEC("iter/task")
int open_blocks(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;

	if (task)
		open_block(task, true);
	return 0;
}

SEC("?iter/task")
int open_blocks_raw(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;

	if (task)
		open_block(task, false);
	return 0;
}
