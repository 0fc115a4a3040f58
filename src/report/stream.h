/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one stream of samples a report session produces, and the interface of
 * its consumers. The session reads the records in perf's order (time order
 * within each round), keeps the side-band (commands, mappings, build ids),
 * parses each sample once, resolves it (command, stack, waker) and hands it
 * to every consumer in turn; forks and exits go to them too, in the same
 * order. The aggregated profile (profile.c: rows, totals) is one consumer,
 * the list of threads waiting since before the recording (befores.c)
 * another; a timeline would be a third, with nothing to change here.
 *
 * Contract:
 *  - samples come in time order (records of equal time in file order) and
 *    each sample exactly once, whatever the filters: SAMPLE_ROWS says whether
 *    --event, --time, --pid, --tid and --comm let it through;
 *  - names, frames and stacks are interned in the session's profile (its
 *    str, dsos, frames, stacks tables), which every consumer may read;
 *  - an offcpu-waker sample is no sample of its own: it is the waker of the
 *    offcpu-time sample before it, which comes with it (waker, chain,
 *    waker_stack); so is an offcpu-wait sample, what it waited on (wait...);
 *  - a consumer returns 0 or -errno; an error ends the session with it.
 */
#ifndef OFFCPU_REPORT_STREAM_H
#define OFFCPU_REPORT_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a sample's event is to the report, by its name. */
enum sample_role {
	SAMPLE_OTHER, /* a sampling event (cpu-clock, offcpu-oncpu...): a tick */
	SAMPLE_WAIT, /* offcpu-time: a block (or blocks, summed) ending at @time, @period ns */
	SAMPLE_BEFORE, /* offcpu-before: a thread blocked when the recording began, at @time */
};

/* report_sample.flags */
#define SAMPLE_TIME 1u /* the sample has a time (PERF_SAMPLE_TIME) */
#define SAMPLE_ROWS 2u /* the filters let it through: it counts in the profile's rows */
#define SAMPLE_LISTED 4u /* offcpu-before: --pid, --tid, --comm and --event list its thread */
#define SAMPLE_MARK 8u /* its user stack is the mark of one taken before offcpu ran */
/* offcpu-time: summed short blocks (offcpu's OFFCPU_CPU_RES_SUMMED): @period is their
 * total and @time the end of the interval they were summed in, not a block's own times;
 * without it, one block that ended at @time after @period ns */
#define SAMPLE_SUMMED 16u
/* offcpu-time: a block still under way when the recording ended (offcpu's
 * OFFCPU_CPU_RES_OPEN_END): @time is the recording's end, not a switch-in */
#define SAMPLE_OPEN_END 32u

struct report_sample {
	uint32_t event; /* index into the file's events (and the profile's) */
	enum sample_role role;
	uint32_t flags;
	uint64_t time; /* CLOCK_MONOTONIC ns (offcpu's); with SAMPLE_TIME */
	uint64_t period; /* ns off-CPU for offcpu events; the event's period otherwise */
	uint32_t pid, tid;
	uint32_t cpu; /* PERF_SAMPLE_CPU (offcpu-time: of the switch-in); UINT32_MAX unknown */
	uint32_t comm; /* strtab; UINT32_MAX: not looked up (the filters left it out first) */
	uint32_t state; /* the state waited in + 1 (offcpu events' weight); 0 unknown */
	/* with SAMPLE_ROWS or SAMPLE_LISTED, else UINT32_MAX: */
	uint32_t stack; /* root first */
	uint32_t exe; /* dso of the process's executable at the time; UINT32_MAX unknown */
	/* who ended the wait (SAMPLE_WAIT, with SAMPLE_ROWS; waker 0: not recorded) */
	uint32_t waker; /* strtab: the waker's name */
	uint32_t chain; /* strtab: who woke the waker just before, and so on: "b;c"; 0 none */
	uint32_t waker_stack; /* root first; UINT32_MAX none */
	uint32_t waker_pid, waker_tid; /* the waking thread; 0: an interrupt, or none recorded */
	/* SAMPLE_SUMMED: where its interval began, the time of the summed samples
	 * before (the drain before); 0: not known (the first interval) */
	uint64_t interval_start;
	uint64_t cgroup; /* the cgroup's id (record --all-cgroups, --push); 0: not recorded */
	/* what it waited on (SAMPLE_WAIT with an offcpu-wait sample after it) */
	uint32_t wait; /* 1 + its index in profile.waits; 0: not known */
	uint32_t wait_flags; /* the payload's: OFFCPU_WAIT_AT_START, OFFCPU_WAIT_AT_END, ... */
	/* who held it (a glibc mutex's owner, a joined thread), a thread of the
	 * waiter's process at the time; 0: not known */
	uint32_t wait_owner;
	uint32_t wait_owner_comm; /* strtab; 0 with no owner */
	uint32_t wait_owner_hint; /* the id the memory held, whatever it is (shown when unknown) */
	uint64_t wait_end; /* OFFCPU_WAIT_AT_END: the recording's end, where @period ends */
};

enum task_kind { TASK_FORK, TASK_EXIT };

/* A thread begun or ended (FORK, EXIT records), in its place among the samples. */
struct report_task {
	enum task_kind kind;
	uint32_t pid, tid, ppid, ptid;
	uint64_t time;
};

/* A consumer of the stream; any callback may be NULL. Embed it, and find the whole with
 * consumer_of(). */
struct sample_consumer {
	int (*sample)(struct sample_consumer *c, const struct report_sample *s);
	int (*task)(struct sample_consumer *c, const struct report_task *t);
	/* a cgroup's path (a CGROUP record), before the samples that carry its id */
	int (*cgroup)(struct sample_consumer *c, uint64_t id, const char *path);
};

#define consumer_of(c, type, member) ((type *)((char *)(c) - offsetof(type, member)))

#endif
