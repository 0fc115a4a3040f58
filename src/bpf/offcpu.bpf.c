// SPDX-License-Identifier: GPL-2.0
/*
 * The off-CPU collector: at a task's switch-out remember when, in which state
 * and with which stack it left; at its switch-in add the blocked time to a
 * hash keyed by (thread, process, stack, state, cgroup).
 *
 * Filters run before the stack walk: the walk is what costs.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "../offcpu.h"

#define PF_KTHREAD 0x00200000
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

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, OFFCPU_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} stacks SEC(".maps");

typedef __u64 kstack_t[OFFCPU_MAX_STACK_DEPTH];
typedef __u64 kstack_scratch_t[OFFCPU_MAX_STACK_DEPTH + 1];

/* Kernel stacks, keyed by a hash of their frames (taken at switch-in). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, kstack_t);
	__uint(max_entries, 16384);
} kstacks SEC(".maps");

/* One frame more than a stack holds: room for the zero after the last frame. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, kstack_scratch_t);
	__uint(max_entries, 1);
} kstack_scratch SEC(".maps");

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

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
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
static __always_inline bool wanted(void *ctx, struct task_struct *prev, bool preempt, __u32 *state)
{
	__u32 pid = BPF_CORE_READ(prev, pid), tgid = BPF_CORE_READ(prev, tgid);
	long st;

	if (pid == 0 || (BPF_CORE_READ(prev, flags) & PF_KTHREAD))
		return false;
	st = has_prev_state ? (long)(unsigned int)((__u64 *)ctx)[3] : task_state(prev);
	if (st & TASK_DEAD)
		return false; /* its last switch: it never runs again */
	*state = classify(preempt, st);
	if (!(state_mask & OFFCPU_STATE_MASK(*state)))
		return false;
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

static __always_inline void switch_out(void *ctx, struct offcpu_task *t, __u32 state, __u64 now)
{
	/* A block still open means its switch-in was never seen: count the loss. */
	if (t->ts)
		count(OFFCPU_CNT_UNPAIRED);
	t->state = state;
	t->user_stack_id = -1;
	if (user_stacks) {
		long id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);

		if (id >= 0)
			t->user_stack_id = (__s32)id;
		else
			count(OFFCPU_CNT_STACK_FAIL);
	}
	t->cgroup_id = record_cgroup ? bpf_get_current_cgroup_id() : 0;
	t->ts = now;
}

/*
 * The kernel stack of a task about to run again: it has not run since it
 * blocked, so its saved stack is the blocking path, without the scheduler's
 * or this program's frames. Stored under a hash of its frames.
 */
static __always_inline __u64 kernel_stack(struct task_struct *next)
{
	__u32 zero = 0;
	__u64 *buf = bpf_map_lookup_elem(&kstack_scratch, &zero);
	__u64 h = 0xcbf29ce484222325ULL;
	long n;
	int i;

	if (!buf)
		return 0;
	n = bpf_get_task_stack(next, buf, OFFCPU_MAX_STACK_DEPTH * sizeof(__u64), 0);
	if (n <= 0) {
		count(OFFCPU_CNT_KSTACK_FAIL);
		return 0;
	}
	n /= sizeof(__u64);
	for (i = 0; i < OFFCPU_MAX_STACK_DEPTH && i < n; i++) {
		h ^= buf[i];
		h *= 0x100000001b3ULL;
	}
	/* user space reads frames up to the first zero; what follows is not read
	 * (n <= 127, so n & 127 is n, and the verifier sees it in bounds) */
	buf[n & OFFCPU_MAX_STACK_DEPTH] = 0;
	h ^= h >> 29;
	if (!h)
		h = 1;
	if (bpf_map_update_elem(&kstacks, &h, buf, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&kstacks, &h)) {
		count(OFFCPU_CNT_KSTACK_FAIL);
		return 0;
	}
	return h;
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

static __always_inline void switch_in(void *ctx, struct task_struct *next, struct offcpu_task *t,
				      __u64 now, bool btf)
{
	struct offcpu_key key = {};
	__u64 delta;

	delta = now - t->ts;
	t->ts = 0;

	key.pid = BPF_CORE_READ(next, pid);
	key.tgid = BPF_CORE_READ(next, tgid);
	key.user_stack_id = t->user_stack_id;
	key.state = t->state;
	key.cgroup_id = t->cgroup_id;
	if (kernel_stacks && btf)
		key.kern_stack = kernel_stack(next);

	count(OFFCPU_CNT_BLOCKS);
	if (delta >= thresh_ns) {
		if (stream(ctx, &key, delta, now)) {
			count(OFFCPU_CNT_STREAMED);
			return;
		}
		count(OFFCPU_CNT_OUTPUT_FULL);
	}
	add_summed(&key, delta);
}

/* The state of @prev, created on its first recorded block. */
static __always_inline struct offcpu_task *task_of(struct task_struct *prev, bool btf)
{
	__u32 pid;
	struct offcpu_task *t, init = {};

	if (btf)
		return bpf_task_storage_get(&task_store, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	pid = BPF_CORE_READ(prev, pid);
	t = bpf_map_lookup_elem(&tasks, &pid);
	if (t)
		return t;
	init.start_time = BPF_CORE_READ(prev, start_time);
	bpf_map_update_elem(&tasks, &pid, &init, BPF_NOEXIST);
	return bpf_map_lookup_elem(&tasks, &pid);
}

/* The state of @next, if it has any and a block is open. */
static __always_inline struct offcpu_task *open_block(struct task_struct *next, bool btf)
{
	struct offcpu_task *t;
	__u32 pid;

	if (btf) {
		t = bpf_task_storage_get(&task_store, next, 0, 0);
		return t && t->ts ? t : NULL;
	}
	pid = BPF_CORE_READ(next, pid);
	t = bpf_map_lookup_elem(&tasks, &pid);
	if (!t || !t->ts)
		return NULL;
	if (t->start_time != BPF_CORE_READ(next, start_time)) {
		t->ts = 0; /* left by an earlier task with this id */
		t->start_time = BPF_CORE_READ(next, start_time);
		return NULL;
	}
	return t;
}

static __always_inline void on_switch_common(void *ctx, bool preempt, struct task_struct *prev,
					     struct task_struct *next, bool btf)
{
	struct offcpu_task *t;
	__u64 now = 0; /* read the clock only for a switch that needs it */
	__u32 state;

	if (wanted(ctx, prev, preempt, &state)) {
		t = task_of(prev, btf);
		if (t) {
			now = bpf_ktime_get_ns();
			switch_out(ctx, t, state, now);
		} else {
			count(OFFCPU_CNT_NO_STORAGE);
		}
	}
	t = open_block(next, btf);
	if (t)
		switch_in(ctx, next, t, now ?: bpf_ktime_get_ns(), btf);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
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
