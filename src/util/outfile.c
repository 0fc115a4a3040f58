// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include "outfile.h"
#include "safepath.h"

/* messages name paths: one too long for its buffer is cut, on purpose */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

enum kind {
	K_NONE, /* nothing there */
	K_OWN_FILE, /* a regular file of ours */
	K_OWN_DIR, /* a recording directory of ours: only data, data.N files of ours */
	K_DEVICE, /* a character device */
	K_FIFO,
	K_OTHER, /* anything else: never touched */
	K_ERROR, /* could not look */
};

static int fail(struct outfile *f, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct outfile *f, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
	return err;
}

static char *path_of(const struct outfile *f, const char *name)
{
	char *p;

	if (!strcmp(f->dir, "."))
		return strdup(name);
	if (asprintf(&p, "%s%s%s", f->dir, f->dir[strlen(f->dir) - 1] == '/' ? "" : "/", name) < 0)
		return NULL;
	return p;
}

/* Open the directory @dir, no link followed that could be another user's trap. */
static int open_dir(struct outfile *f, const char *dir)
{
	char why[512] = "";
	int fd = safepath__open_dir(dir, why, sizeof(why));

	if (fd < 0)
		return fail(f, fd, "cannot write into directory %s: %s", dir,
			    why[0] ? why : strerror(-fd));
	f->dirfd = fd;
	return 0;
}

static bool recording_file_name(const char *n)
{
	if (!strcmp(n, "data"))
		return true;
	if (strncmp(n, "data.", 5) || !n[5])
		return false;
	for (n += 5; *n; n++)
		if (*n < '0' || *n > '9')
			return false;
	return true;
}

/*
 * Walk a directory that should be one of our recordings; with @remove, unlink
 * its files and the directory (only after all were checked).
 */
static enum kind own_dir(struct outfile *f, const char *name, bool remove, char *why,
			 size_t len)
{
	int dfd = openat(f->dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	enum kind k = K_OWN_DIR;
	bool has_data = false;
	struct dirent *de;
	struct stat st;
	DIR *d;

	if (dfd < 0) {
		snprintf(why, len, "cannot open it: %s", strerror(errno));
		return K_ERROR;
	}
	if (fstat(dfd, &st)) {
		snprintf(why, len, "cannot look at it: %s", strerror(errno));
		close(dfd);
		return K_ERROR;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(why, len, "a directory owned by user %u%s", (unsigned)st.st_uid,
			 st.st_mode & 022 ? ", writable by others" : "");
		close(dfd);
		return K_OTHER;
	}
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		snprintf(why, len, "cannot read it: %s", strerror(errno));
		return K_ERROR;
	}
	for (int pass = 0; pass < 2 && k == K_OWN_DIR; pass++) {
		if (pass == 1 && !remove)
			break;
		rewinddir(d);
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (pass == 1) {
				if (unlinkat(dfd, de->d_name, 0)) {
					snprintf(why, len, "cannot remove %s in it: %s", de->d_name,
						 strerror(errno));
					k = K_ERROR;
					break;
				}
				continue;
			}
			if (!recording_file_name(de->d_name) ||
			    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
			    !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
				snprintf(why, len,
					 "a directory holding '%s', which is not a recording file "
					 "of user %u",
					 de->d_name, (unsigned)geteuid());
				k = K_OTHER;
				break;
			}
			has_data |= !strcmp(de->d_name, "data");
		}
		if (pass == 0 && k == K_OWN_DIR && !has_data) {
			/* an empty directory, or one without data: not a recording */
			snprintf(why, len, "a directory without a recording's data file");
			k = K_OTHER;
		}
	}
	closedir(d);
	if (k == K_OWN_DIR && remove && unlinkat(f->dirfd, name, AT_REMOVEDIR)) {
		snprintf(why, len, "cannot remove it: %s", strerror(errno));
		k = K_ERROR;
	}
	return k;
}

/* What is at @name in the directory; @why says it when it may not be touched. */
static enum kind classify(struct outfile *f, const char *name, char *why, size_t len)
{
	struct stat st;

