/* SPDX-License-Identifier: GPL-2.0 */
/*
 * korc.bpf.h - an x86-64 ORC kernel-stack unwinder written in BPF.
 *
 * korc_task_stack(t, ips) produces exactly what
 *
 *	bpf_get_task_stack(t, ips, 127 * 8, 0)
 *
 * produces for a task that is switched out (not running anywhere), i.e. the
 * walk done by arch_stack_walk() + unwind_next_frame() (ORC unwinder) with
 * stack_trace_consume_entry_nosched() as the consumer, or returns a negative
 * value (-enum korc_fallback) when it cannot be sure, in which case the
 * caller must use bpf_get_task_stack() itself.
 *
 * Why: on this kind of machine the helper costs 1.5-2.3 us per call, because
 * the in-kernel unwinder makes many (mitigated, hence slow) function calls per
 * frame.  Here the live part of the task's stack is copied with a single
 * bpf_probe_read_kernel() and walked in BPF; ORC entries are found by binary
 * search in the kernel's tables on a miss and then cached per CPU.
 *
 * Include after vmlinux.h, bpf_helpers.h and bpf_core_read.h, from a
 * tracing program (tp_btf, fentry, ...).  User space must fill korc_syms
 * (korc_read_syms_err()) in .rodata before loading.
 *
 * Facts reproduced (kernel 6.x, arch/x86/kernel/unwind_orc.c, stacktrace.c,
 * kernel/stacktrace.c, kernel/bpf/stackmap.c):
 *  - start state of a non-current task: sp = thread.sp + sizeof(struct
 *    inactive_task_frame), bp/ip from that frame, "signal" iff ip is
 *    ret_from_fork_asm (ret_from_fork before it was renamed, 6.1);
 *  - per frame: unwind_get_return_address() (0 when ip is not kernel text,
 *    which ends the walk, e.g. at the user-mode pt_regs of a syscall), then
 *    the consumer (skip sched/lock text, stop when max_depth entries stored),
 *    then unwind_next_frame();
 *  - the ORC entry is looked up at ip - 1 for call frames, at ip for
 *    "signal" frames (ip is the interrupted instruction there);
 *  - bitfield layout of struct orc_entry comes from kernel BTF (CO-RE), in
 *    either of its two layouts (before and since 6.4, korc_orc_decode());
 *  - result: bytes written = entries * 8, the rest of the 127 slots zeroed.
 * Every place where the kernel would take its error path, or would use data
 * we do not have, returns a fallback code instead of guessing.
 */
#ifndef KORC_BPF_H
#define KORC_BPF_H

#include "korc_abi.h"

#define KORC_NSLOTS	127		/* slots of the caller's ips[] buffer */
#define KORC_STACK_CAP	8192		/* bytes of live stack we copy at most */
#define KORC_CACHE_BITS	14	/* at most; user space sizes it (korc_syms.cache_bits) */
#define KORC_CACHE_SIZE	(1u << KORC_CACHE_BITS)
#define KORC_MAX_STEPS	192		/* unwind steps (stored + skipped frames) */
#ifndef KORC_UNROLL
#define KORC_UNROLL	4		/* steps per call of the global step function */
#endif
#define KORC_USER_END	0x0000800000000000ULL	/* above every user address */
#define KORC_PF_KTHREAD	0x00200000

/*
 * values of orc_entry.type / .sp_reg / .bp_reg (arch/x86/include/asm/orc_types.h),
 * in the numbering of 6.4 and later; entries of older kernels are translated
 * to it (korc_orc_decode())
 */
#define KORC_ORC_TYPE_UNDEFINED		0
#define KORC_ORC_TYPE_END_OF_STACK	1
#define KORC_ORC_TYPE_CALL		2
#define KORC_ORC_TYPE_REGS		3
#define KORC_ORC_TYPE_REGS_PARTIAL	4
#define KORC_ORC_TYPE_UNKNOWN		0xff	/* not one we know: fall back */

/* the numbering before 6.4: no UNDEFINED/END_OF_STACK types, an "end" bit */
#define KORC_ORC_OLD_TYPE_CALL		0
#define KORC_ORC_OLD_TYPE_REGS		1
#define KORC_ORC_OLD_TYPE_REGS_PARTIAL	2

