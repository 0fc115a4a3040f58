/* SPDX-License-Identifier: GPL-2.0 */
/*
 * uwalk.bpf.h - the user stack by unwind tables (x86-64, --unwind=tables,
 * the default): from the thread's user registers, each frame's caller by the
 * rule of its object's .eh_frame for its pc (urules.bpf.h), reading the
 * stack from one copy of its top. Where no table is loaded yet (a process or
 * mapping user space has not read, a table being built) the walk asks user
 * space for it and goes on by frame pointers, and its last frame says where
 * and why tables stopped (OFFCPU_UNW_MARK_OF). One frame is one call of a
 * bpf_loop callback, its state in map memory: the verifier checks the step
 * once, whatever the depth.
 *
 * Needs: common.bpf.h, ufp.bpf.h, urules.bpf.h.
 */
#ifndef OFFCPU_UWALK_BPF_H
#define OFFCPU_UWALK_BPF_H

#include "common.bpf.h"
#include "ufp.bpf.h"
#include "urules.bpf.h"

/* --unwind=tables: the user walker steps by unwind tables (x86-64), frame
 * pointers only where no table is loaded; off: frame pointers throughout */
const volatile bool unwind_tables = false;
/* bytes of user stack copied per block at most (OFFCPU_UNW_COPY) */
const volatile __u32 unwind_copy = OFFCPU_UNW_COPY;
/* a table walk that met code with no table yet goes to user space to finish */
const volatile bool defer_walks = false;
/* the walk notes the frames it steps through by checked frame pointers, for
 * v8.bpf.h to name (on unless --no-js; user space sets it before loading) */
const volatile bool js_frames = false;

/* a process's executable mappings, by process id */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct offcpu_unw_proc);
	__uint(max_entries, OFFCPU_UNW_PROCS);
} unw_procs SEC(".maps");

/* processes whose mappings user space is asked to (re)load: id -> time asked */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1024);
} unw_req SEC(".maps");

/*
 * A new request's process id, so that user space sleeps until there is one
 * instead of polling unw_req (rare: at most one per process per load)
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} unw_wake SEC(".maps");

/* Wake the table loader for @tgid; a full ring is harmless: it reads unw_req whole */
static __always_inline void uw_wake(__u32 tgid)
{
	bpf_ringbuf_output(&unw_wake, &tgid, sizeof(tgid), BPF_RB_FORCE_WAKEUP);
}

/*
 * The walk's state, kept from one frame's step to the next in map memory:
 * bpf_loop's callback reads it anew at every step, and the verifier, which
 * does not track map memory, checks the step once for all of them. Kept in
 * the callback's context (the caller's stack), the frame count would be a
 * known value, another at each step, and each step checked on its own: over
 * the verifier's 1,000,000 instructions on 6.18 (measured), the table walk
 * refused.
 */
struct uw_state {
	__u64 pc, sp, bp; /* the frame being unwound */
	__u64 copy_at, copy_len; /* the copy: copy_len bytes from copy_at */
	__u64 lo, hi; /* uw_map()'s binary search bounds */
	__u64 stack_lo, stack_hi; /* the mapping of the stack sp was in at the start; 0: unknown */
	__u64 jit_lo, jit_hi; /* the last JIT mapping found by uw_new_jit() */
	__u32 reason; /* enum offcpu_unw_end */
	__u32 mark_at; /* the frame where tables stopped */
	__u32 last_map; /* 1 + the mapping the last pc was in; 0: none */
	__u32 tgid;
	__u32 max; /* frames at most */
	__u32 n; /* frames so far */
	__u8 fp; /* frame pointers from here on */
	__u8 interrupted; /* pc is where the thread stopped, not a return address */
	__u8 go_locked; /* passed Go's wait for a locked goroutine (OFFCPU_UNW_GO_LOCKED) */
	__u8 pad[1];
	__u32 nv8; /* frames noted in v8 */
	/* frames stepped through by checked frame pointers (V8's builtins, JIT
	 * code): the frame's frame pointer | its index in the stack << 56 */
	__u64 v8[OFFCPU_V8_FRAMES];
};

/* the copy of the top of a user stack, and 8 bytes of slack for a read at its
 * end; then the walk's state */
struct unw_copy_buf {
	__u8 b[OFFCPU_UNW_COPY + 8];
	struct uw_state st;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct unw_copy_buf);
	__uint(max_entries, 1);
} unw_copy SEC(".maps");

#ifdef __TARGET_ARCH_x86
/*
 * The table walk. Its state passes from frame to frame through bpf_loop:
 * the verifier checks one frame's step once, whatever the depth.
 */
