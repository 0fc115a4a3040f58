/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sample resolution: a sample's call chain (or its ip) made a stack of
 * profile frames, root first, in its process's mappings at the sample's
 * time (threads.h): kernel frames through kallsyms, user frames through the
 * symbolizer (inlined ones with --lines; a frame no symbol names keeps its
 * object and offset, "prog+0x1139"), named code (a Python function, JIT
 * code) by its mapping's name, offcpu's marks of a walk that stopped short
 * named for why, and a user stack copy with no user frames (perf record
 * --call-graph dwarf) unwound with libdw first. Each distinct
 * chain in a process's mappings is symbolized once, each address once; and
 * an offcpu-waker sample's payload made the waker's name, chain and stack.
 */
#ifndef OFFCPU_REPORT_RESOLVE_H
#define OFFCPU_REPORT_RESOLVE_H

#include <stdint.h>
#include "jitnames.h"
#include "profile.h"
#include "symbolizer.h"
#include "threads.h"
#include "../perfdata/sample.h"
#include "../perfdata/wakers.h"

#define MAX_FRAMES 512 /* resolved frames per sample, inlined ones included */

struct unwind_oracle;

struct resolver {
	struct profile *p;
	struct symbolizer *sym;
	struct threads *th;
	uint32_t unknown; /* "[unknown]" */
	struct hashmap stacks; /* (pid, mappings, cpumode, chain) -> stack */
	struct hashmap addr_frames; /* (object, offset) -> packed (first << 8 | n) */
	uint32_t *cached; /* frames of addr_frames */
	size_t nr_cached, cap_cached;
	uint64_t *key;
	size_t key_cap;
	uint32_t frames[MAX_FRAMES];
	/* samples with user registers and a stack copy (perf record --call-graph dwarf) */
	struct unwind_oracle *oracle;
	struct hashmap oracle_gen; /* pid -> generation of the mappings the oracle has */
	uint64_t *dwarf_ips; /* the sample's call chain, then its unwound user frames */
	size_t dwarf_cap;
	struct jitnames jit; /* frames in anonymous memory, named at the end if they can be */
};

/* 0, or -ENOMEM. */
int resolver__init(struct resolver *r, struct profile *p, struct symbolizer *sym,
		   struct threads *th);
void resolver__free(struct resolver *r);

/*
 * The stack of @smp (of an event with @attr; @misc: its record's), into
 * *@stack: its call chain when it has one, else its ip. A dwarf sample's
 * unwound frames are added to its chain first (@smp's ips then point into
 * the resolver until the next call). Returns 0 or -ENOMEM.
 */
int resolver__stack(struct resolver *r, const struct perf_event_attr *attr, uint16_t misc,
		    struct perf_sample *smp, uint32_t *stack);

/*
 * The stack of @smp's call chain as recorded (@chain; empty when it has no
 * entry), or of its ip alone: no unwinding. 0 or -ENOMEM.
 */
int resolver__chain(struct resolver *r, uint16_t misc, const struct perf_sample *smp, bool chain,
		    uint32_t *stack);

/*
 * Is @frame a user frame in an object that no symbol named, which the
 * resolver names "OBJ+0xOFFSET" (a file) or "OBJ@0xADDRESS" (no file)?
 * Those are what debug files would name: the report counts them.
 */
bool resolver__unnamed(const struct profile *p, uint32_t frame);

/*
 * The waker @w of an offcpu-waker sample @smp (@attr, @misc: its event's and
 * record's): its name (*@waker), who woke it before ("b;c", *@chain; 0 none),
 * each also a label frame, and its stack (*@stack; UINT32_MAX none). Names
 * are cleaned: ';' would split a chain or folded line. 0 or -ENOMEM.
 */
int resolver__waker(struct resolver *r, const struct perf_event_attr *attr, uint16_t misc,
		    const struct perf_sample *smp, const struct offcpu_waker *w, uint32_t *waker,
		    uint32_t *chain, uint32_t *stack);

#endif
