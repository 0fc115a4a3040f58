/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User stacks finished in user space, from what the BPF program sends
 * through its snaps ring buffer (struct offcpu_snap, offcpu.h):
 *
 * - A thread of the targets blocked when the recording began: its
 *   registers, taken by the start iterator. Its stack is read here
 *   (process_vm_readv) while it still sleeps, and kept only if its switch
 *   count says it has not run since it was seen blocked; then unwound, and
 *   its Python frames read (userstacks__set_python()).
 * - A table walk that met code with no table yet (a process just exec'd, a
 *   library just loaded, a table being built): its registers and its stack
 *   copy, unwound here while the process lives. Its stack in the stack map
 *   ends with OFFCPU_UNW_DEFER_LO + id before its mark.
 *
 * Unwinding is libdw's (src/unwind/oracle.c, as perf report does for perf
 * record --call-graph dwarf), from all general registers. A thread of its
 * own reads the ring buffer as it fills, and reads and unwinds without the
 * lock: what another user controls (a file that blocks, a stack in a mapped
 * file) can hold up that thread, never a lookup. The record path asks for the
 * frames when it writes a block's call chain, and waits for the reader a
 * bounded time; the reader is left behind at the end if it does not stop
 * within USERSTACKS_STOP_MS. Thread-safe.
 */
#ifndef OFFCPU_RECORD_USERSTACKS_H
#define OFFCPU_RECORD_USERSTACKS_H

#include <stddef.h>
#include <stdint.h>

struct userstacks;

#define USERSTACKS_DRAIN_MS 1000 /* the start waits this long at most for the start's stacks */
#define USERSTACKS_DEFER_MS 20 /* a lookup waits this long at most for a walk still unread */
#define USERSTACKS_STOP_MS 1000

struct userstacks_stats {
	uint64_t start; /* threads blocked at the start, sent */
	uint64_t start_unwound; /* of them, with a stack */
	uint64_t start_ran; /* of them, run before their stack was read (left unknown) */
	uint64_t start_in_file; /* of them, whose stack pointer was in a mapped file (not read) */
	uint64_t start_began; /* of them, with the time their block began */
	uint64_t deferred; /* walks sent to be finished */
	uint64_t deferred_unwound; /* of them, finished */
	uint64_t deferred_failed; /* of them, not: the process gone, libdw could not */
	uint64_t kept_full; /* finished stacks not kept: the memory for them was full */
	uint64_t busy; /* lookups that did not wait for the reader (busy or slow) */
	uint64_t start_ns, deferred_ns; /* time spent reading and unwinding them */
	uint64_t finished[16]; /* deferred walks finished, by where the BPF walk stopped */
	uint64_t short_walks; /* of the finished and the start's, those libdw stopped short (marked) */
	/* the thread blocked at the start whose block began first */
	uint64_t first_began;
	uint32_t first_tid;
	char first_comm[16];
};

/* Over the ring buffer @fd. Returns NULL with errno. */
struct userstacks *userstacks__new(int fd);
/*
 * What reads the Python frames of a thread blocked at the start, after its
 * native ones (python__thread_frames(): @arg, process, thread pointer,
 * where to write them and how many at most; returns how many). Set before
 * userstacks__start(); its frames end the thread's stack, after its mark.
 */
void userstacks__set_python(struct userstacks *us,
			    int (*fn)(void *arg, uint32_t tgid, uint64_t fsbase, uint64_t *out, int max),
			    void *arg);
/* Read the ring buffer from a thread of its own, until userstacks__free(). */
int userstacks__start(struct userstacks *us);
/* Have the reader read what the ring buffer holds now (the start's threads), and wait for
 * it USERSTACKS_DRAIN_MS at most. */
int userstacks__drain(struct userstacks *us);
/*
 * The user stack of thread @tid's block under way at the start: its number
 * of frames (0: none), with *@ips valid until userstacks__free(); *@began
 * when the block began (CLOCK_MONOTONIC ns, 0: not known), *@state its wait.
 */
size_t userstacks__start_stack(struct userstacks *us, uint32_t tid, const uint64_t **ips,
			       uint64_t *began, uint32_t *state);
/* Thread @tid at index @i of the threads blocked at the start (0, 1, ...): false past the end. */
int userstacks__start_thread(struct userstacks *us, size_t i, uint32_t *tgid, uint32_t *tid);
/* The frames of deferred walk @id of thread @tid: their number, 0 when not finished. */
size_t userstacks__deferred(struct userstacks *us, uint32_t tid, uint32_t id,
			    const uint64_t **ips);
void userstacks__stats(struct userstacks *us, struct userstacks_stats *st);
void userstacks__free(struct userstacks *us);

#endif
