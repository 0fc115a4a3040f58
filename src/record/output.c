// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/time.h>
#include "output.h"
#include "../offcpu.h"
#include "../util/util.h"

/*
 * NAME.YYYYMMDDHHMMSScc, and .N after it for the Nth file of the same
 * hundredth of a second: the name a file's records give its symbol file
 * (named.h) is the one it is committed under (outfile's own .N is for a
 * name someone else took meanwhile).
 */
static char *rotated_name(struct output *o, const char *base)
{
	struct timeval tv;
	struct tm tm;
	char stamp[40], *name;
	size_t len;

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
	snprintf(stamp + strlen(stamp), sizeof(stamp) - strlen(stamp), "%02d",
		 (int)(tv.tv_usec / 10000));
	if (!strcmp(stamp, o->last_stamp))
		o->same_stamp++;
	else
		o->same_stamp = 0;
	snprintf(o->last_stamp, sizeof(o->last_stamp), "%s", stamp);
	len = strlen(base) + strlen(stamp) + 16;
	name = malloc(len);
	if (name && o->same_stamp)
		snprintf(name, len, "%s.%s.%u", base, stamp, o->same_stamp);
	else if (name)
		snprintf(name, len, "%s.%s", base, stamp);
	return name;
}

static int set_error(struct output *o, int err, const char *msg)
{
	free(o->error);
	o->error = strdup(msg);
	return err;
}

int output__begin(struct output *o)
{
	unsigned flags = 0;
	char *name;
	int err;

	o->fd = -1;
	free(o->error);
	o->error = NULL;
	if (o->to_stdout) {
		o->pipe = true;
		o->fd = STDOUT_FILENO;
		return 0;
	}
	if (o->rotate)
		flags |= OUTFILE_UNIQUE;
	else
		flags |= OUTFILE_KEEP_OLD;
	if (o->dir)
		flags |= OUTFILE_DIR;
	else if (!o->rotate)
		flags |= OUTFILE_DEVICE;
	if (o->moved_to) {
		/* the directory moved during the recording: the next files go there too */
		const char *slash = strrchr(o->base, '/');
		char *base = NULL;

		if (asprintf(&base, "%s/%s", o->moved_to, slash ? slash + 1 : o->base) < 0)
			return set_error(o, -ENOMEM, "out of memory");
		name = o->rotate ? rotated_name(o, base) : strdup(base);
		free(base);
	} else {
		name = o->rotate ? rotated_name(o, o->base) : strdup(o->base);
	}
	if (!name)
		return set_error(o, -ENOMEM, "out of memory");
	err = outfile__open(&o->file, name, flags, 0600);
	free(name);
	if (err)
		return set_error(o, err, o->file.msg);
	o->open = true;
	if (o->dir) {
		o->fd = outfile__create_in(&o->file, "data");
		if (o->fd < 0) {
			err = set_error(o, o->fd, o->file.msg);
			output__discard(o);
			return err;
		}
	} else {
		o->fd = o->file.fd;
		o->pipe = o->file.fifo; /* a reader at the other end: perf's pipe format */
	}
	return 0;
}

int output__open_stream(struct output *o, int i)
{
	char name[32];
	int fd;

	snprintf(name, sizeof(name), "data.%d", i);
	fd = outfile__create_in(&o->file, name);
	if (fd < 0)
		set_error(o, fd, o->file.msg);
	return fd;
}

/* Let go of @ref, if it holds a file (one zeroed holds none). */
static void ref_drop(struct outfile_ref *ref)
{
	if (ref->name)
		outfile__ref_free(ref);
	*ref = (struct outfile_ref){ .dirfd = -1 };
}

static void prune(struct output *o)
{
	while (o->max_files && o->nr_kept > o->max_files) {
		/* one that is no longer the file offcpu wrote is left alone, and counted */
		if (!outfile__remove_ref(&o->kept[0]))
			o->removed++;
		else
			o->vanished++;
		outfile__ref_free(&o->kept[0]);
		if (o->kept_names[0].name)
			outfile__remove_ref(&o->kept_names[0]);
		ref_drop(&o->kept_names[0]);
		memmove(o->kept, o->kept + 1, (o->nr_kept - 1) * sizeof(*o->kept));
		memmove(o->kept_names, o->kept_names + 1, (o->nr_kept - 1) * sizeof(*o->kept_names));
		o->nr_kept--;
	}
}

bool output__names_path(const struct output *o, char *buf, size_t len)
{
	char link[64], dir[PATH_MAX];
	ssize_t n;

	/* push reads the names from the file itself, and removes only the file */
	if (o->to_stdout || o->pipe || o->hand_off || !o->open || o->file.in_place || o->file.dirfd < 0)
		return false;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", o->file.dirfd);
	n = readlink(link, dir, sizeof(dir) - 1);
	if (n <= 0 || dir[0] != '/')
		return false;
	dir[n] = 0;
	/* hidden beside a file: NAME.* globs find the recordings alone */
	if (o->dir)
		return (size_t)snprintf(buf, len, "%s/%s/" OFFCPU_NAMES_FILE,
					!strcmp(dir, "/") ? "" : dir, o->file.name) < len;
	return (size_t)snprintf(buf, len, "%s/.%s." OFFCPU_NAMES_FILE, !strcmp(dir, "/") ? "" : dir,
				o->file.name) < len;
}