	*why = 0;
	if (fstatat(f->dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			return K_NONE;
		snprintf(why, len, "cannot look at it: %s", strerror(errno));
		return K_ERROR;
	}
	switch (st.st_mode & S_IFMT) {
	case S_IFREG:
		if (st.st_uid == geteuid())
			return K_OWN_FILE;
		snprintf(why, len, "a file owned by user %u", (unsigned)st.st_uid);
		return K_OTHER;
	case S_IFDIR:
		return own_dir(f, name, false, why, len);
	case S_IFCHR:
		snprintf(why, len, "a character device");
		return K_DEVICE;
	case S_IFIFO:
		snprintf(why, len, "a fifo");
		return K_FIFO;
	case S_IFLNK:
		snprintf(why, len, "a symbolic link");
		return K_OTHER;
	case S_IFBLK:
		snprintf(why, len, "a block device");
		return K_OTHER;
	case S_IFSOCK:
		snprintf(why, len, "a socket");
		return K_OTHER;
	}
	snprintf(why, len, "not a regular file");
	return K_OTHER;
}

/*
 * May NAME (and NAME.old) be replaced? 0, 1 when NAME is a device or fifo to
 * be written in place, or -errno with the reason in f->msg.
 */
static int check_targets(struct outfile *f)
{
	char why[320], old[4096];
	enum kind k;

	if (f->flags & OUTFILE_UNIQUE)
		return 0;
	k = classify(f, f->name, why, sizeof(why));
	switch (k) {
	case K_NONE:
		return 0;
	case K_OWN_FILE:
		break;
	case K_OWN_DIR:
		if (f->flags & OUTFILE_KEEP_OLD)
			break;
		snprintf(why, sizeof(why), "a directory");
		goto refuse;
	case K_DEVICE:
	case K_FIFO:
		if (f->flags & OUTFILE_DEVICE)
			return 1;
		goto refuse;
	default:
		goto refuse;
	}
	if (!(f->flags & OUTFILE_KEEP_OLD))
		return 0;
	snprintf(old, sizeof(old), "%s.old", f->name);
	k = classify(f, old, why, sizeof(why));
	if (k == K_NONE || k == K_OWN_FILE || k == K_OWN_DIR)
		return 0;
	{
		char *p = path_of(f, old);
		int err = fail(f, -EEXIST,
			       "refusing to replace %s, where the previous recording would be kept: "
			       "it is %s (offcpu never removes or follows what it did not create); "
			       "move it away or choose another name",
			       p ? p : old, why);

		free(p);
		return err;
	}
refuse:
	return fail(f, -EEXIST,
		    "refusing to replace %s: it is %s (offcpu only replaces its own regular "
		    "files); remove it or choose another name",
		    f->final, why);
}

static void random_suffix(char *out, size_t n)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[16];
	size_t i;

	if (n > sizeof(r))
		n = sizeof(r);
	if (getrandom(r, n, 0) != (ssize_t)n)
		for (i = 0; i < n; i++)
			r[i] = (unsigned char)(rand() ^ (getpid() << 3) ^ (int)i);
	for (i = 0; i < n; i++)
		out[i] = set[r[i] % (sizeof(set) - 1)];
	out[n] = 0;
}

