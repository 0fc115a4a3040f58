/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A time-ordered queue of perf records: each pushed record is copied into
 * one buffer with its time and a caller's kind, and handed out sorted by
 * time, records of equal time in arrival order.
 *
 * record fills one from several sources (side-band rings, on-CPU rings,
 * streamed off-CPU blocks) and writes it whole as one perf round; memory is
 * bounded by what one drain of the buffers can hold. report queues what it
 * reads and, at the end of each perf round, flushes what is not newer than
 * a limit (perf's FINISHED_ROUND ordering), keeping the rest.
 */
#ifndef OFFCPU_PERFDATA_QUEUE_H
#define OFFCPU_PERFDATA_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

struct perf_queue_ref {
	uint64_t time;
	size_t off; /* into buf, 8-aligned; in arrival order */
	int kind;
	uint64_t aux[2]; /* the pusher's: what it knows of the record, so nothing re-parses it */
};

struct perf_queue {
	char *buf;
	size_t len, cap;
	struct perf_queue_ref *refs;
	size_t nr, cap_refs;
};

/* Copy @rec into the queue. Returns 0, -EINVAL (size below a header) or -ENOMEM. */
int perf_queue__push(struct perf_queue *q, const struct perf_event_header *rec, uint64_t time,
		     int kind);
/* Set the aux words of the record pushed last (0 until set). */
void perf_queue__set_aux(struct perf_queue *q, uint64_t a, uint64_t b);
/* Sort by time; records of equal time keep their arrival order. */
void perf_queue__sort(struct perf_queue *q);
/* The i-th record after sorting. */
const struct perf_event_header *perf_queue__get(const struct perf_queue *q, size_t i, int *kind);
/*
 * Hand @fn the records not newer than @limit, in time order, and keep the
 * rest (compacted, still in arrival order) for a later flush. Stops at the
 * first error of @fn and returns it: the records handed out before it are
 * gone, the one it failed on and the later ones stay.
 */
int perf_queue__flush_until(struct perf_queue *q, uint64_t limit,
			    int (*fn)(const struct perf_event_header *rec, uint64_t time, int kind,
				      void *arg),
			    void *arg);
void perf_queue__clear(struct perf_queue *q);
void perf_queue__free(struct perf_queue *q);

#endif
