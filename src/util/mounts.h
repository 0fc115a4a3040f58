/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which mounts a file of another user may be read from without asking a
 * file system that a user serves.
 *
 * FUSE is served by a process, and a local user can run one that never
 * answers (a mount of their own through fusermount, or in a user namespace
 * of theirs over which an overlay is laid): a stat, an open or a read that
 * reaches it waits until it answers, and once it has read the request not
 * even SIGKILL ends the wait. So offcpu, which runs as root next to such
 * users, looks at a file's mount before it asks its file system anything:
 * the mount id comes from statx() with AT_STATX_DONT_SYNC (the VFS fills
 * it; FUSE answers that call from its cache), and the mount's type from the
 * mount table of the namespace the file is seen from (/proc/PID/mountinfo,
 * made by procfs, which asks no file system).
 *
 * Refused: FUSE everywhere (fuse, fuseblk, fuse.*); in a mount namespace
 * that a user namespace other than the initial one owns (a user made it),
 * overlay too (its layers may be FUSE, read with its mounter's rights). A
 * mount the table does not list (mounted since, or in another namespace) is
 * refused too.
 *
 * Each namespace's table is read once and again only when the kernel says
 * it changed (poll() on the open table), at most MOUNTS_REREADS times every
 * MOUNTS_REREAD_MS (past that, its files are refused until the next window:
 * -EAGAIN, for the caller to try again later); a table of over MOUNTS_MAX
 * mounts is not kept, and everything in that namespace is refused. At most MOUNTS_NS_MAX namespaces are kept (the
 * least recently used dropped). Thread-safe; the tables are this file's.
 */
#ifndef OFFCPU_UTIL_MOUNTS_H
#define OFFCPU_UTIL_MOUNTS_H

#include <stdint.h>

#define MOUNTS_MAX 10000
#define MOUNTS_NS_MAX 256
#define MOUNTS_REREAD_MS 1000
#define MOUNTS_REREADS 4

/*
 * Whether mount @mnt_id, as seen from process @pid's mount namespace (0: this
 * process's), may be read: 0, or -EXDEV (a file system a user serves),
 * -ENOENT (not in the table), -E2BIG (a namespace of too many mounts),
 * -EAGAIN (the table changed and is not read again yet: a passing refusal),
 * -ESRCH (@pid gone).
 */
int mounts__check(int pid, uint64_t mnt_id);

/*
 * The same for the file @fd is open on (O_PATH will do): its mount id read
 * without asking its file system. Returns as mounts__check().
 */
int mounts__check_fd(int pid, int fd);

/* Why mounts__check() said @err, for a message. */
const char *mounts__why(int err);

struct mounts_stats {
	uint64_t namespaces; /* tables read */
	uint64_t reads; /* of them, read again after a change */
	uint64_t refused; /* files refused, for any reason */
	uint64_t served; /* of them, on a file system a user serves */
};
void mounts__stats(struct mounts_stats *st);

/* Drop every table (tests; at exit). */
void mounts__reset(void);

#endif
