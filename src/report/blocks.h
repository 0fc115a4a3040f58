/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Blocks as the timeline, the Perfetto trace and the critical path see them,
 * derived once from the session's stream of samples (stream.h): each
 * offcpu-time sample with times of its own becomes a block with its real
 * start and end.
 *
 *  - A block split at its wakeup (record --state SDR) is followed by its run
 *    queue part, a sample of the same thread at the same time (its
 *    switch-in): the block ended where the run queue wait began, when it was
 *    woken (BLOCK_WOKEN), and the part is a block of its own (BLOCK_RUNQ). So
 *    each thread's last block is held until its next sample, its exit or the
 *    end; a thread's blocks come out in their order, threads interleaved.
 *  - No usable time: perf record --off-cpu's placeholder (its samples are
 *    written at the end with a far-future time), none at all, or a block
 *    longer than its time or than BLOCK_DUR_MAX (a damaged file): untimed,
 *    counted, no block.
 *  - Summed samples (short blocks summed per flush interval) have no times
 *    of their own: no block; blocks__sample() says so and the caller shows
 *    them its own way.
 *  - The block under way at the start of a thread that was waiting before
 *    the recording (its offcpu-before sample) says since when (BLOCK_BEFORE).
 *  - A block still under way when the recording ended (SAMPLE_OPEN_END) ends
 *    there, and says so (BLOCK_OPEN_END).
 * Blocks of a thread do not overlap, but in a damaged file (or one made up):
 * a consumer that needs them apart sees to it.
 */
#ifndef OFFCPU_REPORT_BLOCKS_H
#define OFFCPU_REPORT_BLOCKS_H

#include <stdint.h>
#include "stream.h"
#include "../util/hashmap.h"

/* 52 days: a longer block is a damaged file's, counted as untimed */
#define BLOCK_DUR_MAX (1ULL << 52)

#define BLOCK_WOKEN 1u /* its run queue part follows: @end is when it was woken */
#define BLOCK_RUNQ 2u /* the run queue part of a block split at its wakeup */
#define BLOCK_BEFORE 4u /* waiting since before the recording: @start is the recording's */
#define BLOCK_OPEN_END 8u /* still under way when the recording ended: @end is that end */

struct block {
	const struct report_sample *s; /* its sample: thread, state, stack, waker (for the call) */
	uint64_t start, end; /* CLOCK_MONOTONIC ns: off CPU over [start, end) */
	uint64_t since; /* BLOCK_BEFORE: when the wait began; 0: not known */
	uint32_t flags;
};

/* What blocks__sample() made of a sample. */
enum blocks_kind {
	BLOCKS_NONE, /* not an offcpu-time sample */
	BLOCKS_BLOCK, /* a block: out through the callback, now or later */
	BLOCKS_SUMMED, /* summed short blocks, with a time: the caller's */
	BLOCKS_UNTIMED, /* no usable time: counted */
};

/* Called for each block; returns 0 or -errno, which blocks__*() return. */
typedef int (*block_fn)(void *arg, const struct block *b);

struct blocks_thread;

struct blocks {
	struct hashmap idx; /* pid, tid -> index */
	struct blocks_thread *th;
	size_t nr, cap;
	block_fn fn;
	void *arg;
	uint64_t untimed;
};

void blocks__init(struct blocks *b, block_fn fn, void *arg);
/*
 * A sample of the stream (the caller chooses which: those the filters let
 * through, and the offcpu-before samples, which only mark the blocks of
 * their threads). Returns an enum blocks_kind, or -errno from the callback.
 */
int blocks__sample(struct blocks *b, const struct report_sample *s);
/* The thread exited: its held block goes out. */
int blocks__exit(struct blocks *b, uint32_t pid, uint32_t tid);
/* The end of the stream: every held block goes out. */
int blocks__finish(struct blocks *b);
void blocks__free(struct blocks *b);

#endif
