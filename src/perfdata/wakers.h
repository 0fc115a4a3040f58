/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Why a thread waited, in perf.data terms (offcpu record --wakers, --state R).
 *
 * The state of each wait rides on the offcpu-time sample itself, in
 * PERF_SAMPLE_WEIGHT: weight = state + 1 (0 or no WEIGHT bit: not known, as
 * in files of earlier versions). perf shows it with `perf script -F weight`
 * and groups by it with `perf report --sort local_weight`; otherwise it is
 * skipped, and the sample's period (blocked ns) and callchain are unchanged.
 *
 * Who woke it goes in a second event, "offcpu-waker" (software, BPF output,
 * as offcpu-time): one sample right after each offcpu-time sample whose wait
 * was ended by a recorded wakeup, with the same time and period. Its TID is
 * the waker's (0/0 for an interrupt), its CALLCHAIN the waker's stack when it
 * woke the thread (perf's layout, context markers included; empty for an
 * interrupt without kernel stacks), and its RAW payload the header below.
 * It refers to its wait, the offcpu-time sample right before it (the wakee's
 * tid, the time and period are the same), whose callchain it does not repeat:
 * nr_wakee_ips is 0 (earlier files repeated the wakee's callchain after the
 * header; readers skip it). perf report shows these samples as the waker's stacks weighted by the time they ended; perf script prints
 * the payload as a BPF output hex dump.
 */
#ifndef OFFCPU_PERFDATA_WAKERS_H
#define OFFCPU_PERFDATA_WAKERS_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>
#include "../offcpu.h"

#define OFFCPU_WAKER_EVENT_NAME "offcpu-waker"
#define WAKER_SAMPLE_TYPE                                                                  \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |     \
	 PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |   \
	 PERF_SAMPLE_RAW)
#define OFFCPU_WAKER_MAGIC 0x4b57464fu /* "OFWK" read as little-endian u32 */
#define OFFCPU_WAKER_VERSION 1
#define OFFCPU_CHAIN_MAX 4 /* the waker and up to 3 hops before it */
#define OFFCPU_COMM_LEN 16

/* States (enum offcpu_state, OFFCPU_STATE_RUNQ) and waker kinds are offcpu.h's. */

/* The RAW payload's fixed part; all fields little-endian, no padding. */
struct offcpu_waker_raw {
	uint32_t magic; /* OFFCPU_WAKER_MAGIC */
	uint16_t version; /* OFFCPU_WAKER_VERSION */
	uint16_t size; /* bytes of this fixed part: the wakee's callchain follows */
	uint32_t wakee_pid, wakee_tid;
	uint32_t state; /* of the wakee's wait: enum offcpu_state or OFFCPU_STATE_RUNQ */
	uint32_t kind; /* enum offcpu_waker_kind */
	uint32_t nr_chain; /* names in chain, 1..OFFCPU_CHAIN_MAX */
	uint32_t nr_wakee_ips; /* u64 entries after this part */
	/* chain[0]: the waker (its comm, or [timer], [irq], [softirq:NAME]);
	 * chain[i]: who woke chain[i-1] shortly before it woke the next; NUL-padded */
	char chain[OFFCPU_CHAIN_MAX][OFFCPU_COMM_LEN];
};
_Static_assert(sizeof(struct offcpu_waker_raw) == 96, "waker payload header is 96 bytes");

/* A waker payload, decoded. */
struct offcpu_waker {
	uint32_t wakee_pid, wakee_tid;
	uint32_t state, kind, nr_chain;
	char chain[OFFCPU_CHAIN_MAX][OFFCPU_COMM_LEN + 1]; /* NUL-terminated */
	uint64_t nr_wakee_ips;
	const void *wakee_ips; /* nr_wakee_ips u64, unaligned: read with waker__ip() */
};

/*
 * Encode a payload into @buf: the fixed part and @nr_ips entries of @ips,
 * zero-padded so that the RAW field (u32 size + payload) is a multiple of 8.
 * Returns the payload size (the RAW size), or -ENOSPC.
 */
int waker__encode(const struct offcpu_waker *w, const uint64_t *ips, uint64_t nr_ips, void *buf,
		  size_t cap);

/* Decode a RAW payload; -EINVAL when it is not one or is cut short. */
int waker__parse(const void *raw, size_t size, struct offcpu_waker *w);

/* Entry @i of the wakee's callchain. */
uint64_t waker__ip(const struct offcpu_waker *w, uint64_t i);

/* Names of states: "preempted", "S", "D", "T", "I", "runqueue"; "?" otherwise. */
const char *offcpu_state__name(uint32_t state);

#endif
