/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A Perfetto trace (ui.perfetto.dev, trace_processor) of the session's
 * stream of samples (stream.h), written as the samples come: a track per
 * process and per thread, a slice per block with its real start and end
 * (its state, stack, waker and chain as arguments), a flow (arrow) from the
 * waking thread's instant to the end of the block it ended, and the summed
 * short blocks, which have no times of their own, as a counter per thread;
 * and when every block has its times, Perfetto's own thread states
 * (perfetto_sched.h).
 * Memory is bounded by the threads, not the samples: one block per thread is
 * held until the next sample of the thread says where it really ended.
 */
#ifndef OFFCPU_REPORT_PERFETTO_H
#define OFFCPU_REPORT_PERFETTO_H

#include <stdint.h>
#include <stdio.h>
#include "profile.h"
#include "stream.h"

struct perfetto;

/* What the trace shows and leaves out, once finished. */
struct perfetto_stats {
	uint64_t slices; /* blocks, and run queue waits, as slices */
	uint64_t flows; /* wakeups by a thread, as arrows */
	uint64_t summed, summed_ns; /* summed samples: counters, not slices */
	uint64_t untimed; /* samples without a usable time (perf's --off-cpu placeholders) */
	uint64_t threads, processes;
	uint64_t sched_events; /* Perfetto's thread states: sched_switch and sched_waking events */
};

/* A trace of @p's session written to @f (which stays the caller's); NULL when out of memory. */
struct perfetto *perfetto__new(const struct profile *p, FILE *f);
/* The consumer to hand the session (session__load_with()). */
struct sample_consumer *perfetto__consumer(struct perfetto *t);
/*
 * After the session: the blocks still held go out, the stats are filled and
 * a line on stderr says what is not a slice. 0, or -errno of a failed write
 * (fflush'ed here; the caller closes @f).
 */
int perfetto__finish(struct perfetto *t, struct perfetto_stats *st);
/* The first write error (-errno), 0 if none: why a session that ended with it failed. */
int perfetto__error(const struct perfetto *t);
void perfetto__free(struct perfetto *t);

#endif
