/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Side-band from the kernel: one dummy software event per online cpu carries
 * COMM, MMAP2, FORK, EXIT (and CGROUP) records for everything that happens
 * during the recording, in CLOCK_MONOTONIC time like the BPF collector.
 */
#ifndef OFFCPU_SIDEBAND_H
#define OFFCPU_SIDEBAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

struct sideband;

/* @pages: ring size per cpu in pages (power of two). */
struct sideband *sideband__open(size_t pages, bool cgroup);
const struct perf_event_attr *sideband__attr(const struct sideband *sb);
size_t sideband__ids(const struct sideband *sb, const uint64_t **ids);
/* A kernel-unique id for an event offcpu writes itself (BPF output). */
uint64_t sideband__private_id(const struct sideband *sb);
size_t sideband__nr_fds(const struct sideband *sb);
int sideband__fd(const struct sideband *sb, size_t i);
/* Hand every pending record to @fn (copied when it wraps). Returns records or -errno. */
long sideband__read(struct sideband *sb, int (*fn)(const struct perf_event_header *rec, void *arg),
		    void *arg);
void sideband__free(struct sideband *sb);

#endif
