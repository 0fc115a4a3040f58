/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A report session: reads a perf.data input record by record in perf's
 * order, keeps the side-band state the samples need (threads.h), parses
 * each sample once, applies the filters, resolves it (resolve.h) and hands
 * it to its consumers as one stream of samples (stream.h). Names, frames and
 * stacks are interned in a profile, which also gets the file's events,
 * losses, clock and span.
 */
#ifndef OFFCPU_REPORT_SESSION_H
#define OFFCPU_REPORT_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include "profile.h"
#include "stream.h"
#include "symbolizer.h"
#include "../perfdata/reader.h"

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
	struct perf_reader_stats *stats; /* if set: what was read, filled at the end */
};

/*
 * Read @o->input into @p (initialised here), handing every sample, and every
 * fork and exit, to each of the @nr consumers @c in turn (stream.h). Fills
 * @p's events (names, kinds), losses, clock and span; the consumers fill
 * the rest. Returns 0, or -errno after printing why; a consumer's error
 * other than -ENOMEM (a failed write of its output) is the consumer's to
 * tell.
 */
int session__run(const struct session_opts *o, struct profile *p, struct sample_consumer **c,
		 size_t nr);

/*
 * session__run() with the profile's rows (profile_sink) and the threads
 * waiting since before the recording (befores.h) as the consumers: the
 * whole profile every output reads.
 */
int session__load(const struct session_opts *o, struct profile *p);
/* session__load() with @nr more consumers @more after those two (a trace written as it goes). */
int session__load_with(const struct session_opts *o, struct profile *p,
		       struct sample_consumer **more, size_t nr_more);

#endif
