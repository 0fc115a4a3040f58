/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the Python part's files share (python.h): python.c (the reader
 * thread, the program's events, the names, the summary), pydetect.c (which
 * CPython a process runs, its layout), pysplice.c (the frames into the
 * native stacks, their names into the file). Only they include it.
 */
#ifndef OFFCPU_RECORD_PYTHON_INT_H
#define OFFCPU_RECORD_PYTHON_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <elf.h>
#include <bpf/libbpf.h>
#include "python.h"
#include "../offcpu.h"
#include "../util/hashmap.h"
#include "../util/intset.h"

#define PY_READ (-1) /* a process's frames are read: no enum python_why */

/* What an object holds of CPython: found by its dynamic symbols. */
struct pyobj {
	bool python; /* it holds an interpreter (_PyRuntime, _PyEval_EvalFrameDefault) */
	uint32_t version; /* Py_Version, or 3.10's (by its API: no Py_Version); 0: not known */
	int why; /* PY_READ, or why its frames are not read (enum python_why) */
	char detail[64]; /* and what it found, for the summary */
	uint64_t runtime, eval, eval_size; /* _PyRuntime, _PyEval_EvalFrameDefault (ELF addresses) */
	uint32_t tss; /* the thread-state key's offset in _PyRuntime */
	struct offcpu_py_layout l;
	Elf64_Phdr load[8]; /* its PT_LOAD headers, for the load bias */
	size_t nload;
};

struct pyname {
	uint32_t written; /* 1 + the file it was last written to; 0: never */
	uint32_t pad;
	uint64_t written_at; /* the time it was written with there */
	char *text; /* "[py] QUALNAME (FILE:LINE)"; NULL: not received yet */
};

/* A Python process: where its interpreter runs, and the names of its ids. */
struct pyproc {
	uint32_t tgid;
	bool used, gone, cut;
	uint64_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault in the process */
	uint64_t tss_key; /* where its thread-state key is */
	struct offcpu_py_layout l; /* its interpreter's layout */
	struct pyname *names; /* by id (the process's own) */
	size_t cap_names;
	uint32_t next_id; /* the last id it was seen with: the next ones go on from it */
	/* frames read from its memory (pyattach.c): ids PY_UID_FIRST on, names apart */
	struct pyname *unames; /* by id - PY_UID_FIRST */
	size_t cap_unames;
	uint32_t next_uid; /* the last one given; 0: none yet */
	struct hashmap uids; /* (code object, identity, instruction) -> its id */
	uint64_t bytes; /* its names' memory */
	struct hashmap stamps; /* code object's address -> its identity when last named */
	uint64_t gone_ns; /* its exit */
};

/* Ids of frames read from a process's memory: above the program's own */
#define PY_UID_FIRST (OFFCPU_PY_IDS_MAX + 1)
#define PY_UID_LAST (2 * OFFCPU_PY_IDS_MAX)
_Static_assert(PY_UID_LAST < OFFCPU_PYFRAME_MAX, "user space's ids fit the frames' range");

/* what the names of all processes may hold, and one process's share */
#define PY_NAMES_MEM_MAX (64ULL << 20)
#define PY_PROC_MEM_MAX (PY_NAMES_MEM_MAX / 4)
#define PY_GONE_MS 5000 /* an exited process's names are kept this long */

struct python {
	int procs_fd, counters_fd;
	struct ring_buffer *rb;
	pthread_t thread;
	bool started;
	volatile int stop;
	pthread_mutex_t lock; /* the ring buffer, names, procs */
	struct hashmap procs; /* tgid -> 1 + index in proc */
	struct pyproc *proc; /* a freed one is reused */
	size_t nr_proc, cap_proc;
	uint64_t bytes, bytes_peak; /* the names' memory */
	uint64_t names_dropped; /* names not kept: over a bound */
	uint64_t cut; /* processes cut off: their ids, or their share of the memory, used up */
	uint32_t first_cut;
	uint64_t freed; /* processes whose names were freed after they exited */
	size_t gone; /* exited ones not freed yet */
	struct hashmap objs; /* (dev, inode) -> 1 + index in obj */
	struct pyobj *obj;
	size_t nr_obj, cap_obj;
	uint32_t *asked; /* processes asked about, to look at outside the lock */
	size_t nr_asked, cap_asked;
	uint64_t found; /* Python processes */
	uint64_t not_read[PYTHON_WHY_NR]; /* processes whose frames are not read, by why */
	struct python_not_read first[PYTHON_WHY_NR]; /* the first of each */
	struct intset said; /* the processes counted there */
	uint64_t renamed; /* code objects named at the address of another one named before */
	uint64_t start_threads, start_frames; /* threads blocked at the start, with Python frames read */
};

/* Process @tgid's entry; made if new and @make (under the lock). NULL: none, or no memory. */
struct pyproc *proc_get(struct python *py, uint32_t tgid, bool make);
/* Free @pp's names (under the lock). */
void proc_drop_names(struct python *py, struct pyproc *pp);
/* The name of @pp's @id, or NULL (under the lock). */
struct pyname *name_of(struct pyproc *pp, uint32_t id);
/* Keep name @text of @pp's @id, within the memory bounds (under the lock). */
void keep_name(struct python *py, struct pyproc *pp, uint32_t id, const char *text);
/* @pp used its ids, or its share of the names' memory: cut off, said (under the lock). */
void proc_cut(struct python *py, struct pyproc *pp);
/* Code object @code of @pp named with identity @stamp: counted if it took a freed one's place. */
void note_stamp(struct python *py, struct pyproc *pp, uint64_t code, uint64_t stamp);
/* The text "[py] QUALNAME (FILE:LINE)" into @text (@size bytes). */
void python_name_text(char *text, size_t size, const char *qualname, const char *filename,
		      int line);

/* pydetect.c: look at process @tgid and tell the program what it runs (not under the lock). */
void python_detect(struct python *py, uint32_t tgid);
/* Process @tgid's Python frames are not read, for @why (enum python_why): counted once. */
void python_not_read(struct python *py, uint32_t tgid, int why, const char *detail);

#endif
