/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wakers.bpf.h - who woke a block (--wakers): at sched_waking, in the
 * waker's context, the waking thread with its stacks, or the interrupt it
 * runs in ([timer], [irq], [softirq:NET_RX], ...; never the interrupted
 * task), and the chain of who woke the waker just before; each stored under
 * a hash of it, which the block's key carries. The interrupt context comes
 * from the softirq, hrtimer and irq_handler programs (set_irq_ctx()) and
 * from which stack the program runs on (the size of a task's kernel stack).
 *
 * Needs: common.bpf.h, stackmap.bpf.h, stacks.bpf.h.
 */
#ifndef OFFCPU_WAKERS_BPF_H
#define OFFCPU_WAKERS_BPF_H

#include "common.bpf.h"
#include "stackmap.bpf.h"
#include "stacks.bpf.h"

/*
 * The size of a task's kernel stack (THREAD_SIZE: 16 KiB on x86-64, twice
 * that with KASAN, more with 16K or 64K pages): the pages of the stack's
 * vmalloc area (CONFIG_VMAP_STACK), read from the first task that has one and
 * kept. A kernel without that area in its types gets user space's guess
 * (thread_size_guess, named with -v). The boot CPU's idle task has no area.
 */
const volatile __u64 page_size = 4096;
const volatile __u64 thread_size_guess = 16384;
__u64 thread_size;

static __always_inline __u64 task_stack_size(struct task_struct *task)
{
	struct vm_struct *vm;
	__u64 n = thread_size;

	if (n)
		return n;
	if (bpf_core_field_exists(task->stack_vm_area)) {
		vm = BPF_CORE_READ(task, stack_vm_area);
		n = vm ? (__u64)BPF_CORE_READ(vm, nr_pages) * page_size : 0;
		if (n) {
			thread_size = n;
			return n;
		}
	}
	return thread_size_guess;
}

/* Wakers' chains by a hash of their names (--wakers); user space reads them. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct offcpu_chain);
	__uint(max_entries, 16384);
} chains SEC(".maps");

/* Who woke blocks, by a hash of it (--wakers): the summed and streamed keys
 * carry the hash. Sized like the stack maps; user space reads and prunes it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct offcpu_wakeup);
	__uint(max_entries, 1); /* --wakers: --max-stacks */
} wakeups SEC(".maps");

/* What this cpu is running in interrupt context (--wakers): the soft
 * interrupt being served (vector + 1, 0: none), and whether an hrtimer is
 * expiring. */
struct irq_ctx {
	__u32 softirq;
	__u32 hrtimer;
	__u32 hardirq; /* in a device's interrupt handler */
	__u32 pad;
	__u64 sp; /* scratch: where the tracepoint's arguments are (see on_task_stack()) */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct irq_ctx);
	__uint(max_entries, 1);
} irq_ctx SEC(".maps");

/*
 * Wakeups (--wakers, and R's run queue split). sched_waking runs in the
 * waker's context, before the wakee is queued: the wakee cannot run, and so
 * cannot end its block, before this is done.
 */

/*
 * Whether this program runs on the current task's own stack: in task
 * context. A hard interrupt, and a soft interrupt run at its end, run on the
 * cpu's interrupt stack. The tracepoint's arguments (@ctx) are on the
 * kernel's stack where the tracepoint fired (the program's own stack may be
 * a private one). Its address goes through map memory to be compared: root
 * may. (The preempt count would say it too, but the per-cpu variable
 * holding it moved between kernels, and is not a symbol a program can use
 * on kernels built without KALLSYMS_ALL.)
 */
static __always_inline bool on_task_stack(void *ctx, struct task_struct *cur, struct irq_ctx *ic)
{
	ic->sp = (__u64)ctx;
	return *(volatile __u64 *)&ic->sp - (__u64)BPF_CORE_READ(cur, stack) < task_stack_size(cur);
}

/* Name an interrupt waker in @d (16 bytes, NUL-padded, not always ended), or
 * return OFFCPU_WAKER_TASK when the current task is the waker. */
