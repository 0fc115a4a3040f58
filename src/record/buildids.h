/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which binaries appear in samples: the recorder follows the MMAP/FORK
 * records it writes, marks the files sample addresses fall in, and writes
 * their build ids into the BUILD_ID feature (perf record does the same).
 */
#ifndef OFFCPU_BUILDIDS_H
#define OFFCPU_BUILDIDS_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

struct perf_writer;
struct maptab;

struct maptab *maptab__new(void);
/* Follow one side-band record (MMAP, MMAP2, FORK; others are ignored). */
int maptab__observe(struct maptab *t, const struct perf_event_header *rec);
/*
 * Emit what is known of process @pid from the records followed (its last
 * COMM, its file mappings), for a new file after the process is gone from
 * /proc. Returns 0, -ESRCH when nothing is known, or what @emit returns.
 */
struct synth;
int maptab__synth(struct maptab *t, const struct synth *s, int pid);
/* Mark the file mapped at @ip in process @pid (a forked process has its parent's maps). */
void maptab__mark(struct maptab *t, int pid, uint64_t ip);
/* Forget the marks (a new file starts). */
void maptab__clear_marks(struct maptab *t);
/* Add a BUILD_ID entry for every marked file that has one; returns how many. */
int maptab__write_build_ids(struct maptab *t, struct perf_writer *w);
void maptab__free(struct maptab *t);

#endif
