// SPDX-License-Identifier: GPL-2.0
/*
 * The off-CPU collector: at a task's switch-out remember when, in which state
 * and with which stack it left; at its switch-in add the blocked time to a
 * hash keyed by (thread, process, stack, state, cgroup).
 *
 * Filters run before the stack walk: the walk is what costs. On tp_btf the
 * task fields are plain loads, and both stacks are walked here rather than
 * by the kernel's helpers, whose many function calls cost 4-5x more on a
 * kernel with return-thunk mitigations: the user stack by frame pointers as
 * perf's callchain code walks it (user_walk()), the kernel stack from the
 * kernel's ORC tables (korc.bpf.h). Both return what the helpers return and
 * leave them the cases they cannot be sure of. raw_tp has neither typed
 * pointers nor task registers and uses the helpers.
 *
 * The kernel does not always call this program (see recover()): a skipped
 * switch-in is repaired from the task's CPU time, a skipped switch-out is
 * counted.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "../offcpu.h"

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

const volatile bool filter_tgid = false;
const volatile bool filter_tid = false;
const volatile bool filter_cpu = false;
const volatile bool filter_cgroup = false;
const volatile bool follow_forks = false;
/* offcpu's own process, left out of -a, -C and -G (0: none) */
const volatile __u32 skip_tgid = 0;
const volatile bool record_cgroup = false;
const volatile bool user_stacks = true;
const volatile bool kernel_stacks = false;
const volatile __u32 state_mask = OFFCPU_DEFAULT_STATES;
/* R recorded: a block's wait for a CPU after its wakeup is split off (OFFCPU_STATE_RUNQ) */
const volatile bool runq_split = false;
/* with it: the run queue wait from the scheduler's enqueue time (else from
 * the sched_waking program's stamp) */
const volatile bool runq_queued = false;
/* --wakers: who woke each block, with its stacks and chain */
const volatile bool record_wakers = false;
/* sched_switch passes prev_state (5.18+): a concurrent wakeup may already
 * have changed prev->__state to TASK_WAKING when the tracepoint runs. */
const volatile bool has_prev_state = false;
const volatile __u64 thresh_ns = ~0ULL; /* blocks this long or longer are streamed */
const volatile __u32 transport = OFFCPU_TRANSPORT_RINGBUF;
const volatile __u64 wakeup_bytes = 0; /* ring buffer fill that wakes user space */
/* vm.mmap_min_addr: nothing is mapped below it, so a frame pointer there ends
 * the walk as a failed read would, without the cost of a page fault */
const volatile __u64 user_min_addr = 0;
/* frames the kernel's helper stores at most: min(127, kernel.perf_event_max_stack) */
const volatile __u32 user_max_depth = OFFCPU_MAX_STACK_DEPTH;
/* offcpu's user stack walk (x86-64); off: the kernel's helper walks every
 * user stack (user space turns it off if the program does not load with it) */
const volatile bool user_walker = true;
/* --unwind=tables: the user walker steps by unwind tables (x86-64), frame
 * pointers only where no table is loaded; off: frame pointers throughout */
const volatile bool unwind_tables = false;
/* bytes of user stack copied per block at most (OFFCPU_UNW_COPY) */
const volatile __u32 unwind_copy = OFFCPU_UNW_COPY;
/* --verify-stacks: also run the kernel's helpers and count every difference */
const volatile bool verify_stacks = false;
/* tests only (OFFCPU_FAULT_SKIP_SWITCH_IN=N): ignore every Nth switch-in of
 * a blocked thread, as the kernel sometimes does, to exercise recover() */
const volatile __u32 fault_skip_in = 0;
__u64 fault_seen;
/* tests only (OFFCPU_FAULT_SKIP_SWITCH_OUT=N): ignore every Nth recorded
 * switch-out, as the kernel sometimes does, to check that it is counted */
const volatile __u32 fault_skip_out = 0;
__u64 fault_seen_out;
/* tests only (OFFCPU_FAULT_REFUSE=korc,user,tp_btf): put code the verifier
 * refuses into a piece of the program, so that user space must load it
 * without that piece (the fallbacks are named, never silent) */
const volatile __u32 fault_refuse = 0;
#define FAULT_REFUSE_KORC 1
#define FAULT_REFUSE_USER 2
#define FAULT_REFUSE_TP_BTF 4
#define FAULT_REFUSE_TABLES 8
/* a load through a scalar: "invalid mem access", whatever the kernel */
#define REFUSED() (*(volatile __u64 *)bpf_ktime_get_ns())

char LICENSE[] SEC("license") = "GPL";

typedef __u64 frames_t[OFFCPU_MAX_STACK_DEPTH];
typedef __u64 scratch_t[OFFCPU_MAX_STACK_DEPTH + 1];

/*
 * Stacks, keyed by a hash of their frames: user stacks taken at switch-out,
 * kernel stacks at switch-in. Frames end at the first zero.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, frames_t);
	__uint(max_entries, 16384);
} ustacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, frames_t);
	__uint(max_entries, 16384);
} kstacks SEC(".maps");

/* A stack being built: one frame more than a stack holds, for the zero after
 * the last frame. [1] holds the kernel helper's result under --verify-stacks,
 * [2] the frame-pointer walk's when tables walked. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, scratch_t);
	__uint(max_entries, 3);
} scratch SEC(".maps");

/*
 * Short blocks summed by context, in one of two maps: the program adds to the
 * one summed_sel holds, user space takes the other out. A swap is a map-in-map
 * update, which returns only once every program that may still see the old
 * map has finished: the map drained is never written meanwhile.
 */
struct summed_map {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_val);
	__uint(max_entries, 16384);
} summed_a SEC(".maps"), summed_b SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct summed_map);
} summed_sel SEC(".maps") = {
	.values = { &summed_a },
};

/* Unwind tables (see offcpu.h), written by user space through mmap. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct offcpu_unw_row);
	__uint(max_entries, 1); /* sized by user space (--unwind-mem) */
} unw_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct offcpu_unw_rule);
	__uint(max_entries, OFFCPU_UNW_RULES);
} unw_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct offcpu_unw_obj);
	__uint(max_entries, OFFCPU_UNW_OBJS);
} unw_objs SEC(".maps");

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
 * The rules of the addresses walked lately, per CPU and direct-mapped: most
 * blocks return through the same few call sites, and a hit saves the binary
 * search. An object's rows never change once it has an id: nothing to flush.
 */
struct unw_cached {
	__u32 obj, addr, rule, valid;
};

#define UNW_CACHE_BITS 12

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct unw_cached);
	__uint(max_entries, 1 << UNW_CACHE_BITS);
} unw_cache SEC(".maps");

