/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PERF_RECORD_SAMPLE bodies and sample_id trailers: encode and parse, for any
 * sample_type perf 6.1 can write.
 */
#ifndef OFFCPU_PERFDATA_SAMPLE_H
#define OFFCPU_PERFDATA_SAMPLE_H

#include <stdbool.h>
#include "format.h"

/*
 * offcpu-time samples of summed short blocks (written every --flush, stamped
 * with the end of their interval, not with their own times) carry this in
 * the reserved half of their CPU field; streamed blocks, whose time is when
 * the thread ran again, do not. perf reads the CPU alone.
 */
#define OFFCPU_CPU_RES_SUMMED 1u
/*
 * A block still under way when the recording ended (found by the end's task
 * iterator): its sample's time is the recording's end, not a switch-in, and
 * its period counts up to it. Not summed: one block of one thread.
 */
#define OFFCPU_CPU_RES_OPEN_END 2u

struct perf_sample {
	uint64_t id; /* IDENTIFIER, else ID */
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t addr;
	uint64_t stream_id;
	uint32_t cpu;
	uint32_t cpu_res; /* CPU's reserved half, which perf skips: offcpu's OFFCPU_CPU_RES_* */
	uint64_t period;
	uint64_t nr_ips; /* CALLCHAIN: number of entries, markers included */
	const uint64_t *ips; /* parse: points into the record; encode: read from here */
	uint32_t raw_size;
	const void *raw;
	uint64_t weight;
	uint64_t cgroup;
	/* parse only: REGS_USER (abi 0: none) in the order of attr.sample_regs_user's bits */
	uint64_t regs_abi;
	const uint64_t *regs_user;
	uint32_t nr_regs_user;
	/* parse only: STACK_USER, what was copied from the user stack pointer up */
	const void *stack_user;
	uint64_t stack_user_size; /* dyn_size, at most the copy's size */
};

/*
 * Encode a PERF_RECORD_SAMPLE for an event with @sample_type into @buf (header
 * included). Supports IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU,
 * PERIOD, CALLCHAIN, RAW, WEIGHT and CGROUP. Returns the record size, or
 * -EINVAL for other bits or -ENOSPC when @cap is too small.
 */
int perf_sample__encode(uint64_t sample_type, const struct perf_sample *s, void *buf, size_t cap);

/*
 * Parse the body of a PERF_RECORD_SAMPLE written for @attr. Every bit perf 6.1
 * writes is understood (READ, BRANCH_STACK, REGS_*, STACK_USER, AUX... are
 * skipped over). Returns 0, or -EINVAL when the record is shorter than its
 * fields say, with a reason in @why. The user registers and stack copy
 * point into @rec.
 */
int perf_sample__parse(const struct perf_event_attr *attr, const struct perf_event_header *rec,
		       struct perf_sample *s, const char **why);

/*
 * The time of a PERF_RECORD_SAMPLE written with @sample_type, read where
 * perf puts it (after IDENTIFIER, IP and TID) without parsing the rest: what
 * a reader needs to order records before it parses each sample once. *@time
 * is 0 without PERF_SAMPLE_TIME. Returns 0, or -EINVAL when the record is
 * too short to hold it.
 */
int perf_sample__time(uint64_t sample_type, const struct perf_event_header *rec, uint64_t *time);

/* Size in bytes of the sample_id trailer for @sample_type. */
size_t perf_sample_id__size(uint64_t sample_type);

/* Write the sample_id trailer (TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER) into @buf. */
void perf_sample_id__encode(uint64_t sample_type, const struct perf_sample *s, void *buf);

/*
 * Parse the sample_id trailer at the end of a non-sample record. Returns 0, or
 * -EINVAL when the record is too short to hold one.
 */
int perf_sample_id__parse(uint64_t sample_type, const struct perf_event_header *rec,
			  struct perf_sample *s);

#endif
