/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Side-band from the kernel: a dummy software event on every online cpu
 * carries COMM, MMAP2, FORK, EXIT (and CGROUP) records for what happens
 * during the recording, in CLOCK_MONOTONIC time like the BPF collector.
 */
#ifndef OFFCPU_SIDEBAND_H
#define OFFCPU_SIDEBAND_H

#include <stdbool.h>
#include "rings.h"

/* @pages: ring size per cpu in pages (power of two); @overwrite: flight recorder. */
struct perf_rings *sideband__open(size_t pages, bool cgroup, bool overwrite, char *msg, size_t len);

/*
 * A kernel-unique event id for an event offcpu writes itself: a BPF-output
 * event that is opened, asked its id, and closed. Returns 0 or -errno.
 */
int sideband__private_id(uint64_t *id);

#endif
