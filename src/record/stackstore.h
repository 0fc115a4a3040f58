/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The stack store: the stacks, wakers' chains and wakeups the BPF program
 * keeps in its maps, read once by their keys and cached here; prunes take
 * what was read out of the maps, so the maps hold only what is new.
 */
#ifndef OFFCPU_STACKSTORE_H
#define OFFCPU_STACKSTORE_H

#include <stdint.h>
#include "../offcpu.h"

/* The maps' fds (the collector's: collector__store_maps()); -1: none. */
struct stackstore_maps {
	int ustacks, kstacks, chains, wakeups;
};

struct stackstore;

/* NULL with errno set. */
struct stackstore *stackstore__new(const struct stackstore_maps *m);
void stackstore__free(struct stackstore *s);
/*
 * The frames of a user stack id or kernel stack key, innermost first,
 * looked up once and cached. Returns the number of frames (0 if unknown).
 */
uint32_t stackstore__user(struct stackstore *s, uint64_t key, const uint64_t **ips);
uint32_t stackstore__kernel(struct stackstore *s, uint64_t key, const uint64_t **ips);
/* A waker's chain by its key (--wakers), looked up once; NULL if unknown. */
const struct offcpu_chain *stackstore__chain(struct stackstore *s, uint64_t key);
/*
 * Who woke a block by its key's wakeup (--wakers), looked up once and cached;
 * NULL if none (counted when the key named one the map did not hold).
 */
const struct offcpu_wakeup *stackstore__wakeup(struct stackstore *s, uint64_t key);
/*
 * Delete from the maps the stacks and wakeups read since the last prune
 * (they stay cached here). Returns the stack entries deleted.
 */
long stackstore__prune(struct stackstore *s);

uint64_t stackstore__unknown_wakeups(const struct stackstore *s);
/* Stack map entries deleted by prunes so far. */
uint64_t stackstore__pruned(const struct stackstore *s);

#endif
