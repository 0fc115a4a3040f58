/* SPDX-License-Identifier: GPL-2.0 */
/*
 * common.bpf.h - what every part of the collector shares: the kernel's
 * constants tasks are read by, the knobs several parts read, the counters
 * (enum offcpu_counter in offcpu.h; every loss is counted), and each task's
 * state (struct offcpu_task) with the ways to reach it and its fields.
 *
 * Needs: nothing (it includes vmlinux.h, libbpf's headers and offcpu.h).
 * User space sets the knobs (.rodata) before loading: the verifier sees
 * them as constants, and leaves out the code a knob turns off.
 */
#ifndef OFFCPU_COMMON_BPF_H
#define OFFCPU_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "../offcpu.h"

#define PF_KTHREAD 0x00200000
#define PF_EXITING 0x00000004
#define PF_IO_WORKER 0x00000010
#define PF_USER_WORKER 0x00004000
#define USER64_CS 0x33 /* __USER_CS: a 64-bit task's user code segment */
#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_STOPPED_OR_TRACED (0x4 | 0x8)
#define TASK_NOLOAD 0x400
#define TASK_DEAD 0x80

/* --cgroup-id: the cgroup of each block is kept (struct offcpu_key) */
const volatile bool record_cgroup = false;
/* --stacks: which stacks are taken (stacks.bpf.h) */
const volatile bool user_stacks = true;
const volatile bool kernel_stacks = false;
/* --wakers: who woke each block, with its stacks and chain */
const volatile bool record_wakers = false;
/* --verify-stacks: also run the kernel's helpers and count every difference */
const volatile bool verify_stacks = false;

/*
 * Per-task state. tp_btf: task storage, whose lookup for a task without
 * state (most tasks, most switches) is a pointer test. raw_tp has no trusted
 * task pointer: a hash keyed by thread id, emptied when tasks exit.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct offcpu_task);
} task_store SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct offcpu_task);
	__uint(max_entries, 65536);
} tasks SEC(".maps");

/* The counters (enum offcpu_counter), per CPU; user space sums them. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, OFFCPU_CNT_NR);
} counters SEC(".maps");

struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

/* A task field: a plain load through a typed pointer on tp_btf (about 2 ns
 * here), a probe read on raw_tp (about 35 ns: a helper call). */
#define TASK_FIELD(btf, t, f) ((btf) ? (t)->f : BPF_CORE_READ(t, f))

/*
 * The counters are per CPU, but not every program of ours runs through:
 * sched_switch runs with interrupts off, but the task iterator can be
 * preempted, and sched_waking of the current task, fork and exec can be
 * interrupted, and what runs meanwhile on that CPU (sched_switch, a wakeup
 * from an interrupt) can add to the same counter. A plain increment
 * interrupted between its load and its store would then lose that addition;
 * an atomic add is one instruction. Measured against plain adds everywhere:
 * the same BPF time per switch within the runs' spread (bench/README.md).
 */
static __always_inline void count_n(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline void count(__u32 idx)
{
	count_n(idx, 1);
}

static __always_inline long task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ((struct task_struct___old *)t, state);
}

static __always_inline __u32 classify(bool preempt, long st)
{
	if (preempt)
		return OFFCPU_STATE_R;
	if (st & TASK_UNINTERRUPTIBLE)
		return (st & TASK_NOLOAD) ? OFFCPU_STATE_I : OFFCPU_STATE_D;
	if (st & TASK_INTERRUPTIBLE)
		return OFFCPU_STATE_S;
	if (st & TASK_STOPPED_OR_TRACED)
		return OFFCPU_STATE_T;
	return OFFCPU_STATE_R;
}

/* A block begins: no wakeup of it seen yet. */
static __always_inline void forget_wakeup(struct offcpu_task *t)
{
	t->wake_ts = 0;
	t->wakeup = 0;
	t->wake_chain = 0;
}

/*
 * The state of task @p: created on its first recorded block (@create), else
 * only if it has one. On tp_btf a task without any BPF storage is told by a
 * plain load, without the helper call.
 */
static __always_inline struct offcpu_task *task_of(struct task_struct *p, bool btf, bool create)
{
	struct offcpu_task *t, init = {};
	__u64 start;
	__u32 pid;

	if (btf) {
		if (!create && !p->bpf_storage)
			return NULL;
		return bpf_task_storage_get(&task_store, p, 0,
					    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	}
	pid = BPF_CORE_READ(p, pid);
	t = bpf_map_lookup_elem(&tasks, &pid);
	if (t) {
		start = BPF_CORE_READ(p, start_time);
		if (t->start_time != start) {
			t->ts = 0; /* left by an earlier task with this id */
			t->open = 0;
			t->start_time = start;
		}
		return t;
	}
	if (!create)
		return NULL;
	init.start_time = BPF_CORE_READ(p, start_time);
	bpf_map_update_elem(&tasks, &pid, &init, BPF_NOEXIST);
	return bpf_map_lookup_elem(&tasks, &pid);
}

#endif /* OFFCPU_COMMON_BPF_H */