#define KORC_REG_UNDEFINED	0
#define KORC_REG_PREV_SP	1
#define KORC_REG_DX		2
#define KORC_REG_DI		3
#define KORC_REG_BP		4
#define KORC_REG_SP		5
#define KORC_REG_R10		6
#define KORC_REG_R13		7
#define KORC_REG_BP_INDIRECT	8
#define KORC_REG_SP_INDIRECT	9

/* lookup result meaning "could not read the ORC tables" */
#define KORC_ORC_FAIL	(~0ULL)

const volatile struct korc_syms korc_syms;

/*
 * The two layouts of struct orc_entry (6 bytes, packed, in both), as CO-RE
 * flavours: libbpf matches each against the running kernel's struct
 * orc_entry, and bpf_core_field_exists() tells which one it has.
 *  - 6.4 and later ("x86/unwind/orc: Add 'signal' field to ORC metadata"):
 *    type:3 numbered UNDEFINED, END_OF_STACK, CALL, REGS, REGS_PARTIAL, and
 *    a signal bit (the entry's ip is an interrupted instruction);
 *  - before: type:2 numbered CALL, REGS, REGS_PARTIAL and an end bit; a
 *    stack ends (end) or is an error (!end) where sp_reg is UNDEFINED, and a
 *    frame is a signal frame iff its type is not CALL.
 * Only the branch of the running kernel's layout survives relocation (the
 * other one's field_exists is a constant 0), so each kernel's verifier sees
 * one decoder, and neither layout's fields fail to relocate.
 */
struct orc_entry___new {
	__s16 sp_offset;
	__s16 bp_offset;
	unsigned int sp_reg : 4;
	unsigned int bp_reg : 4;
	unsigned int type : 3;
	unsigned int signal : 1;
} __attribute__((packed, preserve_access_index));

struct orc_entry___old {
	__s16 sp_offset;
	__s16 bp_offset;
	unsigned int sp_reg : 4;
	unsigned int bp_reg : 4;
	unsigned int type : 2;
	unsigned int end : 1;
} __attribute__((packed, preserve_access_index));

/*
 * ip -> decoded ORC entry cache.  Direct mapped (index = hash(ip), tag = ip)
 * in a PERCPU_ARRAY: the lookup is inlined by the verifier like a plain
 * array's, and because each CPU has its own copy a reader can never see a
 * tag from one writer and an entry from another (a 16-byte entry cannot be
 * written atomically in a shared array).  sched_switch runs with IRQs off,
 * so nothing else on this CPU touches the entry while we use it.
 */
struct korc_cache_ent {
	__u64 tag;	/* ip the entry was looked up for; 0 = empty */
	__u64 orc;	/* packed decoded entry, see korc_pack() */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KORC_CACHE_SIZE);
	__type(key, __u32);
	__type(value, struct korc_cache_ent);
} korc_orc_cache SEC(".maps");

/*
 * Per-CPU scratch: the copy of the task's live stack plus the unwinder state
 * (kept in the map value, not in registers, so the per-step function can be
 * a verifier-friendly global function), and two slots used to turn kernel
 * pointers (bpf_task_pt_regs(), task->stack) into plain scalars the verifier
 * lets us do arithmetic on.  Per CPU because two CPUs switch tasks at once.
 */
struct korc_scratch {
	__u64 stk[KORC_STACK_CAP / 8];	/* copy of [tsp, top) */
	/* bounds: task stack [lo, top), copied part [tsp, top), len = top - tsp */
	__u64 lo, tsp, top, len;
	/* struct unwind_state, the parts the ORC unwinder uses */
	__u64 ip, sp, bp;
	__u64 regs;		/* address of the pt_regs of this frame, or 0 */
	__u64 prev_regs;	/* full pt_regs seen before a partial (iret) frame */
	__u32 signal;		/* ip is an interrupted instruction, not a return address */
	__u32 full_regs;	/* regs is a full pt_regs, not only the iret frame */
	__u32 n;		/* entries stored so far */
	__u32 max_depth;
	__u64 launder[2];
};

/* the caller's output buffer, as a sized type for the global step function */
struct korc_ips {
	__u64 ip[KORC_NSLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct korc_scratch);
} korc_scratch_map SEC(".maps");

/*
 * Packed decoded ORC entry (fits the 8-byte cache slot):
 *   bits  0-15 sp_offset (s16), 16-31 bp_offset (s16),
 *   bits 32-39 sp_reg, 40-47 bp_reg, 48-55 type, 56-63 signal.
 */
