/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The wait objects the BPF program keeps in its wait map (struct
 * offcpu_wait, src/bpf/waits.bpf.h), read once by their keys and cached
 * here; prunes take what was read out of the map, as the stack store does.
 *
 * The iterators' objects (the waits under way at the start and at the end)
 * are of tasks that were not running, whose memory the program could not
 * read: after each iteration, while those threads still wait, the words at
 * each futex address are read here from the process (waitstore__read_new()).
 * Such a read is bounded (24 bytes) and never waits on the process: only a
 * page that /proc/PID/pagemap says is in memory is read (a page swapped out,
 * or one a userfaultfd would have to supply, is left unread); the words are
 * a hint the report checks.
 */
#ifndef OFFCPU_RECORD_WAITSTORE_H
#define OFFCPU_RECORD_WAITSTORE_H

#include <stdint.h>
#include "../offcpu.h"

struct waitstore;

struct waitstore_stats {
	uint64_t objects; /* distinct objects read from the map */
	uint64_t unknown; /* keys naming an object the map did not hold */
	uint64_t late_read, late_unread; /* iterators' futex words read here, and left unread */
};

/* @map_fd: the wait map's (-1: none, every lookup is NULL). NULL with errno set. */
struct waitstore *waitstore__new(int map_fd);
void waitstore__free(struct waitstore *w);
/*
 * The object of key @key, looked up once and cached; NULL if none (0), or
 * if the map does not hold it (counted). Its flags carry
 * OFFCPU_WAIT_WORDS_LATE (perfdata/waits.h) when its words were read here.
 */
const struct offcpu_wait *waitstore__get(struct waitstore *w, uint64_t key);
/*
 * After an iteration: read every object of the map not seen yet into the
 * cache, and the words at the futex addresses of the iterators' objects
 * from their processes now. Returns the objects read, or -errno.
 */
long waitstore__read_new(struct waitstore *w);
/* Delete from the map the objects read or used since the last prune (they stay cached). */
void waitstore__prune(struct waitstore *w);
void waitstore__stats(const struct waitstore *w, struct waitstore_stats *st);
/*
 * The summary's line on @f: objects read, blocks described (@cnt: the BPF
 * program's counters, enum offcpu_wait_counter), and a warning for objects
 * not kept (the wait map full) or memory not read. Nothing when no object
 * was read and @every_block (--wait-objects) is false.
 */
void waitstore__summary(const struct waitstore *w, const uint64_t *cnt, bool every_block, FILE *f);

#endif