static __always_inline __u32 irq_waker(void *ctx, char *d, struct task_struct *cur)
{
	__u32 zero = 0, vec;
	struct irq_ctx *ic = bpf_map_lookup_elem(&irq_ctx, &zero);
	bool task_stack;

	if (!ic)
		return OFFCPU_WAKER_TASK;
	task_stack = on_task_stack(ctx, cur, ic);
	if (ic->hrtimer) {
		__builtin_memcpy(d, "[timer]", 8);
		return OFFCPU_WAKER_TIMER;
	}
	/* a device's handler, or another hard interrupt (an IPI, irq_work) */
	if (ic->hardirq || (!task_stack && !ic->softirq)) {
		__builtin_memcpy(d, "[irq]", 6);
		return OFFCPU_WAKER_IRQ;
	}
	/* on the task's stack only in ksoftirqd */
	if (!ic->softirq)
		return OFFCPU_WAKER_TASK;
	vec = ic ? ic->softirq : 0;
	/* the kernel's names (/proc/softirqs), where they fit */
	switch (vec) {
	case 1: __builtin_memcpy(d, "[softirq:HI]", 13); break;
	case 2: __builtin_memcpy(d, "[softirq:TIMER]", 16); break;
	case 3: __builtin_memcpy(d, "[softirq:NET_TX]", 16); break;
	case 4: __builtin_memcpy(d, "[softirq:NET_RX]", 16); break;
	case 5: __builtin_memcpy(d, "[softirq:BLOCK]", 16); break;
	case 6: __builtin_memcpy(d, "[irq_poll]", 11); break;
	case 7: __builtin_memcpy(d, "[tasklet]", 10); break;
	case 8: __builtin_memcpy(d, "[softirq:SCHED]", 16); break;
	case 9: __builtin_memcpy(d, "[timer]", 8); return OFFCPU_WAKER_TIMER; /* HRTIMER */
	case 10: __builtin_memcpy(d, "[softirq:RCU]", 14); break;
	default: __builtin_memcpy(d, "[softirq]", 10); break;
	}
	return OFFCPU_WAKER_SOFTIRQ;
}

