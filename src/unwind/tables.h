/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space unwind tables for x86-64, built from an object's .eh_frame with
 * libdw's CFI API (no hand-written DWARF parser): for every address range of
 * the object, the rule that finds the caller's frame. The BPF user walk
 * (issue 13) is to step through frame-pointer-less code with them.
 *
 * A table is a sorted array of rows, each the start of a range (an address
 * in the object's own ELF vaddr space) and an index into a rule set shared
 * by all tables, so that the few hundred distinct rules of a process are
 * stored once. Ranges no FDE covers get the rule UNWIND_RULE_NONE.
 */
#ifndef OFFCPU_UNWIND_TABLES_H
#define OFFCPU_UNWIND_TABLES_H

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
	struct unwind_load loads[UNWIND_MAX_LOADS]; /* its PT_LOAD segments */
	size_t nr_loads;
};

/* Rule 0 (none) exists from the start. Returns 0 or -ENOMEM. */
int unwind_rules__init(struct unwind_rules *rs);
void unwind_rules__free(struct unwind_rules *rs);

/*
 * Build @t from the ELF object at @path (its .eh_frame and .eh_frame_hdr),
 * adding its rules to @rs. Returns 0, or -errno with @err saying why (no
 * .eh_frame_hdr, not ELF, not x86-64).
 */
int unwind_table__build(struct unwind_table *t, struct unwind_rules *rs, const char *path,
			char *err, size_t errlen);
/* The same from an ELF image in memory (the vDSO), @name in messages. */
int unwind_table__build_mem(struct unwind_table *t, struct unwind_rules *rs, const void *image,
			    size_t size, const char *name, char *err, size_t errlen);
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
