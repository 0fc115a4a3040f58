// SPDX-License-Identifier: GPL-2.0
/*
 * The floor of offcpu's design, for bench/overhead: on every switch-out of a
 * task of the target process, walk its user stack into a stack map and do
 * nothing else. The stack map is sized like offcpu's. With only_blocks it
 * walks only when the task goes to sleep (S or D, offcpu's default --state),
 * not when it is preempted. probe_empty is the same attachment with an empty
 * body: the cost of being called at all.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define MAX_STACK_DEPTH 127
#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2

const volatile bool only_blocks = false;

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 8192);
} tgid_filter SEC(".maps");

/* [0] stack walks, [1] failed walks */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 2);
} counters SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

SEC("?tp_btf/sched_switch")
int BPF_PROG(probe_stack, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 tgid = prev->tgid;

	if (!bpf_map_lookup_elem(&tgid_filter, &tgid))
		return 0;
	if (only_blocks &&
	    (preempt || !(prev->__state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE))))
		return 0;
	count(0);
	if (bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK) < 0)
		count(1);
	return 0;
}

SEC("?tp_btf/sched_switch")
int BPF_PROG(probe_empty, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}
