/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one way offcpu creates a file or directory, safe where other users can
 * write (a root recorder in /tmp, fs.protected_symlinks=0):
 *
 * - Everything is created under a fresh random temporary name next to its
 *   final name, with O_CREAT|O_EXCL|O_NOFOLLOW (mkdirat for a directory),
 *   relative to a descriptor of the directory, and renamed into place when
 *   complete. A name someone planted is skipped, never opened or removed.
 * - A symbolic link is never followed at the final component; one among the
 *   directory components is followed only where the kernel's
 *   fs.protected_symlinks=1 would follow it (not a link owned by another user
 *   in a sticky world-writable directory).
 * - Nothing is removed or replaced unless this process created it, or it is
 *   the caller's own regular file (own recording directory with
 *   OUTFILE_DIR) being replaced or kept as NAME.old on purpose. Anything
 *   else at NAME or NAME.old is refused with a message, before any data is
 *   written, and again before the rename.
 * - With OUTFILE_DEVICE a character device or fifo at NAME is written in
 *   place (-o /dev/null), as perf does. Whether it may be is decided before
 *   anything opens it: opening a fifo waits for a reader, and a refused one
 *   is refused at once; one that is allowed waits, as perf's does.
 * - The directory is held by a descriptor: moved while the file is written,
 *   the file is committed where the directory is now, and f->final names
 *   that place; removed (or the temporary removed), the commit says so.
 *
 * Functions return 0 (or a descriptor) or -errno; on failure f->msg says
 * what failed and why, ready to print. A struct outfile starts zeroed.
 */
#ifndef OFFCPU_UTIL_OUTFILE_H
#define OFFCPU_UTIL_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum {
	OUTFILE_DIR = 1, /* a directory of files: perf's directory format */
	OUTFILE_KEEP_OLD = 2, /* an existing NAME becomes NAME.old (perf's habit) */
	OUTFILE_UNIQUE = 4, /* never replace: NAME taken gives NAME.1, NAME.2, ... */
	OUTFILE_DEVICE = 8, /* a character device or fifo at NAME is written in place */
};

struct outfile {
	unsigned flags;
	char *dir; /* the directory, as given (for messages); where it is now once moved */
	char *moved_from; /* the directory as given, when it was moved before the commit */
	char *name; /* final component */
	char *tmp; /* temporary name in the directory; NULL when written in place */
	char *final; /* path it was committed as, once committed */
	int dirfd; /* the directory it goes into */
	int fd; /* the file, or with OUTFILE_DIR the temporary directory */
	dev_t dev; /* of what this process created, to recognise it later */
	ino_t ino;
	bool in_place; /* a device or fifo written where it is */
	bool fifo;
	char **made; /* names created inside the directory (OUTFILE_DIR) */
	size_t nr_made;
	char msg[640];
};

/*
 * Check @path's directory and what is at @path (and @path.old), then create
 * the temporary file or directory. With OUTFILE_DIR f->fd is the directory:
 * add files with outfile__create_in(). On failure nothing is left behind.
 */
int outfile__open(struct outfile *f, const char *path, unsigned flags, mode_t mode);
/* OUTFILE_DIR: create @name inside the directory; returns its descriptor. */
int outfile__create_in(struct outfile *f, const char *name);
/*
 * Close the file (unless the caller closed it and set f->fd to -1, as after
 * fclose() of an fdopen()) and rename it into place (the old one kept as NAME.old with
 * OUTFILE_KEEP_OLD). When the final name became something it may not
 * replace, the complete file stays under its temporary name, which f->msg
 * gives, and -EEXIST is returned. When the directory was moved meanwhile,
 * the file goes where it is now: f->final and f->dir name it, f->moved_from
 * the path given. When the temporary is gone (removed with the directory, or
 * on its own, or moved away), -ENOENT, f->msg saying which and that the
 * data is lost.
 */
int outfile__commit(struct outfile *f);
/* Remove what outfile__open() and outfile__create_in() created, nothing else. */
void outfile__discard(struct outfile *f);
void outfile__free(struct outfile *f);

/*
 * A committed regular file, to be removed later (--switch-max-files): only
 * while the name in @dirfd still is the same file (@dev, @ino).
 */
struct outfile_ref {
	int dirfd;
	char *name;
	dev_t dev;
	ino_t ino;
};
/* Take the reference of a committed file (its directory, name, device and inode). */
int outfile__ref(const struct outfile *f, struct outfile_ref *ref);
/* Remove the file if the name still is that file. Returns 0 or -errno. */
int outfile__remove_ref(const struct outfile_ref *ref);
void outfile__ref_free(struct outfile_ref *ref);

#endif
