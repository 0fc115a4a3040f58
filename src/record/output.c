// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
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
#include "../util/util.h"

static char *rotated_name(const char *base)
{
	struct timeval tv;
	struct tm tm;
	char stamp[32], *name;
	size_t len;

	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
	len = strlen(base) + strlen(stamp) + 8;
	name = malloc(len);
	if (name)
		snprintf(name, len, "%s.%s%02d", base, stamp, (int)(tv.tv_usec / 10000));
	return name;
}

static int remove_tree(const char *path)
{
	struct dirent *de;
	DIR *d = opendir(path);
	char p[PATH_MAX];

	if (!d)
		return unlink(path) ? -errno : 0;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, de->d_name);
		unlink(p);
	}
	closedir(d);
	return rmdir(path) ? -errno : 0;
}

int output__begin(struct output *o)
{
	size_t len;

	o->fd = -1;
	if (o->pipe) {
		o->fd = STDOUT_FILENO;
		return 0;
	}
	free(o->final_path);
	free(o->tmp_path);
	o->final_path = o->rotate ? rotated_name(o->base) : strdup(o->base);
	len = strlen(o->final_path) + 32;
	o->tmp_path = malloc(len);
	if (!o->final_path || !o->tmp_path)
		return -ENOMEM;
	snprintf(o->tmp_path, len, "%s.tmp.%d", o->final_path, (int)getpid());
	if (o->dir) {
		char data[PATH_MAX];

		if (mkdir(o->tmp_path, 0700)) {
			int err = -errno;

			pr_err("cannot create directory %s: %s", o->tmp_path, strerror(errno));
			return err;
		}
		snprintf(data, sizeof(data), "%s/data", o->tmp_path);
		o->fd = open(data, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	} else {
		o->fd = open(o->tmp_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	}
	if (o->fd < 0) {
		int err = -errno;

		pr_err("cannot create %s: %s", o->tmp_path, strerror(errno));
		if (o->dir)
			rmdir(o->tmp_path);
		return err;
	}
	return 0;
}

int output__open_stream(struct output *o, int i)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/data.%d", o->tmp_path, i);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		int err = -errno;

		pr_err("cannot create %s: %s", path, strerror(errno));
		return err;
	}
	return fd;
}

static void prune(struct output *o)
{
	while (o->max_files && o->nr_kept > o->max_files) {
		if (o->dir)
			remove_tree(o->kept[0]);
		else
			unlink(o->kept[0]);
		free(o->kept[0]);
		memmove(o->kept, o->kept + 1, (o->nr_kept - 1) * sizeof(*o->kept));
		o->nr_kept--;
		o->removed++;
	}
}

int output__commit(struct output *o)
{
	char old[PATH_MAX];
	struct stat st;
	char **kept;

	if (o->pipe)
		return 0;
	if (o->fd >= 0 && close(o->fd)) {
		o->fd = -1;
		return -errno;
	}
	o->fd = -1;
	if (!o->rotate && lstat(o->final_path, &st) == 0) {
		snprintf(old, sizeof(old), "%s.old", o->final_path);
		if (S_ISDIR(st.st_mode))
			remove_tree(old);
		if (rename(o->final_path, old))
			pr_warn("cannot keep the old %s as %s: %s", o->final_path, old,
				strerror(errno));
	}
	if (rename(o->tmp_path, o->final_path))
		return -errno;
	kept = realloc(o->kept, (o->nr_kept + 1) * sizeof(*kept));
	if (!kept)
		return -ENOMEM;
	o->kept = kept;
	o->kept[o->nr_kept++] = strdup(o->final_path);
	prune(o);
	return 0;
}

void output__discard(struct output *o)
{
	if (o->pipe)
		return;
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp_path)
		remove_tree(o->tmp_path);
}

const char *output__last(const struct output *o)
{
	if (o->pipe)
		return "-";
	return o->nr_kept ? o->kept[o->nr_kept - 1] : o->base;
}

void output__free(struct output *o)
{
	size_t i;

	for (i = 0; i < o->nr_kept; i++)
		free(o->kept[i]);
	free(o->kept);
	free(o->tmp_path);
	free(o->final_path);
	o->kept = NULL;
	o->tmp_path = o->final_path = NULL;
	o->nr_kept = 0;
}
