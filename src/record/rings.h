/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One perf event per cpu, each with its mmap'ed ring: the kernel's side-band
 * and on-CPU samples both arrive this way.
 */
#ifndef OFFCPU_RINGS_H
#define OFFCPU_RINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

struct perf_rings;

/* The online cpus, sorted. */
int online_cpus(int **cpus, size_t *nr);

/*
 * Open @attr on each of @cpus (pid -1, or the cgroup @cgroup_fd when >= 0)
 * with a ring of @pages pages. @what names the event in @msg, which says
 * what failed when NULL is returned (errno set); nothing is printed.
 */
struct perf_rings *perf_rings__open(const struct perf_event_attr *attr, const int *cpus,
				    size_t nr_cpus, size_t pages, int cgroup_fd, const char *what,
				    char *msg, size_t len);
/*
 * The same, overwritable: the kernel writes backward and overwrites the
 * oldest records; nothing is read until perf_rings__snapshot().
 */
struct perf_rings *perf_rings__open_overwrite(const struct perf_event_attr *attr, const int *cpus,
					      size_t nr_cpus, size_t pages, const char *what,
					      char *msg, size_t len);
/* Pause the rings, hand every record they hold to @fn (newest first per cpu), resume. */
long perf_rings__snapshot(struct perf_rings *r,
			  int (*fn)(const struct perf_event_header *rec, void *arg), void *arg);
const struct perf_event_attr *perf_rings__attr(const struct perf_rings *r);
size_t perf_rings__ids(const struct perf_rings *r, const uint64_t **ids);
size_t perf_rings__nr_fds(const struct perf_rings *r);
int perf_rings__fd(const struct perf_rings *r, size_t i);
/* Hand every pending record to @fn (reassembled when it wraps). Returns records or -errno. */
long perf_rings__read(struct perf_rings *r, int (*fn)(const struct perf_event_header *rec, void *arg),
		      void *arg);
/* The same for ring @i only. */
long perf_rings__read_one(struct perf_rings *r, size_t i,
			  int (*fn)(const struct perf_event_header *rec, void *arg), void *arg);
/*
 * For tests: one ring over memory the caller laid out as the kernel does (a
 * struct perf_event_mmap_page in @page bytes, then @size bytes of data, a
 * power of two), read forward or, with @overwrite, backward from data_head.
 */
struct perf_rings *perf_rings__wrap(void *base, size_t page, size_t size, bool overwrite);
void perf_rings__free(struct perf_rings *r);

#endif
