/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The text of a perf map (/tmp/perf-PID.map: "START SIZE NAME" lines, hex
 * start and size), parsed a bounded piece at a time: what record reads while
 * a process lives (src/record/perfmap.c) and what report reads of a map left
 * behind (src/report/jitmaps.c). The file is another user's: a line longer
 * than PMTEXT_LINE_MAX, or one that is no entry, is skipped; a size of 0 or
 * over 4 GiB, or a range that wraps, is no entry. Nothing here opens a file.
 */
#ifndef OFFCPU_UTIL_PMTEXT_H
#define OFFCPU_UTIL_PMTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PMTEXT_LINE_MAX 4096 /* a longer line is skipped */

struct pmtext_entry {
	uint64_t start;
	uint32_t size;
	uint32_t name; /* offset in the names */
};

/* Entries parsed from a piece of a map. */
struct pmtext {
	struct pmtext_entry *e;
	size_t nr, cap;
	char *names;
	size_t names_len, names_cap;
	uint64_t consumed; /* bytes of whole lines */
	bool over; /* a bound was met: the map is read no further */
};

/* Room for @need elements of @elem bytes in *@p (capacity *@cap), growing by a quarter. 0 or -ENOMEM. */
int pmtext__grow(void **p, size_t *cap, size_t need, size_t elem);

/*
 * Parse what the map at @fd holds past @off (whole lines; @read_max bytes at
 * most) into @b, b->consumed the bytes of the whole lines; b->over when @off
 * reached @file_max or memory ran out. Stopped where *@stop (may be NULL) is
 * set.
 */
void pmtext__read(int fd, uint64_t off, uint64_t file_max, size_t read_max, struct pmtext *b,
		  volatile int *stop);

void pmtext__free(struct pmtext *b);

#endif