/* --verify-stacks with tables: walks and their stack copies for the oracle */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* one page when not verifying */
} unw_verify SEC(".maps");

/*
 * Threads blocked at the start and walks to finish, for user space
 * (struct offcpu_snap, offcpu.h): one page when neither is on.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} snaps SEC(".maps");
/* the start iterator sends the registers of the threads it notes */
const volatile bool snap_start = false;
/* a table walk that met code with no table yet goes to user space to finish */
const volatile bool defer_walks = false;
/* each CPU's count of deferred walks (its programs run with interrupts off) */
__u32 defer_seq[64];
/*
 * While calibrate is set, the switch program measures how far the rq clock
 * (sched_info, where a block's start is known) lags bpf_ktime_get_ns(): the
 * smallest difference seen right after __schedule() updated that clock.
 */
__u32 calibrate;
__u32 clock_off_set;
__u64 clock_off;
/* the start or end of the recording, for the task iterator (see open_block()) */
__u64 open_now;

/* the copy of the top of a user stack, and 8 bytes of slack for a read at its
 * end; then the bounds of a binary search (see uw_rule()) */
struct uw_state {
	__u64 pc, sp, bp; /* the frame being unwound */
	__u64 copy_at, copy_len; /* the copy: copy_len bytes from copy_at */
	__u64 lo, hi; /* a binary search's bounds */
	__u32 reason; /* enum offcpu_unw_end */
	__u32 mark_at; /* the frame where tables stopped */
	__u32 last_map; /* 1 + the mapping the last pc was in; 0: none */
	__u32 tgid;
	__u32 max;
	__u8 fp; /* frame pointers from here on */
	__u8 interrupted; /* pc is where the thread stopped, not a return address */
	__u8 pad[2];
};

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

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* resized by user space */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} perf_events SEC(".maps");

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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 8192);
} tgid_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 8192);
} tid_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1); /* resized to the number of possible cpus */
} cpu_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, 1);
} cgroup_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, OFFCPU_CNT_NR);
} counters SEC(".maps");

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

struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

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

/*
 * The process, thread and cpu filters of user space's maps, for thread @pid
 * of process @tgid: @task's last cpu, or with NULL the current one (read
 * only when -C filters).
 */
static __always_inline bool filters_pass(__u32 pid, __u32 tgid, struct task_struct *task)
{
	if (filter_tgid) {
		__u8 *v = bpf_map_lookup_elem(&tgid_filter, &tgid);

		if (!v || *v != OFFCPU_FILTER_ACTIVE)
			return false;
	}
	if (filter_tid && !bpf_map_lookup_elem(&tid_filter, &pid))
		return false;
	if (filter_cpu) {
		__u32 cpu = task ? BPF_CORE_READ(task, thread_info.cpu) : bpf_get_smp_processor_id();
		__u8 *on = bpf_map_lookup_elem(&cpu_filter, &cpu);

		if (!on || !*on)
			return false;
	}
	return true;
}

