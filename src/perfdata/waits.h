/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a thread waited on, in perf.data terms (offcpu record --wait-objects,
 * and the waits under way at a recording's start and end).
 *
 * A third event, "offcpu-wait" (software, BPF output, as offcpu-time): one
 * sample right after each offcpu-time sample whose wait object is known
 * (before its offcpu-waker sample, if any), with the same pid, tid, time and
 * period. Its ADDR is the object's user address (a futex's; 0 for a file
 * descriptor), which `perf script -F addr` prints; it has no call chain (the
 * wait's is its offcpu-time sample's); its RAW payload is the object, below.
 * perf report shows offcpu-wait as the time of the waits whose object is
 * known; perf script prints the payload as a BPF output hex dump. The
 * offcpu-time samples are those of a recording without it, but for summed
 * blocks, which are summed apart by object.
 *
 * The payload holds facts, as the kernel showed them: the system call, a
 * futex's address and the memory there (glibc's mutex keeps its owner's
 * thread id at byte 8: OFFCPU_GLIBC_MUTEX_OWNER), a descriptor's file (pipe
 * inode, socket addresses, file name). What kind of object a futex is (a
 * mutex, a condition variable) is the reader's to tell from the waiting
 * stack, and an owner's id is a hint to check against the process's threads.
 */
#ifndef OFFCPU_PERFDATA_WAITS_H
#define OFFCPU_PERFDATA_WAITS_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>
#include "../offcpu.h"

#define OFFCPU_WAIT_EVENT_NAME "offcpu-wait"
#define WAIT_SAMPLE_TYPE                                                                   \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |  \
	 PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW)
#define OFFCPU_WAIT_MAGIC 0x5457464fu /* "OFWT" read as little-endian u32 */
#define OFFCPU_WAIT_VERSION 1

/*
 * payload flags beyond offcpu.h's OFFCPU_WAIT_*: the words were read by offcpu
 * from the process's memory after the iterator saw the wait (AT_START,
 * AT_END), not by the kernel at the switch-out
 */
#define OFFCPU_WAIT_WORDS_LATE 0x100u

/* The RAW payload; all fields little-endian, no padding. Kinds, flags and
 * file kinds are offcpu.h's (enum offcpu_wait_kind, OFFCPU_WAIT_*, enum
 * offcpu_wait_file). */
struct offcpu_wait_raw {
	uint32_t magic; /* OFFCPU_WAIT_MAGIC */
	uint16_t version; /* OFFCPU_WAIT_VERSION */
	uint16_t size; /* bytes of this part */
	uint32_t pid, tid; /* the waiting thread, as the sample's */
	uint32_t kind; /* enum offcpu_wait_kind */
	uint32_t flags; /* OFFCPU_WAIT_*; OFFCPU_WAIT_WORDS: words are valid */
	uint32_t syscall; /* x86-64 system call number */
	uint32_t futex_op; /* futex: its operation; futex_waitv: how many */
	uint64_t addr; /* futex: the user address; 0 none */
	uint32_t words[OFFCPU_WAIT_NR_WORDS]; /* the 24 bytes at addr */
	int32_t fd; /* the descriptor; -1 none */
	uint32_t nfds; /* poll, select: how many descriptors */
	uint32_t file; /* enum offcpu_wait_file */
	uint32_t mode; /* the inode's mode */
	uint32_t dev; /* the kernel's device number (major << 20 | minor) */
	uint32_t pad;
	uint64_t ino;
	uint16_t sock_family, sock_type, sock_protocol, sock_state;
	uint16_t sock_lport, sock_rport;
	uint32_t pad2;
	uint8_t sock_laddr[16], sock_raddr[16];
	uint64_t sock_peer_ino; /* a unix socket's peer's inode */
	char name[OFFCPU_WAIT_NAME]; /* the file's name in its directory, NUL-padded */
	/* AT_END: when the recording ended (CLOCK_MONOTONIC ns), the end of the
	 * sample's period: the wait began at end_time - period; else 0 */
	uint64_t end_time;
};
_Static_assert(sizeof(struct offcpu_wait_raw) == 192, "wait payload is 192 bytes");

/* A payload decoded: the raw part, name NUL-terminated. */
struct offcpu_wait_obj {
	struct offcpu_wait_raw r;
	char name[OFFCPU_WAIT_NAME + 1];
};

/*
 * Encode @w (the BPF program's object) of the thread @pid/@tid into @buf,
 * zero-padded so that the RAW field (u32 size + payload) is a multiple of 8;
 * @end_time: the recording's end for an AT_END object (else 0). Returns the
 * payload size, or -ENOSPC.
 */
int wait__encode(const struct offcpu_wait *w, uint32_t pid, uint32_t tid, uint64_t end_time,
		 void *buf, size_t cap);

/* Decode a RAW payload; -EINVAL when it is not one or is cut short. */
int wait__parse(const void *raw, size_t size, struct offcpu_wait_obj *o);

/* A glibc mutex's owner from the words (0 when they were not read). */
static inline uint32_t wait__mutex_owner(const struct offcpu_wait_raw *r)
{
	return (r->flags & OFFCPU_WAIT_WORDS) ? r->words[OFFCPU_GLIBC_MUTEX_OWNER] : 0;
}

#endif
