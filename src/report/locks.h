/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the waits waited on, and who held it: a consumer of the session's
 * samples (stream.h) that keeps, for the waits with a wait object
 * (waitobj.h), the thread, its stack, the object, its owner and its waker,
 * and for every thread the windows of its own waits; then
 *  - report --locks (locks__write()): one row per object, most waited on
 *    first: its kind, name and address, the time waited on it, its waiters,
 *    and who held it (a mutex's owner) or was at its other end (a pipe's
 *    writer, a socket's peer), with the function it was in: the owner's own
 *    stack where the recording has the owner waiting during the wait (what
 *    it did while it held the lock), else the stack of the owner's wakeup
 *    of the waiter (where it let go: --wakers);
 *  - the hang view (hang.c): every thread still waiting at the end.
 */
#ifndef OFFCPU_REPORT_LOCKS_H
#define OFFCPU_REPORT_LOCKS_H

#include <stdio.h>
#include "profile.h"
#include "stream.h"

/* A wait with its object (and every wait of the threads, for the owners' stacks). */
struct lk_wait {
	uint32_t wait; /* 1 + index in profile.waits; 0: none (a thread's own wait, kept for its stack) */
	uint32_t pid, tid, comm, stack, state;
	uint32_t owner, owner_comm, owner_hint; /* report_sample's */
	uint32_t waker_tid, waker, waker_stack;
	uint32_t flags; /* the object's OFFCPU_WAIT_* */
	uint64_t start, end; /* when it was (a summed sample: within its interval) */
	uint64_t period;
	bool exact; /* start and end are the block's own (streamed; still waiting at the end) */
};

struct locks {
	struct sample_consumer c;
	struct profile *p;
	bool all; /* keep every wait, not only those with an object at the end (--locks) */
	struct lk_wait *w;
	size_t nr, cap;
	uint64_t waits_ns; /* the waits with an object */
};

/* @all: for --locks (every wait); else only what the hang view needs. */
void locks__init(struct locks *l, struct profile *p, bool all);
void locks__free(struct locks *l);
/* The --locks table. Returns 0 or -errno. */
int locks__write(const struct locks *l, FILE *f);

/* The hang view (hang.c): the threads still waiting at the end, their chains, the deadlocks,
 * on @f (NULL: only counted). Returns the number of deadlocks, or -errno. */
int hang__write(const struct locks *l, FILE *f);
/* Whether the recording has threads waiting at its end with their objects (the hang view). */
bool hang__any(const struct locks *l);

#endif
