/* SPDX-License-Identifier: GPL-2.0 */
/*
 * JavaScript frames of node (V8): which processes run a V8 whose frame
 * layout offcpu knows, the names of their functions, and the records that
 * name them in the file (offcpu.h, "JavaScript frames of V8";
 * src/bpf/v8.bpf.h).
 *
 * - The program asks about a process whose table walk stepped through code
 *   that keeps frame pointers (V8's builtins, JIT code); a thread of this
 *   part reads its objects' dynamic symbols (each object once, by device
 *   and inode; another user's file, read as objread.h reads them) for the
 *   v8dbg_* layout V8 exports (node's executable, or Debian's libnode), and
 *   tells the program the offsets, or that the process has none.
 * - Names come from the program, read while the process lives, each for an
 *   id of its process's own; they are kept here, bounded in all
 *   (V8_NAMES_MEM_MAX) and per process (a quarter), and freed V8_GONE_MS
 *   after the process exits. A process past its bound is cut off: its later
 *   functions stay unnamed, counted, said.
 * - A sample's JavaScript frames (OFFCPU_JSFRAME_OF(id)) need the records
 *   "[js] NAME (SCRIPT)" over their range before it: v8__note() notes them
 *   as the sample is encoded, v8__flush() writes those its file lacks.
 *
 * Thread-safe: notes and flushes are per encoding thread.
 */
#ifndef OFFCPU_RECORD_V8_H
#define OFFCPU_RECORD_V8_H

#include <stdint.h>
#include <stdio.h>

struct v8;
struct collector;
struct perf_queue;

#define V8_NAMES_MEM_MAX (32ULL << 20)
#define V8_GONE_MS 5000

struct v8_stats {
	uint64_t procs; /* processes whose V8 layout was read */
	uint64_t procs_without; /* processes with V8's symbols, not all the layout needs */
	uint32_t first_without; /* the first of them */
	char without_why[160]; /* and what it lacked */
	uint64_t walks, frames, other, faults; /* the program's counters */
	uint64_t names, names_lost;
	uint64_t names_dropped; /* names not kept: over a bound */
	uint64_t procs_cut;
	uint32_t first_cut;
	uint64_t procs_freed;
	uint64_t bytes_peak;
};

/* NULL (errno 0) when the program was loaded without JavaScript frames; NULL with errno on failure. */
struct v8 *v8__new(struct collector *c);
void v8__free(struct v8 *v);

/*
 * Process @tgid runs JIT code (it may be V8): looked at now on this part's
 * thread, before the program asks at the block that needs it.
 */
void v8__process(struct v8 *v, uint32_t tgid);

/* The JavaScript frames among @uips, @nu of process @tgid: their names noted for v8__flush(). */
void v8__note(struct v8 *v, uint32_t tgid, const uint64_t *uips, uint32_t nu);

/*
 * Push the MMAP2 records of the names noted on this thread that file @gen
 * has none of yet, at or before @time, into @q (as @kind, stamped @time, the
 * sample id trailer carrying @sideband_id). 0 or -errno.
 */
int v8__flush(struct v8 *v, struct perf_queue *q, uint64_t sideband_id, size_t gen,
	      uint64_t time, int kind);

/* Process @tgid exited: its names are freed V8_GONE_MS from now. */
void v8__exit(struct v8 *v, uint32_t tgid);

void v8__stats(struct v8 *v, struct v8_stats *st);
/* The summary's line, when any JavaScript frame was looked at. */
void v8__summary(struct v8 *v, FILE *f);

#endif
