/* SPDX-License-Identifier: GPL-2.0 */
/*
 * udefer.bpf.h - table walks handed to user space, with the thread's
 * registers and the copy of its stack's top: a walk that stopped where user
 * space can go on (no table yet for the code, a rule the walk cannot follow)
 * is finished there by libdw while the process lives (defer_walk(); record's
 * userstacks.c), and under --verify-stacks every walk goes to libdw, which
 * walks the same copy to compare (verify_tables()). Also the ring buffer in
 * which the start iterator sends the registers of the threads it finds
 * blocked (open.bpf.h).
 *
 * Needs: common.bpf.h, stackmap.bpf.h, ufp.bpf.h, uwalk.bpf.h.
 */
#ifndef OFFCPU_UDEFER_BPF_H
#define OFFCPU_UDEFER_BPF_H

#include "common.bpf.h"
#include "stackmap.bpf.h"
#include "ufp.bpf.h"
#include "uwalk.bpf.h"

/*
 * Threads blocked at the start and walks to finish, for user space
 * (struct offcpu_snap, offcpu.h): one page when neither is on.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} snaps SEC(".maps");
/* deferred walks so far, all CPUs: the next walk's id (defer_walk()) */
__u64 defer_next;

/* --verify-stacks with tables: walks and their stack copies for the oracle */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* one page when not verifying */
} unw_verify SEC(".maps");

#ifdef __TARGET_ARCH_x86
/*
 * --verify-stacks with tables: the frame-pointer walk is still checked
 * against the kernel's helper (@vbuf, @vn), and the table walk in @buf goes
 * with its stack copy to user space, whose DWARF unwinder (libdw, as perf
 * report's) walks the same copy for comparison.
 */
static __always_inline void verify_tables(struct task_struct *task, __u64 *buf, long n,
					  __u64 *vbuf, long vn)
{
	__u32 zero = 0, two = 2;
	__u64 *fbuf = bpf_map_lookup_elem(&scratch, &two);
	struct unw_copy_buf *cb = bpf_map_lookup_elem(&unw_copy, &zero);
	struct pt_regs *regs = user_regs(task);
	struct offcpu_unw_sample *smp;
	__u64 len;
	long fn;

	if (!fbuf || !cb || !regs)
		return;
	fn = fp_walk(regs, fbuf);
	if (!same_stack(fbuf, fn, vbuf, vn))
		count(OFFCPU_CNT_VERIFY_USER_BAD);
	smp = bpf_ringbuf_reserve(&unw_verify, sizeof(*smp), 0);
	if (!smp) {
		count(OFFCPU_CNT_UNW_VERIFY_LOST);
		return;
	}
	smp->tgid = task->tgid;
	smp->tid = task->pid;
	smp->ip = regs->ip;
	smp->sp = regs->sp;
	smp->bp = regs->bp;
	smp->nr = n;
	bpf_probe_read_kernel(smp->ips, sizeof(smp->ips), buf);
	len = cb->st.copy_at == regs->sp ? cb->st.copy_len : 0;
	if (len > OFFCPU_UNW_COPY)
		len = OFFCPU_UNW_COPY;
	smp->copy_len = len;
	/* all of it: a size the verifier of 6.1 can bound after a spill */
	bpf_probe_read_kernel(smp->stack, sizeof(smp->stack), cb->b);
	bpf_ringbuf_submit(smp, 0);
}
/* @regs, all of them (libdw unwinds __vfork's frame by rdi), in DWARF's order */
static __always_inline void snap_regs(struct offcpu_snap *s, struct pt_regs *r)
{
	s->regs[0] = r->ax;
	s->regs[1] = r->dx;
	s->regs[2] = r->cx;
	s->regs[3] = r->bx;
	s->regs[4] = r->si;
	s->regs[5] = r->di;
	s->regs[6] = r->bp;
	s->regs[7] = r->sp;
	s->regs[8] = r->r8;
	s->regs[9] = r->r9;
	s->regs[10] = r->r10;
	s->regs[11] = r->r11;
	s->regs[12] = r->r12;
	s->regs[13] = r->r13;
	s->regs[14] = r->r14;
	s->regs[15] = r->r15;
	s->regs[16] = r->ip;
	s->orig_ax = r->orig_ax;
}

