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
const volatile bool record_cgroup = false;
const volatile bool user_stacks = true;
const volatile bool kernel_stacks = false;
const volatile __u32 state_mask = OFFCPU_DEFAULT_STATES;
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
 * the last frame. [1] holds the kernel helper's result under --verify-stacks. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, scratch_t);
	__uint(max_entries, 2);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_val);
	__uint(max_entries, 16384);
} summed SEC(".maps");

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

struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

/* A task field: a plain load through a typed pointer on tp_btf (about 2 ns
 * here), a probe read on raw_tp (about 35 ns: a helper call). */
#define TASK_FIELD(btf, t, f) ((btf) ? (t)->f : BPF_CORE_READ(t, f))

static __always_inline void count_n(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += n;
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
	if (filter_tgid) {
		__u8 *v = bpf_map_lookup_elem(&tgid_filter, &tgid);

		if (!v || *v != OFFCPU_FILTER_ACTIVE)
			return false;
	}
	if (filter_tid && !bpf_map_lookup_elem(&tid_filter, &pid))
		return false;
	if (filter_cpu) {
		__u32 cpu = bpf_get_smp_processor_id();
		__u8 *on = bpf_map_lookup_elem(&cpu_filter, &cpu);

		if (!on || !*on)
			return false;
	}
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
		if (!h)
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
static __always_inline long user_walk(struct task_struct *task, __u64 *buf)
{
	struct pt_regs *regs;
	__u64 fp, frame[2];
	long n = 1;
	int i;

	if (!task->mm || (task->flags & (PF_USER_WORKER | PF_IO_WORKER)))
		return -1;
	/* pending uretprobes: the kernel puts back the return addresses their
	 * trampolines replaced (6.11+); the helper does that */
	if (bpf_core_field_exists(task->utask) && task->utask && task->utask->return_instances)
		return -1;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs || regs->cs != USER64_CS)
		return -1;
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
#else
/*
 * Elsewhere (arm64, ...) the kernel's helper walks every user stack: the walk
 * above reads x86-64's registers (cs, ip, bp) and frame layout.
 */
static __always_inline long user_walk(struct task_struct *task, __u64 *buf)
{
	return -1;
}
#endif

/* The user stack of the task switching out (current), stored: its key or 0. */
static __always_inline __u64 user_stack(void *ctx, struct task_struct *prev, bool btf)
{
	__u32 zero = 0, one = 1;
	__u64 *buf = bpf_map_lookup_elem(&scratch, &zero), *vbuf;
	long n = -1, vn;
	__u64 key;

	if (!buf)
		return 0;
	if (btf && user_walker) {
		if (fault_refuse & FAULT_REFUSE_USER)
			return REFUSED();
		n = user_walk(prev, buf);
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
			if (!same_stack(buf, n, vbuf, frames_of(vn)))
				count(OFFCPU_CNT_VERIFY_USER_BAD);
		}
	}
	if (n <= 0) {
		count(OFFCPU_CNT_STACK_FAIL);
		return 0;
	}
	key = store_stack(&ustacks, buf, n);
	if (!key)
		count(OFFCPU_CNT_STACK_FAIL);
	return key;
}

static __always_inline void switch_out(void *ctx, struct task_struct *prev,
				       struct offcpu_task *t, __u32 state, __u64 now, __u64 ran_ns,
				       bool btf)
{
	t->ran_ns = ran_ns;
	t->state = state;
	t->user_stack = user_stacks ? user_stack(ctx, prev, btf) : 0;
	t->cgroup_id = record_cgroup ? bpf_get_current_cgroup_id() : 0;
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
	__u64 *buf = bpf_map_lookup_elem(&scratch, &zero), *vbuf, key;
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
	if (n <= 0) {
		count(OFFCPU_CNT_KSTACK_FAIL);
		return 0;
	}
	key = store_stack(&kstacks, buf, frames_of(n));
	if (!key)
		count(OFFCPU_CNT_KSTACK_FAIL);
	return key;
}

static __always_inline void add_summed(struct offcpu_key *key, __u64 delta)
{
	struct offcpu_val *val, init = {};

	val = bpf_map_lookup_elem(&summed, key);
	if (!val) {
		/* EEXIST means another cpu created it first; the lookup tells. */
		bpf_map_update_elem(&summed, key, &init, BPF_NOEXIST);
		val = bpf_map_lookup_elem(&summed, key);
		if (!val) {
			count(OFFCPU_CNT_DROP_MAP_FULL);
			return;
		}
	}
	/* A key's blocks come from one thread, one after another: no atomics. */
	val->total_ns += delta;
	val->count++;
	val->last_cpu = bpf_get_smp_processor_id();
}

/* Send one long block to user space; false when the buffer is full. */
static __always_inline bool stream(void *ctx, struct offcpu_key *key, __u64 delta, __u64 now)
{
	struct offcpu_event *e, ev;

	if (transport == OFFCPU_TRANSPORT_PERFBUF) {
		ev.time = now;
		ev.period = delta;
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
	e->key = *key;
	e->cpu = bpf_get_smp_processor_id();
	e->pad = 0;
	/* Wake the reader only when the buffer fills up: it polls anyway. */
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
				      BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP);
	return true;
}

/* Account one block: streamed at once when long enough, else summed. */
static __always_inline void account(void *ctx, struct offcpu_key *key, __u64 delta, __u64 time)
{
	count(OFFCPU_CNT_BLOCKS);
	if (delta >= thresh_ns) {
		if (stream(ctx, key, delta, time)) {
			count(OFFCPU_CNT_STREAMED);
			return;
		}
		count(OFFCPU_CNT_OUTPUT_FULL);
	}
	add_summed(key, delta);
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
}

static __always_inline void switch_in(void *ctx, struct task_struct *next, struct offcpu_task *t,
				      __u64 now, bool btf)
{
	struct offcpu_key key = {};
	__u64 delta;

	delta = now - t->ts;
	t->ts = 0;

	block_key(&key, next, t, btf);
	if (kernel_stacks && btf)
		key.kern_stack = kernel_stack(next);
	account(ctx, &key, delta, now);
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
	account(ctx, &key, gone - ran, now);
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
	if (t && (want || t->ts)) {
		/* its CPU time so far, just brought up to date by the scheduler */
		ran_ns = TASK_FIELD(btf, prev, se.sum_exec_runtime);
		now = bpf_ktime_get_ns();
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
	if (!t->ts)
		return;
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

	if (!follow_forks || ptgid == ctgid)
		return;
	v = bpf_map_lookup_elem(&tgid_filter, &ptgid);
	if (!v || *v != OFFCPU_FILTER_ACTIVE)
		return;
	if (bpf_map_update_elem(&tgid_filter, &ctgid, &active, BPF_ANY))
		count(OFFCPU_CNT_FILTER_FULL);
}

/* A workload is recorded from its exec on, not while it waits to be started. */
static __always_inline void arm_at_exec(struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	__u8 *v = bpf_map_lookup_elem(&tgid_filter, &tgid);

	if (v && *v == OFFCPU_FILTER_AT_EXEC)
		*v = OFFCPU_FILTER_ACTIVE;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p)
{
	arm_at_exec(p);
	return 0;
}

SEC("?raw_tp/sched_process_exec")
int BPF_PROG(on_exec_raw, struct task_struct *p)
{
	arm_at_exec(p);
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