struct uw {
	__u64 *buf; /* the frames */
	__u8 *copy; /* the stack copy */
	struct uw_state *s; /* the rest, in map memory (see below) */
	struct offcpu_unw_proc *proc;
};

/* One word of the user stack: from the copy if there, else one read. */
static __always_inline int uw_read(struct uw *c, __u64 addr, __u64 *out)
{
	__u64 off = addr - c->s->copy_at;

	if (addr >= c->s->copy_at && off + 8 <= c->s->copy_len && c->s->copy_len <= OFFCPU_UNW_COPY) {
		*out = *(__u64 *)(c->copy + (off & (OFFCPU_UNW_COPY - 1)));
		return 0;
	}
	if (addr < user_min_addr)
		return -1;
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr);
}

/* Ask user space to load @tgid's mappings (again); it rate-limits. */
static __always_inline void uw_request(__u32 tgid)
{
	__u64 now = bpf_ktime_get_ns();

	if (!bpf_map_lookup_elem(&unw_req, &tgid) &&
	    !bpf_map_update_elem(&unw_req, &tgid, &now, BPF_NOEXIST)) {
		count(OFFCPU_CNT_UNW_REQUESTS);
		uw_wake(tgid);
	}
}

/*
 * uw_map()'s binary search keeps its bounds in the walk's state, map memory,
 * which the verifier does not track: each step reads them anew, as unknown
 * values, and its two outcomes are one state. The probe indexes the mapping
 * array itself (pointer arithmetic), so the verifier keeps the exact range of
 * the index, and of the bounds it comes from: in registers, the outcomes of
 * each step stay states apart (measured: 4,800 instructions more on 6.18,
 * 2,000 more with the bounds masked at every step). uw_rule()'s search
 * indexes through a map lookup instead, and keeps its bounds in registers.
 */
#define SEARCH_SET(st, l, h)                            \
	do {                                            \
		*(volatile __u64 *)&(st)->lo = (l);     \
		*(volatile __u64 *)&(st)->hi = (h);     \
	} while (0)
#define SEARCH_LO(st) ((__u32) * (volatile __u64 *)&(st)->lo)
#define SEARCH_HI(st) ((__u32) * (volatile __u64 *)&(st)->hi)

/* The mapping holding @pc, or NULL. */
static __always_inline struct offcpu_unw_map *uw_map(struct uw *c, __u64 pc)
{
	struct offcpu_unw_proc *p = c->proc;
	struct offcpu_unw_map *m;
	__u32 lo = 0, hi, mid;
	int k;

	if (!p)
		return NULL;
	if (c->s->last_map) {
		m = &p->maps[(c->s->last_map - 1) & (OFFCPU_UNW_MAPS - 1)];
		if (pc >= m->start && pc < m->end)
			return m;
	}
	hi = p->nr;
	if (!hi || hi > OFFCPU_UNW_MAPS)
		return NULL;
	SEARCH_SET(c->s, 0, hi);
	for (k = 0; k < 9; k++) {
		lo = SEARCH_LO(c->s);
		hi = SEARCH_HI(c->s);
		if (lo + 1 >= hi)
			break;
		mid = (lo + hi) / 2;
		if (p->maps[mid & (OFFCPU_UNW_MAPS - 1)].start <= pc)
			SEARCH_SET(c->s, mid, hi);
		else
			SEARCH_SET(c->s, lo, mid);
	}
	lo = SEARCH_LO(c->s);
	m = &p->maps[lo & (OFFCPU_UNW_MAPS - 1)];
	if (pc < m->start || pc >= m->end)
		return NULL;
	c->s->last_map = lo + 1;
	return m;
}

/* Add the caller's pc as a frame; 1 when the stack is full. */
static __always_inline long uw_push(struct uw *c, __u64 pc)
{
	__u32 n = c->s->n;

	if (n >= c->s->max) {
		c->s->reason = OFFCPU_UNW_DEPTH;
		return 1;
	}
	c->buf[n & OFFCPU_MAX_STACK_DEPTH] = pc;
	c->s->n = n + 1;
	return 0;
}

/* One frame pointer step, as the kernel's walk does it. */
static __always_inline long uw_fp_step(struct uw *c)
{
	__u64 next, ra;

	/* a return address below any mapping is no frame: the chain ran into data */
	if (c->s->bp < user_min_addr || uw_read(c, c->s->bp, &next) || uw_read(c, c->s->bp + 8, &ra) ||
	    ra < user_min_addr)
		return 1;
	c->s->bp = next;
	c->s->pc = ra;
	return uw_push(c, ra);
}

struct uw_vma {
	__u64 lo, hi;
};