/* Decide whether @prev's block is recorded; cheap checks first. */
static __always_inline bool wanted(void *ctx, struct task_struct *prev, bool preempt,
				   __u32 *state, bool btf)
{
	__u32 pid = TASK_FIELD(btf, prev, pid), tgid;
	long st;

	if (pid == 0 || (TASK_FIELD(btf, prev, flags) & PF_KTHREAD))
		return false;
	st = has_prev_state ? (long)(unsigned int)((__u64 *)ctx)[3] : task_state(prev);
	if (st & TASK_DEAD)
		return false; /* its last switch: it never runs again */
	*state = classify(preempt, st);
	if (!(state_mask & OFFCPU_STATE_MASK(*state)))
		return false;
	tgid = TASK_FIELD(btf, prev, tgid);
	if (tgid == skip_tgid || !filters_pass(pid, tgid, NULL))
		return false;
	/* prev is still current here, so the current-task helpers describe it. */
	if (filter_cgroup && bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
		return false;
	return true;
}

/*
 * The verifier follows a loop once for every value of its bound it can tell
 * apart, and then every later loop once more for each: 240,000 instructions
 * to check, or a refusal with kernel stacks too. Passing a frame count
 * through memory it does not track, here the scratch slot after the last
 * frame, makes one path check them all (7,500 instructions).
 */
static __always_inline long blur(__u64 *buf, long n)
{
	*(volatile __u64 *)&buf[OFFCPU_MAX_STACK_DEPTH] = n;
	return *(volatile __u64 *)&buf[OFFCPU_MAX_STACK_DEPTH] & OFFCPU_MAX_STACK_DEPTH;
}

/*
 * Store the @n frames in @buf (a scratch slot) under a hash of them and
 * return that key, or 0 when the map is full. An entry already under the key
 * is compared frame by frame: a different stack with the same hash moves to
 * the next key, so a key always names one stack.
 */
static __always_inline __u64 store_stack(void *map, __u64 *buf, long n)
{
	__u64 h = 0xcbf29ce484222325ULL, *old;
	int i, try;
	bool same;

	if (n <= 0 || n > OFFCPU_MAX_STACK_DEPTH)
		return 0;
	for (i = 0; i < OFFCPU_MAX_STACK_DEPTH && i < n; i++) {
		h ^= buf[i];
		h *= 0x100000001b3ULL;
	}
	n = blur(buf, n);
	/* readers stop at the first zero; n <= 127, so n & 127 is n */
	buf[n & OFFCPU_MAX_STACK_DEPTH] = 0;
	h ^= h >> 29;
	for (try = 0; try < 2; try++, h++) {
		if (!h || h == OFFCPU_STACK_UNKNOWN)
			h = 1;
		old = bpf_map_lookup_elem(map, &h);
		if (!old) {
			if (!bpf_map_update_elem(map, &h, buf, BPF_NOEXIST))
				return h;
			old = bpf_map_lookup_elem(map, &h); /* another cpu stored it first */
			if (!old)
				return 0;
		}
		/* the same frames and the same end (old[n] is the zero after them) */
		n = blur(buf, n);
		same = true;
		for (i = 0; i < OFFCPU_MAX_STACK_DEPTH; i++) {
			if (i > n)
				break;
			if (old[i] != buf[i]) {
				same = false;
				break;
			}
		}
		if (same)
			return h;
	}
	return 0;
}

/* Frames in what a stack helper returned (bytes, or a negative error). */
static __always_inline long frames_of(long bytes)
{
	return bytes > 0 ? (long)((__u64)bytes / sizeof(__u64)) : 0;
}

/* Same frames, same number: what --verify-stacks checks. */
static __always_inline bool same_stack(const __u64 *a, long na, const __u64 *b, long nb)
{
	int i;

	if (na != nb)
		return false;
	for (i = 0; i < OFFCPU_MAX_STACK_DEPTH && i < na; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

#ifdef __TARGET_ARCH_x86
/*
 * The user stack of @task, the current task, into @buf: what the kernel's
 * perf callchain code stores for bpf_get_stack(ctx, BPF_F_USER_STACK) on
 * x86-64, found the same way: the interrupted user ip, then the return
 * address of each frame along the saved frame pointers, until a frame
 * cannot be read or the stack is full. Each step is one user read here; the
 * kernel's walk costs several times more per frame on a machine with
 * return-thunk mitigations. Returns the number of frames, or -1 where the
 * kernel would walk differently (no user memory, an io_uring or other user
 * worker, a 32-bit task), to let the kernel's helper decide.
 */
static __always_inline long table_walk(struct task_struct *task, struct pt_regs *regs,
				       struct offcpu_task *t, __u64 *buf);

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

static __always_inline long user_walk(struct task_struct *task, struct offcpu_task *t, __u64 *buf)
{
	struct pt_regs *regs = user_regs(task);

	if (!regs)
		return -1;
	if (unwind_tables) {
		if (fault_refuse & FAULT_REFUSE_TABLES)
			return REFUSED();
		return table_walk(task, regs, t, buf);
	}
	return fp_walk(regs, buf);
}

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

/*
 * The number of frames so far lives in buf's last slot, memory the verifier
 * does not track: kept in the walk's state it would tell every frame's step
 * apart, and check the step once per depth (600,000 instructions) instead of
 * once (see blur()).
 */
static __always_inline __u32 uw_n(struct uw *c)
{
	return *(volatile __u64 *)&c->buf[OFFCPU_MAX_STACK_DEPTH] & OFFCPU_MAX_STACK_DEPTH;
}

static __always_inline void uw_set_n(struct uw *c, __u32 n)
{
	*(volatile __u64 *)&c->buf[OFFCPU_MAX_STACK_DEPTH] = n;
}

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
	    !bpf_map_update_elem(&unw_req, &tgid, &now, BPF_NOEXIST))
		count(OFFCPU_CNT_UNW_REQUESTS);
}

/*
 * A binary search's bounds live in map memory, which the verifier does not
 * track: kept in registers, both halves of every step would be states it
 * cannot merge, 2^steps of them (over its 1,000,000 instruction limit).
 */
#define SEARCH_SET(cb, l, h)                            \
	do {                                            \
		*(volatile __u64 *)&(cb)->lo = (l);     \
		*(volatile __u64 *)&(cb)->hi = (h);     \
	} while (0)
#define SEARCH_LO(cb) ((__u32) * (volatile __u64 *)&(cb)->lo)
#define SEARCH_HI(cb) ((__u32) * (volatile __u64 *)&(cb)->hi)

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

/* The rule for ELF address @addr of object @obj: NULL with @why when none. */
static __always_inline struct offcpu_unw_rule *uw_rule(struct uw_state *st, __u32 obj,
							__u64 addr, __u32 *why)
{
	struct offcpu_unw_obj *o = bpf_map_lookup_elem(&unw_objs, &obj);
	struct offcpu_unw_row *row;
	struct unw_cached *hit;
	__u32 lo, hi, mid, slot;
	int k;

	if (!o || !o->nr) {
		*why = OFFCPU_UNW_NO_TABLE;
		return NULL;
	}
	*why = OFFCPU_UNW_NO_RULE;
	if (addr > 0xffffffffULL)
		return NULL;
	slot = ((__u32)addr * 0x9e3779b1u ^ obj * 0x85ebca77u) >> (32 - UNW_CACHE_BITS);
	hit = bpf_map_lookup_elem(&unw_cache, &slot);
	if (hit && hit->valid && hit->obj == obj && hit->addr == (__u32)addr)
		return bpf_map_lookup_elem(&unw_rules, &hit->rule);
	SEARCH_SET(st, o->first, o->first + o->nr);
	for (k = 0; k < 24; k++) {
		lo = SEARCH_LO(st);
		hi = SEARCH_HI(st);
		if (lo + 1 >= hi)
			break;
		mid = lo + (hi - lo) / 2;
		row = bpf_map_lookup_elem(&unw_rows, &mid);
		if (!row)
			return NULL;
		if (row->start <= addr)
			SEARCH_SET(st, mid, hi);
		else
			SEARCH_SET(st, lo, mid);
	}
	lo = SEARCH_LO(st);
	row = bpf_map_lookup_elem(&unw_rows, &lo);
	if (!row || row->start > addr)
		return NULL;
	if (hit) {
		hit->obj = obj;
		hit->addr = (__u32)addr;
		hit->rule = row->rule;
		hit->valid = 1;
	}
	return bpf_map_lookup_elem(&unw_rules, &row->rule);
}

/* Add the caller's pc as a frame; 1 when the stack is full. */
static __always_inline long uw_push(struct uw *c, __u64 pc)
{
	__u32 n = uw_n(c);

	if (n >= c->s->max) {
		c->s->reason = OFFCPU_UNW_DEPTH;
		return 1;
	}
	c->buf[n & OFFCPU_MAX_STACK_DEPTH] = pc;
	uw_set_n(c, n + 1);
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

/* Tables stop at the current frame for @why: frame pointers from here. */
static __always_inline long uw_to_fp(struct uw *c, __u32 why)
{
	c->s->reason = why;
	c->s->mark_at = uw_n(c) - 1;
	c->s->fp = true;
	return uw_fp_step(c);
}

/* Unwind one frame: bpf_loop's callback; 1 ends the walk. */
static long uw_step(__u32 i, struct uw *c)
{
	struct offcpu_unw_rule *r;
	struct offcpu_unw_map *m;
	__u64 cfa, ra, bp, sp;
	__u32 why;

	if (c->s->fp)
		return uw_fp_step(c);
	m = uw_map(c, c->s->pc);
	if (!m) {
		uw_request(c->s->tgid);
		return uw_to_fp(c, OFFCPU_UNW_NO_MAPPING);
	}
	if (m->obj == OFFCPU_UNW_OBJ_PENDING)
		return uw_to_fp(c, OFFCPU_UNW_BUILDING);
	/* a return address is the instruction after the call: its rule
	 * may be the next function's; the call itself is one byte before */
	r = uw_rule(c->s, m->obj, c->s->pc - m->bias - (c->s->interrupted ? 0 : 1), &why);
	if (!r) {
		if (why == OFFCPU_UNW_NO_TABLE)
			return uw_to_fp(c, why);
		c->s->reason = why;
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
	if (r->outermost)
		return 1; /* complete */
	/* a caller's frame lies above its callee's */
	if (cfa < sp + 8) {
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

struct uw_vma {
	__u64 lo, hi;
};

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
	__builtin_memset(c.s, 0, sizeof(*c.s));
	c.s->max = user_max_depth < OFFCPU_MAX_STACK_DEPTH ? user_max_depth : OFFCPU_MAX_STACK_DEPTH;
	c.s->pc = regs->ip;
	c.s->sp = regs->sp;
	c.s->bp = regs->bp;
	c.s->tgid = task->tgid;
	c.s->interrupted = true;
	buf[0] = c.s->pc;
	uw_set_n(&c, 1);
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
	n = uw_n(&c);
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
	return blur(buf, n);
}

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
	__u32 zero = 0, id, reason, max, cpu;
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
	/* unique among a thread's walks in flight: this CPU's count and the CPU
	 * (user space finds a walk by thread and id) */
	cpu = bpf_get_smp_processor_id() & 63;
	id = (defer_seq[cpu]++ & 511) << 6 | cpu;
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
	return blur(buf, n);
}

/* When the block of @task (not on a CPU) began: ktime ns, or 0 when not known. */
static __always_inline __u64 block_began(struct task_struct *task)
{
	__u64 arrival, sum, prev_sum, b;
	int policy;

	if (!clock_off_set || !bpf_core_field_exists(task->sched_info.last_arrival))
		return 0;
	/* the time it last left a CPU: when it last arrived on one, plus what
	 * it ran then; only the fair classes keep that slice's start
	 * (prev_sum_exec_runtime) on every kernel */
	policy = BPF_CORE_READ(task, policy);
	if (policy != 0 && policy != 3 && policy != 5) /* NORMAL, BATCH, IDLE */
		return 0;
	arrival = BPF_CORE_READ(task, sched_info.last_arrival);
	sum = BPF_CORE_READ(task, se.sum_exec_runtime);
	prev_sum = BPF_CORE_READ(task, se.prev_sum_exec_runtime);
	if (!arrival || sum < prev_sum)
		return 0;
	b = arrival + (sum - prev_sum) + clock_off;
	return b < open_now ? b : 0;
}

/* OFFCPU_OPEN_START with snap_start: the registers of a thread just noted blocked. */
static __always_inline void send_start(struct task_struct *task, __u32 state, __u64 switches)
{
	struct pt_regs *regs = user_regs(task);
	struct offcpu_snap *sn;

	if (!regs)
		return;
	sn = bpf_ringbuf_reserve(&snaps, sizeof(*sn), 0);
	if (!sn) {
		count(OFFCPU_CNT_SNAP_LOST);
		return;
	}
	sn->kind = OFFCPU_SNAP_START;
	sn->tgid = task->tgid;
	sn->tid = task->pid;
	sn->id = 0;
	sn->switches = switches;
	sn->began = block_began(task);
	sn->state = state;
	sn->copy_len = 0;
	snap_regs(sn, regs);
	bpf_ringbuf_submit(sn, 0);
}

/* Keep the smallest lag of the rq clock behind ktime (see calibrate). */
static __always_inline void calibrate_clock(struct task_struct *prev, struct task_struct *next,
					    __u64 now)
{
	struct task_struct *p = prev->pid ? prev : next;
	struct cfs_rq *cfs = p->se.cfs_rq;
	__u64 clock, off;

	if (!cfs || !bpf_core_field_exists(cfs->rq))
		return;
	clock = BPF_CORE_READ(cfs, rq, clock);
	if (!clock)
		return;
	off = now - clock;
	/* (signed: ktime may be behind the rq clock) */
	if (!clock_off_set || (__s64)off < (__s64)clock_off) {
		clock_off = off;
		clock_off_set = 1;
	}
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

static __always_inline void verify_tables(struct task_struct *task, __u64 *buf, long n,
					  __u64 *vbuf, long vn)
{
}

static __always_inline long defer_walk(struct task_struct *task, __u64 *buf, long n)
{
	return n;
}

static __always_inline void send_start(struct task_struct *task, __u32 state, __u64 switches)
{
}

static __always_inline void calibrate_clock(struct task_struct *prev, struct task_struct *next,
					    __u64 now)
{
}
#endif

/* A block begins: no wakeup of it seen yet. */
static __always_inline void forget_wakeup(struct offcpu_task *t)
{
	t->wake_ts = 0;
	t->wakeup = 0;
	t->wake_chain = 0;
}

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

static __always_inline void switch_out(void *ctx, struct task_struct *prev,
				       struct offcpu_task *t, __u32 state, __u64 now, __u64 ran_ns,
				       bool btf)
{
	t->ran_ns = ran_ns;
	t->state = state;
	t->user_stack = user_stacks ? user_stack(ctx, prev, t, btf) : 0;
	t->cgroup_id = record_cgroup ? bpf_get_current_cgroup_id() : 0;
	forget_wakeup(t);
	t->chain = 0; /* it blocks: what it does next is not caused by its last waker */
	t->ts = now;
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

/* Add a block to the summed map; false when the map is full. */
static __always_inline bool add_summed(struct offcpu_key *key, __u64 delta, __u64 runq)
{
	struct offcpu_val *val, init = {};
	__u32 zero = 0;
	void *summed = bpf_map_lookup_elem(&summed_sel, &zero);

	if (!summed)
		return false;
	val = bpf_map_lookup_elem(summed, key);
	if (!val) {
		/* EEXIST means another cpu created it first; the lookup tells. */
		bpf_map_update_elem(summed, key, &init, BPF_NOEXIST);
		val = bpf_map_lookup_elem(summed, key);
		if (!val)
			return false;
	}
	/* A key's blocks come from one thread, one after another: no atomics. */
	val->total_ns += delta;
	val->runq_ns += runq;
	val->count++;
	val->last_cpu = bpf_get_smp_processor_id();
	return true;
}

/* Send one long block to user space; false when the buffer is full. */
static __always_inline bool stream(void *ctx, struct offcpu_key *key, __u64 delta, __u64 runq,
				   __u64 now)
{
	struct offcpu_event *e, ev;

	if (transport == OFFCPU_TRANSPORT_PERFBUF) {
		ev.time = now;
		ev.period = delta;
		ev.runq_ns = runq;
		ev.key = *key;
		ev.cpu = bpf_get_smp_processor_id();
		ev.pad = 0;
		return bpf_perf_event_output(ctx, &perf_events, BPF_F_CURRENT_CPU, &ev,
					     sizeof(ev)) == 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return false;
	e->time = now;
	e->period = delta;
	e->runq_ns = runq;
	e->key = *key;
	e->cpu = bpf_get_smp_processor_id();
	e->pad = 0;
	/* Wake the reader only when the buffer fills up: it polls anyway. */
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
				      BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return true;
}

/*
 * A block is kept (in the file): count what it was kept without, with its
 * time. @kstack: a kernel stack was to be taken at its end (recovered blocks
 * have none, and are counted as recovered).
 */
static __always_inline void kept(const struct offcpu_key *key, __u64 ns, bool kstack)
{
	if (user_stacks && !key->user_stack) {
		count(OFFCPU_CNT_STACK_FAIL);
		count_n(OFFCPU_CNT_STACK_FAIL_NS, ns);
	}
	if (kstack && !key->kern_stack) {
		count(OFFCPU_CNT_KSTACK_FAIL);
		count_n(OFFCPU_CNT_KSTACK_FAIL_NS, ns);
	}
}

/*
 * Account one block: streamed at once when long enough, else summed. @runq
 * is its wait for a CPU after the wakeup, split off (user space writes it as
 * a sample of its own, OFFCPU_STATE_RUNQ): one map update for both parts.
 * Every block and its time are counted, kept or lost: the summary's totals
 * are the run's, whatever the maps could hold. A short block that the summed
 * map has no room for is streamed instead; only when the output buffer is
 * full as well is it lost. @time is the block's end.
 */
static __always_inline void account(void *ctx, struct offcpu_key *key, __u64 delta, __u64 runq,
				    __u64 time, bool kstack)
{
	__u64 ns = delta + runq;
	/* a block under way at the start goes out whole, whatever its length:
	 * when it ended is what the report says of a thread found waiting */
	bool is_long = ns >= thresh_ns || key->user_stack == OFFCPU_STACK_UNKNOWN;

	count(OFFCPU_CNT_BLOCKS);
	count_n(OFFCPU_CNT_BLOCKS_NS, ns);
	if (!is_long && add_summed(key, delta, runq))
		goto kept;
	if (stream(ctx, key, delta, runq, time)) {
		if (is_long) {
			count(OFFCPU_CNT_STREAMED);
		} else {
			count(OFFCPU_CNT_SUMMED_FULL);
			count_n(OFFCPU_CNT_SUMMED_FULL_NS, ns);
		}
		goto kept;
	}
	if (is_long) {
		count(OFFCPU_CNT_OUTPUT_FULL);
		count_n(OFFCPU_CNT_OUTPUT_FULL_NS, ns);
		if (add_summed(key, delta, runq))
			goto kept;
	}
	count(OFFCPU_CNT_DROP_MAP_FULL);
	count_n(OFFCPU_CNT_DROP_MAP_FULL_NS, ns);
	return;
kept:
	kept(key, ns, kstack);
}

/* The key of @task's open block, as its switch-out left it in @t. */
static __always_inline void block_key(struct offcpu_key *key, struct task_struct *task,
				      const struct offcpu_task *t, bool btf)
{
	key->pid = TASK_FIELD(btf, task, pid);
	key->tgid = TASK_FIELD(btf, task, tgid);
	key->user_stack = t->user_stack;
	key->state = t->state;
	key->cgroup_id = t->cgroup_id;
	key->wakeup = t->wakeup;
}

/*
 * With R recorded, the part of a block after its wakeup, waiting for a CPU,
 * is a wait of its own (OFFCPU_STATE_RUNQ) without the waker: returns its
 * length, taken off *@delta. The block's end is @end.
 */
static __always_inline __u64 runq_part(struct task_struct *next, const struct offcpu_task *t,
				       __u32 state, __u64 end, __u64 *delta, bool btf)
{
	__u64 runq = 0, queued;

	if (!runq_split || state == OFFCPU_STATE_R)
		return 0;
	if (runq_queued) {
		/*
		 * The scheduler's own account: when the task was queued (its
		 * wakeup; cleared when it runs, after this tracepoint), on the
		 * clock of this run queue, which __schedule() has just updated.
		 */
		if (!bpf_core_field_exists(next->sched_info.last_queued) ||
		    !bpf_core_field_exists(next->se.cfs_rq))
			return 0;
		/* (direct loads on tp_btf: a helper call each costs more) */
		queued = btf ? next->sched_info.last_queued :
			       BPF_CORE_READ(next, sched_info.last_queued);
		if (queued)
			runq = (btf ? next->se.cfs_rq->rq->clock :
				      BPF_CORE_READ(next, se.cfs_rq, rq, clock)) - queued;
		if (!queued || (__s64)runq < 0 || runq > *delta)
			return 0;
	} else {
		if (!t->wake_ts || t->wake_ts < t->ts || t->wake_ts > end)
			return 0;
		runq = end - t->wake_ts;
	}
	*delta -= runq;
	count(OFFCPU_CNT_RUNQ);
	count_n(OFFCPU_CNT_RUNQ_NS, runq);
	return runq;
}


static __always_inline void switch_in(void *ctx, struct task_struct *next, struct offcpu_task *t,
				      __u64 now, bool btf)
{
	struct offcpu_key key = {};
	__u64 delta, runq;

	delta = now - t->ts;
	block_key(&key, next, t, btf);
	if (kernel_stacks && btf)
		key.kern_stack = kernel_stack(next);
	runq = runq_part(next, t, key.state, now, &delta, btf);
	t->ts = 0;
	/* as a waker from now on, it passes on who woke it */
	if (record_wakers) {
		t->chain = t->wake_chain;
		t->chain_ts = now;
	}
	account(ctx, &key, delta, runq, now, kernel_stacks && btf);
}

/*
 * @prev blocks again while its last block is still open: the kernel ran it
 * without calling this program at its switch-in. That happens, rarely, while
 * another BPF program attaches to or detaches from sched_switch (measured:
 * 18 in 9 recordings with a program attaching every 60 ms, 0 in 9 without).
 * The block is recovered from the scheduler's own account of the task's CPU
 * time: since it blocked it has run for (ran_ns now - ran_ns then), so it was
 * off-CPU for the rest and ran again at (now - that). Its kernel stack is
 * gone (the task has run since); its user stack was taken when it blocked.
 * The CPU time leaves out time stolen by the hypervisor (and irq time where
 * that is accounted): a recovered block includes those of the run after it.
 */
static __always_inline void recover(void *ctx, struct task_struct *prev, struct offcpu_task *t,
				    __u64 now, __u64 ran_ns, bool btf)
{
	struct offcpu_key key = {};
	__u64 ran = ran_ns - t->ran_ns, gone = now - t->ts;

	if (ran_ns < t->ran_ns || ran > gone) {
		count(OFFCPU_CNT_UNPAIRED);
		return;
	}
	block_key(&key, prev, t, btf);
	count(OFFCPU_CNT_RECOVERED);
	/* written at the time it was recovered, not at its switch-in (now -
	 * ran): after a long run that would be older than rounds already
	 * written, out of order for perf */
	account(ctx, &key, gone - ran, 0, now, false);
}

/*
 * Blocks under way when the recording started (see open_start()): the start
 * iterator notes them in the task's open_* fields, which no other program
 * writes, while this program may already run for the task on another CPU.
 * The task's own next switch makes the note its recorded block, as if its
 * switch-out had been seen (the switch program is then the only writer of
 * the task's state): at its switch-in when it has not run since it was seen
 * blocked (the usual case), the block ends there; or, when the note was not
 * there yet at its switch-in, at its first switch-out after that, where
 * recover() rebuilds it from its CPU time. Anything else is counted as lost.
 */

/* Whether @t holds a noted block, its fields read after open (set last). */
static __always_inline bool open_noted(struct offcpu_task *t)
{
	/* an atomic read orders the loads after it where plain loads may pass
	 * each other (arm64); only taken for a task with a note */
	return t->open && __sync_fetch_and_or(&t->open, 0);
}

/* The noted block becomes @t's recorded block (its user stack: taken before offcpu ran). */
static __always_inline void open_take(struct offcpu_task *t)
{
	t->open = 0;
	t->ts = t->open_ts;
	t->ran_ns = t->open_ran_ns;
	t->state = t->open_state;
	t->user_stack = user_stacks ? OFFCPU_STACK_UNKNOWN : 0;
	t->cgroup_id = t->open_cgroup;
	/* a wakeup stamped before the block began was an earlier block's */
	if (t->wake_ts < t->ts)
		forget_wakeup(t);
}

static __always_inline __u64 task_switches(struct task_struct *task, bool btf)
{
	return TASK_FIELD(btf, task, nvcsw) + TASK_FIELD(btf, task, nivcsw);
}

/*
 * @prev switches out with its note untaken: its switch-in came before the
 * note. If this is its first switch since it was seen blocked (the kernel
 * counts this one already), recover() rebuilds the block; else it is lost.
 */
static __always_inline void open_out(struct task_struct *prev, struct offcpu_task *t, __u64 now,
				     __u64 ran_ns, bool btf)
{
	__u64 ran = ran_ns - t->open_ran_ns, gone = now - t->open_ts;

	if (t->ts || task_switches(prev, btf) != t->open_switches + 1 || ran_ns < t->open_ran_ns ||
	    now < t->open_ts || ran > gone) {
		t->open = 0;
		count(OFFCPU_CNT_OPEN_LOST);
		return;
	}
	open_take(t);
	count(OFFCPU_CNT_OPEN_START);
	count_n(OFFCPU_CNT_OPEN_START_NS, gone - ran);
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

static __always_inline void on_switch_common(void *ctx, bool preempt, struct task_struct *prev,
					     struct task_struct *next, bool btf)
{
	struct offcpu_task *t;
	__u64 now = 0, ran_ns; /* read the clock only for a switch that needs it */
	__u32 state;
	bool want = wanted(ctx, prev, preempt, &state, btf);

	if (calibrate && btf)
		calibrate_clock(prev, next, bpf_ktime_get_ns());

	/*
	 * A recorded block starts here; and any switch-out of a thread whose
	 * block is still open (its switch-in skipped) ends that block's
	 * recovery, also when this switch-out itself is not recorded (a
	 * preemption, or its exit). raw_tp looks only at recorded blocks: a
	 * lookup on every switch would cost it a hash lookup and two reads.
	 */
	t = want || btf ? task_of(prev, btf, want) : NULL;
	/* (only threads seen before: a thread's first block, if the kernel
	 * skips it, leaves no trace to find) */
	if (want && t && t->nvcsw && fault_skip_out && ++fault_seen_out % fault_skip_out == 0) {
		count(OFFCPU_CNT_FAULTS);
		return; /* as if the kernel had not called this program */
	}
	if (t && btf)
		t->nvcsw = prev->nvcsw; /* already counts this switch */
	if (t && (want || t->ts || t->open)) {
		/* its CPU time so far, just brought up to date by the scheduler */
		ran_ns = TASK_FIELD(btf, prev, se.sum_exec_runtime);
		now = bpf_ktime_get_ns();
		if (open_noted(t))
			open_out(prev, t, now, ran_ns, btf);
		if (t->ts)
			recover(ctx, prev, t, now, ran_ns, btf);
		if (want)
			switch_out(ctx, prev, t, state, now, ran_ns, btf);
		else
			t->ts = 0;
	} else if (want) {
		count(OFFCPU_CNT_NO_STORAGE);
	}
	t = task_of(next, btf, false);
	if (!t)
		return;
	/*
	 * The kernel counts a thread's voluntary switches: more than the last
	 * switch-out seen counted means the kernel skipped this program when
	 * the thread blocked (see recover()); that block cannot be rebuilt
	 * (neither its start nor its stack is known), so it is counted.
	 */
	if (btf && t->nvcsw && next->nvcsw != t->nvcsw) {
		if (next->nvcsw - t->nvcsw < 1000000)
			count_n(OFFCPU_CNT_MISSED_OUT, next->nvcsw - t->nvcsw);
		t->nvcsw = next->nvcsw;
	}
	if (!t->ts) {
		if (!open_noted(t))
			return;
		/* a block under way at the start: its switch-in takes it, if it
		 * has not run since it was seen blocked (neither its switch-in nor
		 * its switch-out after that saw the note) */
		if (TASK_FIELD(btf, next, se.sum_exec_runtime) != t->open_ran_ns) {
			t->open = 0;
			count(OFFCPU_CNT_OPEN_LOST);
			return;
		}
		open_take(t);
		now = now ?: bpf_ktime_get_ns();
		count(OFFCPU_CNT_OPEN_START);
		count_n(OFFCPU_CNT_OPEN_START_NS, now - t->ts);
	}
	if (fault_skip_in && ++fault_seen % fault_skip_in == 0)
		return;
	/* it ran since its recorded switch-out: both its switch-in and its
	 * switch-out since were skipped; that block's end is not known */
	if (TASK_FIELD(btf, next, se.sum_exec_runtime) != t->ran_ns) {
		count(OFFCPU_CNT_UNPAIRED);
		t->ts = 0;
		return;
	}
	switch_in(ctx, next, t, now ?: bpf_ktime_get_ns(), btf);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (fault_refuse & FAULT_REFUSE_TP_BTF)
		return REFUSED();
	on_switch_common(ctx, preempt, prev, next, true);
	return 0;
}

SEC("?raw_tp/sched_switch")
int BPF_PROG(on_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	on_switch_common(ctx, preempt, prev, next, false);
	return 0;
}

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

/* The kernel stack of the current task or interrupt, stored: its key or 0. */
static __always_inline __u64 current_kstack(void *ctx)
{
	__u32 zero = 0;
	__u64 *buf = bpf_map_lookup_elem(&scratch, &zero), key;
	long n;

	if (!buf)
		return 0;
	n = frames_of(bpf_get_stack(ctx, buf, OFFCPU_MAX_STACK_DEPTH * sizeof(__u64), 0));
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

SEC("?tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	struct offcpu_task *t;
	__u64 now;

	/* most wakeups are of tasks offcpu has no block of: a pointer test */
	if (!p->bpf_storage)
		return 0;
	t = bpf_task_storage_get(&task_store, p, 0, 0);
	if (!t)
		return 0;
	/* a block of its own, or one under way at the start (a stamp before
	 * that began is an earlier block's) */
	if (t->ts ? t->wake_ts != 0 : !open_noted(t) || t->wake_ts >= t->open_ts)
		return 0;
	now = bpf_ktime_get_ns();
	t->wake_ts = now;
	count(OFFCPU_CNT_WAKEUPS);
	if (record_wakers)
		note_waker(ctx, t, now);
	return 0;
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

SEC("?tp_btf/softirq_entry")
int BPF_PROG(on_softirq_entry, unsigned int vec)
{
	set_irq_ctx(IRQ_SOFT, vec + 1);
	return 0;
}

SEC("?tp_btf/softirq_exit")
int BPF_PROG(on_softirq_exit, unsigned int vec)
{
	set_irq_ctx(IRQ_SOFT, 0);
	return 0;
}

SEC("?tp_btf/irq_handler_entry")
int BPF_PROG(on_irq_entry, int irq, struct irqaction *action)
{
	set_irq_ctx(IRQ_HARD, 1);
	return 0;
}

SEC("?tp_btf/irq_handler_exit")
int BPF_PROG(on_irq_exit, int irq, struct irqaction *action, int ret)
{
	set_irq_ctx(IRQ_HARD, 0);
	return 0;
}

SEC("?tp_btf/hrtimer_expire_entry")
int BPF_PROG(on_hrtimer_entry, struct hrtimer *timer, ktime_t *now)
{
	set_irq_ctx(IRQ_HRTIMER, 1);
	return 0;
}

SEC("?tp_btf/hrtimer_expire_exit")
int BPF_PROG(on_hrtimer_exit, struct hrtimer *timer)
{
	set_irq_ctx(IRQ_HRTIMER, 0);
	return 0;
}

static __always_inline void forget(struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, pid);

	bpf_map_delete_elem(&tasks, &pid);
}

SEC("?raw_tp/sched_process_exit")
int BPF_PROG(on_exit_raw, struct task_struct *p)
{
	forget(p);
	return 0;
}

static __always_inline void follow(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	__u8 active = OFFCPU_FILTER_ACTIVE, *v;

	if (ptgid == ctgid)
		return;
	/* a new process: mappings left under its id by an earlier one are not its */
	if (unwind_tables)
		bpf_map_delete_elem(&unw_procs, &ctgid);
	if (!follow_forks)
		return;
	v = bpf_map_lookup_elem(&tgid_filter, &ptgid);
	if (!v || *v != OFFCPU_FILTER_ACTIVE)
		return;
	if (bpf_map_update_elem(&tgid_filter, &ctgid, &active, BPF_ANY))
		count(OFFCPU_CNT_FILTER_FULL);
}

/* A workload is recorded from its exec on, not while it waits to be started. */
static __always_inline void arm_at_exec(struct task_struct *p, bool btf)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	__u8 *v = bpf_map_lookup_elem(&tgid_filter, &tgid);
	struct offcpu_task *t = task_of(p, btf, false);

	/* the old program's stack mapping is gone: a copy bounded by it could
	 * cross the end of the new one, and fail whole */
	if (t)
		t->stack_lo = t->stack_hi = 0;

	if (v && *v == OFFCPU_FILTER_AT_EXEC)
		*v = OFFCPU_FILTER_ACTIVE;
	/* a new program: its mappings are loaded again, now, before it blocks
	 * where possible (for a process recorded, or one that had tables) */
	if (unwind_tables && (bpf_map_delete_elem(&unw_procs, &tgid) == 0 ||
			      !filter_tgid || (v && *v == OFFCPU_FILTER_ACTIVE))) {
		__u64 now = bpf_ktime_get_ns() | OFFCPU_UNW_REQ_EXEC;

		bpf_map_update_elem(&unw_req, &tgid, &now, BPF_ANY);
	}
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p)
{
	arm_at_exec(p, true);
	return 0;
}

SEC("?raw_tp/sched_process_exec")
int BPF_PROG(on_exec_raw, struct task_struct *p)
{
	arm_at_exec(p, false);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	follow(parent, child);
	return 0;
}

SEC("?raw_tp/sched_process_fork")
int BPF_PROG(on_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	follow(parent, child);
	return 0;
}

/*
 * Blocks that span the start or the end of the recording, found by walking
 * every task once (a task iterator, run by user space):
 *   OFFCPU_OPEN_START (once attached): a thread of the targets blocked since
 *     before the program was attached has no switch-out on record; its block
 *     is noted as begun now, with its state, and an unknown user stack
 *     (taken before offcpu ran; its kernel stack is taken at its switch-in,
 *     as any other), for its own next switch to take (open_take()).
 *   OFFCPU_OPEN_END: a block still under way (the program is detached by
 *     then) ends now, and is summed with its kernel stack as of now.
 * open_now is the time both use, set by user space with open_mode.
 */
__u32 open_mode;
/* -G: the cgroup (kernfs id) and its depth below the root */
__u64 open_cgroup_id;
__u32 open_cgroup_level;

struct cgroup___anc {
	int level;
	struct cgroup___anc *ancestors[];
} __attribute__((preserve_access_index));

/* Is @task in the -G cgroup or below it? (bpf_current_task_under_cgroup()
 * answers only for the current task.) */
static __always_inline bool in_cgroup(struct task_struct *task)
{
	struct cgroup___anc *cg = (void *)BPF_CORE_READ(task, cgroups, dfl_cgrp), *anc = NULL;
	__u32 lvl = open_cgroup_level;

	if (!cg || !bpf_core_field_exists(cg->ancestors) || BPF_CORE_READ(cg, level) < (int)lvl ||
	    lvl > 4096)
		return false;
	bpf_probe_read_kernel(&anc, sizeof(anc), &cg->ancestors[lvl]);
	return anc && BPF_CORE_READ((struct cgroup *)anc, kn, id) == open_cgroup_id;
}

/* The checks of wanted() for a task that is not running now. */
static __always_inline bool wanted_open(struct task_struct *task, __u32 *state)
{
	__u32 pid = BPF_CORE_READ(task, pid), tgid = BPF_CORE_READ(task, tgid);
	long st = task_state(task);

	if (pid == 0 || (BPF_CORE_READ(task, flags) & PF_KTHREAD) || tgid == skip_tgid)
		return false;
	/* running, or on a cpu on its way out (this program sees that switch) */
	if (st == 0 || (st & TASK_DEAD) || BPF_CORE_READ(task, on_cpu))
		return false;
	*state = classify(false, st);
	if (!(state_mask & OFFCPU_STATE_MASK(*state)) || !filters_pass(pid, tgid, task))
		return false;
	if (filter_cgroup && !in_cgroup(task))
		return false;
	return true;
}

/*
 * The state of @task for the start iterator, created if it has none. raw_tp:
 * an entry left by an earlier task with this id is its switch program's to
 * reset, not the iterator's (the task is then skipped).
 */
static __always_inline struct offcpu_task *open_task_of(struct task_struct *task, bool btf)
{
	struct offcpu_task *t, init = {};
	__u32 pid;

	if (btf)
		return bpf_task_storage_get(&task_store, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	pid = BPF_CORE_READ(task, pid);
	init.start_time = BPF_CORE_READ(task, start_time);
	t = bpf_map_lookup_elem(&tasks, &pid);
	if (!t) {
		bpf_map_update_elem(&tasks, &pid, &init, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&tasks, &pid);
	}
	return t && t->start_time == init.start_time ? t : NULL;
}

/*
 * OFFCPU_OPEN_START: note the block of @task, a thread of the targets blocked
 * since before the program was attached, in its open_* fields (see
 * open_take()). The switch program may run for the task meanwhile on another
 * CPU: this writes no field that program writes, and sets open last.
 */
static __always_inline void open_start(struct task_struct *task, bool btf)
{
	/* read before the task is seen blocked: had it run since, its
	 * switch-out after the attach would be on record (t->ts) */
	__u64 ran_ns = BPF_CORE_READ(task, se.sum_exec_runtime);
	__u64 switches = BPF_CORE_READ(task, nvcsw) + BPF_CORE_READ(task, nivcsw);
	struct offcpu_task *t;
	__u32 state;

	if (!wanted_open(task, &state))
		return;
	t = open_task_of(task, btf);
	if (!t) {
		count(OFFCPU_CNT_NO_STORAGE);
		return;
	}
	if (t->ts || t->open)
		return; /* blocked since the program was attached: it has the block */
	t->open_ts = open_now;
	t->open_ran_ns = ran_ns;
	t->open_switches = switches;
	t->open_state = state;
	t->open_cgroup = record_cgroup ? BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id) : 0;
	/* an atomic exchange: the stores above are seen before it (arm64 too) */
	__sync_lock_test_and_set(&t->open, 1);
	if (snap_start && btf)
		send_start(task, state, switches);
}

/* OFFCPU_OPEN_END: the block of @task, still under way, ends now. */
static __always_inline void end_block(struct task_struct *task, struct offcpu_task *t,
				      struct offcpu_key *key, bool btf)
{
	__u64 delta = open_now - t->ts, runq;

	if (kernel_stacks && btf)
		key->kern_stack = kernel_stack(task);
	runq = runq_part(task, t, key->state, open_now, &delta, btf);
	count(OFFCPU_CNT_BLOCKS);
	count_n(OFFCPU_CNT_BLOCKS_NS, delta + runq);
	count(OFFCPU_CNT_OPEN_END);
	count_n(OFFCPU_CNT_OPEN_END_NS, delta + runq);
	if (add_summed(key, delta, runq)) {
		kept(key, delta + runq, kernel_stacks && btf);
	} else {
		count(OFFCPU_CNT_DROP_MAP_FULL);
		count_n(OFFCPU_CNT_DROP_MAP_FULL_NS, delta + runq);
	}
}

/*
 * OFFCPU_OPEN_END runs once the programs are detached: nothing else writes
 * the task's state then. (Waiting for an RCU grace period first, for a run
 * still under way on another CPU, made it worse: a thread that runs again in
 * those 12 ms cannot be told from one whose switch-in the kernel skipped.)
 */
static __always_inline void open_end(struct task_struct *task, bool btf)
{
	struct offcpu_task *t = task_of(task, btf, false);
	struct offcpu_key key = {};

	if (!t)
		return;
	if (t->open) {
		/* noted at the start, and it has not run since: under way all along */
		if (!t->ts && BPF_CORE_READ(task, se.sum_exec_runtime) == t->open_ran_ns &&
		    BPF_CORE_READ(task, nvcsw) + BPF_CORE_READ(task, nivcsw) == t->open_switches) {
			open_take(t);
			count(OFFCPU_CNT_OPEN_START);
			count_n(OFFCPU_CNT_OPEN_START_NS, open_now - t->ts);
		} else {
			t->open = 0;
			count(OFFCPU_CNT_OPEN_LOST);
		}
	}
	if (!t->ts || open_now < t->ts)
		return;
	/* it ran since: its switch-in was skipped, this block's end is not known */
	if (BPF_CORE_READ(task, se.sum_exec_runtime) != t->ran_ns) {
		count(OFFCPU_CNT_UNPAIRED);
		t->ts = 0;
		return;
	}
	block_key(&key, task, t, btf);
	end_block(task, t, &key, btf);
	t->ts = 0;
}

static __always_inline void open_block(struct task_struct *task, bool btf)
{
	/* for user space to tell with -v (wakers from interrupts need it) */
	if (!thread_size)
		task_stack_size(task);
	if (open_mode == OFFCPU_OPEN_START)
		open_start(task, btf);
	else
		open_end(task, btf);
}

SEC("iter/task")
int open_blocks(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;

	if (task)
		open_block(task, true);
	return 0;
}

SEC("?iter/task")
int open_blocks_raw(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;

	if (task)
		open_block(task, false);
	return 0;
}
