/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A reference user-stack unwinder for --verify-stacks: libdw's Dwfl unwinds a
 * thread's registers and a copy of the top of its stack the way perf report
 * does for perf record --call-graph dwarf samples (tools/perf/util/
 * unwind-libdw.c), so that the BPF table walk can be compared with it frame by
 * frame. x86-64 only.
 *
 * The process must still be alive when it is first seen: its modules are read
 * from /proc/PID/maps, its objects opened through /proc/PID/root (a
 * container's), deleted ones and the vDSO read from /proc/PID/mem. Only
 * .eh_frame is used (and .debug_frame where the object has one), no separate
 * debuginfo. One Dwfl per process is kept (64 at most, the least recently used
 * evicted); a pc in no known module makes it read the mappings again (a
 * dlopen since), at most once per unwind and, when that found nothing (JIT
 * code, a bad pc), not again for 100 ms. If the process is gone by then, it is
 * forgotten.
 *
 * Not thread-safe: one oracle per thread, or a lock around every call.
 */
#ifndef OFFCPU_UNWIND_ORACLE_H
#define OFFCPU_UNWIND_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

struct unwind_oracle;

/* NULL when out of memory. */
struct unwind_oracle *unwind_oracle__new(void);

/*
 * An oracle for a recording's processes (offcpu report of perf record
 * --call-graph dwarf), which are gone: @maps writes process @pid's executable
 * mappings to @f as /proc/PID/maps lines (start-end perms offset dev inode
 * path, one inode per object) and returns 0 or -errno. Objects are opened by
 * path, regular files only; nothing is read through /proc. Call
 * unwind_oracle__forget when a process's mappings change.
 */
typedef int (*unwind_maps_fn)(int pid, FILE *f, void *arg);
struct unwind_oracle *unwind_oracle__new_recorded(unwind_maps_fn maps, void *arg);

/*
 * Unwind thread @tid of process @pid from the user registers @ip, @sp, @bp and
 * @len bytes of its stack copied from address @sp. Stores up to @max return
 * addresses in @ips, innermost first (ips[0] = ip, then the return address of
 * each frame, as perf stores them: raw return addresses, not minus one).
 * Returns the number of frames (>= 1), or -errno (-ESRCH: the process is
 * gone; -EINVAL: @max < 1). Memory outside the copy is unreadable (as for
 * perf). The walk ends at @max frames, at the outermost frame (return address
 * undefined), where libdw fails, or before a pc that lies in no module (as
 * perf's does; ips[0] is always stored).
 */
int unwind_oracle__unwind(struct unwind_oracle *o, int pid, int tid, uint64_t ip, uint64_t sp,
			  uint64_t bp, const void *stack, size_t len, uint64_t *ips, int max);

/*
 * The same from all 16 general registers (@regs, DWARF's order: rax rdx rcx
 * rbx rsi rdi rbp rsp r8..r15) and the pc: some frames need more than rbp
 * and rsp (glibc's __vfork keeps its return address in rdi). *@complete
 * (may be NULL): whether libdw reached the outermost frame.
 */
int unwind_oracle__unwind_regs(struct unwind_oracle *o, int pid, int tid, const uint64_t *regs,
			       uint64_t ip, const void *stack, size_t len, uint64_t *ips, int max,
			       bool *complete);

/*
 * Forget a process (it exited or exec'd): its modules are reported again next
 * time. Call it too when a process unmapped code (dlclose): a module still
 * known where another object is now mapped would be unwound with the wrong
 * tables.
 */
void unwind_oracle__forget(struct unwind_oracle *o, int pid);
/*
 * Drop every process and every object image held: for when unwinds have
 * stopped coming for a while (they are read again when they come back).
 */
void unwind_oracle__release(struct unwind_oracle *o);

void unwind_oracle__free(struct unwind_oracle *o);

#endif
