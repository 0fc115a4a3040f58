/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Named frames in every file (issue 29): the MMAP2 records that name a
 * Python frame, a JavaScript frame or JIT code ("[py] ...", "[js] ...",
 * "[jit] ...": offcpu.h, "Named frames") are made once, before the first
 * sample that needs them (python.c, v8.c, perfmap.c), but a file of a rotation, a file split at its size
 * in the middle of a round and a flight recorder's snapshot need them again
 * for their own samples. Here every record on its way into a file is seen
 * as it is written: a named mapping is kept (within NAMED_MEM_MAX), and a
 * sample whose named frames the file (or stream) does not hold yet has
 * their records written first, stamped with its time.
 *
 * For perf, which names a frame from the symbols of its mapping's file, a
 * file's named frames are also symbols of a symbol file beside it
 * (.FILE.names, util/elfsyms.h): each named record is followed by one that
 * maps the same range to that file at the symbol's address, with the
 * symbol file's build id, and the file is written when the recording's file
 * ends. offcpu report keeps reading the named records themselves.
 *
 * Thread-safe (the writer threads of --threads each write a stream).
 */
#ifndef OFFCPU_RECORD_NAMED_H
#define OFFCPU_RECORD_NAMED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

struct named;

#define NAMED_MEM_MAX (64ULL << 20) /* records kept for later files, of all processes */
#define NAMED_GONE_MS 5000 /* an exited process's records are kept this long */
#define NAMED_STREAMS 64 /* streams of one file told apart (--threads) */

struct named *named__new(void);
void named__free(struct named *nm);

/*
 * A new file begins: it holds no named record yet. @syms_path: where its
 * symbol file for perf goes (the file's final path and NAMED_SUFFIX; NULL:
 * none, as for a pipe). 0 or -errno.
 */
int named__begin(struct named *nm, const char *syms_path);

/*
 * The record @h about to be written into stream @stream (0: the main file;
 * 1 + N: --threads' data.N) through @write: a named mapping is kept and its
 * symbol's record written after it; a sample (@sample_type: of its event,
 * 0: not one whose frames are named) gets the named records it needs and
 * the stream lacks written before it, stamped @time. Returns 0 or -errno;
 * @h itself is left to the caller.
 */
int named__before(struct named *nm, const struct perf_event_header *h, uint64_t sample_type,
		  uint64_t time, int stream,
		  int (*write)(void *arg, const struct perf_event_header *h), void *arg);
int named__after(struct named *nm, const struct perf_event_header *h, int stream,
		 int (*write)(void *arg, const struct perf_event_header *h), void *arg);

/* A named mapping not written (a snapshot skips what an earlier one holds): kept for later samples. */
void named__seen(struct named *nm, const struct perf_event_header *h);

/* Whether the current file has symbols for perf (named__write_syms() writes them). */
bool named__has_syms(struct named *nm);
/* The current file's symbol file, written to @fd (the caller makes it at the path given). 0 or -errno. */
int named__write_syms(struct named *nm, int fd);

/* Process @pid exited: its records are freed NAMED_GONE_MS from now. */
void named__exit(struct named *nm, uint32_t pid);

/* Whether @h is a named mapping (offcpu's "[py] ", "[js] " or "[jit] " MMAP2). */
bool named__is_named(const struct perf_event_header *h);

struct named_stats {
	uint64_t kept; /* records kept */
	uint64_t rewritten; /* written again: into a later file, after a skip, into another stream */
	uint64_t dropped; /* not kept: over NAMED_MEM_MAX */
	uint64_t symbols; /* symbols written to symbol files */
	uint64_t files; /* symbol files written */
	uint64_t bytes_peak;
};
void named__stats(struct named *nm, struct named_stats *st);

#endif
