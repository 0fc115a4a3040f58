/* SPDX-License-Identifier: GPL-2.0 */
/*
 * --push-spool: requests the backend did not take, kept on disk until it
 * does, in a directory of their own (made 0700 when missing; refused when it
 * is a symbolic link, not ours, or writable by others), bounded in size:
 * the oldest go first when a new one needs room, each said. One file for
 * each request, NNNNNNNNNNNNNNNN.FORMAT (its order, hex), written under a
 * temporary name and renamed when complete; a text header (the interval,
 * the number of profiles, the query) then the body as it is sent. What an
 * earlier run left (of this format) is sent too; files of another format
 * are left where they are, said. Thread-safe.
 */
#ifndef OFFCPU_PUSH_SPOOL_H
#define OFFCPU_PUSH_SPOOL_H

#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "payload.h"

struct spool;

/* Open (or make) @dir for @f's requests, at most @max_bytes. NULL with why in @msg. */
struct spool *spool__open(const char *dir, uint64_t max_bytes, enum push_format f, char *msg,
			  size_t len);
void spool__free(struct spool *s);

/* Told of each request the spool drops (the oldest, for room). */
typedef void (*spool_drop_fn)(void *arg, const struct payload *what, const char *why);

/*
 * Keep @pl (a copy: @pl stays the caller's). The oldest are dropped first to
 * make room, except the one being sent, each to @dropped. 0, or -errno when
 * @pl could not be kept (too large for the spool, a full disk), said by the caller.
 */
int spool__put(struct spool *s, const struct payload *pl, spool_drop_fn dropped, void *arg);
/*
 * The oldest request, read back (the caller's to free), marked as being sent
 * until spool__done(). NULL when there is none; a file that cannot be read
 * is removed and given to @dropped.
 */
struct payload *spool__take(struct spool *s, spool_drop_fn dropped, void *arg);
/* The request @seq from spool__take() was sent (@sent: its file goes) or not (it stays). */
void spool__done(struct spool *s, uint64_t seq, bool sent);
/* Requests and bytes in the spool now. */
void spool__usage(struct spool *s, size_t *count, uint64_t *bytes);
/* Requests an earlier run left that are now being sent; files of another format left alone. */
void spool__found(struct spool *s, size_t *ours, size_t *others);

#endif