static __always_inline __u64 korc_pack(__s16 spo, __s16 bpo, __u32 spr, __u32 bpr,
				       __u32 type, __u32 sig)
{
	return (__u64)(__u16)spo | (__u64)(__u16)bpo << 16 | (__u64)(spr & 0xff) << 32 |
	       (__u64)(bpr & 0xff) << 40 | (__u64)(type & 0xff) << 48 | (__u64)(sig & 0xff) << 56;
}

/*
 * Decode the orc_entry at @raw (8 readable bytes) into korc_pack() form, in
 * the type numbering of 6.4+, whichever layout the running kernel has.
 */
static __always_inline __u64 korc_orc_decode(__u64 *raw)
{
	__u32 type, sig;

	if (bpf_core_field_exists(struct orc_entry___new, signal)) {
		struct orc_entry___new *e = (void *)raw;

		return korc_pack(BPF_CORE_READ_BITFIELD(e, sp_offset),
				 BPF_CORE_READ_BITFIELD(e, bp_offset),
				 BPF_CORE_READ_BITFIELD(e, sp_reg),
				 BPF_CORE_READ_BITFIELD(e, bp_reg),
				 BPF_CORE_READ_BITFIELD(e, type),
				 BPF_CORE_READ_BITFIELD(e, signal));
	}
	if (bpf_core_field_exists(struct orc_entry___old, end)) {
		struct orc_entry___old *e = (void *)raw;
		__u32 spr = BPF_CORE_READ_BITFIELD(e, sp_reg);

		/* unwind_next_frame() before 6.4: an undefined sp_reg ends the
		 * stack if "end" is set, else it is an error (weak terminators) */
		if (spr == KORC_REG_UNDEFINED) {
			type = BPF_CORE_READ_BITFIELD(e, end) ? KORC_ORC_TYPE_END_OF_STACK :
								 KORC_ORC_TYPE_UNDEFINED;
		} else {
			switch (BPF_CORE_READ_BITFIELD(e, type)) {
			case KORC_ORC_OLD_TYPE_CALL:
				type = KORC_ORC_TYPE_CALL;
				break;
			case KORC_ORC_OLD_TYPE_REGS:
				type = KORC_ORC_TYPE_REGS;
				break;
			case KORC_ORC_OLD_TYPE_REGS_PARTIAL:
				type = KORC_ORC_TYPE_REGS_PARTIAL;
				break;
			default:
				type = KORC_ORC_TYPE_UNKNOWN;
				break;
			}
		}
		/* these kernels set state->signal from the type: CALL -> false,
		 * REGS and REGS_PARTIAL -> true */
		sig = type == KORC_ORC_TYPE_REGS || type == KORC_ORC_TYPE_REGS_PARTIAL;
		return korc_pack(BPF_CORE_READ_BITFIELD(e, sp_offset),
				 BPF_CORE_READ_BITFIELD(e, bp_offset), spr,
				 BPF_CORE_READ_BITFIELD(e, bp_reg), type, sig);
	}
	/* a third layout: user space turns the walker off before loading */
	return KORC_ORC_FAIL;
}

/*
 * Find the ORC entry the kernel's orc_find() would use for @ip (in core
 * kernel text): the rightmost entry whose address is <= ip.  The kernel first
 * narrows the range with its orc_lookup[] block table, which is not exported;
 * a binary search over the whole sorted table returns the same entry (the
 * block bounds are themselves "rightmost <= block start" results).  Taking
 * the rightmost duplicate matters: weak section terminators (type UNDEFINED)
 * are sorted before a real entry at the same address.
 *
 * A global (non-static) function so the verifier checks it once rather than
 * at every unrolled call site.  @nr (= korc_syms.nr_orc) is passed as an
 * argument on purpose: inside a global function it is an unknown scalar, so
 * the verifier does not follow every concrete path of the binary search.
 * Returns korc_pack()ed fields or KORC_ORC_FAIL.
 */
