/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One interval's off-CPU time as push sends it: a report session
 * (src/report/session.h) over the interval's perf.data file, its off-CPU
 * samples grouped by process (or by cgroup), and within a group by thread,
 * stack, state and waker, each such row with its observations: when a block
 * (or the blocks summed in the kernel) ended, and for how long. The names,
 * frames and stacks are the session's profile's, resolved as offcpu report
 * resolves them (Python and JIT frames named as in the file).
 *
 * Memory is this interval's only: a fresh session each time, freed with the
 * interval, so a recording of weeks holds no more than one interval does.
 */
#ifndef OFFCPU_PUSH_INTERVAL_H
#define OFFCPU_PUSH_INTERVAL_H

#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "../report/profile.h"
#include "../report/stream.h"
#include "../util/hashmap.h"

/* What one interval keeps of when its blocks ended, at most: past it, values alone. */
#define IVL_MAX_OBS (1u << 20)

/* A process (or, by cgroup, a cgroup) and what it waited in the interval. */
struct ivl_group {
	uint32_t pid; /* its process; 0 by cgroup */
	uint64_t cgroup; /* its samples' cgroup id (the last one seen); 0: not known */
	uint32_t exe; /* dso of its executable; UINT32_MAX: not known */
	uint32_t comm; /* strtab: its main thread's name, else the first thread's seen */
	bool main_comm; /* comm is the main thread's */
	uint64_t ns; /* off-CPU time in all */
};

/* Off-CPU time of one thread in one stack, state and waker. */
struct ivl_row {
	uint32_t group, pid, tid, comm, exe, stack;
	uint32_t state; /* + 1, as the profile's rows; 0 unknown */
	uint32_t waker, chain; /* strtab; 0: no waker recorded, no chain */
	uint32_t waker_fn; /* the waker's own user frame (profile__own_frame()); UINT32_MAX none */
	uint64_t ns, count;
	uint32_t first_obs, nr_obs; /* its observations in interval.obs, once read */
};

struct ivl_obs {
	uint64_t time; /* CLOCK_MONOTONIC ns: when the block (or the summed blocks) ended */
	uint64_t value; /* ns */
	uint32_t row;
};

struct interval {
	struct sample_consumer c;
	struct profile p; /* the session's names, frames and stacks; with rows, its rows */
	enum push_by by;
	struct ivl_group *groups;
	uint32_t nr_groups, cap_groups;
	struct hashmap group_idx;
	struct ivl_row *rows;
	uint32_t nr_rows, cap_rows;
	struct hashmap row_idx;
	struct ivl_obs *obs; /* by row once read, in time order within a row */
	size_t nr_obs, cap_obs;
	bool obs_cut; /* over IVL_MAX_OBS, or a sample without a time: no timestamps */
	struct hashmap cgroups; /* cgroup id -> strtab index of its path */
	uint64_t samples; /* off-CPU samples taken */
	uint64_t start, end; /* the window (ns since the epoch), [start, end), holding every obs */
	const volatile int *cancel; /* set: the session stops (-ECANCELED) */
};

/*
 * Read @path, recorded from @start_mono to @end_mono (CLOCK_MONOTONIC), into
 * @iv (zeroed here). With @rows the profile's rows too (profile_sink), for
 * pprof. Returns 0 or -errno (the session printed why, unless -ECANCELED).
 */
int interval__read(struct interval *iv, const char *path, enum push_by by, bool rows,
		   uint64_t start_mono, uint64_t end_mono, const volatile int *cancel);
void interval__free(struct interval *iv);
/* A CLOCK_MONOTONIC time of the file as ns since the epoch (its CLOCK_DATA). */
uint64_t interval__unix(const struct interval *iv, uint64_t mono);
/* The path of cgroup @id as the file names it, or NULL. */
const char *interval__cgroup_path(const struct interval *iv, uint64_t id);

#endif
