/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The critical path (report --critical-path): what each wait of the root
 * threads was really waiting for. Every instant of a root's wait is charged
 * to exactly one thread on its path, with that thread's state and stack at
 * that instant: a wait woken by a thread goes on with what that thread did
 * until it woke it (running: its on-CPU samples; waiting: its own block, and
 * recursively that block's waker); a wait ended by an interrupt, a timer or
 * a softirq is charged to that source with the wait's own stack. What the
 * recording cannot tell (summed short blocks, no wakers, a thread not
 * recorded) is charged as unknown, by kind, never dropped: the charged
 * time sums to the roots' waiting time (conservation).
 *
 * A consumer of the session's stream (stream.h): it keeps every timed block
 * of every thread (blocks.h) that overlaps the window, the on-CPU samples
 * and the summed intervals there, and walks the path once the file is read
 * (a root's wait is followed within the window only, and so is its path). So the session must run without
 * --pid, --tid, --comm and --time (the path crosses other threads and goes
 * back before the window): those choose the roots and the window here.
 */
#ifndef OFFCPU_REPORT_CRITPATH_H
#define OFFCPU_REPORT_CRITPATH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "profile.h"
#include "stream.h"

/*
 * Blocks kept at most (64 bytes each: 256 MiB); past it the analysis stops
 * there, and says so. Only those that overlap --time's window are kept.
 */
#define CRITPATH_MAX_BLOCKS (4u << 20)
/*
 * Hops from a root's wait through wakers that wait in turn, at most: a
 * server's request waits on a client that waited on the server before, and
 * so on back through the wait, one round trip a hop.
 */
#define CRITPATH_MAX_DEPTH 100000
/* Hops in a row that do not go back in time: a damaged file's loop past this. */
#define CRITPATH_MAX_STALL 64

/* What an instant of a root's wait is charged to. */
enum cp_kind {
	CP_RUN, /* the thread ran: stack from its on-CPU sample */
	CP_RUN_UNSAMPLED, /* it ran, and no on-CPU sample fell there: its stack where it stopped */
	CP_RUNQ, /* woken, waiting for a CPU */
	CP_PREEMPTED, /* preempted, waiting for a CPU */
	CP_IRQ, /* a wait an interrupt, timer or softirq ended: charged to it, the wait's stack */
	CP_OPEN, /* a wait nobody had ended when the recording did */
	CP_NO_WAKER, /* a wait whose waker was not recorded */
	CP_SUMMED, /* the thread's short blocks were summed there: what it did when is not known */
	CP_NOT_RECORDED, /* nothing of the thread is recorded then */
	CP_DEPTH, /* past CRITPATH_MAX_DEPTH hops, or a loop (CRITPATH_MAX_STALL) */
	CP_NR
};

/* One line of the path: a thread (or interrupt) in a state with a stack, and its time. */
struct cp_entry {
	uint32_t root_comm; /* strtab: the root's command */
	uint32_t kind; /* enum cp_kind */
	uint32_t pid, tid; /* the thread on the path (CP_IRQ: the one whose wait it ended) */
	uint32_t comm; /* strtab: that thread's command */
	uint32_t who; /* strtab: the same; CP_IRQ: the source ([timer], [irq], ...) */
	uint32_t state; /* the wait's state + 1 (waits); 0 otherwise */
	uint32_t stack; /* root first; UINT32_MAX none */
	uint64_t ns;
};

struct cp_root {
	uint32_t pid, tid, comm;
	uint64_t waited, charged; /* ns in the window; equal unless the walk has a bug */
	uint64_t waits; /* blocks and summed samples in the window */
};

struct critpath_opts {
	const int *pids, *tids;
	size_t nr_pids, nr_tids;
	char *const *comms;
	size_t nr_comms;
	bool time_filter;
	uint64_t time_start, time_end; /* ns, inclusive start, exclusive end */
};

struct critpath;

/* A critical path of @p's session for the roots and window of @o (kept, not copied). */
struct critpath *critpath__new(struct profile *p, const struct critpath_opts *o);
/* The consumer to hand the session (session__run() or session__load_with()). */
struct sample_consumer *critpath__consumer(struct critpath *c);
/*
 * After the session: the walk. The entries (most time first), the roots and
 * what the recording lacked are then read with the functions below. 0 or
 * -ENOMEM.
 */
int critpath__walk(struct critpath *c);
const struct cp_entry *critpath__entries(const struct critpath *c, size_t *nr);
const struct cp_root *critpath__roots(const struct critpath *c, size_t *nr);
/* ns charged to each kind, over all roots */
const uint64_t *critpath__by_kind(const struct critpath *c);
/* What the recording has: timed blocks, wakers, run queue splits, on-CPU samples, summed. */
struct cp_has {
	uint64_t blocks, summed, ticks, wakers, runq;
	uint64_t cut; /* CRITPATH_MAX_BLOCKS reached: analysed up to this time; 0: all */
};
const struct cp_has *critpath__has(const struct critpath *c);
/* The profile it was made with (its names and stacks). */
struct profile *critpath__profile(const struct critpath *c);
void critpath__free(struct critpath *c);

/* critpath_out.c: the outputs */

/*
 * A kind (and for waits their state + 1) as the table's state column,
 * "running", "S", "unknown: summed", into @buf; with @frame as a flame
 * graph's frame, "[running]", "[S]". Returns @buf.
 */
const char *critpath__kind_name(enum cp_kind k, uint32_t state, bool frame, char *buf, size_t cap);
/* The text table: the roots, then one line per thread, state and function. */
int critpath__text(const struct critpath *c, double min_percent, FILE *f);
/*
 * The path as rows of an event "critical-path" of @p (ns, as off-CPU time):
 * each line's stack is the thread on the path, its state and its stack,
 * root first, under the root's command; so folded, SVG and pprof draw it.
 * Returns the event's index, or -ENOMEM.
 */
int critpath__rows(struct critpath *c);
/* What the path could not tell and how to record it, on stderr. */
void critpath__warn(const struct critpath *c);

/* critpath_cmd.c: report --critical-path */
struct session_opts;
struct critpath_report {
	bool folded; /* folded stacks on stdout */
	const char *svg, *pprof; /* files ("-": stdout) */
	double min_percent; /* the table's lines below this share are left out */
};
/*
 * Read @so->input without its thread and time filters, which choose the
 * roots and the window instead; write the outputs @r asks for (the table
 * when none). 0, or -errno after saying why.
 */
int critpath__report(const struct session_opts *so, const struct critpath_report *r);

#endif
