/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unwind table loader: builds each object's table once (src/unwind/),
 * shared by every process that maps it, and tells the BPF walk which object
 * each executable mapping of a process is. Processes are loaded when asked:
 * the targets at the start, then whatever the BPF program asks for (a
 * process it has no mappings of, an exec, a pc in no known mapping), by a
 * thread of its own so that building never delays the buffers' draining.
 *
 * Objects are other users' files: each one's build has a budget (rows,
 * rules, bytes of .eh_frame, time); one over it, or one that changes while
 * it is read, gets no table (frame pointers there) and is counted, so that
 * no object can take the memory or the loader from the others; the files of
 * one user other than root hold a quarter of the rows and rules at most, so
 * that no user can take them from the others either.
 */
#ifndef OFFCPU_RECORD_UNWINDER_H
#define OFFCPU_RECORD_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "collector.h"

struct unwinder;

/* objects without a table named in the summary */
#define UNWINDER_NAMED 4

struct unwinder_stats {
	uint64_t objects; /* objects with a table */
	uint64_t no_table; /* objects without: no .eh_frame, unreadable, ... */
	char no_table_first[UNWINDER_NAMED][160]; /* the first of them: "NAME: reason" */
	uint64_t mem_full; /* objects left without a table: --unwind-mem full */
	uint64_t over_budget; /* objects over what one object may cost (rows, rules, bytes, time) */
	uint64_t rules_full; /* objects left without a table: the shared rule array was full */
	uint64_t unreadable; /* objects that changed or shrank while they were read */
	uint64_t owner_full; /* objects of a user whose files held their share of the memory */
	uint32_t first_owner; /* the first such user */
	uint64_t reclaimed, reclaimed_rows; /* objects taken back (no process used them), their rows */
	uint64_t grace_periods; /* waits for the BPF program before reusing what was taken back */
	char first_over[256]; /* why the first object over its budget was */
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
 * compared. A build in progress stops as soon as *@cancel is non-zero (the
 * recording ends), or unwinder__stop() is called. Returns NULL with @msg on
 * failure.
 */
struct unwinder *unwinder__new(const struct collector_unwind_maps *m, bool verify,
			       const volatile int *cancel, char *msg, size_t len);
/*
 * Call @fn(@arg, tgid) from each load of a process that has anonymous
 * executable mappings (JIT code), so that its perf map can be opened while
 * it lives (perfmap.h). Before unwinder__start().
 */
void unwinder__on_jit(struct unwinder *u, void (*fn)(void *arg, int tgid), void *arg);
/* @fn(@arg, tgid) is called when a process's mappings were loaded (its first block, an exec, new code). */
void unwinder__on_load(struct unwinder *u, void (*fn)(void *arg, int tgid), void *arg);
/* Load process @tgid's mappings now. Returns 0 or -errno (-ESRCH: it is gone). */
int unwinder__add_process(struct unwinder *u, int tgid);
/* Serve the BPF program's requests from a thread until unwinder__stop(). */
int unwinder__start(struct unwinder *u);
/*
 * Stop the thread: within UNWINDER_STOP_MS whatever it is reading (a file
 * that blocks: the thread is left behind, and the unwinder with it, until
 * the process exits).
 */
void unwinder__stop(struct unwinder *u);
#define UNWINDER_STOP_MS 1000
void unwinder__stats(struct unwinder *u, struct unwinder_stats *st);
void unwinder__free(struct unwinder *u);

#endif
