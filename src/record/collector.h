/* SPDX-License-Identifier: GPL-2.0 */
/* The BPF collector seen from user space: load, filter, attach, drain. */
#ifndef OFFCPU_COLLECTOR_H
#define OFFCPU_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>
#include "../offcpu.h"

struct collector_opts {
	uint32_t state_mask;
	bool user_stacks;
	bool record_cgroup;
	bool follow_forks;
	const int *tgids; /* process filter (NULL: none) */
	size_t nr_tgids;
	bool filter_tgid; /* filter on tgids even when the list starts empty */
	const int *tids; /* thread filter */
	size_t nr_tids;
	const int *cpus; /* cpu filter */
	size_t nr_cpus;
	int cgroup_fd; /* cgroup v2 directory to restrict to, or -1 */
	uint32_t max_entries; /* summed map and stack map size */
	bool force_raw_tp; /* skip tp_btf (tests the fallback) */
	const char *btf_path; /* custom kernel BTF, or NULL */
};

struct collector;

/* One summed entry, handed to the drain callback. */
struct collector_entry {
	const struct offcpu_key *key;
	const struct offcpu_val *val;
	const uint64_t *user_ips; /* innermost first */
	uint32_t nr_user_ips;
};

/* Open, load and attach. Returns NULL with errno set; the error is logged. */
struct collector *collector__open(const struct collector_opts *opts);
/* Track one more process (workload child). */
int collector__add_tgid(struct collector *c, int tgid);
/* Which attach path is in use: "tp_btf" or "raw_tp". */
const char *collector__attach_kind(const struct collector *c);
/* Detach the programs: no block is counted after this. */
void collector__detach(struct collector *c);
/* Call @fn for every summed entry (stack ids resolved). Returns entries seen or -errno. */
long collector__drain(struct collector *c, int (*fn)(const struct collector_entry *e, void *arg),
		      void *arg);
/* Sum the per-cpu counters into @out[OFFCPU_CNT_NR]. */
int collector__counters(struct collector *c, uint64_t *out);
/* Number of distinct stacks seen while draining. */
uint64_t collector__distinct_stacks(const struct collector *c);
/* Runs of the switch program the kernel skipped (recursion protection). */
uint64_t collector__prog_misses(struct collector *c);
void collector__free(struct collector *c);

#endif