static long uw_jit_cb(struct task_struct *task, struct vm_area_struct *vma, struct uw_vma *v)
{
	if (!vma->vm_file && (vma->vm_flags & 0x4 /* VM_EXEC */)) {
		v->lo = vma->vm_start;
		v->hi = vma->vm_end;
	}
	return 0;
}

/*
 * Whether @addr is in anonymous executable memory of the current task (JIT
 * code) that the process's loaded mappings do not hold yet: a mapping made
 * since (node's code space grows), asked of user space to load.
 */
#define UW_JIT_RANGE (256ULL << 20) /* a JIT's code range (V8's: 128 MiB to 512 MiB) */
static __always_inline bool uw_new_jit(struct uw *c, __u64 addr)
{
	struct uw_vma v = {};
	long err;

	if (addr >= c->s->jit_lo && addr < c->s->jit_hi)
		return true;
	err = bpf_find_vma(bpf_get_current_task_btf(), addr, uw_jit_cb, &v, 0);
	/* with interrupts off, a second lookup before the first one's
	 * deferred unlock fails (-EBUSY): a JIT's code in another mapping
	 * of its code range, next to the one found, is taken as its code */
	if (err == -16 /* EBUSY */)
		return c->s->jit_hi && addr + UW_JIT_RANGE >= c->s->jit_lo &&
		       addr < c->s->jit_hi + UW_JIT_RANGE;
	if (err || !v.hi)
		return false;
	c->s->jit_lo = v.lo;
	c->s->jit_hi = v.hi;
	uw_request(c->s->tgid);
	return true;
}

/*
 * One frame pointer step through code that keeps frame pointers but has no
 * rule (JIT code, V8's builtins), taken only if it is plausible: rbp 8-aligned,
 * above sp and within sp's stack, the return address in an executable mapping
 * of the process. The next frame goes on by its own rule. 2: not plausible.
 */
#define UW_FP_STACK_MAX (8ULL << 20) /* rbp - sp at most where the stack's end is not known */
static __always_inline long uw_fp_checked(struct uw *c)
{
	__u64 bp = c->s->bp, sp = c->s->sp, next, ra;
	bool known = sp >= c->s->stack_lo && sp < c->s->stack_hi;

	if ((bp & 7) || bp < sp || (known ? bp + 16 > c->s->stack_hi : bp - sp > UW_FP_STACK_MAX))
		return 2;
	if (uw_read(c, bp, &next) || uw_read(c, bp + 8, &ra) || (!uw_map(c, ra) && !uw_new_jit(c, ra)))
		return 2;
	if (js_frames) {
		__u32 k = c->s->nv8;

		/* the frame's own frame pointer: V8 keeps its function and
		 * context under it (v8.bpf.h) */
		if (k < OFFCPU_V8_FRAMES) {
			c->s->v8[k & (OFFCPU_V8_FRAMES - 1)] = bp | ((__u64)(c->s->n - 1) << 56);
			c->s->nv8 = k + 1;
		}
	}
	c->s->bp = next;
	c->s->sp = bp + 16;
	c->s->pc = ra;
	c->s->interrupted = false;
	return uw_push(c, ra);
}

/* Tables stop at the current frame for @why: frame pointers from here. */
static __always_inline long uw_to_fp(struct uw *c, __u32 why)
{
	c->s->reason = why;
	c->s->mark_at = c->s->n - 1;
	c->s->fp = true;
	return uw_fp_step(c);
}

