/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Python frames in user stacks (issue 24): which processes run a CPython
 * whose layout offcpu knows (3.11), the names of their code objects, and the
 * splice of each stack's Python frames into its native frames.
 *
 * The BPF side (src/bpf/python.bpf.h) asks about each process it has not
 * seen and sends each code object's names when it first sees it; a thread
 * of this part answers and keeps them (names outlive their process). A
 * user stack the BPF side stored carries its Python frames after its native
 * ones; python__splice() puts each group of them inside the
 * _PyEval_EvalFrameDefault frame that runs it, and python__flush() writes the
 * "[py] QUALNAME (FILE:LINE)" MMAP2 records their addresses need, once per
 * file, before the sample (offcpu.h, "Named frames"). LINE is the line of
 * the instruction the frame is in (its prev_instr in co_linetable), or the
 * code object's first line (co_firstlineno) where the table does not say.
 */
#ifndef OFFCPU_RECORD_PYTHON_H
#define OFFCPU_RECORD_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct python;
struct collector;
struct record;
struct perf_queue;

/*
 * The Python part of a loaded collector: its maps, and a thread that
 * answers the program. NULL when the program was loaded without it (errno 0)
 * or on failure (errno set).
 */
struct python *python__new(struct collector *c);
void python__free(struct python *py);

/*
 * Look at process @pid now, not at its first block: the command offcpu
 * starts, held after its exec (its program mapped, then its libraries), so
 * that its first blocks have their Python frames. (The program asks about a
 * process at its first block; a thread that blocks before the answer came
 * has none: in a Python program that starts threads, their first waits.)
 */
void python__detect(struct python *py, int pid);

/*
 * The user frames @uips, @nu of a stack of process @tgid with the Python
 * frames at their end spliced in: returns the number of frames in *@out
 * (@uips itself when it has none, else a buffer of the calling thread's,
 * valid until its next call), marks and deferral frames still last. The
 * names the spliced frames need and @gen (the file's number) has not had yet
 * are kept for python__flush(). NULL @py: @uips as they are.
 */
uint32_t python__splice(struct python *py, uint32_t tgid, const uint64_t *uips, uint32_t nu,
			const uint64_t **out);

/*
 * Push the MMAP2 records that the frames python__splice() spliced on this
 * thread since its last flush need into @q, as @kind, stamped with the time
 * of the sample they go before (@time; equal times keep their order): each
 * once per file (@gen), unless a sample of an earlier time needs it again.
 * (Not stamped 0, as synthesized records are: perf delivers those as it
 * reads them, and a FORK of the process sorted after would drop them.)
 * Returns 0 or -errno.
 */
int python__flush(struct python *py, struct record *r, struct perf_queue *q, size_t gen,
		  uint64_t time, int kind);

/*
 * Process @tgid exited: its names are freed a few seconds later (samples of
 * it still on their way need them). NULL @py: nothing.
 */
void python__exit(struct python *py, uint32_t tgid);

/* Counters for the summary: walks, frames, faults, cut walks, names, names lost. */
struct python_stats {
	uint64_t walks, frames, faults, cut, names, names_lost;
	uint64_t procs; /* Python processes found */
	uint64_t names_dropped; /* names received and not kept: over a memory bound */
	uint64_t procs_cut; /* processes cut off: their ids or their share of the memory used up */
	uint32_t first_cut;
	uint64_t bytes_peak; /* the names' memory at its largest */
	uint64_t procs_freed; /* processes whose names were freed after they exited */
};
void python__stats(struct python *py, struct python_stats *st);

/* The summary's line on Python frames (nothing without them). */
void python__summary(struct python *py, FILE *f);
/* summary.c: that line, from @st (none when no process was Python) */
void summary__print_python(FILE *f, const struct python_stats *st);

#endif
