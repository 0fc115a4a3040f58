/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A batch of records from several sources (side-band rings, on-CPU rings,
 * streamed off-CPU blocks), written in time order, one perf round each.
 * Memory is bounded by what one drain of the buffers can hold.
 */
#ifndef OFFCPU_BATCH_H
#define OFFCPU_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

struct batch_ref {
	uint64_t time;
	size_t off;
	int kind;
};

struct batch {
	char *buf;
	size_t len, cap;
	struct batch_ref *refs;
	size_t nr, cap_refs;
};

/* Copy @rec into the batch. Returns 0 or -ENOMEM. */
int batch__push(struct batch *b, const struct perf_event_header *rec, uint64_t time, int kind);
/* Sort by time; records of equal time keep their arrival order. */
void batch__sort(struct batch *b);
/* The i-th record after sorting. */
const struct perf_event_header *batch__get(const struct batch *b, size_t i, int *kind);
void batch__clear(struct batch *b);
void batch__free(struct batch *b);

#endif
