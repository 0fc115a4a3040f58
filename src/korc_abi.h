/* SPDX-License-Identifier: GPL-2.0 */
/*
 * korc_abi.h - configuration shared by the korc BPF unwinder and user space.
 *
 * User space fills this from /proc/kallsyms (korc_read_syms_err()) and stores it
 * in the BPF object's read-only data before loading, so the verifier sees
 * every field as a constant.  All fields are plain __u64 so the layout is the
 * same for the BPF target and x86-64 user space.
 */
#ifndef KORC_ABI_H
#define KORC_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct korc_syms {
	__u64 enabled;		/* 0: korc_task_stack() always asks for the fallback */

	/* core kernel text: the only range whose ORC data and "is kernel text" answer we know */
	__u64 stext;		/* _stext */
	__u64 etext;		/* _etext */

	/* ORC tables: s32 ip table (self-relative), struct orc_entry table */
	__u64 orc_ip_start;	/* __start_orc_unwind_ip */
	__u64 orc_ip_stop;	/* __stop_orc_unwind_ip */
	__u64 orc_start;	/* __start_orc_unwind */
	__u64 orc_stop;		/* __stop_orc_unwind */
	__u64 nr_orc;		/* number of entries in both tables */

	/* stack_trace_consume_entry_nosched() drops these (in_sched_functions()) */
	__u64 sched_start;	/* __sched_text_start */
	__u64 sched_end;	/* __sched_text_end */
	__u64 lock_start;	/* __lock_text_start */
	__u64 lock_end;		/* __lock_text_end */

	/* a fresh task's first frame is a "signal" frame if it returns here:
	 * ret_from_fork_asm, or ret_from_fork on kernels before its rename */
	__u64 ret_from_fork_asm;

	/* return-address trampolines the kernel would "recover"; 0 when absent */
	__u64 return_to_handler;	/* function graph tracer */
	__u64 rethook_tramp;		/* arch_rethook_trampoline */
	__u64 kretprobe_tramp;		/* __kretprobe_trampoline */

	/* walk limits */
	__u64 max_depth;	/* min(127, kernel.perf_event_max_stack) at start-up */
	__u64 thread_size;	/* THREAD_SIZE expected (16 KiB on x86-64 without KASAN) */
	__u64 cache_bits;	/* the per-CPU ORC cache holds 1 << cache_bits entries */
};

/* Negative return values of korc_task_stack(): why it asked for the fallback. */
enum korc_fallback {
	KORC_FB_DISABLED = 1,	/* korc_syms.enabled == 0 */
	KORC_FB_KTHREAD,	/* PF_KTHREAD task: not handled, by design */
	KORC_FB_ONCPU,		/* task->on_cpu set: the kernel would refuse to walk */
	KORC_FB_LAYOUT,		/* stack/pt_regs/thread.sp not where expected */
	KORC_FB_BIGSTACK,	/* live stack region larger than the copy buffer */
	KORC_FB_READ,		/* bpf_probe_read_kernel() of the stack failed */
	KORC_FB_TEXT,		/* ip outside [_stext,_etext) and not a user address */
	KORC_FB_TRAMP,		/* ip is a return trampoline the kernel would recover */
	KORC_FB_NOORC,		/* ORC lookup failed (table read error) */
	KORC_FB_ORC_UNDEF,	/* ORC_TYPE_UNDEFINED: the kernel stops with an error */
	KORC_FB_ORC_KIND,	/* an ORC reg/type combination we do not implement */
	KORC_FB_NOREG,		/* register base needs pt_regs we do not have (kernel error) */
	KORC_FB_OUTSTACK,	/* access outside the task stack (kernel error) */
	KORC_FB_UNCOPIED,	/* access inside the stack but below thread.sp (not copied) */
	KORC_FB_DIRECTION,	/* "stack going in the wrong direction" (kernel error) */
	KORC_FB_STEPS,		/* more unwind steps than KORC_MAX_STEPS */
	KORC_FB_UNALIGNED,	/* stack slot address not 8-byte aligned */
	KORC_FB_INTERNAL,	/* map lookup failed etc. */
	KORC_FB_NR
};

#endif /* KORC_ABI_H */