/* FNV-1a over @n 64-bit words, never 0 (0 is "none" in keys). */
static __always_inline __u64 hash_words(const __u64 *w, int n, __u64 seed)
{
	__u64 h = 0xcbf29ce484222325ULL ^ seed;
	int i;

	for (i = 0; i < n; i++) {
		h ^= w[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 29;
	return h ?: 1;
}

/*
 * Store @val in @map under its hash @h, unless there already: @h, or 0 when
 * the map is full (counted in @full). Chains and wakers repeat: a lookup is
 * cheaper than an update that fails.
 */
static __always_inline __u64 store_hashed(void *map, __u64 h, const void *val, __u32 full)
{
	if (bpf_map_lookup_elem(map, &h))
		return h;
	if (bpf_map_update_elem(map, &h, val, BPF_NOEXIST) && !bpf_map_lookup_elem(map, &h)) {
		count(full);
		return 0;
	}
	return h;
}

/* Store a chain under a hash of it: its key, or 0 when the map is full. */
static __always_inline __u64 store_chain(const struct offcpu_chain *ch)
{
	return store_hashed(&chains, hash_words((const __u64 *)ch->names, OFFCPU_CHAIN_HOPS * 2, ch->nr),
			    ch, OFFCPU_CNT_CHAIN_FULL);
}

/* Store who woke a block under a hash of it: its key, or 0 when the map is full. */
static __always_inline __u64 store_wakeup(const struct offcpu_wakeup *wk)
{
	return store_hashed(&wakeups, hash_words((const __u64 *)wk, sizeof(*wk) / 8, 0x77616b65),
			    wk, OFFCPU_CNT_WAKEUP_FULL);
}

/*
 * The kernel's helper walks the stack from inside this program: its first
 * frames are this program's (a JIT image, whose symbol is gone once offcpu
 * unloads it) and bpf_trace_run1's, which called it for the tracepoint;
 * __bpf_trace_sched_waking tail-calls bpf_trace_run1 and leaves no frame.
 * The same two frames on 6.1, 6.12 and 6.18: skipped, the waker's stack
 * begins at try_to_wake_up(). (While another probe is on sched_waking, a
 * perf event or another BPF program, the tracepoint calls its probes through
 * __traceiter_sched_waking, one frame more, which stays: telling it apart
 * takes its address, which libbpf would resolve from /proc/kallsyms at every
 * load, 55 ms here.)
 */
#define WAKER_KSTACK_SKIP 2

/* The kernel stack of the current task or interrupt, stored: its key or 0. */
static __always_inline __u64 current_kstack(void *ctx)
{
	__u32 zero = 0;
	__u64 *buf = bpf_map_lookup_elem(&scratch, &zero), key;
	long n;

	if (!buf)
		return 0;
	n = frames_of(bpf_get_stack(ctx, buf, OFFCPU_MAX_STACK_DEPTH * sizeof(__u64),
				    WAKER_KSTACK_SKIP & BPF_F_SKIP_FIELD_MASK));
	key = n > 0 ? store_stack(&kstacks, buf, n) : 0;
	if (!key)
		count(OFFCPU_CNT_WAKER_STACK_FAIL);
	return key;
}

/* Who is waking @t's thread: the current task, or the interrupt it is in. */
static __always_inline void note_waker(void *ctx, struct offcpu_task *t, __u64 now)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	struct offcpu_chain ch = {}, *prev;
	struct offcpu_wakeup wk = {};
	struct offcpu_task *w;
	__u32 kind = irq_waker(ctx, ch.names[0], cur);

	ch.nr = 1;
	wk.kind = kind;
	if (kind != OFFCPU_WAKER_TASK) {
		/* never the task it interrupted */
		count(OFFCPU_CNT_WAKER_IRQ);
	} else {
		wk.pid = cur->pid;
		wk.tgid = cur->tgid;
		bpf_get_current_comm(ch.names[0], sizeof(ch.names[0]));
		/* a kernel thread, or a task exiting (it wakes its parent after
		 * its memory is gone), has no user stack to walk */
		if ((cur->flags & (PF_KTHREAD | PF_EXITING)) || !cur->mm) {
			w = cur->bpf_storage ? bpf_task_storage_get(&task_store, cur, 0, 0) : NULL;
		} else {
			w = bpf_task_storage_get(&task_store, cur, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
			if (w && user_stacks) {
				wk.ustack = user_stack(ctx, cur, w, true);
				if (!wk.ustack)
					count(OFFCPU_CNT_WAKER_STACK_FAIL);
			}
		}
		/* it was woken itself just before, and has not blocked since */
		if (w && w->chain && now - w->chain_ts < OFFCPU_CHAIN_NS) {
			prev = bpf_map_lookup_elem(&chains, &w->chain);
			if (prev) {
				__builtin_memcpy(ch.names[1], prev->names[0],
						 sizeof(ch.names[0]) * (OFFCPU_CHAIN_HOPS - 1));
				ch.nr = 1 + (prev->nr < OFFCPU_CHAIN_HOPS - 1 ? prev->nr :
										OFFCPU_CHAIN_HOPS - 1);
			}
		}
	}
	if (kernel_stacks)
		wk.kstack = current_kstack(ctx);
	wk.chain = store_chain(&ch);
	t->wake_chain = wk.chain;
	t->wakeup = store_wakeup(&wk);
}

#define IRQ_SOFT 0
#define IRQ_HRTIMER 1
#define IRQ_HARD 2

static __always_inline void set_irq_ctx(int which, __u32 v)
{
	__u32 zero = 0;
	struct irq_ctx *ic = bpf_map_lookup_elem(&irq_ctx, &zero);

	if (!ic)
		return;
	if (which == IRQ_SOFT)
		ic->softirq = v;
	else if (which == IRQ_HRTIMER)
		ic->hrtimer = v;
	else
		ic->hardirq = v;
}

#endif /* OFFCPU_WAKERS_BPF_H */
