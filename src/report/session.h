/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A report session: reads a perf.data file record by record, keeps the state
 * the samples need (command per thread, executable mappings per process over
 * time, build ids), applies the filters, symbolizes each distinct call chain
 * once, and adds every sample to a profile.
 */
#ifndef OFFCPU_REPORT_SESSION_H
#define OFFCPU_REPORT_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include "profile.h"
#include "symbolizer.h"

struct session_opts {
	const char *input;
	struct symbolizer_opts sym;
	int *pids, *tids;
	size_t nr_pids, nr_tids;
	char **comms;
	size_t nr_comms;
	const char *event;
	bool time_filter;
	uint64_t time_start, time_end; /* ns, inclusive start, exclusive end */
	bool progress; /* a progress line on stderr */
	bool force; /* -f: read another user's file, an incomplete directory */
};

/* Read @o->input into @p (initialised here). Returns 0, or -errno after printing why. */
int session__load(const struct session_opts *o, struct profile *p);

#endif
