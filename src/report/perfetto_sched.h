/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Perfetto's own thread states for report --perfetto: the blocks (blocks.h)
 * as sched_switch and sched_waking ftrace events, from which Perfetto's
 * importer makes its thread_state table, so that its thread state tracks,
 * its views and its critical path work on offcpu's trace. They are only
 * true when the recording has every block with its times: the events are
 * kept in a temporary file (unnamed: tmpfile()) until the end says whether
 * they go into the trace (perfetto.c: not when short blocks were summed).
 */
#ifndef OFFCPU_REPORT_PERFETTO_SCHED_H
#define OFFCPU_REPORT_PERFETTO_SCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "blocks.h"
#include "pb.h"

struct pf_sched;

/* NULL when out of memory; without a temporary file it keeps nothing (pf_sched__error()). */
struct pf_sched *pf_sched__new(void);
/*
 * Block @b of a thread named @comm as sched events; *@last_cpu is the CPU
 * the thread last ran on (UINT32_MAX: not known), updated. A write error
 * is kept, not returned: the trace goes on without thread states.
 */
int pf_sched__block(struct pf_sched *s, const struct block *b, const char *comm,
		    uint32_t *last_cpu);
/* With @keep, the events into @out (the trace). 0 or -errno of a failed copy. */
int pf_sched__finish(struct pf_sched *s, FILE *out, bool keep);
/* Events kept so far (0 after an error). */
uint64_t pf_sched__events(const struct pf_sched *s);
/* Whether a preemption or a run queue wait was seen: record --state R. */
bool pf_sched__preemptions(const struct pf_sched *s);
/* The temporary file's error, 0 if none. */
int pf_sched__error(const struct pf_sched *s);
void pf_sched__free(struct pf_sched *s);

#endif
