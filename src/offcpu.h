/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ABI shared by the BPF collector and user space: map keys, map values and
 * counters. Plain __u32/__u64 with explicit padding only, because hash keys
 * are compared byte by byte and both sides must agree on every offset.
 */
#ifndef OFFCPU_H
#define OFFCPU_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define OFFCPU_MAX_STACK_DEPTH 127

/* Values of the process filter map. */
#define OFFCPU_FILTER_ACTIVE 1 /* record this process */
#define OFFCPU_FILTER_AT_EXEC 2 /* record it once it execs (a workload being started) */

/* Task states as offcpu names them; bit i of a state mask selects state i. */
enum offcpu_state {
	OFFCPU_STATE_R = 0, /* runnable: preempted or yielded */
	OFFCPU_STATE_S = 1, /* interruptible sleep */
	OFFCPU_STATE_D = 2, /* uninterruptible sleep */
	OFFCPU_STATE_T = 3, /* stopped or traced */
	OFFCPU_STATE_I = 4, /* idle (uninterruptible, not counted in load) */
	OFFCPU_STATE_NR,
};

#define OFFCPU_STATE_MASK(s) (1u << (s))
#define OFFCPU_DEFAULT_STATES (OFFCPU_STATE_MASK(OFFCPU_STATE_S) | OFFCPU_STATE_MASK(OFFCPU_STATE_D))

/*
 * Key of the summed-blocks hash map: one entry per distinct blocked context.
 * Stacks are keys of the user and kernel stack maps: a hash of their frames,
 * checked frame by frame when a stack is stored, so two stacks never share one.
 */
struct offcpu_key {
	__u32 pid; /* thread id */
	__u32 tgid; /* process id */
	__u64 user_stack; /* key in the user stack map; 0: none */
	__u64 kern_stack; /* key in the kernel stack map; 0: none */
	__u64 cgroup_id; /* 0 unless cgroups are recorded */
	__u32 state; /* enum offcpu_state */
	__u32 pad;
};

/* A block at or above the threshold, sent to user space as it ends. */
struct offcpu_event {
	__u64 time; /* switch-in: the moment the thread ran again */
	__u64 period; /* blocked ns */
	struct offcpu_key key;
	__u32 cpu;
	__u32 pad;
};

struct offcpu_val {
	__u64 total_ns; /* blocked time summed */
	__u64 count; /* number of blocks */
	__u32 last_cpu; /* cpu of the latest switch-in */
	__u32 pad;
};

/*
 * Per-task state between switch-out and switch-in: task storage on tp_btf,
 * a hash keyed by thread id on the raw_tp fallback.
 */
struct offcpu_task {
	__u64 ts; /* switch-out time (CLOCK_MONOTONIC ns), 0 when not tracked */
	__u64 cgroup_id;
	__u64 start_time; /* the task's start time: a reused thread id is another task */
	__u64 user_stack;
	__u64 ran_ns; /* the task's CPU time (sum_exec_runtime) when it blocked */
	__u64 nvcsw; /* its voluntary switches at the last switch-out seen (tp_btf) */
	__u32 state;
	__u32 pad;
};

/* How blocks at or above the threshold reach user space. */
enum offcpu_transport {
	OFFCPU_TRANSPORT_RINGBUF = 0, /* one BPF ring buffer shared by all cpus */
	OFFCPU_TRANSPORT_PERFBUF = 1, /* a perf event array, one buffer per cpu */
};

/* Indexes of the per-cpu counter array. */
enum offcpu_counter {
	OFFCPU_CNT_BLOCKS = 0, /* blocks that passed the filters and ended */
	OFFCPU_CNT_DROP_MAP_FULL, /* blocks lost: summed map was full */
	OFFCPU_CNT_STACK_FAIL, /* blocks kept without a user stack */
	OFFCPU_CNT_KSTACK_FAIL, /* blocks kept without a kernel stack */
	OFFCPU_CNT_NO_STORAGE, /* blocks missed: no per-task storage */
	OFFCPU_CNT_FILTER_FULL, /* children not followed: filter map full */
	OFFCPU_CNT_UNPAIRED, /* blocks lost: a thread blocked again before its switch-in was seen */
	OFFCPU_CNT_RECOVERED, /* blocks whose switch-in the kernel skipped, recovered from CPU time */
	OFFCPU_CNT_MISSED_OUT, /* blocks lost: the kernel skipped the program at their switch-out */
	OFFCPU_CNT_FAULTS, /* tests: switch-outs ignored on purpose (OFFCPU_FAULT_SKIP_SWITCH_OUT) */
	OFFCPU_CNT_STREAMED, /* blocks sent to user space one by one */
	OFFCPU_CNT_OUTPUT_FULL, /* long blocks summed instead: output buffer full */
	OFFCPU_CNT_VERIFIED, /* --verify-stacks: stacks compared with the kernel's helpers */
	OFFCPU_CNT_VERIFY_USER_BAD, /* --verify-stacks: user stacks that differed */
	OFFCPU_CNT_VERIFY_KERNEL_BAD, /* --verify-stacks: kernel stacks that differed */
	OFFCPU_CNT_USER_HELPER, /* user stacks the kernel's helper walked (not offcpu's walk) */
	OFFCPU_CNT_KERNEL_HELPER, /* kernel stacks the kernel's helper walked (not offcpu's walk) */
	OFFCPU_CNT_NR,
};

#endif /* OFFCPU_H */
