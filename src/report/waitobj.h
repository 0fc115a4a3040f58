/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What waits waited on (offcpu-wait samples, perfdata/waits.h), as the
 * report names them: each payload made an object of the profile's table
 * (profile.waits) by its identity (a futex address in its process, a file's
 * device and inode, a system call with no object), with a name; and its
 * owner checked.
 *
 * - A futex's kind comes from the waiting stack: the innermost frame of
 *   glibc's lock, condition variable, rwlock, semaphore, barrier or join
 *   code names it (pthread_mutex_lock: a mutex); without symbols, words that
 *   look like a locked glibc mutex whose owner is a thread of the process.
 *   Its name is the data symbol holding the address, in the object mapped
 *   there (the executable's or a library's segments, found from its code
 *   mapping), else [heap], [stack] or the bare address.
 * - A mutex's owner is the thread id glibc keeps in it (__owner; a PI
 *   futex's word), a joined thread's its id; either is a hint, trusted only
 *   when the recording knows it as a thread of the waiter's process (its
 *   COMM and FORK records): otherwise the owner is unknown.
 * - A descriptor is named by what its inode is: pipe:[INODE], TCP
 *   127.0.0.1:40000 -> 127.0.0.1:8080, a file's name, [eventfd] ...
 */
#ifndef OFFCPU_REPORT_WAITOBJ_H
#define OFFCPU_REPORT_WAITOBJ_H

#include <stddef.h>
#include <stdint.h>
#include "profile.h"
#include "resolve.h"
#include "../perfdata/waits.h"

/*
 * The wait object @o of the waiting thread @pid/@tid, whose sample @rs has
 * its stack resolved (or none): @rs's wait fields set, the object interned
 * in the profile (its kind told better when this stack tells more).
 * Returns 0 or -ENOMEM.
 */
int waitobj__resolve(struct resolver *r, uint32_t pid, uint32_t tid,
		     const struct offcpu_wait_obj *o, struct report_sample *rs);

/* Intern @w by its identity: 1 + its index in p->waits, or 0 when out of memory. */
uint32_t waitobj__intern(struct profile *p, const struct profile_wait *w);
/* A kind's name: "mutex", "condvar", "pipe", "socket", ... */
const char *waitobj__kind_name(uint32_t kind);
/* Object @wait (1 + index, a row's) as "mutex lk_mutex (locks)"; "[none]" for 0. */
const char *waitobj__text(const struct profile *p, uint32_t wait, char *buf, size_t cap);
/* An x86-64 system call's name, or "syscall N"; "no system call" for ~0. */
const char *waitobj__syscall_name(uint32_t nr, char *buf, size_t cap);
/* Whether objects @a and @b (1 + index) are the two ends of one connection, or pipe. */
bool waitobj__peers(const struct profile *p, uint32_t a, uint32_t b);

#endif
