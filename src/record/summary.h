/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a recording says when it ends, and the one definition of loss.
 *
 * Every counter that can make a recording less than complete is named once,
 * in the loss table (summary.c): what it means, whether time or blocks are
 * missing (a loss) or a block was kept with less detail (a degradation),
 * whether it goes into perf's LOST_SAMPLES record, and the sentence the
 * summary prints. The summary, LOST_SAMPLES and the tests (which match
 * "[time lost]") all read it.
 */
#ifndef OFFCPU_RECORD_SUMMARY_H
#define OFFCPU_RECORD_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../offcpu.h"
#include "unwinder.h"
#include "userstacks.h"
#include "perfmap.h"

/* The BPF program's counters, then those user space keeps. */
enum {
	CNT_PROG_MISSES = OFFCPU_CNT_NR, /* the kernel skipped the program (recursion) */
	CNT_SIDEBAND_LOST, /* side-band records the buffers overran */
	CNT_ONCPU_LOST, /* on-CPU samples the buffers overran */
	CNT_WAKEUP_UNKNOWN, /* blocks whose waker was not in the wakeup map when read */
	CNT_ALL,
};

/* Blocks missing from the file warn from this share (per mille) of the blocks or the time on. */
#define LOSS_WARN_PERMILLE 1

enum loss_kind {
	LOSS_TIME, /* blocks and their time are missing */
	LOSS_DEGRADED, /* blocks kept with less: no stack, no timestamp, not followed */
	LOSS_TEST, /* faults injected on purpose by a test */
};

/* What a loss counts, and so what its share is of. */
enum loss_unit {
	UNIT_BLOCKS, /* blocks: a share of every block, and of the off-CPU time if known */
	UNIT_WAKEUPS, /* wakeups of recorded blocks (--wakers) */
	UNIT_ONCPU, /* on-CPU samples */
	UNIT_OTHER, /* context switches, side-band records, processes: no total to share */
};

struct loss {
	int counter; /* index into the counters */
	int ns_counter; /* the counter of their off-CPU time; -1: not known */
	enum loss_kind kind;
	enum loss_unit unit;
	bool unseen; /* blocks lost before they ended: not among OFFCPU_CNT_BLOCKS */
	bool lost_samples; /* counted in perf's LOST_SAMPLES of offcpu-time */
	const char *sentence; /* printed after the count */
};

extern const struct loss losses[];
extern const size_t nr_losses;

/* The count perf's LOST_SAMPLES record carries: blocks missing from the file. */
uint64_t losses__lost_samples(const uint64_t *cnt);

/*
 * How a user stack's walk ended: the BPF program's ends (enum offcpu_unw_end),
 * and one more, user space's: finished there (userstacks.c), a walk that met
 * code with no table yet or a block under way at the start.
 */
#define UNW_FINISHED_LATE OFFCPU_UNW_END_NR
#define UNW_REASONS (OFFCPU_UNW_END_NR + 1)

struct summary {
	const uint64_t *cnt; /* CNT_ALL counters */
	/* off-CPU time written (the time seen is a counter, OFFCPU_CNT_BLOCKS_NS) */
	uint64_t offcpu_ns, streamed, summed, distinct_stacks;
	bool distinct_stacks_more; /* there were more than distinct_stacks (not counted on) */
	size_t threads;
	/* -p: its processes, those they forked before (followed too), all followed in the end */
	size_t procs_given, procs_before, procs_followed;
	uint64_t oncpu_samples, freq; /* freq 0: no on-CPU sampling */
	const char *output; /* the last file, or NULL with to_stdout */
	bool to_stdout, fifo, rotate;
	bool pushed; /* --push: the files went to push, which says where they went */
	size_t files_written, files_on_disk, files_removed, files_vanished;
	uint64_t file_size;
	bool verify_stacks, kernel_stacks;
	const char *fallbacks; /* what fell back on this kernel, or NULL */
	uint32_t max_stacks; /* --max-stacks */
	uint64_t map_bytes; /* what the stack and summed maps pin */
	uint64_t flush_ns, flushes, pruned; /* --flush, drains, stack map entries deleted */
	/* --unwind=tables: off-CPU time by how the walk of its user stack ended
	 * (UNW_REASONS), and the tables; NULL without */
	const uint64_t *unwind_ns;
	const struct unwinder_stats *unw;
	const struct userstacks_stats *late; /* stacks finished in user space, or NULL */
	uint64_t start_ns; /* when the recording began (CLOCK_MONOTONIC) */
};

/* What each way a table walk ends is called in the summary and the report. */
extern const char *const unwind_end_names[UNW_REASONS];

/*
 * Print the summary to @f: counts, the output, then every loss by the table,
 * each with its share of the blocks (all of them: OFFCPU_CNT_BLOCKS and those
 * lost before they ended) and of the off-CPU time (OFFCPU_CNT_BLOCKS_NS),
 * the warning worded by their size.
 */
void summary__print(FILE *f, const struct summary *s);

/* The lines on perf maps: what was read, named, refused and cut (none when none was looked at). */
void summary__print_perfmap(FILE *f, const struct perfmap_stats *st);

#endif
