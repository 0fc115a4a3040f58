/* SPDX-License-Identifier: GPL-2.0 */
/*
 * offcpu record's options: their defaults, ranges and help in one table
 * (options.c), parsing with argp, and one pure validation of how they
 * combine, which unit tests call without root.
 */
#ifndef OFFCPU_RECORD_OPTIONS_H
#define OFFCPU_RECORD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../offcpu.h"
#include "../push/config.h"

#define DEFAULT_FREQ 4000
/* --critical-path's on-CPU sampling: a sample a millisecond, off the timer tick's beat */
#define CRITICAL_PATH_FREQ 999

enum { STACKS_USER = 1, STACKS_KERNEL = 2 };
enum { UNWIND_TABLES, UNWIND_FP };

struct record_opts {
	const char *output;
	bool output_given; /* -o */
	bool pipe_output;
	int switch_signal; /* --switch-output=signal */
	uint64_t switch_bytes; /* --switch-output=SIZE */
	uint64_t switch_ns; /* --switch-output=TIME */
	size_t switch_max_files;
	bool overwrite; /* flight recorder */
	int threads; /* --threads: directory output written by this many threads */
	bool thresh_given;
	int *pids, *tids, *cpus;
	size_t nr_pids, nr_tids, nr_cpus;
	bool system_wide;
	const char *cgroup;
	bool all_cgroups;
	uint64_t duration_ns;
	uint32_t state_mask;
	uint32_t max_entries; /* --max-stacks */
	uint64_t flush_ns; /* --flush: summed blocks written this often; 0: per file */
	bool no_inherit; /* --no-inherit: forked processes are not followed */
	size_t mmap_pages;
	uint64_t thresh_ns;
	int stacks;
	uint64_t freq; /* on-CPU sampling; 0: off */
	uint64_t buffer_bytes;
	enum offcpu_transport transport;
	const char *btf_path;
	bool force_raw_tp;
	bool verify_stacks;
	bool wakers; /* --wakers: who woke each block */
	bool wait_objects; /* --wait-objects: what each block waits on */
	bool critical_path; /* --critical-path: wakers, S,D,R, threshold 0, -F 999 unless given */
	bool state_given; /* --state was given */
	bool python; /* Python frames in user stacks (default; --no-python: off) */
	bool js; /* JavaScript frames named in user stacks (default; --no-js: off) */
	int unwind; /* UNWIND_TABLES or UNWIND_FP */
	uint64_t unwind_mem; /* bytes for unwind table rows */
	bool quiet;
	struct push_opts push; /* --push: profiles to a backend, no file (src/push/) */
	char **argv; /* workload */
	int argc;
};

/* The defaults: offcpu.data, states S and D, user stacks, 500 ms threshold, ... */
void record_opts__defaults(struct record_opts *o);
/*
 * Parse the command line into @o (defaults first). Prints and exits with
 * status 2 on a usage error, as argp does; returns 0 otherwise.
 */
int record_opts__parse(struct record_opts *o, int argc, char **argv);
/*
 * How the options combine, given the machine's possible CPUs and whether
 * stdout is a terminal: 0, or -EINVAL with the reason in @msg. Also settles
 * what one option implies for another (--overwrite: threshold 0).
 */
int record_opts__validate(struct record_opts *o, int nr_possible_cpus, bool stdout_tty, char *msg,
			  size_t len);
/* Kernel memory the stack and summed maps pin (preallocated) for --max-stacks. */
uint64_t record_opts__stack_map_bytes(const struct record_opts *o);
/* Free what parsing allocated (pid, tid and cpu lists). */
void record_opts__free(struct record_opts *o);

/* "S,D" or "all" into a mask of OFFCPU_STATE_*; -EINVAL if none or unknown. */
int parse_states(const char *s, uint32_t *mask);
/* "512K", "8M", "1G", "4096" into bytes; -EINVAL past 1 TiB or on junk. */
int parse_size(const char *s, uint64_t *out);
/* The longest -d: a year. */
#define MAX_DURATION_NS (365ULL * 24 * 3600 * 1000000000ULL)
/*
 * -d: "10", "1.5s", "500ms" into nanoseconds, more than 0 and at most
 * MAX_DURATION_NS; -EINVAL otherwise (nan, inf, a sign, hexadecimal, junk).
 */
int parse_record_duration(const char *s, uint64_t *ns);

#endif
