/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's memory for unwind tables (the collector's rows, rules and
 * objects arrays, mapped into offcpu): which rows each object holds, which
 * processes use it, and what can be taken back.
 *
 * - An object is a slice of the rows array; its id is its place in the
 *   objects array. Rules are shared by all objects and never taken back.
 * - Processes hold objects (tablemem__get/put, as their mappings are loaded
 *   and as they exit). An object no process holds stays loaded, for the
 *   next process that maps it, until its memory or its id is needed: then
 *   the objects held by no process are taken back, least recently used
 *   first.
 * - A row or id taken back is reused only once no run of the BPF program
 *   can still read it: the object is unlinked (its slice emptied), then a
 *   grace period passes (membarrier, an RCU grace period), then the per-CPU
 *   rule cache, which knows rules by object id, is emptied.
 * - Each id has a generation, bumped when it is taken back: whoever keeps an
 *   id (the loader's files -> object map) asks tablemem__alive() before
 *   using it again.
 * - The files of one user other than root hold at most a quarter of the rows
 *   and of the rules (their owner's share), so that no user can take the
 *   memory from the others.
 *
 * Not thread-safe: the loader calls it under its lock.
 */
#ifndef OFFCPU_RECORD_TABLEMEM_H
#define OFFCPU_RECORD_TABLEMEM_H

#include <stdbool.h>
#include <stdint.h>
#include "collector.h"
#include "../unwind/tables.h"

struct tablemem;

struct tablemem_stats {
	uint64_t objects; /* objects with a table now */
	uint64_t rows, rows_cap; /* rows in use, rows the memory holds */
	uint64_t rules;
	uint64_t rules_full; /* objects left without a table: the rule array was full */
	uint64_t owner_full; /* objects of a user whose files held their share */
	uint32_t first_owner; /* the first such user */
	uint64_t reclaimed; /* objects taken back */
	uint64_t reclaimed_rows;
	uint64_t grace_periods; /* waits for the BPF program before a reuse */
	uint64_t bytes; /* kernel memory the arrays pin */
};

struct tablemem *tablemem__new(const struct collector_unwind_maps *m);
void tablemem__free(struct tablemem *tm);

/*
 * Publish a built table (its rules merged into the shared set) as a new
 * object of a file owned by @uid, taking back objects no process holds if
 * that makes room. Returns its id (> 0), or 0 with *@why: -ENOSPC (rows),
 * -ENFILE (rules), -EDQUOT (its owner's share), -EMFILE (ids), -E2BIG (an
 * address past 4 GiB: the walk keeps 32-bit addresses), -ENOMEM.
 */
uint32_t tablemem__add(struct tablemem *tm, struct unwind_table *t, uint32_t uid, int *why);
/* Whether the files of @uid hold their share already (nothing more of theirs fits). */
bool tablemem__owner_full(struct tablemem *tm, uint32_t uid);
/* Its generation: with the id, what names the object while it lives. */
uint32_t tablemem__gen(const struct tablemem *tm, uint32_t id);
/* Whether object @id of generation @gen is still loaded. */
bool tablemem__alive(const struct tablemem *tm, uint32_t id, uint32_t gen);
/* A process's mappings hold @id (0 is ignored), or no longer do. */
void tablemem__get(struct tablemem *tm, uint32_t id);
void tablemem__put(struct tablemem *tm, uint32_t id);
/* The object's PT_LOAD segments (for a mapping's bias), or NULL. */
const struct unwind_table *tablemem__segments(const struct tablemem *tm, uint32_t id);
void tablemem__stats(const struct tablemem *tm, struct tablemem_stats *st);

#endif
