/* SPDX-License-Identifier: GPL-2.0 */
/* The BPF collector seen from user space: load (loader.h), filter, attach, stream, drain. */
#ifndef OFFCPU_COLLECTOR_H
#define OFFCPU_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>
#include "../offcpu.h"

struct collector_opts {
	uint32_t state_mask;
	bool user_stacks;
	bool python_frames; /* Python frames in user stacks (python.bpf.h), unless --no-python */
	bool js_frames; /* JavaScript frames named in user stacks (v8.bpf.h), unless --no-js */
	bool kernel_stacks;
	bool verify_stacks; /* count differences from the kernel's stack helpers */
	bool wakers; /* note who woke each block (tp_btf only) */
	/* what each block waits on (waits.bpf.h; tp_btf only): at every recorded
	 * switch-out (--wait-objects), and for the blocks under way at the start
	 * and the end (iterators) */
	bool wait_objects, iter_waits;
	bool record_cgroup;
	bool follow_forks;
	const int *tgids; /* process filter (NULL: none) */
	size_t nr_tgids;
	bool filter_tgid; /* filter on tgids even when the list starts empty */
	const int *tids; /* thread filter */
	size_t nr_tids;
	const int *cpus; /* cpu filter */
	size_t nr_cpus;
	int cgroup_fd; /* cgroup v2 directory to restrict to, or -1 */
	uint64_t cgroup_id; /* its id, and its depth below the root (blocks open at the start) */
	uint32_t cgroup_level;
	uint32_t max_entries; /* summed map and stack map size */
	uint64_t thresh_ns; /* stream blocks at least this long; UINT64_MAX: never */
	enum offcpu_transport transport;
	uint64_t buffer_bytes; /* ring buffer size, or perf buffer bytes per cpu */
	const int *output_fds; /* perf events to stream into, instead of a buffer of ours */
	const int *output_cpus; /* the cpu of each */
	size_t nr_output_fds;
	bool force_raw_tp; /* skip tp_btf (tests the fallback) */
	bool unwind_tables; /* walk user stacks by unwind tables (x86-64, tp_btf) */
	/* with tables: send the threads blocked at the start, and walks that met
	 * code with no table yet, to user space to be finished (userstacks.c) */
	bool user_space_stacks;
	uint32_t unwind_rows; /* rows the table array holds */
	const char *btf_path; /* custom kernel BTF, or NULL */
};

struct collector;

/*
 * Open and load. Returns NULL with errno set and @msg saying what failed;
 * nothing is printed but libbpf's log with -v.
 */
struct collector *collector__open(const struct collector_opts *opts, char *msg, size_t len);
/* Attach: blocks are counted from here on. Returns 0 or -errno with @msg. */
int collector__attach(struct collector *c, char *msg, size_t len);
/* Track a workload child from its next exec on. */
int collector__add_workload(struct collector *c, int tgid);
/* Whether the collector records process @tgid (filter mode). */
bool collector__follows(struct collector *c, int tgid);
/* Which attach path is in use: "tp_btf" or "raw_tp". */
const char *collector__attach_kind(const struct collector *c);
/*
 * What fell back on this kernel, with the cause of each, in one line:
 * tp_btf/sched_switch for raw_tp, or offcpu's own kernel or user stack walker
 * for the kernel's helper; NULL when nothing did (--raw-tp, asked for, is not
 * a fallback). Never silent: record prints it at the start and in the summary.
 */
const char *collector__fallbacks(const struct collector *c);
/*
 * The unwind table maps, for the loader (record/unwinder.c): the three arrays
 * mapped into this process, and the process and request maps' fds.
 */
struct collector_unwind_maps {
	int rows_fd; /* written a slice at a time through a mapping of its own */
	struct offcpu_unw_rule *rules;
	struct offcpu_unw_obj *objs;
	uint32_t nr_rows, nr_rules, nr_objs;
	int procs_fd, req_fd;
	int wake_fd; /* ring buffer of the process ids of new requests */
	int verify_fd; /* --verify-stacks: ring buffer of struct offcpu_unw_sample */
	int cache_fd; /* the per-CPU rule cache, by object id: emptied before an id is reused */
};
/* The wait map's fd (waitstore.h), -1 when no wait object is read. */
int collector__waits_fd(const struct collector *c);
/* The wait part's counters (enum offcpu_wait_counter), summed over cpus into @out. */
int collector__wait_counters(struct collector *c, uint64_t *out);
/* Whether the loaded program walks by tables; then fills @m. */
bool collector__unwind_maps(struct collector *c, struct collector_unwind_maps *m);

/*
 * The ring buffer of struct offcpu_snap (threads blocked at the start, walks
 * to finish), or -1 when the program sends none.
 */
int collector__snaps_fd(const struct collector *c);
/*
 * Start or stop measuring the rq clock against ktime (for when a block under
 * way at the start began): on from the attach until the start iteration.
 */
void collector__calibrate(struct collector *c, bool on);

/* Detach the programs: no block is counted after this. */
void collector__detach(struct collector *c);
/*
 * Walk every task once for the blocks that span the recording's start or end
 * (see open_block() in the BPF program), both taken as @now (CLOCK_MONOTONIC):
 * OFFCPU_OPEN_START once attached, OFFCPU_OPEN_END once detached, before the
 * last drain. Returns 0 or -errno.
 */
long collector__open_blocks(struct collector *c, enum offcpu_open_mode mode, uint64_t now);

/* An fd that becomes readable when streamed blocks wait (for poll). */
int collector__events_fd(const struct collector *c);
/* Hand every streamed block to @fn. Returns blocks consumed or -errno. */
long collector__consume(struct collector *c, int (*fn)(const struct offcpu_event *e, void *arg),
			void *arg);

/*
 * Take every summed entry out of the map and call @fn: the program is first
 * switched to the other summed map, and this one is read once nothing can
 * write it. Returns entries or -errno.
 */
long collector__drain(struct collector *c,
		      int (*fn)(const struct offcpu_key *k, const struct offcpu_val *v, void *arg),
		      void *arg);
/* The time the drains spent taking entries out of the maps, the entries, and whether
 * many to a system call. */
void collector__drain_stats(const struct collector *c, uint64_t *ns, uint64_t *entries,
			    bool *batch);

/* The maps of stacks, chains and wakeups, for the stack store (stackstore.h). */
struct stackstore_maps;
void collector__store_maps(const struct collector *c, struct stackstore_maps *m);
/* With R recorded: where the run queue wait after a wakeup is taken from. */
const char *collector__runq_source(const struct collector *c);
/* Sum the per-cpu counters into @out[OFFCPU_CNT_NR]. */
int collector__counters(struct collector *c, uint64_t *out);
/* Runs of the switch program the kernel skipped (recursion protection). */
uint64_t collector__prog_misses(struct collector *c);
void collector__free(struct collector *c);

/* The Python part's maps (python.c), by name; -1 when loaded without Python frames. */
int collector__python_fd(const struct collector *c, const char *map);
int collector__js_fd(const struct collector *c, const char *map);

#endif