/* Unwind one frame: bpf_loop's callback; 1 ends the walk. */
static long uw_step(__u32 i, struct uw *c)
{
	struct offcpu_unw_rule *r = NULL;
	struct offcpu_unw_map *m;
	__u64 cfa, ra, bp, sp;
	__u32 why = OFFCPU_UNW_NO_RULE;
	long k;

	if (c->s->fp)
		return uw_fp_step(c);
	m = uw_map(c, c->s->pc);
	if (!m) {
		/* no JIT code in a mapping made since the process was loaded
		 * (which is asked for; that JIT code is stepped through below) */
		if (!uw_new_jit(c, c->s->pc)) {
			uw_request(c->s->tgid);
			return uw_to_fp(c, OFFCPU_UNW_NO_MAPPING);
		}
		why = OFFCPU_UNW_NO_MAPPING;
	} else if (m->obj == OFFCPU_UNW_OBJ_PENDING) {
		return uw_to_fp(c, OFFCPU_UNW_BUILDING);
	} else if (m->obj == OFFCPU_UNW_OBJ_JIT) {
		why = OFFCPU_UNW_NO_TABLE; /* JIT code */
	} else {
		/* a return address is the instruction after the call: its rule
		 * may be the next function's; the call itself is one byte before */
		r = uw_rule(m->obj, c->s->pc - m->bias - (c->s->interrupted ? 0 : 1), &why);
		if (!r) {
			if (why == OFFCPU_UNW_NO_TABLE)
				return uw_to_fp(c, why);
			c->s->reason = why;
			return 1;
		}
	}
	/* code that keeps frame pointers without a rule (JIT code, V8's
	 * builtins): one checked step; where it is not plausible, JIT code
	 * goes on by frame pointers as any code without a table, with the
	 * mark, and a builtin ends the walk (no rule), as before */
	if (!r || r->cfa == OFFCPU_UNW_CFA_FP_CHECKED) {
		k = uw_fp_checked(c);
		if (k != 2)
			return k;
		if (why != OFFCPU_UNW_NO_RULE)
			return uw_to_fp(c, why);
		c->s->reason = why;
		return 1;
	}
	/* Go's switch to its scheduler: the goroutine beyond it is the one
	 * waiting only where the thread waits for the goroutine locked to it */
	if (r->outermost == OFFCPU_UNW_GO_LOCKED) {
		c->s->go_locked = 1;
	} else if (r->outermost == OFFCPU_UNW_GO_SWITCH && !c->s->go_locked) {
		c->s->reason = OFFCPU_UNW_GO_SCHED;
		return 1;
	}
	sp = c->s->sp;
	switch (r->cfa) {
	case OFFCPU_UNW_CFA_RSP:
		cfa = sp + (__s64)r->cfa_off;
		break;
	case OFFCPU_UNW_CFA_RBP:
		cfa = c->s->bp + (__s64)r->cfa_off;
		break;
	case OFFCPU_UNW_CFA_PLT:
		cfa = sp + 8 + ((c->s->pc & 15) >= 11 ? 8 : 0);
		break;
	case OFFCPU_UNW_CFA_FP:
		/* the object's method (Go): a zero frame pointer ends the chain */
		if (!c->s->bp)
			return 1; /* complete */
		if (c->s->bp & 7) {
			c->s->reason = OFFCPU_UNW_BAD_FRAME;
			return 1;
		}
		cfa = c->s->bp + 16;
		break;
	case OFFCPU_UNW_CFA_SIGNAL:
		/* rt_sigreturn's frame: the interrupted registers are in the
		 * ucontext at rsp (uc_mcontext at 40: rbp at +80, rsp +120, rip +128) */
		if (uw_read(c, sp + 120, &bp) || uw_read(c, sp + 160, &cfa) ||
		    uw_read(c, sp + 168, &ra)) {
			c->s->reason = OFFCPU_UNW_READ_FAULT;
			return 1;
		}
		if (ra < user_min_addr) {
			c->s->reason = OFFCPU_UNW_BAD_FRAME;
			return 1;
		}
		c->s->bp = bp;
		c->s->sp = cfa;
		c->s->pc = ra;
		c->s->interrupted = true;
		return uw_push(c, ra);
	default:
		c->s->reason = OFFCPU_UNW_NO_RULE;
		return 1;
	}
	if (r->outermost == OFFCPU_UNW_OUTERMOST)
		return 1; /* complete */
	/* a caller's frame lies above its callee's (but where Go switched
	 * stacks, keeping rbp: from a thread's stack to a goroutine's) */
	if (cfa < sp + 8 && r->cfa != OFFCPU_UNW_CFA_FP) {
		c->s->reason = OFFCPU_UNW_BAD_FRAME;
		return 1;
	}
	if (uw_read(c, cfa - 8, &ra)) {
		c->s->reason = OFFCPU_UNW_READ_FAULT;
		return 1;
	}
	if (r->rbp == OFFCPU_UNW_RBP_AT) {
		if (uw_read(c, cfa + (__s64)r->rbp_off, &bp)) {
			c->s->reason = OFFCPU_UNW_READ_FAULT;
			return 1;
		}
		c->s->bp = bp;
	} else if (r->rbp == OFFCPU_UNW_RBP_UNDEF) {
		c->s->bp = 0;
	}
	if (!ra)
		return 1; /* complete: a zero return address ends the chain */
	if (ra < user_min_addr) {
		c->s->reason = OFFCPU_UNW_BAD_FRAME;
		return 1;
	}
	c->s->sp = cfa;
	c->s->pc = ra;
	c->s->interrupted = false;
	return uw_push(c, ra);
}

static long uw_vma_cb(struct task_struct *task, struct vm_area_struct *vma, struct uw_vma *v)
{
	v->lo = vma->vm_start;
	v->hi = vma->vm_end;
	return 0;
}

