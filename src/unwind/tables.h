/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space unwind tables for x86-64, built from an object's .eh_frame
 * (ehframe.h reads it, in time linear in its size): for every address range
 * of the object, the rule that finds the caller's frame, as the BPF user
 * walk follows it.
 *
 * A table is a sorted array of rows, each the start of a range (an address
 * in the object's own ELF vaddr space) and the index of its rule. A table
 * keeps its own distinct rules until unwind_rules__merge() moves them into a
 * rule set shared by all tables, so that the few hundred distinct rules of a
 * process are stored once, and so that an object over its budget takes
 * nothing from the shared set. Ranges no FDE covers get UNWIND_RULE_NONE.
 *
 * The objects are other users' files: they are read with pread (objread.h),
 * never mapped, and every build is bounded by a budget (rows, rules, bytes,
 * time) and can be cancelled.
 */
#ifndef OFFCPU_UNWIND_TABLES_H
#define OFFCPU_UNWIND_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../util/hashmap.h"
#include "../offcpu.h"

/*
 * One rule: the ABI's (offcpu.h), with the return address always at CFA - 8
 * on x86-64; OFFCPU_UNW_CFA_SIGNAL for rt_sigreturn's frame.
 */
#define unwind_rule offcpu_unw_rule

#define UNWIND_RULE_NONE 0 /* rule 0 of every set: CFA_NONE */

struct unwind_rules {
	struct unwind_rule *v;
	size_t nr, cap;
	struct hashmap index; /* rule bytes -> index */
};

struct unwind_row {
	uint64_t start; /* ELF vaddr where the range begins */
	uint32_t rule; /* index into the rule set */
	uint32_t pad;
};

/* A loadable segment: file offset -> ELF address. */
struct unwind_load {
	uint64_t offset, vaddr, filesz;
};

#define UNWIND_MAX_LOADS 8

struct unwind_table {
	struct unwind_row *rows; /* sorted by start; a range ends where the next row starts */
	size_t nr, cap;
	size_t fdes; /* FDEs read */
	size_t unsupported; /* rows whose rule offcpu cannot follow (CFA_NONE inside an FDE) */
	size_t bad; /* FDEs or CIEs that could not be read whole */
	struct unwind_load loads[UNWIND_MAX_LOADS]; /* its PT_LOAD segments */
	size_t nr_loads;
	/* the object's own distinct rules, which rows index until merged */
	struct unwind_rule *rules;
	size_t nr_rules, cap_rules;
	struct hashmap rule_index;
	bool merged; /* rows index the shared set */
	bool fp; /* frame pointers are its method where .eh_frame has no rule (Go) */
};

/*
 * What one object may cost. A build over it stops with -E2BIG (rows, rules,
 * bytes) or -ETIME; one whose cancel() turns true stops with -ECANCELED.
 * Zero fields: no limit.
 */
struct unwind_budget {
	size_t max_rows;
	size_t max_rules;
	uint64_t max_bytes; /* of .eh_frame */
	uint64_t max_ns;
	bool (*cancel)(void *arg); /* asked every thousand rows or so */
	void *arg;
};

/* Rule 0 (none) exists from the start. Returns 0 or -ENOMEM. */
int unwind_rules__init(struct unwind_rules *rs);
void unwind_rules__free(struct unwind_rules *rs);

/*
 * Build @t from the ELF object at @path (opened only if it is a regular
 * file). Returns 0, or -errno with @err saying why: -ENOENT (no .eh_frame),
 * -ENOEXEC (not ELF), -ENOTSUP (not x86-64), -EIO (the file shrank while it
 * was read), -E2BIG or -ETIME (over @b), -ECANCELED, -EINVAL (damaged).
 * @b may be NULL: no limit.
 */
int unwind_table__build(struct unwind_table *t, const char *path, const struct unwind_budget *b,
			char *err, size_t errlen);
/* The same from an ELF image in memory (the vDSO), @name in messages. */
int unwind_table__build_mem(struct unwind_table *t, const void *image, size_t size,
			    const char *name, const struct unwind_budget *b, char *err,
			    size_t errlen);
/*
 * Move @t's rules into @rs, its rows then index @rs. With nothing changed:
 * -ENOSPC when @rs would hold more than @max rules, -EDQUOT when more than
 * @max_new of them would be new (0: no limit). *@added (may be NULL): how
 * many were new.
 */
int unwind_rules__merge(struct unwind_rules *rs, struct unwind_table *t, size_t max,
			size_t max_new, size_t *added);
/* The rule of @row: from the shared set once merged, else the table's own. */
const struct unwind_rule *unwind_table__rule(const struct unwind_table *t,
					     const struct unwind_rules *rs,
					     const struct unwind_row *row);
/*
 * The bias of a mapping of the object at file offset @pgoff from @start:
 * address - bias is the ELF address. Returns 0, or -ENOENT when no segment
 * holds that offset.
 */
int unwind_table__bias(const struct unwind_table *t, uint64_t start, uint64_t pgoff,
		       uint64_t *bias);
/* The row whose range holds @addr, or NULL when @addr precedes the first. */
const struct unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t addr);
void unwind_table__free(struct unwind_table *t);

#endif
