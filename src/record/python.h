/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Python frames in user stacks (issues 24, 29): which processes run a
 * CPython whose layout offcpu knows (3.10 to 3.13, pylayout.h), the names
 * of their code objects, and the splice of each stack's Python frames into
 * its native frames.
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

/* How many of the @n frames @ips ends with are Python frames (the program's, or read at the start). */
uint32_t python__frames(const uint64_t *ips, uint32_t n);

/*
 * Look at process @pid now, not at its first block: the command offcpu
 * starts, held after its exec (its program mapped, then its libraries), so
 * that its first blocks have their Python frames. (The program asks about a
 * process at its first block; a thread that blocks before the answer came
 * has none: in a Python program that starts threads, their first waits.)
 */
void python__detect(struct python *py, int pid);

/*
 * The native user frames @native, @nn of a stack of process @tgid (no mark,
 * no deferral) with its Python frames @pyf, @np (innermost first, as the
 * walk appended them) spliced in: returns the number of frames in *@out
 * (@native itself when there are none to splice, else a buffer of the
 * calling thread's, valid until its next call). The names the spliced
 * frames need are kept for python__flush(). NULL @py: @native as it is.
 */
uint32_t python__splice(struct python *py, uint32_t tgid, const uint64_t *native, uint32_t nn,
			const uint64_t *pyf, uint32_t np, const uint64_t **out);

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

/* Why a process's Python frames are not read. */
enum python_why {
	PYTHON_UNKNOWN, /* an interpreter whose version is not known */
	PYTHON_UNSUPPORTED, /* a version offcpu has no layout of */
	PYTHON_CHECK, /* a layout the object's own type sizes disagree with */
	PYTHON_KEY, /* its thread-state key not one of glibc's first 32 slots (seen by the program) */
	PYTHON_WHY_NR,
};

/* The first process not read for a reason: what the summary names. */
struct python_not_read {
	uint32_t pid;
	char comm[16];
	char detail[64]; /* what was found: "3.9", "Py_Version 0x2070000", ... */
};

/*
 * The Python frames of thread-pointer @fsbase's thread of process @tgid,
 * blocked when the recording began (userstacks.c, on its reader's thread):
 * read from the process's memory, where no file system is asked (anonymous
 * memory, the interpreter's own object), bounded, each value a hint. Writes
 * at most @max frames to @out as the program's walk would (innermost first,
 * OFFCPU_PYFRAME_OF(id) | OFFCPU_PY_ENTRY), names them, and returns their
 * number. @py is a struct python (NULL: none).
 */
int python__thread_frames(void *py, uint32_t tgid, uint64_t fsbase, uint64_t *out, int max);

/* Counters for the summary: walks, frames, faults, cut walks, names, names lost. */
struct python_stats {
	uint64_t walks, frames, faults, cut, names, names_lost;
	uint64_t procs; /* Python processes found */
	uint64_t names_dropped; /* names received and not kept: over a memory bound */
	uint64_t procs_cut; /* processes cut off: their ids or their share of the memory used up */
	uint32_t first_cut;
	uint64_t bytes_peak; /* the names' memory at its largest */
	uint64_t procs_freed; /* processes whose names were freed after they exited */
	uint64_t no_tstate; /* walks of threads with no thread state (not running Python) */
	uint64_t renamed; /* code objects named at the address of another one named before */
	uint64_t start_threads, start_frames; /* threads blocked at the start, with Python frames read */
	uint64_t not_read[PYTHON_WHY_NR]; /* processes whose Python frames are not read, by why */
	struct python_not_read first[PYTHON_WHY_NR];
};
void python__stats(struct python *py, struct python_stats *st);

/* The summary's line on Python frames (nothing without them). */
void python__summary(struct python *py, FILE *f);
/* summary.c: that line, from @st (none when no process was Python) */
void summary__print_python(FILE *f, const struct python_stats *st);

#endif
