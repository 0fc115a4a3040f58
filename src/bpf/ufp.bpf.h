/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ufp.bpf.h - the user stack by frame pointers (x86-64), walked exactly as
 * the kernel's perf callchain code walks it for bpf_get_stack(ctx,
 * BPF_F_USER_STACK): what --unwind=fp records, what --verify-stacks checks
 * against the helper; and the user registers a walk starts from, or none
 * where the kernel would walk differently.
 *
 * Needs: common.bpf.h.
 */
#ifndef OFFCPU_UFP_BPF_H
#define OFFCPU_UFP_BPF_H

#include "common.bpf.h"

/* vm.mmap_min_addr: nothing is mapped below it, so a frame pointer there ends
 * the walk as a failed read would, without the cost of a page fault */
const volatile __u64 user_min_addr = 0;
/* frames the kernel's helper stores at most: min(127, kernel.perf_event_max_stack) */
const volatile __u32 user_max_depth = OFFCPU_MAX_STACK_DEPTH;

#ifdef __TARGET_ARCH_x86
/*
 * The walk's count leaves its loop as a known value on each of the loop's
 * exits: 127 of them, one per depth at which the walk can stop. The verifier
 * would check the code after the walk (store_stack()'s hash loop, bounded by
 * the count, and the rest of the program) once for each: measured, 80,000
 * instructions instead of 11,400 with --unwind=fp (6.18; 6.1: 80,800 against
 * 12,100), 325,000 instead of 66,000 with --stacks both --verify-stacks
 * (6.18). Passed through memory the verifier does not track (the scratch
 * slot after the last frame), the count is one unknown value, and what
 * follows is checked once. The table walk needs none of this: its count
 * lives in its state in map memory (struct uw_state) anyway, as bpf_loop's
 * steps need. This walk keeps its plain loop, whose step is one read: a
 * bpf_loop callback per frame would cost a call and a return per frame, more
 * than the read.
 */
static __always_inline long blur(__u64 *buf, long n)
{
	*(volatile __u64 *)&buf[OFFCPU_MAX_STACK_DEPTH] = n;
	return *(volatile __u64 *)&buf[OFFCPU_MAX_STACK_DEPTH] & OFFCPU_MAX_STACK_DEPTH;
}

/* The user registers of @task, or NULL where the kernel would walk differently. */
static __always_inline struct pt_regs *user_regs(struct task_struct *task)
{
	struct pt_regs *regs;

	if (!task->mm || (task->flags & (PF_USER_WORKER | PF_IO_WORKER)))
		return NULL;
	/* pending uretprobes: the kernel puts back the return addresses their
	 * trampolines replaced (6.11+); the helper does that */
	if (bpf_core_field_exists(task->utask) && task->utask && task->utask->return_instances)
		return NULL;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs || regs->cs != USER64_CS)
		return NULL;
	return regs;
}

/*
 * The user stack of the current task from its user registers @regs, into
 * @buf: what the kernel's perf callchain code stores for bpf_get_stack(ctx,
 * BPF_F_USER_STACK) on x86-64, found the same way: the interrupted user ip,
 * then the return address of each frame along the saved frame pointers,
 * until a frame cannot be read or the stack is full. Each step is one user
 * read here; the kernel's walk costs several times more per frame on a
 * machine with return-thunk mitigations. Returns the number of frames.
 */
static __always_inline long fp_walk(struct pt_regs *regs, __u64 *buf)
{
	__u64 fp, frame[2];
	long n = 1;
	int i;

	buf[0] = regs->ip;
	fp = regs->bp;
	for (i = 1; i < OFFCPU_MAX_STACK_DEPTH && i < user_max_depth; i++) {
		/* the kernel's walk stops where a read fails: not a user address,
		 * or not readable without faulting a page in (the helper checks
		 * both). A null frame pointer, the usual end, would fault: below
		 * vm.mmap_min_addr nothing is mapped (but for a process with
		 * CAP_SYS_RAWIO that maps memory there; --verify-stacks tells) */
		if (fp < user_min_addr)
			break;
		if (bpf_probe_read_user(frame, sizeof(frame), (void *)fp))
			break;
		buf[i] = frame[1];
		n = i + 1;
		fp = frame[0];
	}
	return blur(buf, n);
}
#endif /* __TARGET_ARCH_x86 */

#endif /* OFFCPU_UFP_BPF_H */
