/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stacks.bpf.h - taking a block's stacks: the user stack of the task
 * switching out (or of a waker) by offcpu's own walks (frame pointers,
 * ufp.bpf.h; unwind tables, uwalk.bpf.h), the kernel stack of the task about
 * to run again from the kernel's ORC tables (korc.bpf.h); each falls back to
 * the kernel's helper where the walk cannot be sure of the helper's answer,
 * and under --verify-stacks each is compared with it. A stack is stored
 * (stackmap.bpf.h) and named by its key.
 *
 * Needs: common.bpf.h, faults.bpf.h, stackmap.bpf.h, the user walks
 * (ufp.bpf.h, uwalk.bpf.h, udefer.bpf.h), the JavaScript frames the table
 * walk names (v8.bpf.h) and korc.bpf.h (x86-64).
 */
#ifndef OFFCPU_STACKS_BPF_H
#define OFFCPU_STACKS_BPF_H

#include "common.bpf.h"
#include "faults.bpf.h"
#include "stackmap.bpf.h"
#include "ufp.bpf.h"
#include "uwalk.bpf.h"
#include "udefer.bpf.h"
#include "v8.bpf.h"

#ifdef __TARGET_ARCH_x86
/* kernel stacks walked here, from the kernel's own ORC tables (x86-64) */
#include "korc.bpf.h"
#else
static __always_inline long korc_task_stack(struct task_struct *t, __u64 *ips)
{
	return -1; /* no BPF unwinder for this architecture: the kernel's helper walks */
}
#endif

/* whether the loaded program walks kernel stacks itself (user space decides) */
#ifdef __TARGET_ARCH_x86
#define KORC_ON (korc_syms.enabled)
#else
#define KORC_ON 0
#endif

/* offcpu's user stack walk (x86-64); off: the kernel's helper walks every
 * user stack (user space turns it off if the program does not load with it) */
const volatile bool user_walker = true;

#ifdef __TARGET_ARCH_x86
/* The user stack of @task (current) into @buf, by the walk configured: the
 * number of frames, or -1 where the kernel's helper is to walk. */
static __always_inline long user_walk(struct task_struct *task, struct offcpu_task *t, __u64 *buf)
{
	struct pt_regs *regs = user_regs(task);
	long n;

	if (!regs)
		return -1;
	if (unwind_tables) {
		if (fault_refuse & FAULT_REFUSE_TABLES)
			return REFUSED();
		n = table_walk(task, regs, t, buf);
		/* (the knob first: without it the verifier never sees the call) */
		if (js_frames && n > 0)
			v8_frames(buf, n);
		return n;
	}
	return fp_walk(regs, buf);
}
#else
/*
 * Elsewhere (arm64, ...) the kernel's helper walks every user stack: the walk
 * above reads x86-64's registers (cs, ip, bp) and frame layout.
 */
static __always_inline long user_walk(struct task_struct *task, struct offcpu_task *t, __u64 *buf)
{
	return -1;
}
#endif

/* The user stack of the task switching out (current), stored: its key, or 0
 * when it could not be walked or stored (the caller counts that). */
static __always_inline __u64 user_stack(void *ctx, struct task_struct *prev, struct offcpu_task *t,
					bool btf)
{
	__u32 zero = 0, one = 1;
	__u64 *buf = bpf_map_lookup_elem(&scratch, &zero), *vbuf;
	long n = -1, vn;

	if (!buf)
		return 0;
	if (btf && user_walker) {
		if (fault_refuse & FAULT_REFUSE_USER)
			return REFUSED();
		n = user_walk(prev, t, buf);
		if (n > 0 && unwind_tables && defer_walks)
			n = defer_walk(prev, buf, n);
	}
	if (n < 0) {
		n = bpf_get_stack(ctx, buf, OFFCPU_MAX_STACK_DEPTH * sizeof(__u64),
				  BPF_F_USER_STACK);
		n = frames_of(n);
		if (btf)
			count(OFFCPU_CNT_USER_HELPER);
	} else if (verify_stacks) {
		vbuf = bpf_map_lookup_elem(&scratch, &one);
		if (vbuf) {
			vn = bpf_get_stack(ctx, vbuf, OFFCPU_MAX_STACK_DEPTH * sizeof(__u64),
					   BPF_F_USER_STACK);
			count(OFFCPU_CNT_VERIFIED);
			if (unwind_tables)
				verify_tables(prev, buf, n, vbuf, frames_of(vn));
			else if (!same_stack(buf, n, vbuf, frames_of(vn)))
				count(OFFCPU_CNT_VERIFY_USER_BAD);
		}
	}
	if (n <= 0)
		return 0;
	return store_stack(&ustacks, buf, n);
}

/*
 * The kernel stack of a task about to run again: it has not run since it
 * blocked, so its saved stack is the blocking path, without the scheduler's
 * or this program's frames. korc_task_stack() walks it here from the kernel's
 * ORC tables and returns what bpf_get_task_stack() would, about 4x cheaper;
 * where it cannot be sure of that, the helper walks.
 */
static __always_inline __u64 kernel_stack(struct task_struct *next)
{
	__u32 zero = 0, one = 1;
	__u64 *buf = bpf_map_lookup_elem(&scratch, &zero), *vbuf;
	long n, vn;

	if (!buf)
		return 0;
	if ((fault_refuse & FAULT_REFUSE_KORC) && KORC_ON)
		return REFUSED();
	n = korc_task_stack(next, buf);
	if (n < 0) {
		n = bpf_get_task_stack(next, buf, OFFCPU_MAX_STACK_DEPTH * sizeof(__u64), 0);
		count(OFFCPU_CNT_KERNEL_HELPER);
	} else if (verify_stacks) {
		vbuf = bpf_map_lookup_elem(&scratch, &one);
		if (vbuf) {
			vn = bpf_get_task_stack(next, vbuf, OFFCPU_MAX_STACK_DEPTH * sizeof(__u64), 0);
			count(OFFCPU_CNT_VERIFIED);
			if (vn != n || !same_stack(buf, frames_of(n), vbuf, frames_of(vn)))
				count(OFFCPU_CNT_VERIFY_KERNEL_BAD);
		}
	}
	if (n <= 0)
		return 0;
	return store_stack(&kstacks, buf, frames_of(n));
}

#endif /* OFFCPU_STACKS_BPF_H */
