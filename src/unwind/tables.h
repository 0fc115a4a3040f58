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

enum unwind_cfa {
	UNWIND_CFA_RSP, /* CFA = rsp + cfa_off */
	UNWIND_CFA_RBP, /* CFA = rbp + cfa_off */
	UNWIND_CFA_PLT, /* a PLT entry: CFA = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0) */
	UNWIND_CFA_NONE, /* no FDE covers the range, or a rule offcpu cannot follow */
};

enum unwind_rbp {
	UNWIND_RBP_SAME, /* the caller's rbp is this frame's */
	UNWIND_RBP_AT, /* saved at CFA + rbp_off */
	UNWIND_RBP_UNDEF, /* undefined */
};

/* One rule; the return address is always at CFA - 8 on x86-64. */
struct unwind_rule {
	uint8_t cfa; /* enum unwind_cfa */
	uint8_t rbp; /* enum unwind_rbp */
	uint8_t outermost; /* the return address is undefined: _start, clone3, start_thread */
	uint8_t pad;
	int32_t cfa_off;
	int32_t rbp_off;
};
_Static_assert(sizeof(struct unwind_rule) == 12, "unwind_rule");

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

struct unwind_table {
	struct unwind_row *rows; /* sorted by start; a range ends where the next row starts */
	size_t nr, cap;
	size_t fdes; /* FDEs read */
	size_t unsupported; /* rows whose rule offcpu cannot follow (CFA_NONE inside an FDE) */
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
/* The row whose range holds @addr, or NULL when @addr precedes the first. */
const struct unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t addr);
void unwind_table__free(struct unwind_table *t);

#endif
