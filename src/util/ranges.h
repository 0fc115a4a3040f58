/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A set of address ranges, each with a value, added one at a time in any
 * order, where a later range wins over an earlier one it overlaps: the named
 * code of a process (JIT functions from a perf map, Python frames), which
 * grows while it is looked up.
 *
 * The ranges are kept in sorted runs merged as they grow (a run is merged
 * into the one before it while that one is at most twice its size), so an
 * addition costs O(log n) amortized and a lookup O(log^2 n), whatever the
 * order: no array is sorted again at each addition.
 *
 * A lookup finds the latest range holding the address among the
 * RANGES_BACK_SCAN ranges of each run that start last at or before it: a
 * range that starts before more than that many later-starting ranges of its
 * run, all of which end before the address, is not found (named code is
 * small ranges side by side; one that spans many others is no function).
 */
#ifndef OFFCPU_UTIL_RANGES_H
#define OFFCPU_UTIL_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RANGES_BACK_SCAN 8

struct range {
	uint64_t start, end; /* [start, end) */
	uint32_t value;
	uint32_t pad;
};

struct range_run {
	uint32_t *idx; /* into the ranges, by start, then by age */
	size_t n;
};

struct rangeset {
	struct range *r; /* in the order added: a later one has a higher index */
	size_t nr, cap;
	struct range_run *runs; /* older ones first */
	size_t nr_runs, cap_runs;
};

/* Add [@start, @start + @len) with @value. 0, or -ENOMEM (-EINVAL: empty or wrapping). */
int rangeset__add(struct rangeset *s, uint64_t start, uint64_t len, uint32_t value);
/* The value of the latest range holding @addr in *@value: false when none does. */
bool rangeset__find(const struct rangeset *s, uint64_t addr, uint32_t *value);
/* Ranges added. */
static inline size_t rangeset__len(const struct rangeset *s)
{
	return s->nr;
}
/* The memory it holds. */
size_t rangeset__bytes(const struct rangeset *s);
void rangeset__free(struct rangeset *s);

#endif