__noinline __u64 korc_orc_lookup(__u64 ip, __u64 nr)
{
	__u64 base = korc_syms.orc_ip_start;
	__s64 lo = 0, hi = (__s64)nr - 1, found = 0, mid;
	/* CO-RE bitfield loads may read up to 8 bytes from a 6-byte struct */
	__u64 raw = 0;
	__s32 rel;
	int k;

	/* a constant for the verifier: with the walker off, nothing below is
	 * checked (a global function is verified even if never called) */
	if (!korc_syms.enabled)
		return KORC_ORC_FAIL;
	if (nr == 0 || nr > 0x7fffffff)
		return KORC_ORC_FAIL;

	for (k = 0; k < 40; k++) {
		if (lo > hi)
			break;
		mid = lo + (__s64)((__u64)(hi - lo) >> 1);
		if (bpf_probe_read_kernel(&rel, sizeof(rel), (void *)(base + mid * 4)))
			return KORC_ORC_FAIL;
		/* each ip table slot holds its target relative to its own address */
		if (base + mid * 4 + (__s64)rel <= ip) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	if (lo <= hi)
		return KORC_ORC_FAIL;

	if (bpf_probe_read_kernel(&raw, bpf_core_type_size(struct orc_entry),
				  (void *)(korc_syms.orc_start +
					   found * bpf_core_type_size(struct orc_entry))))
		return KORC_ORC_FAIL;
	return korc_orc_decode(&raw);
}

/* Cached ORC lookup; returns packed entry or KORC_ORC_FAIL. */
static __always_inline __u64 korc_orc_get(__u64 ip)
{
	/* the map has 1 << cache_bits entries (user space sizes it by the
	 * number of CPUs); the lookup checks the index against that */
	__u32 idx = (__u32)((ip * 0x9E3779B97F4A7C15ULL) >> (64 - korc_syms.cache_bits));
	struct korc_cache_ent *ce = bpf_map_lookup_elem(&korc_orc_cache, &idx);
	__u64 v;

	if (!ce)
		return KORC_ORC_FAIL;
	if (ce->tag == ip)
		return ce->orc;
	v = korc_orc_lookup(ip, korc_syms.nr_orc);
	if (v != KORC_ORC_FAIL) {
		ce->tag = ip;
		ce->orc = v;
	}
	return v;
}

/*
 * Read 8 bytes of the task's stack at kernel address @addr into *@val.
 *
 * The kernel's deref_stack_reg()/deref_stack_regs() accept an access of
 * @need bytes only if it lies entirely on the task stack [lo, lo+THREAD_SIZE)
 * (for a task that is not current no other stack is ever valid, and the
 * visit mask already holds STACK_TYPE_TASK after __unwind_start(), so a
 * second get_stack_info() fails); otherwise the unwinder takes its error
 * path.  We checked that the stack ends exactly at the end of pt_regs (top)
 * and copied [tsp, top), so an access is either a kernel error (outside
 * [lo, top)), not copied (inside [lo, tsp)), or served from the copy.
 * Stack slots are 8-byte aligned in practice; an unaligned one falls back.
 */
static __always_inline int korc_check(const struct korc_scratch *w, __u64 addr, __u64 need)
{
	if (addr < w->lo || addr >= w->top || w->top - addr < need)
		return -KORC_FB_OUTSTACK;
	if (addr < w->tsp)
		return -KORC_FB_UNCOPIED;
	return 0;
}

static __always_inline int korc_load(const struct korc_scratch *w, __u64 addr, __u64 *val)
{
	__u64 off = addr - w->tsp;

	if (off & 7)
		return -KORC_FB_UNALIGNED;
	/* callers ran korc_check(); this bound and the mask are for the verifier */
	if (off + 8 > w->len)
		return -KORC_FB_UNCOPIED;
	*val = w->stk[(off >> 3) & (KORC_STACK_CAP / 8 - 1)];
	return 0;
}

static __always_inline int korc_deref(const struct korc_scratch *w, __u64 addr, __u64 *val)
{
	int err = korc_check(w, addr, 8);

	if (err)
		return err;
	return korc_load(w, addr, val);
}

/*
 * get_reg(): a register saved in pt_regs, readable only if this frame has
 * full pt_regs, or (after an iret-only frame) from the full regs before it.
 */
static __always_inline int korc_get_reg(const struct korc_scratch *w, __u64 off, __u64 *val)
{
	__u64 rp = w->full_regs ? w->regs : w->prev_regs;

	if (!w->regs || !rp)
		return 1;	/* not available: not an error by itself */
	/* the kernel reads these without a bounds check; we need the copy */
	return korc_deref(w, rp + off, val) ? -KORC_FB_UNCOPIED : 0;
}

static __always_inline int korc_in_sched(__u64 ip)
{
	return (ip >= korc_syms.sched_start && ip < korc_syms.sched_end) ||
	       (ip >= korc_syms.lock_start && ip < korc_syms.lock_end);
}

static __always_inline int korc_is_tramp(__u64 ip)
{
	return (korc_syms.return_to_handler && ip == korc_syms.return_to_handler) ||
	       (korc_syms.rethook_tramp && ip == korc_syms.rethook_tramp) ||
	       (korc_syms.kretprobe_tramp && ip == korc_syms.kretprobe_tramp);
}

#define KORC_CONTINUE	0
#define KORC_DONE	1

/*
 * One iteration of arch_stack_walk()'s loop: report the current frame's
 * return address (unwind_get_return_address() + consumer), then
 * unwind_next_frame().  Returns KORC_CONTINUE, KORC_DONE or -reason.
 *
 * A global function: the verifier checks it once, on its own, instead of
 * once per loop iteration with all the loop-carried state (which exceeds
 * the 1M instruction budget).
 */
static __always_inline int korc_step1(struct korc_scratch *w, struct korc_ips *out)
{
	__u64 regs_sz = bpf_core_type_size(struct pt_regs);
	__u64 off_ip = bpf_core_field_offset(struct pt_regs, ip);
	__u64 off_sp = bpf_core_field_offset(struct pt_regs, sp);
	__u64 ip, look, o, cfa, val, prev_sp;
	__s64 sp_off, bp_off;
	__u32 sp_reg, bp_reg, type, n;
	int err, indirect = 0;

	ip = w->ip;

	/*
	 * unwind_get_return_address(): the walk ends at the first ip that is
	 * not kernel text.  We only know core text [_stext,_etext); a user
	 * address is certainly not text (this is how a syscall's stack ends:
	 * pt_regs holding the user ip).  Anything else (BPF JIT, ftrace or
	 * kprobe trampolines, module text) -> fall back.
	 */
	if (ip < KORC_USER_END)
		return KORC_DONE;
	if (ip < korc_syms.stext || ip >= korc_syms.etext)
		return -KORC_FB_TEXT;
	/* return addresses the kernel would have replaced by the real ones */
	if (korc_is_tramp(ip))
		return -KORC_FB_TRAMP;

	/* stack_trace_consume_entry_nosched(): sched/lock text is skipped */
	if (!korc_in_sched(ip)) {
		n = w->n;
		if (n >= w->max_depth || n >= KORC_NSLOTS)
			return KORC_DONE;
		out->ip[n] = ip;
		w->n = ++n;
		if (n >= w->max_depth)
			return KORC_DONE;
	}

	/* ---- unwind_next_frame() ---- */
	prev_sp = w->sp;

	/* pt_regs saved from user mode: end of a user task's kernel stack */
	if (w->regs) {
		if (korc_deref(w, w->regs + bpf_core_field_offset(struct pt_regs, cs), &val))
			return -KORC_FB_UNCOPIED;
		if (val & 3)
			return KORC_DONE;
	}

	/*
	 * A call frame's ip is a return address: the call is at ip - 1 (this
	 * matters for calls to noreturn functions, whose return address may
	 * already belong to the next function).  In a "signal" frame ip is
	 * the interrupted instruction itself.
	 */
	look = w->signal ? ip : ip - 1;
	if (look < korc_syms.stext || look >= korc_syms.etext)
		return -KORC_FB_TEXT;	/* the kernel would guess a frame-pointer frame */
	o = korc_orc_get(look);
	if (o == KORC_ORC_FAIL)
		return -KORC_FB_NOORC;
	sp_off = (__s16)(o & 0xffff);
	bp_off = (__s16)((o >> 16) & 0xffff);
	sp_reg = (o >> 32) & 0xff;
	bp_reg = (o >> 40) & 0xff;
	type = (o >> 48) & 0xff;

	if (type == KORC_ORC_TYPE_UNDEFINED)
		return -KORC_FB_ORC_UNDEF;	/* kernel: error, the walk ends */
	if (type == KORC_ORC_TYPE_END_OF_STACK)
		return KORC_DONE;
	w->signal = (o >> 56) & 1;

	/* the caller's stack pointer (CFA) */
	switch (sp_reg) {
	case KORC_REG_SP:
		cfa = w->sp + sp_off;
		break;
	case KORC_REG_BP:
		cfa = w->bp + sp_off;
		break;
	case KORC_REG_SP_INDIRECT:
		cfa = w->sp;
		indirect = 1;
		break;
	case KORC_REG_BP_INDIRECT:
		cfa = w->bp + sp_off;
		indirect = 1;
		break;
	case KORC_REG_R10:
	case KORC_REG_R13:
	case KORC_REG_DI:
	case KORC_REG_DX:
		/* entry code: the base register was saved in pt_regs */
		err = korc_get_reg(w, sp_reg == KORC_REG_R10 ? bpf_core_field_offset(struct pt_regs, r10) :
				      sp_reg == KORC_REG_R13 ? bpf_core_field_offset(struct pt_regs, r13) :
				      sp_reg == KORC_REG_DI ? bpf_core_field_offset(struct pt_regs, di) :
							      bpf_core_field_offset(struct pt_regs, dx), &cfa);
		if (err > 0)
			return -KORC_FB_NOREG;	/* kernel: error */
		if (err < 0)
			return err;
		break;
	default:
		return -KORC_FB_ORC_KIND;
	}
	if (indirect) {
		err = korc_deref(w, cfa, &cfa);
		if (err)
			return err;
		if (sp_reg == KORC_REG_SP_INDIRECT)
			cfa += sp_off;
	}

	/* the caller's ip and sp, and this frame's pt_regs if any */
	switch (type) {
	case KORC_ORC_TYPE_CALL:
		/* the return address sits just below the CFA */
		err = korc_deref(w, cfa - 8, &val);
		if (err)
			return err;
		w->ip = val;
		w->sp = cfa;
		w->regs = 0;
		w->prev_regs = 0;
		break;
	case KORC_ORC_TYPE_REGS:
		/* a full pt_regs at the CFA (interrupt/exception/syscall entry) */
		err = korc_check(w, cfa, regs_sz);
		if (err)
			return err;
		if (korc_load(w, cfa + off_ip, &val))
			return -KORC_FB_UNCOPIED;
		w->ip = val;
		if (korc_load(w, cfa + off_sp, &val))
			return -KORC_FB_UNCOPIED;
		w->sp = val;
		w->regs = cfa;
		w->prev_regs = 0;
		w->full_regs = 1;
		break;
	case KORC_ORC_TYPE_REGS_PARTIAL:
		/* only the hardware iret frame (ip, cs, flags, sp, ss) at the CFA */
		err = korc_check(w, cfa, regs_sz - off_ip);
		if (err)
			return err;
		if (korc_load(w, cfa, &val))
			return -KORC_FB_UNCOPIED;
		w->ip = val;
		if (korc_load(w, cfa + off_sp - off_ip, &val))
			return -KORC_FB_UNCOPIED;
		w->sp = val;
		if (w->full_regs)
			w->prev_regs = w->regs;
		w->regs = cfa - off_ip;
		w->full_regs = 0;
		break;
	default:
		return -KORC_FB_ORC_KIND;
	}

	/* the caller's frame pointer (uses the old bp for REG_BP) */
	switch (bp_reg) {
	case KORC_REG_UNDEFINED:
		/* unchanged, unless we just crossed a pt_regs frame */
		err = korc_get_reg(w, bpf_core_field_offset(struct pt_regs, bp), &val);
		if (err < 0)
			return err;
		if (err == 0)
			w->bp = val;
		break;
	case KORC_REG_PREV_SP:
		err = korc_deref(w, cfa + bp_off, &val);
		if (err)
			return err;
		w->bp = val;
		break;
	case KORC_REG_BP:
		err = korc_deref(w, w->bp + bp_off, &val);
		if (err)
			return err;
		w->bp = val;
		break;
	default:
		return -KORC_FB_ORC_KIND;
	}

	/*
	 * Guard against bad ORC data looping forever: if the new sp is still
	 * on the task stack it must be above the old one.
	 */
	if (w->sp >= w->lo && w->sp < w->top && w->top - w->sp >= 8 && w->sp <= prev_sp)
		return -KORC_FB_DIRECTION;
	return KORC_CONTINUE;
}

__noinline int korc_step(struct korc_scratch *w, struct korc_ips *out)
{
	int j, r;

	/* constant for the verifier: nothing below is checked with the walker off */
	if (!korc_syms.enabled)
		return -KORC_FB_DISABLED;
	if (!w || !out)
		return -KORC_FB_INTERNAL;
	for (j = 0; j < KORC_UNROLL; j++) {
		r = korc_step1(w, out);
		if (r != KORC_CONTINUE)
			return r;
	}
	return KORC_CONTINUE;
}

/*
 * Fill ips[0..127) like bpf_get_task_stack(t, ips, 127 * 8, 0).
 * Returns bytes stored (entries * 8; unused slots zeroed), or -reason, in
 * which case ips[] may hold garbage and the caller must use the helper.
 * @ips must point to at least KORC_NSLOTS u64 of map value memory.
 */
static __noinline long korc_task_stack(struct task_struct *t, __u64 *ips)
{
	__u64 regs_sz = bpf_core_type_size(struct pt_regs);
	__u64 frame_sz = bpf_core_type_size(struct inactive_task_frame);
	struct korc_scratch *w;
	__u64 tsp, val;
	__u32 zero = 0, i, n;
	int r = -KORC_FB_STEPS, step;

	if (!korc_syms.enabled)
		return -KORC_FB_DISABLED;
	/* kernel threads are out of scope (their stacks end differently) */
	if (t->flags & KORC_PF_KTHREAD)
		return -KORC_FB_KTHREAD;
	/*
	 * __unwind_start() refuses a task running on another CPU
	 * (task_on_another_cpu()).  At sched_switch "next" has on_cpu == 0;
	 * anything else is not our case.
	 */
	if (t->on_cpu)
		return -KORC_FB_ONCPU;

	w = bpf_map_lookup_elem(&korc_scratch_map, &zero);
	if (!w)
		return -KORC_FB_INTERNAL;

	/* launder kernel pointers into scalars; volatile so they really go through memory */
	*(volatile __u64 *)&w->launder[0] = (__u64)bpf_task_pt_regs(t);
	*(volatile __u64 *)&w->launder[1] = (__u64)t->stack;
	w->lo = *(volatile __u64 *)&w->launder[1];
	w->top = *(volatile __u64 *)&w->launder[0] + regs_sz;
	tsp = t->thread.sp;
	w->tsp = tsp;

	/*
	 * The stack must be [lo, lo + THREAD_SIZE) with pt_regs at its very
	 * top (no TOP_OF_KERNEL_STACK_PADDING), so that our bounds are the
	 * kernel's on_stack() bounds; thread.sp must leave room for the
	 * inactive_task_frame pushed by __switch_to_asm().
	 */
	if (!w->lo || w->top != w->lo + korc_syms.thread_size || (tsp & 7) ||
	    tsp < w->lo || tsp + frame_sz > w->top)
		return -KORC_FB_LAYOUT;
	w->len = w->top - tsp;
	if (w->len > KORC_STACK_CAP)
		return -KORC_FB_BIGSTACK;
	/* one copy of the whole live stack; every later read comes from it */
	if (bpf_probe_read_kernel(w->stk, w->len & (2 * KORC_STACK_CAP - 1), (void *)tsp))
		return -KORC_FB_READ;

	/* __unwind_start() for a task that is not current */
	if (korc_load(w, tsp + bpf_core_field_offset(struct inactive_task_frame, bp), &val))
		return -KORC_FB_LAYOUT;
	w->bp = val;
	if (korc_load(w, tsp + bpf_core_field_offset(struct inactive_task_frame, ret_addr), &val))
		return -KORC_FB_LAYOUT;
	w->ip = val;
	w->sp = tsp + frame_sz;
	/* a task that never ran starts in ret_from_fork_asm, not after a call */
	w->signal = val == korc_syms.ret_from_fork_asm;
	w->regs = 0;
	w->prev_regs = 0;
	w->full_regs = 0;
	w->n = 0;
	w->max_depth = korc_syms.max_depth < KORC_NSLOTS ? korc_syms.max_depth : KORC_NSLOTS;

	/*
	 * __bpf_get_stack() zeroes the unused tail of the buffer.  Zeroing all
	 * of it up front with straight-line stores is cheaper than a loop over
	 * the tail afterwards (volatile: keep clang from emitting memset()).
	 */
#pragma unroll
	for (i = 0; i < KORC_NSLOTS; i++)
		*(volatile __u64 *)&ips[i] = 0;

	for (step = 0; step < KORC_MAX_STEPS / KORC_UNROLL; step++) {
		r = korc_step(w, (struct korc_ips *)ips);
		if (r != KORC_CONTINUE)
			break;
	}
	if (r == KORC_CONTINUE)
		return -KORC_FB_STEPS;
	if (r < 0)
		return r;

	/* __bpf_get_stack() zeroes the unused tail of the buffer */
	/* the unused tail of ips[] was zeroed before the walk */
	n = w->n;
	return (long)n * 8;
}

#endif /* KORC_BPF_H */