int output__write_names(struct output *o, int (*fill)(void *arg, int fd), void *arg)
{
	struct outfile f = { 0 };
	char path[PATH_MAX];
	int fd, err;

	if (!output__names_path(o, path, sizeof(path)))
		return 0;
	if (o->dir) {
		/* inside the recording's directory, renamed with it */
		fd = outfile__create_in(&o->file, OFFCPU_NAMES_FILE);
		if (fd < 0)
			return set_error(o, fd, o->file.msg);
		err = fill(arg, fd);
		close(fd);
		return err ? set_error(o, err, "cannot write its symbol file") : 0;
	}
	err = outfile__open(&f, path, OUTFILE_KEEP_OLD, 0600);
	if (err) {
		err = set_error(o, err, f.msg);
		outfile__free(&f);
		return err;
	}
	err = fill(arg, f.fd);
	err = err ?: outfile__commit(&f);
	if (err) {
		set_error(o, err, f.msg[0] ? f.msg : "cannot write its symbol file");
		outfile__discard(&f);
		outfile__free(&f);
		return err;
	}
	ref_drop(&o->names);
	if (o->rotate && outfile__ref(&f, &o->names))
		ref_drop(&o->names);
	outfile__free(&f);
	return 0;
}

int output__commit(struct output *o)
{
	struct outfile_ref *kept;
	int err;

	if (o->to_stdout)
		return 0;
	if (o->dir && o->fd >= 0)
		close(o->fd); /* data; the directory itself is the outfile's */
	o->fd = -1;
	err = outfile__commit(&o->file);
	if (err) {
		set_error(o, err, o->file.msg);
		/* not complete (a failed close): its temporary goes; one kept on
		 * purpose (the final name became another's) has no temporary left */
		outfile__discard(&o->file);
		outfile__free(&o->file);
		o->open = false;
		return err;
	}
	free(o->last);
	o->last = strdup(o->file.final);
	o->written++;
	/* said once per place it went: the summary names the file, this says why
	 * it is not where -o put it */
	if (o->file.moved_from && (!o->moved_to || strcmp(o->moved_to, o->file.dir))) {
		pr_warn("the directory %s was moved to %s during the recording: the recording "
			"is %s", o->file.moved_from, o->file.dir, o->file.final);
		free(o->moved_to);
		o->moved_to = strdup(o->file.dir);
	}
	if (o->rotate && !o->hand_off) {
		struct outfile_ref *names = realloc(o->kept_names, (o->nr_kept + 1) * sizeof(*names));

		if (names)
			o->kept_names = names;
		kept = names ? realloc(o->kept, (o->nr_kept + 1) * sizeof(*kept)) : NULL;
		if (!kept || outfile__ref(&o->file, &kept[o->nr_kept])) {
			if (kept)
				o->kept = kept;
			outfile__free(&o->file);
			o->open = false;
			return set_error(o, -ENOMEM, "out of memory");
		}
		o->kept = kept;
		/* its symbol file, written just before: removed with it */
		o->kept_names[o->nr_kept] = o->names;
		o->names = (struct outfile_ref){ .dirfd = -1 };
		o->nr_kept++;
	}
	outfile__free(&o->file);
	o->open = false;
	prune(o);
	return o->last ? 0 : set_error(o, -ENOMEM, "out of memory");
}

void output__discard(struct output *o)
{
	if (o->to_stdout || !o->open)
		return;
	if (o->dir && o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	outfile__discard(&o->file);
	outfile__free(&o->file);
	o->open = false;
}

const char *output__last(const struct output *o)
{
	if (o->to_stdout)
		return "-";
	return o->last ? o->last : o->base;
}

size_t output__on_disk(const struct output *o)
{
	size_t i, n = 0;

	for (i = 0; i < o->nr_kept; i++) {
		struct stat st;

		if (!fstatat(o->kept[i].dirfd, o->kept[i].name, &st, AT_SYMLINK_NOFOLLOW) &&
		    st.st_dev == o->kept[i].dev && st.st_ino == o->kept[i].ino)
			n++;
	}
	return n;
}

const char *output__error(const struct output *o)
{
	return o->error;
}

void output__free(struct output *o)
{
	size_t i;

	output__discard(o);
	for (i = 0; i < o->nr_kept; i++) {
		outfile__ref_free(&o->kept[i]);
		ref_drop(&o->kept_names[i]);
	}
	free(o->kept);
	free(o->kept_names);
	ref_drop(&o->names);
	o->kept_names = NULL;
	free(o->last);
	free(o->error);
	free(o->moved_to);
	o->kept = NULL;
	o->last = o->error = o->moved_to = NULL;
	o->nr_kept = 0;
}
