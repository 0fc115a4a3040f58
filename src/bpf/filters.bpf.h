/* SPDX-License-Identifier: GPL-2.0 */
/*
 * filters.bpf.h - which threads are recorded: the filters user space sets
 * (process, thread, cpu, cgroup, states, kernel threads and offcpu itself),
 * checked at a switch-out before any stack is walked (wanted()) and by the
 * start iterator for threads already blocked (wanted_open()); and following
 * a workload: its forks join the process filter, its exec arms it (a
 * workload is recorded from its exec on), and a new program's mappings are
 * asked of user space for its unwind tables.
 *
 * Needs: common.bpf.h, uwalk.bpf.h (the process mappings' maps).
 */
#ifndef OFFCPU_FILTERS_BPF_H
#define OFFCPU_FILTERS_BPF_H

#include "common.bpf.h"
#include "uwalk.bpf.h"

const volatile bool filter_tgid = false;
const volatile bool filter_tid = false;
const volatile bool filter_cpu = false;
const volatile bool filter_cgroup = false;
const volatile bool follow_forks = false;
/* offcpu's own process, left out of -a, -C and -G (0: none) */
const volatile __u32 skip_tgid = 0;
const volatile __u32 state_mask = OFFCPU_DEFAULT_STATES;
/* sched_switch passes prev_state (5.18+): a concurrent wakeup may already
 * have changed prev->__state to TASK_WAKING when the tracepoint runs. */
const volatile bool has_prev_state = false;
/* -G: the cgroup (kernfs id) and its depth below the root */
__u64 open_cgroup_id;
__u32 open_cgroup_level;

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

static __always_inline void forget(struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, pid);

	bpf_map_delete_elem(&tasks, &pid);
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
		uw_wake(tgid);
	}
}

#endif /* OFFCPU_FILTERS_BPF_H */
