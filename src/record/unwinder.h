/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unwind table loader: builds each object's table once (src/unwind/),
 * shared by every process that maps it, and tells the BPF walk which object
 * each executable mapping of a process is. Processes are loaded when asked:
 * the targets at the start, then whatever the BPF program asks for (a
 * process it has no mappings of, an exec, a pc in no known mapping), by a
 * thread of its own so that building never delays the buffers' draining.
 */
#ifndef OFFCPU_RECORD_UNWINDER_H
#define OFFCPU_RECORD_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collector.h"

struct unwinder;

struct unwinder_stats {
	uint64_t objects; /* objects with a table */
	uint64_t no_table; /* objects without: no .eh_frame, unreadable, ... */
	uint64_t mem_full; /* objects left without a table: --unwind-mem full */
	uint64_t rows, rows_cap; /* rows loaded, rows the memory holds */
	uint64_t rules;
	uint64_t processes; /* process loads (including reloads) */
	uint64_t truncated; /* processes with more executable mappings than a process holds */
	uint64_t procs_full; /* process loads the process map had no room for */
	uint64_t build_ns; /* time spent building tables */
	uint64_t bytes; /* kernel memory the tables pin */
	/* --verify-stacks: table walks checked against libdw's DWARF unwinding */
	uint64_t verified, verify_same, verify_prefix, verify_differ, verify_shorter, verify_failed;
};

/*
 * Over the maps of a loaded collector; with @verify, the table walks the BPF
 * program sends are unwound again by libdw (src/unwind/oracle.c) and
 * compared. Returns NULL with @msg on failure.
 */
struct unwinder *unwinder__new(const struct collector_unwind_maps *m, bool verify, char *msg,
			       size_t len);
/* Load process @tgid's mappings now. Returns 0 or -errno (-ESRCH: it is gone). */
int unwinder__add_process(struct unwinder *u, int tgid);
/* Serve the BPF program's requests from a thread until unwinder__stop(). */
int unwinder__start(struct unwinder *u);
void unwinder__stop(struct unwinder *u);
void unwinder__stats(struct unwinder *u, struct unwinder_stats *st);
void unwinder__free(struct unwinder *u);

#endif
