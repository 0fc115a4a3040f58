/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The threads that read other users' files and processes for a recording
 * (unwind tables, stacks finished in user space, Python names, perf maps):
 * started with every signal blocked (the main thread takes them), and
 * stopped within a bound: a thread stuck on something another user controls
 * is left behind, never waited for, so that the recording still ends on
 * time. Whoever leaves one behind leaves the state it uses with it.
 */
#ifndef OFFCPU_UTIL_WORKER_H
#define OFFCPU_UTIL_WORKER_H

#include <pthread.h>
#include <stdbool.h>

#include <time.h>

/* Start @fn(@arg) with every signal blocked. 0 or -errno. */
int worker__start(pthread_t *t, void *(*fn)(void *), void *arg);

/*
 * Join @t within @ms milliseconds. Past that it is detached, a warning names
 * it (@what: "the unwind table loader"), and false is returned: the caller
 * must not free what the thread still uses.
 */
bool worker__join_within(pthread_t t, unsigned ms, const char *what);

/* The CLOCK_REALTIME time @ms milliseconds from now: the deadline pthread's timed waits take. */
struct timespec worker__deadline(unsigned ms);

#endif