static int create_tmp(struct outfile *f, mode_t mode)
{
	size_t len = strlen(f->name) + 16;
	struct stat st;
	int tries;

	f->tmp = malloc(len);
	if (!f->tmp)
		return fail(f, -ENOMEM, "out of memory");
	for (tries = 0; tries < 100; tries++) {
		char sfx[9];

		random_suffix(sfx, 8);
		snprintf(f->tmp, len, "%s.tmp.%s", f->name, sfx);
		if (f->flags & OUTFILE_DIR) {
			if (mkdirat(f->dirfd, f->tmp, 0700)) {
				if (errno == EEXIST)
					continue;
				break;
			}
			f->fd = openat(f->dirfd, f->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		} else {
			f->fd = openat(f->dirfd, f->tmp,
				       O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
			if (f->fd < 0 && errno == EEXIST)
				continue;
		}
		if (f->fd < 0)
			break;
		if (fstat(f->fd, &st) || st.st_uid != geteuid()) {
			/* what we just made was swapped: leave it, it is not ours */
			close(f->fd);
			f->fd = -1;
			errno = EEXIST;
			break;
		}
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		return 0;
	}
	{
		int err = errno ? -errno : -EEXIST;
		char *p = path_of(f, f->tmp);

		fail(f, err, "cannot create %s: %s", p ? p : f->tmp, strerror(-err));
		free(p);
		free(f->tmp);
		f->tmp = NULL;
		return err;
	}
}

/*
 * The device or fifo at NAME, to be written in place. open() of a fifo waits
 * for a reader, so everything is decided first on an O_PATH descriptor,
 * which opens nothing: a refused fifo is refused at once, not when someone
 * reads it. Then the very inode checked is opened for writing through
 * /proc/self/fd (not the name again, which could be swapped in between);
 * only a fifo we may write waits for its reader, as perf's does.
 */
static int open_in_place(struct outfile *f)
{
	struct stat st, dst, now;
	char proc[64];
	int pfd, err;

	pfd = openat(f->dirfd, f->name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, &st)) {
		err = -errno;
		if (pfd >= 0)
			close(pfd);
		return fail(f, err, "cannot write into %s: %s", f->final, strerror(-err));
	}
	if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) {
		close(pfd);
		return fail(f, -EEXIST, "cannot write into %s: it is no longer a device or fifo",
			    f->final);
	}
	/* as fs.protected_fifos: another user's fifo or device in a sticky
	 * world-writable directory would hand them the recording */
	if (fstat(f->dirfd, &dst)) {
		err = -errno;
		close(pfd);
		return fail(f, err, "cannot look at the directory %s: %s", f->dir, strerror(-err));
	}
	if (st.st_uid && st.st_uid != geteuid() && (dst.st_mode & S_ISVTX) &&
	    (dst.st_mode & S_IWOTH)) {
		close(pfd);
		return fail(f, -EPERM, "refusing to write into %s: a %s owned by user %u in a "
			    "world-writable sticky directory (it would hand them the data)",
			    f->final, S_ISFIFO(st.st_mode) ? "fifo" : "device",
			    (unsigned)st.st_uid);
	}
	/* another user's fifo anywhere: opening it waits for their reader, whom
	 * they may never start, and the recording would be theirs */
	if (S_ISFIFO(st.st_mode) && st.st_uid != geteuid()) {
		close(pfd);
		return fail(f, -EPERM, "refusing to write into %s: a fifo owned by user %u (opening "
			    "it would wait for their reader; write to standard output with -o - "
			    "and redirect it instead)", f->final, (unsigned)st.st_uid);
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	f->fd = open(proc, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (f->fd < 0 && errno == ENOENT) /* no /proc: by name, and compared below */
		f->fd = openat(f->dirfd, f->name, O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
	err = f->fd < 0 ? -errno : 0;
	close(pfd);
	if (err)
		return fail(f, err, "cannot write into %s: %s", f->final, strerror(-err));
	if (fstat(f->fd, &now) || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
		close(f->fd);
		f->fd = -1;
		return fail(f, -EEXIST, "cannot write into %s: it was replaced while it was opened",
			    f->final);
	}
	f->in_place = true;
	f->fifo = S_ISFIFO(st.st_mode);
	return 0;
}

int outfile__open(struct outfile *f, const char *path, unsigned flags, mode_t mode)
{
	const char *slash;
	int err;

	memset(f, 0, sizeof(*f));
	f->fd = f->dirfd = -1;
	f->flags = flags;
	if (!path || !*path)
		return fail(f, -EINVAL, "empty file name");
	slash = strrchr(path, '/');
	if (slash) {
		f->dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
		f->name = strdup(slash + 1);
	} else {
		f->dir = strdup(".");
		f->name = strdup(path);
	}
	f->final = strdup(path);
	if (!f->dir || !f->name || !f->final) {
		err = fail(f, -ENOMEM, "out of memory");
		goto fail;
	}
	if (!*f->name || !strcmp(f->name, ".") || !strcmp(f->name, "..")) {
		err = fail(f, -EISDIR, "%s names a directory, not a file", path);
		goto fail;
	}
	err = open_dir(f, f->dir);
	if (err)
		goto fail;
	err = check_targets(f);
	if (err < 0)
		goto fail;
	if (err == 1) {
		err = open_in_place(f);
		if (err)
			goto fail;
		return 0;
	}
	err = create_tmp(f, mode);
	if (err)
		goto fail;
	return 0;
fail:
	outfile__free(f);
	return err;
}

int outfile__create_in(struct outfile *f, const char *name)
{
	char **made;
	int fd;

	if (!(f->flags & OUTFILE_DIR) || f->fd < 0)
		return fail(f, -EINVAL, "not a directory being written");
	made = realloc(f->made, (f->nr_made + 1) * sizeof(*made));
	if (!made)
		return fail(f, -ENOMEM, "out of memory");
	f->made = made;
	fd = openat(f->fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int err = -errno;

		return fail(f, err, "cannot create %s/%s/%s: %s", f->dir, f->tmp, name,
			    strerror(-err));
	}
	f->made[f->nr_made] = strdup(name);
	if (!f->made[f->nr_made]) {
		unlinkat(f->fd, name, 0);
		close(fd);
		return fail(f, -ENOMEM, "out of memory");
	}
	f->nr_made++;
	return fd;
}

/* renameat2(RENAME_NOREPLACE), or a check and a rename where the filesystem lacks it. */
static int rename_noreplace(int dirfd, const char *from, const char *to)
{
	if (!renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE))
		return 0;
	/* a filesystem without RENAME_NOREPLACE: a check then a rename could
	 * replace what someone put there in between, so refuse */
	return errno == EINVAL || errno == ENOSYS ? -EOPNOTSUPP : -errno;
}

/* Is @name in the directory still what this process created? */
static bool still_ours(const struct outfile *f, const char *name)
{
	struct stat st;

	return !fstatat(f->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && st.st_dev == f->dev &&
	       st.st_ino == f->ino;
}

static int keep_tmp(struct outfile *f, const char *why)
{
	char *p = path_of(f, f->tmp);

	fail(f, -EEXIST, "%s; the complete recording is kept as %s", why, p ? p : f->tmp);
	free(p);
	free(f->tmp); /* it is the user's now: never discard it */
	f->tmp = NULL;
	return -EEXIST;
}

/* Move an own NAME aside to NAME.old (an own NAME.old replaced). */
static int keep_old(struct outfile *f, enum kind k, char *why, size_t len)
{
	char old[4096];
	enum kind ko;

	snprintf(old, sizeof(old), "%s.old", f->name);
	ko = classify(f, old, why, len);
	if (ko == K_OWN_DIR) {
		ko = own_dir(f, old, true, why, len);
		if (ko != K_OWN_DIR)
			return -EEXIST;
		ko = K_NONE;
	} else if (ko == K_OWN_FILE && k == K_OWN_DIR) {
		if (unlinkat(f->dirfd, old, 0)) {
			snprintf(why, len, "cannot remove %s: %s", old, strerror(errno));
			return -EEXIST;
		}
		ko = K_NONE;
	}
	if (ko == K_NONE) {
		int err = rename_noreplace(f->dirfd, f->name, old);

		if (err == -EEXIST)
			return -EAGAIN;
		if (err)
			snprintf(why, len, "cannot rename %s to %s: %s", f->name, old, strerror(-err));
		return err;
	}
	if (ko != K_OWN_FILE) {
		snprintf(why + strlen(why), len - strlen(why), " (at %s)", old);
		return -EEXIST;
	}
	if (renameat(f->dirfd, f->name, f->dirfd, old)) {
		snprintf(why, len, "cannot rename %s to %s: %s", f->name, old, strerror(errno));
		return -errno;
	}
	return 0;
}

/*
 * Where the directory is now. While the path given still leads to it, that
 * path; after someone moved it, the kernel's name for the descriptor
 * (/proc/self/fd/N), which f->dir and f->final take, f->moved_from keeping
 * the path given. Returns true when the directory was removed.
 */
static bool locate_dir(struct outfile *f)
{
	char proc[64], buf[4096], *where, *final;
	struct stat now, given;
	bool gone;
	ssize_t n;

	if (fstat(f->dirfd, &now))
		return false;
	if (!stat(f->dir, &given) && given.st_dev == now.st_dev && given.st_ino == now.st_ino)
		return false;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->dirfd);
	n = readlink(proc, buf, sizeof(buf) - 1);
	if (n > 0)
		buf[n] = 0;
	/* a removed directory has no links (" (deleted)" where a filesystem keeps one) */
	gone = !now.st_nlink ||
	       (n > 10 && !strcmp(buf + n - 10, " (deleted)"));
	if (gone || n <= 0 || buf[0] != '/')
		return gone; /* not known where: the names stay as given */
	where = strdup(buf);
	if (!where)
		return false;
	if (f->moved_from)
		free(f->dir);
	else
		f->moved_from = f->dir;
	f->dir = where;
	final = path_of(f, f->name);
	if (final) {
		free(f->final);
		f->final = final;
	}
	return false;
}

/*
 * The temporary is not at its name any more: say what became of it, and of
 * the data. @links: the temporary's link count before it was closed, -1 not
 * known (the caller closed it).
 */
static int lost(struct outfile *f, bool dir_removed, long links)
{
	char *tmp = path_of(f, f->tmp);
	const char *t = tmp ? tmp : f->tmp;
	struct stat st;
	const char *other = fstatat(f->dirfd, f->tmp, &st, AT_SYMLINK_NOFOLLOW) ?
				    "" : " (what is at that name now was left alone)";

	if (links > 0)
		fail(f, -ENOENT, "cannot write %s: someone moved its temporary %s away while it "
		     "was being written; it was not renamed to %s, the data is where they put it%s",
		     f->final, t, f->final, other);
	else if (dir_removed)
		fail(f, -ENOENT, "cannot write %s: its directory %s was removed while the file was "
		     "being written (as %s), with the file in it: the data is lost", f->final,
		     f->dir, f->tmp);
	else if (links == 0)
		fail(f, -ENOENT, "cannot write %s: someone removed its temporary %s while it was "
		     "being written: the data is lost%s", f->final, t, other);
	else
		fail(f, -ENOENT, "cannot write %s: someone removed or replaced its temporary %s "
		     "while it was being written: it was not renamed to %s, the data is lost%s",
		     f->final, t, f->final, other);
	free(tmp);
	return -ENOENT;
}

int outfile__commit(struct outfile *f)
{
	char why[320], msg[512];
	int tries, err = 0;
	long links = -1;
	struct stat st;
	bool dir_removed;

	if (f->fd >= 0 && !fstat(f->fd, &st))
		links = (long)st.st_nlink; /* 0: removed, whatever is at its name now */
	if (f->fd >= 0 && close(f->fd))
		err = -errno;
	f->fd = -1;
	if (err)
		return fail(f, err, "cannot write %s: %s", f->final, strerror(-err));
	if (f->in_place)
		return 0;
	if (!f->tmp)
		return fail(f, -EINVAL, "nothing to commit");
	dir_removed = locate_dir(f);
	if (!still_ours(f, f->tmp))
		return lost(f, dir_removed, links);
	if (f->flags & OUTFILE_UNIQUE) {
		char *name = NULL;

		for (tries = 0; tries < 10000; tries++) {
			free(name);
			name = NULL;
			if (tries == 0)
				name = strdup(f->name);
			else if (asprintf(&name, "%s.%d", f->name, tries) < 0)
				name = NULL;
			if (!name)
				return fail(f, -ENOMEM, "out of memory");
			err = rename_noreplace(f->dirfd, f->tmp, name);
			if (err != -EEXIST)
				break;
		}
		if (err) {
			free(name);
			snprintf(msg, sizeof(msg), "cannot rename %s to a new name: %s", f->tmp,
				 strerror(-err));
			return keep_tmp(f, msg);
		}
		free(f->name);
		f->name = name;
		goto done;
	}
	for (tries = 0; tries < 8; tries++) {
		enum kind k = classify(f, f->name, why, sizeof(why));

		if (k == K_NONE) {
			err = rename_noreplace(f->dirfd, f->tmp, f->name);
			if (err == -EEXIST)
				continue; /* someone put something there: look again */
			if (err) {
				snprintf(msg, sizeof(msg), "cannot rename it to %s: %s", f->final,
					 strerror(-err));
				return keep_tmp(f, msg);
			}
			goto done;
		}
		if (k != K_OWN_FILE && !(k == K_OWN_DIR && (f->flags & OUTFILE_KEEP_OLD))) {
			snprintf(msg, sizeof(msg), "%s is now %s: not replaced", f->final, why);
			return keep_tmp(f, msg);
		}
		if (!(f->flags & OUTFILE_KEEP_OLD)) {
			if (renameat(f->dirfd, f->tmp, f->dirfd, f->name)) {
				snprintf(msg, sizeof(msg), "cannot rename it to %s: %s", f->final,
					 strerror(errno));
				return keep_tmp(f, msg);
			}
			goto done;
		}
		err = keep_old(f, k, why, sizeof(why));
		if (err == -EAGAIN)
			continue;
		if (err) {
			snprintf(msg, sizeof(msg), "the previous %s was not kept: %s", f->final, why);
			return keep_tmp(f, msg);
		}
		/* NAME is free now, unless someone is racing us for it */
	}
	return keep_tmp(f, "the final name kept changing");
done:
	free(f->tmp);
	f->tmp = NULL;
	free(f->final);
	f->final = path_of(f, f->name);
	return f->final ? 0 : fail(f, -ENOMEM, "out of memory");
}

void outfile__discard(struct outfile *f)
{
	size_t i;

	if (f->flags & OUTFILE_DIR && f->fd >= 0 && f->tmp)
		for (i = 0; i < f->nr_made; i++)
			unlinkat(f->fd, f->made[i], 0);
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (f->tmp && f->dirfd >= 0 && still_ours(f, f->tmp))
		unlinkat(f->dirfd, f->tmp, f->flags & OUTFILE_DIR ? AT_REMOVEDIR : 0);
	free(f->tmp);
	f->tmp = NULL;
}

void outfile__free(struct outfile *f)
{
	size_t i;

	if (f->fd >= 0)
		close(f->fd);
	if (f->dirfd >= 0)
		close(f->dirfd);
	f->fd = f->dirfd = -1;
	for (i = 0; i < f->nr_made; i++)
		free(f->made[i]);
	free(f->made);
	free(f->dir);
	free(f->moved_from);
	free(f->name);
	free(f->tmp);
	free(f->final);
	f->made = NULL;
	f->nr_made = 0;
	f->dir = f->name = f->tmp = f->final = f->moved_from = NULL;
}

int outfile__ref(const struct outfile *f, struct outfile_ref *ref)
{
	ref->dirfd = fcntl(f->dirfd, F_DUPFD_CLOEXEC, 0);
	ref->name = strdup(f->name);
	ref->dev = f->dev;
	ref->ino = f->ino;
	if (ref->dirfd < 0 || !ref->name) {
		outfile__ref_free(ref);
		return -ENOMEM;
	}
	return 0;
}

int outfile__remove_ref(const struct outfile_ref *ref)
{
	struct stat st;

	if (fstatat(ref->dirfd, ref->name, &st, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (st.st_dev != ref->dev || st.st_ino != ref->ino || !S_ISREG(st.st_mode))
		return -ESTALE; /* not the file offcpu wrote any more: leave it */
	return unlinkat(ref->dirfd, ref->name, 0) ? -errno : 0;
}

void outfile__ref_free(struct outfile_ref *ref)
{
	if (ref->dirfd >= 0)
		close(ref->dirfd);
	free(ref->name);
	ref->dirfd = -1;
	ref->name = NULL;
}
