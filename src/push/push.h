/* SPDX-License-Identifier: GPL-2.0 */
/*
 * offcpu record --push: continuous off-CPU profiles sent to a profiling
 * backend (doc/push.md). The part of push that record sees.
 *
 * The recording cuts itself every --push-interval into a perf.data file in
 * a private directory (made here, 0700), as --switch-output=TIME would, and
 * hands each finished file over with push__interval(): the one path from
 * capture to analysis stays the perf.data file. Beside the recording, on
 * threads of its own, push reads each file with a fresh report session
 * (interval.h), deletes it, encodes one profile for each process (or cgroup)
 * as OTLP (otlp.h) or Pyroscope pprof (pyroscope.h), queues the requests
 * and sends them (http.h), retrying with backoff, keeping them in
 * --push-spool (spool.h) while the backend does not take them.
 *
 * Never in the way: push__interval() takes no lock and never waits (a pipe
 * written without blocking; a file that cannot be queued is dropped, said);
 * queues are bounded in requests, intervals and bytes; every request is
 * bounded by --push-timeout; every interval or request dropped is counted
 * and said, on stderr, as it happens.
 */
#ifndef OFFCPU_PUSH_PUSH_H
#define OFFCPU_PUSH_PUSH_H

#include <stdbool.h>
#include <stdint.h>
#include "config.h"

/* At the end, what is queued gets this long to be sent, then goes to the spool (or is dropped). */
#define PUSH_STOP_NS (10ULL * 1000000000ULL)

struct push;

/*
 * Check what @o names (the token file, the spool), make the private
 * directory and start the threads. @quiet: no start line, no summary. NULL,
 * with why printed, when it cannot.
 */
struct push *push__start(const struct push_opts *o, bool quiet);
/* The base name the recording's files are to have (-o): DIR/interval. */
const char *push__output_base(const struct push *p);
/*
 * The file at @path (in the private directory), recorded from @start to
 * @end (CLOCK_MONOTONIC ns), is complete: push takes it (and deletes it).
 * Never blocks.
 */
void push__interval(struct push *p, const char *path, uint64_t start, uint64_t end);
/*
 * The recording ended, its last file handed over: encode what is left, send
 * what is queued within PUSH_STOP_NS, keep the rest in the spool (or drop
 * it, said), and print the summary.
 */
void push__stop(struct push *p);
/* Stop (if push__stop() was not called: at once) and free; the private directory goes. */
void push__free(struct push *p);

#endif