/*
 * A table walk that met code with no table yet (its process not loaded, a
 * pc in no mapping known yet, a table being built), or a rule it cannot
 * follow, goes to user space with
 * its registers and stack copy, to be finished there while the process
 * lives (userstacks.c); its stack (@buf, @n frames, the mark last) carries
 * the walk's id before the mark, for user space to find it by.
 */
static __always_inline long defer_walk(struct task_struct *task, __u64 *buf, long n)
{
	__u32 zero = 0, id, reason, max;
	struct unw_copy_buf *cb = bpf_map_lookup_elem(&unw_copy, &zero);
	struct pt_regs *regs = user_regs(task);
	struct offcpu_snap_defer *d;
	__u64 len;

	if (!cb || !regs || n < 2)
		return n;
	reason = cb->st.reason;
	/* also a pc whose rule the walk cannot follow (glibc's __vfork keeps its
	 * return address in rdi): libdw follows every kind of rule */
	if (reason != OFFCPU_UNW_NO_PROC && reason != OFFCPU_UNW_NO_MAPPING &&
	    reason != OFFCPU_UNW_BUILDING && reason != OFFCPU_UNW_NO_RULE)
		return n;
	d = bpf_ringbuf_reserve(&snaps, sizeof(*d), 0);
	if (!d) {
		count(OFFCPU_CNT_SNAP_LOST);
		return n;
	}
	/*
	 * User space finds a walk by thread and id until the block's sample is
	 * written (the next flush for a summed one), and a block's key holds
	 * the id: a thread's two walks with one id would be summed as one
	 * stack, and the later walk's frames would replace the earlier's. The
	 * ids count all walks, over all the room below the lowest mapping: an
	 * id comes back after 61,440 deferred walks. (They were counted per
	 * CPU, 512 ids each: a process that deferred its walks across more
	 * than 512 of one CPU's had blocks written with another block's stack.)
	 */
	id = (__u32)(__sync_fetch_and_add(&defer_next, 1) % (OFFCPU_UNW_DEFER_HI - OFFCPU_UNW_DEFER_LO));
	d->h.kind = OFFCPU_SNAP_DEFER;
	d->h.tgid = task->tgid;
	d->h.tid = task->pid;
	d->h.id = id;
	d->h.switches = 0;
	d->h.began = 0;
	d->h.state = reason; /* where the walk stopped */
	snap_regs(&d->h, regs);
	len = cb->st.copy_at == regs->sp ? cb->st.copy_len : 0;
	if (len > OFFCPU_UNW_COPY)
		len = OFFCPU_UNW_COPY;
	d->h.copy_len = len;
	/* all of it: a size the verifier of 6.1 can bound after a spill */
	bpf_probe_read_kernel(d->stack, sizeof(d->stack), cb->b);
	bpf_ringbuf_submit(d, 0);
	count(OFFCPU_CNT_DEFERRED);
	max = user_max_depth < OFFCPU_MAX_STACK_DEPTH ? user_max_depth : OFFCPU_MAX_STACK_DEPTH;
	if (n < max) {
		buf[n & OFFCPU_MAX_STACK_DEPTH] = buf[(n - 1) & OFFCPU_MAX_STACK_DEPTH];
		buf[(n - 1) & OFFCPU_MAX_STACK_DEPTH] = OFFCPU_UNW_DEFER_LO + id;
		n++;
	} else {
		buf[(n - 2) & OFFCPU_MAX_STACK_DEPTH] = OFFCPU_UNW_DEFER_LO + id;
	}
	/* (n <= 127: the mask makes one state of both ends) */
	return n & OFFCPU_MAX_STACK_DEPTH;
}
#else
static __always_inline void verify_tables(struct task_struct *task, __u64 *buf, long n,
					  __u64 *vbuf, long vn)
{
}

static __always_inline long defer_walk(struct task_struct *task, __u64 *buf, long n)
{
	return n;
}
#endif /* __TARGET_ARCH_x86 */

#endif /* OFFCPU_UDEFER_BPF_H */
