/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a report session knows of the recorded threads and processes at a
 * point of the recording, from its side-band records: each thread's command
 * (COMM, inherited at FORK), each process's executable (its first file
 * mapping since its exec) and executable mappings (MMAP, MMAP2, copied at
 * FORK), and the build ids the file names (the BUILD_ID feature,
 * HEADER_BUILD_ID records, MMAP2 with a build id), and the named code
 * offcpu record maps (offcpu.h "Named frames"). The session feeds it the
 * records in time order, so a sample resolves against the state at its
 * time. Names and dsos are interned in the profile; each mapped object is
 * also a symbolizer dso, opened on first use.
 */
#ifndef OFFCPU_REPORT_THREADS_H
#define OFFCPU_REPORT_THREADS_H

#include <stdint.h>
#include <linux/perf_event.h>
#include "profile.h"
#include "symbolizer.h"
#include "../util/procmaps.h"
#include "../util/intset.h"
#include "../util/ranges.h"

enum mapobj_kind {
	MAPOBJ_FILE, /* a file: its frames are named by the symbolizer, else OBJ+0xOFFSET */
	MAPOBJ_ANON, /* no file (//anon, [heap], ...): unnamed frames are OBJ@0xADDRESS */
	MAPOBJ_PY, /* offcpu's named Python frame ("[py] QUALNAME (FILE:LINE)", offcpu.h) */
	MAPOBJ_JIT, /* offcpu's named JIT code ("[jit] NAME") */
	MAPOBJ_JS, /* offcpu's named JavaScript function ("[js] NAME (SCRIPT)", offcpu.h) */
};

/*
 * What a mapping's object number stands for: a symbolizer dso and a profile
 * dso; or, for named code, no symbolizer dso (it is never opened), the
 * shared pseudo-object of its kind ("[python]", "[jit]") and the name that
 * every address of the mapping resolves to. Compared as bytes: no padding.
 */
struct mapobj {
	struct sym_dso *sd; /* NULL for named code */
	uint32_t dso;
	uint32_t kind; /* enum mapobj_kind */
	uint32_t name, file, line; /* named code: function, source file (strtab, 0 none), line */
	uint32_t pad;
};

struct threads {
	struct profile *p;
	struct symbolizer *sym;
	struct hashmap comm_of; /* tid -> strtab index */
	struct hashmap pid_of; /* tid -> its process (COMM, FORK) */
	struct hashmap exe_of; /* pid -> profile dso of its executable, UINT64_MAX: none yet */
	struct procmaps maps; /* vmap.obj: index into objs */
	struct hashmap obj_of; /* mapobj -> index into objs */
	struct mapobj *objs;
	size_t nr_objs, cap_objs;
	/* named code by process: kept apart from the mappings, whose sorted
	 * array and generation change at each of them (109k names: 266 s) */
	struct hashmap named_of; /* pid -> index into named */
	struct rangeset *named; /* value: index into objs */
	size_t nr_named, cap_named;
	struct intset jit_pids; /* processes with JIT code the recording named */
	struct hashmap build_ids; /* path -> index into bids */
	uint8_t (*bids)[21]; /* [0] = length */
	size_t nr_bids;
};

void threads__init(struct threads *t, struct profile *p, struct symbolizer *sym);
void threads__free(struct threads *t);

/*
 * Named code @name ("[jit] NAME", ... offcpu.h) over [@addr, @addr + @len) of
 * process @pid, as a record of it would add it. 0 or -ENOMEM.
 */
int threads__add_named(struct threads *t, uint32_t pid, uint64_t addr, uint64_t len,
		       const char *name);
/* Whether the recording named JIT code of process @pid ("[jit] NAME" records). */
static inline bool threads__has_jit(const struct threads *t, uint32_t pid)
{
	return intset__has(&t->jit_pids, (int)pid);
}

/* Take in a COMM, MMAP, MMAP2, FORK or HEADER_BUILD_ID record (others: nothing). 0 or -ENOMEM. */
int threads__record(struct threads *t, const struct perf_event_header *h);
/* BUILD_ID feature or HEADER_BUILD_ID payload: entries with a header and a file name. */
void threads__build_ids(struct threads *t, const uint8_t *p, size_t size);

/* The command of @tid (else of its process @pid, else ":TID"); UINT32_MAX: out of memory. */
uint32_t threads__comm(struct threads *t, uint32_t pid, uint32_t tid);
/* The process of thread @tid as the records say, 0 when none names it. */
uint32_t threads__pid_of(const struct threads *t, uint32_t tid);
/* The profile dso of @pid's executable, UINT32_MAX when not known. */
uint32_t threads__exe(const struct threads *t, uint32_t pid);

static inline const struct addrspace *threads__maps(const struct threads *t, uint32_t pid)
{
	return procmaps__get(&t->maps, pid);
}

/* The named code of @pid (offcpu.h "Named frames"), or NULL: looked up before its mappings. */
static inline const struct rangeset *threads__named(const struct threads *t, uint32_t pid)
{
	uint64_t *v = hashmap__find(&t->named_of, &pid, sizeof(pid));

	return v ? &t->named[*v] : NULL;
}

static inline const struct mapobj *threads__obj(const struct threads *t, uint32_t obj)
{
	return &t->objs[obj];
}

#endif
