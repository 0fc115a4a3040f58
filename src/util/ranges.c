// SPDX-License-Identifier: GPL-2.0
/* Ranges added in any order, found by address (ranges.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "ranges.h"
#include "util.h"

/* Does range @a sort before range @b (by start, then by age)? */
static bool before(const struct rangeset *s, uint32_t a, uint32_t b)
{
	return s->r[a].start < s->r[b].start || (s->r[a].start == s->r[b].start && a < b);
}

/* Merge the last two runs into one. 0 or -ENOMEM. */
static int merge_last(struct rangeset *s)
{
	struct range_run *a = &s->runs[s->nr_runs - 2], *b = &s->runs[s->nr_runs - 1];
	uint32_t *m = malloc((a->n + b->n) * sizeof(*m));
	size_t i = 0, j = 0, k = 0;

	if (!m)
		return -ENOMEM;
	while (i < a->n || j < b->n)
		m[k++] = j >= b->n || (i < a->n && before(s, a->idx[i], b->idx[j])) ? a->idx[i++] :
										      b->idx[j++];
	free(a->idx);
	free(b->idx);
	a->idx = m;
	a->n = k;
	s->nr_runs--;
	return 0;
}

int rangeset__add(struct rangeset *s, uint64_t start, uint64_t len, uint32_t value)
{
	uint32_t *one;

	if (!len || start + len < start)
		return -EINVAL;
	if (grow_array((void **)&s->r, &s->cap, s->nr + 1, sizeof(*s->r)) ||
	    grow_array((void **)&s->runs, &s->cap_runs, s->nr_runs + 1, sizeof(*s->runs)) ||
	    !(one = malloc(sizeof(*one))))
		return -ENOMEM;
	s->r[s->nr] = (struct range){ .start = start, .end = start + len, .value = value };
	*one = (uint32_t)s->nr++;
	s->runs[s->nr_runs++] = (struct range_run){ one, 1 };
	/* a binary counter of runs: each range is merged O(log n) times */
	while (s->nr_runs >= 2 && s->runs[s->nr_runs - 2].n <= 2 * s->runs[s->nr_runs - 1].n)
		if (merge_last(s))
			break; /* kept as runs: still found */
	return 0;
}

bool rangeset__find(const struct rangeset *s, uint64_t addr, uint32_t *value)
{
	long best = -1;
	size_t k, r;

	for (r = 0; r < s->nr_runs; r++) {
		const struct range_run *run = &s->runs[r];
		size_t lo = 0, hi = run->n;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (s->r[run->idx[mid]].start <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (k = 0; k < RANGES_BACK_SCAN && lo > k; k++) {
			uint32_t i = run->idx[lo - 1 - k];

			if (addr < s->r[i].end && (best < 0 || i > (uint32_t)best))
				best = i;
		}
	}
	if (best < 0)
		return false;
	*value = s->r[best].value;
	return true;
}

size_t rangeset__bytes(const struct rangeset *s)
{
	size_t n = s->cap * sizeof(*s->r) + s->cap_runs * sizeof(*s->runs), r;

	for (r = 0; r < s->nr_runs; r++)
		n += s->runs[r].n * sizeof(uint32_t);
	return n;
}

void rangeset__free(struct rangeset *s)
{
	size_t r;

	for (r = 0; r < s->nr_runs; r++)
		free(s->runs[r].idx);
	free(s->runs);
	free(s->r);
	memset(s, 0, sizeof(*s));
}
