/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What is mapped at an address in a process, as perf.data's MMAP, MMAP2 and
 * FORK records describe it: one model for record (which binaries samples
 * fall into: build ids, unwind tables) and report (symbolization).
 *
 * Each process has an address space of non-overlapping mappings sorted by
 * start; a new mapping cuts what it overlaps out of older ones (an exec, a
 * re-mmap), and a forked process starts with a copy of its parent's. A
 * mapping names its object by a number the caller chose (a file, a dso).
 */
#ifndef OFFCPU_UTIL_PROCMAPS_H
#define OFFCPU_UTIL_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hashmap.h"

struct vmap {
	uint64_t start, end; /* [start, end) */
	uint64_t pgoff; /* file offset of start */
	uint32_t obj; /* the caller's object */
};

struct addrspace {
	struct vmap *maps; /* sorted by start, disjoint */
	size_t nr, cap;
	uint64_t gen; /* changes whenever the mappings do */
};

struct procmaps {
	struct hashmap index; /* pid -> index into as */
	struct addrspace *as;
	size_t nr;
	uint64_t gen;
};

/* Map [start, start + len) at @pgoff to @obj in process @pid. Returns 0 or -ENOMEM. */
int procmaps__map(struct procmaps *pm, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		  uint32_t obj);
/* Process @pid forked from @ppid: it starts with @ppid's mappings (if it has none yet). */
int procmaps__fork(struct procmaps *pm, uint32_t ppid, uint32_t pid);
/* The address space of @pid, or NULL when nothing is mapped there. */
const struct addrspace *procmaps__get(const struct procmaps *pm, uint32_t pid);
/* The mapping holding @addr, or NULL. */
const struct vmap *addrspace__find(const struct addrspace *as, uint64_t addr);
void procmaps__free(struct procmaps *pm);

/* One line of /proc/PID/maps. */
struct maps_line {
	uint64_t start, end, pgoff, ino;
	unsigned int maj, min;
	char perms[8];
	const char *name; /* in the line; "" when anonymous */
};

/* Parse @line in place (its newline is cut): 0, or -EINVAL when it is not a maps line. */
int maps_line__parse(char *line, struct maps_line *m);

#endif
