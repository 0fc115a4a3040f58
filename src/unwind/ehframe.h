/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A reader of .eh_frame (the call frame information of x86-64 objects) that
 * runs in time linear in the section's size, whatever its content: it walks
 * the section once, parses each CIE once (its initial instructions run once
 * and are kept), and runs each FDE's instructions once, from its first row
 * to its last, handing out every row as it is reached. (libdw computes one
 * row at a time from the FDE's start: quadratic in the rows of an FDE,
 * which a hostile object can make 31 s for 400 KB.)
 *
 * The rows come out in address order: FDEs sorted by start, each one's rows
 * cut where the next FDE starts, and a row with no rule where an FDE ends
 * before the next one starts. Only what offcpu's walk can use is kept of a
 * row: the CFA's rule, and the rules of rbp and of the return address.
 * Anything malformed ends its FDE with a row with no rule, or skips the FDE;
 * nothing is read outside the section.
 */
#ifndef OFFCPU_UNWIND_EHFRAME_H
#define OFFCPU_UNWIND_EHFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cfi_cfa_how {
	CFI_CFA_NONE, /* not defined, or made invalid */
	CFI_CFA_REG, /* register + offset */
	CFI_CFA_EXPR, /* a DWARF expression (PLT entries) */
};

enum cfi_reg_how {
	CFI_REG_UNDEF, /* undefined (the return address: the outermost frame) */
	CFI_REG_SAME, /* unchanged */
	CFI_REG_OFFSET, /* saved at CFA + off */
	CFI_REG_OTHER, /* any rule offcpu does not follow (register, expression, value) */
};

struct cfi_rule {
	uint8_t how; /* enum cfi_reg_how */
	int64_t off;
};

/* The rules in force for one range of addresses. */
struct cfi_row {
	uint8_t cfa_how; /* enum cfi_cfa_how */
	uint64_t cfa_reg; /* DWARF register number */
	int64_t cfa_off;
	const uint8_t *expr; /* CFI_CFA_EXPR: the expression, valid during the callback */
	size_t expr_len;
	struct cfi_rule rbp, ra;
	bool signal; /* a signal frame (augmentation 'S') */
};

struct ehframe_stats {
	size_t fdes; /* FDEs read (repeats and empty ones not counted) */
	size_t bad; /* FDEs or CIEs that could not be read whole */
	size_t ops; /* CFA instructions run: each one once, whatever the section holds */
};

/*
 * Called for each row, in address order: @row is NULL where no rule covers
 * the range that starts at @start. A non-zero return ends the walk and is
 * returned by ehframe__walk() (a budget, a cancel).
 */
typedef int (*ehframe_row_fn)(void *arg, uint64_t start, const struct cfi_row *row);

/*
 * Walk the .eh_frame section @data (@size bytes, at ELF address @addr).
 * Returns 0 (also for a section without FDEs: st->fdes says how many were
 * read), the callback's non-zero value, or -ENOMEM.
 */
int ehframe__walk(const uint8_t *data, size_t size, uint64_t addr, ehframe_row_fn fn, void *arg,
		  struct ehframe_stats *st);

#endif
