/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A reference user-stack unwinder for --verify-stacks: libdw's DWARF unwinder
 * (Dwfl, as perf report unwinds perf record --call-graph dwarf samples) run
 * on the same registers and stack copy the BPF table walk had, so the two can
 * be compared frame by frame. x86-64; needs the process alive (its modules
 * are read through /proc/PID).
 */
#ifndef OFFCPU_UNWIND_ORACLE_H
#define OFFCPU_UNWIND_ORACLE_H

#include <stddef.h>
#include <stdint.h>

struct unwind_oracle;

struct unwind_oracle *unwind_oracle__new(void);
/*
 * Unwind thread @tid of process @pid from @ip, @sp, @bp and @len bytes of
 * its stack copied from @sp. Stores up to @max frames in @ips, innermost
 * first: the ip, then return addresses (as the BPF walk stores them).
 * Memory outside the copy cannot be read: the walk stops there. Returns the
 * number of frames, or -errno (-ESRCH: the process is gone).
 */
int unwind_oracle__unwind(struct unwind_oracle *o, int pid, int tid, uint64_t ip, uint64_t sp,
			  uint64_t bp, const void *stack, size_t len, uint64_t *ips, int max);
void unwind_oracle__free(struct unwind_oracle *o);

#endif