/*
 * The user stack of @task (current, switching out) by its unwind tables,
 * into @buf: frames, then a mark frame if the walk did not reach the
 * outermost frame. @t caches the bounds of the stack mapping, which the copy
 * of the stack's top must not cross (a copy that crosses fails whole).
 */
static __always_inline long table_walk(struct task_struct *task, struct pt_regs *regs,
				       struct offcpu_task *t, __u64 *buf)
{
	struct uw c = {};
	struct uw_vma v = {};
	struct unw_copy_buf *cb;
	__u32 zero = 0, n;
	__u64 len;

	cb = bpf_map_lookup_elem(&unw_copy, &zero);
	if (!cb)
		return -1;
	c.buf = buf;
	c.copy = cb->b;
	c.s = &cb->st;
	/* (the noted frames are read up to nv8 only: not cleared) */
	__builtin_memset(c.s, 0, __builtin_offsetof(struct uw_state, v8));
	c.s->max = user_max_depth < OFFCPU_MAX_STACK_DEPTH ? user_max_depth : OFFCPU_MAX_STACK_DEPTH;
	c.s->pc = regs->ip;
	c.s->sp = regs->sp;
	c.s->bp = regs->bp;
	c.s->tgid = task->tgid;
	c.s->interrupted = true;
	buf[0] = c.s->pc;
	c.s->n = 1;
	c.proc = bpf_map_lookup_elem(&unw_procs, &c.s->tgid);
	if (!c.proc) {
		uw_request(c.s->tgid);
		c.s->reason = OFFCPU_UNW_NO_PROC;
		c.s->fp = true;
	}
	/* (a walk deferred to user space takes its copy whatever the reason) */
	if (!c.s->fp || defer_walks) {
		if (!(c.s->sp >= t->stack_lo && c.s->sp < t->stack_hi)) {
			if (bpf_find_vma(task, c.s->sp, uw_vma_cb, &v, 0) == 0 && v.hi > c.s->sp) {
				t->stack_lo = v.lo;
				t->stack_hi = v.hi;
			} else {
				t->stack_lo = t->stack_hi = 0;
			}
		}
		c.s->stack_lo = t->stack_lo;
		c.s->stack_hi = t->stack_hi;
		/* up to the end of the mapping; unknown: of the page */
		len = t->stack_hi ? t->stack_hi - c.s->sp : 4096 - (c.s->sp & 4095);
		if (len > unwind_copy)
			len = unwind_copy;
		if (len > OFFCPU_UNW_COPY)
			len = OFFCPU_UNW_COPY;
		if (len && bpf_probe_read_user(c.copy, len, (void *)c.s->sp) == 0) {
			c.s->copy_at = c.s->sp;
			c.s->copy_len = len;
		} else {
			__u64 first = 4096 - (c.s->sp & 4095);

			/* a page never touched in the mapping (the top of a new
			 * process's stack, below its random offset) fails the copy
			 * whole: what is there page by page, sp's page first */
			count(OFFCPU_CNT_UNW_COPY_FAIL);
			if (first > 4096)
				first = 4096;
			if (first <= len &&
			    bpf_probe_read_user(c.copy, first, (void *)c.s->sp) == 0) {
				c.s->copy_at = c.s->sp;
				c.s->copy_len = first;
				if (first + 4096 <= len &&
				    bpf_probe_read_user(c.copy + first, 4096,
							(void *)(c.s->sp + first)) == 0)
					c.s->copy_len = first + 4096;
			}
		}
	}
	bpf_loop(OFFCPU_MAX_STACK_DEPTH, uw_step, &c, 0);
	count(OFFCPU_CNT_UNW_END + (c.s->reason & 15));
	n = c.s->n;
	/* a walk that stopped names the frame it stopped at */
	if (c.s->reason != OFFCPU_UNW_COMPLETE && !c.s->fp)
		c.s->mark_at = n - 1;
	if (c.s->reason != OFFCPU_UNW_COMPLETE) {
		/* the mark replaces the last frame if the stack is full */
		if (n >= c.s->max)
			n = c.s->max - 1;
		buf[n & OFFCPU_MAX_STACK_DEPTH] = OFFCPU_UNW_MARK_OF(c.s->reason & 0xf, c.s->mark_at & 0x7f);
		n++;
	}
	/* n <= 127 already: the mask says so to the verifier, and makes one
	 * state of the walks with and without a mark */
	return n & OFFCPU_MAX_STACK_DEPTH;
}
#endif /* __TARGET_ARCH_x86 */

#endif /* OFFCPU_UWALK_BPF_H */
