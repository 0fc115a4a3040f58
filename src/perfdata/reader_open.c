// SPDX-License-Identifier: GPL-2.0
/*
 * Opening a perf.data input for the reader: which of file mode (a regular
 * file, mapped), a directory (perf record --threads: its data and data.N
 * streams) or pipe mode (stdin, a fifo or a pipe-mode file, read as it
 * comes) it is; what is not perf.data is refused with what is wrong; its
 * records handed out by the reader of its kind, and what that reader could
 * not read said; and closing it all again. The kinds' readers
 * (reader_file.c, reader_pipe.c) and what they share (reader.c) never call
 * back here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "reader_priv.h"

/*
 * @path does not exist: a recording of that name that never finished (or
 * is still being written) is under its temporary name, NAME.tmp.XXXXXXXX;
 * name it in @err.
 */
static void unfinished_hint(const char *path, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	char dir[4096], prefix[512];
	struct dirent *de;
	size_t n = strlen(err), found = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
	if ((size_t)snprintf(prefix, sizeof(prefix), "%s.tmp.", base) >= sizeof(prefix))
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		if (!found++ && n < errlen)
			snprintf(err + n, errlen - n, " (%s%s is a recording of that name that has "
				 "not finished, killed or still under way: offcpu report reads it)",
				 slash ? dir : "", de->d_name);
	}
	closedir(d);
}

/* The 16 bytes every perf.data starts with; 1: pipe mode, 0: file mode, -1: neither. */
static int header_kind(const uint8_t *p, size_t n)
{
	uint64_t magic, hsize;

	if (n < 16)
		return -1;
	memcpy(&magic, p, 8);
	memcpy(&hsize, p + 8, 8);
	if (magic != PERF_MAGIC2)
		return -1;
	return hsize == sizeof(struct perf_pipe_file_header);
}

/*
 * A stream: pipe mode is read as it comes; anything else (a file-mode file,
 * or what is not perf.data) is read whole, for reader_init() to judge.
 * Takes @fd (closed with the reader when @own).
 */
static int open_stream(struct perf_reader *r, int fd, bool own)
{
	ssize_t n;
	int e = input_feed__open(&r->feed, fd, own);

	if (e) {
		if (own)
			close(fd);
		return e;
	}
	n = input_feed__want(&r->feed, 16);
	if (n < 0)
		return (int)n;
	if (header_kind(input_feed__data(&r->feed), (size_t)n) == 1) {
		r->pipe = true;
		input_feed__consume(&r->feed, 16);
		return 0;
	}
	return input__slurp(&r->feed, &r->data, &r->size);
}

static int reader_init(struct perf_reader *r, const char *path, const char *dir, unsigned flags,
		       char *err, size_t errlen);

struct perf_reader *perf_reader__open(const char *path, unsigned flags, char *err, size_t errlen)
{
	struct perf_reader *r = calloc(1, sizeof(*r));
	uint8_t head[16];
	struct stat st;
	int fd = -1, e = 0;
	const char *dir = NULL;
	char dpath[4096];

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->feed.fd = -1;
	if (!strcmp(path, "-")) {
		e = open_stream(r, 0, false);
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			e = errno;
			snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
			if (e == ENOENT)
				unfinished_hint(path, err, errlen);
			goto fail;
		}
		if (S_ISDIR(st.st_mode)) {
			close(fd);
			dir = path;
			snprintf(dpath, sizeof(dpath), "%s/data", path);
			path = dpath;
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || fstat(fd, &st)) {
				snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
				goto fail;
			}
		}
		/* a fifo or device another user made is theirs as much as a file */
		if (input__check_owner(&st, path, flags, err, errlen))
			goto fail;
		/* a pipe-mode file is read as a stream: its memory stays bounded too */
		if (S_ISREG(st.st_mode) && st.st_size > 0 &&
		    !(pread(fd, head, sizeof(head), 0) == sizeof(head) &&
		      header_kind(head, sizeof(head)) == 1)) {
			void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

			if (m == MAP_FAILED) {
				snprintf(err, errlen, "cannot map %s: %s", path, strerror(errno));
				goto fail;
			}
			r->data = m;
			r->size = (size_t)st.st_size;
			r->mapped = true;
			input__guard(m, r->size, path);
			close(fd);
		} else {
			e = open_stream(r, fd, true);
		}
		fd = -1;
	}
	if (e) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-e));
		goto fail;
	}
	if (reader_init(r, path, dir, flags, err, errlen))
		goto fail;
	return r;
fail:
	if (fd >= 0)
		close(fd);
	perf_reader__close(r);
	return NULL;
}

struct perf_reader *perf_reader__open_mem(const void *data, size_t size, char *err, size_t errlen)
{
	struct perf_reader *r = calloc(1, sizeof(*r));
	uint8_t *copy = malloc(size ? size : 1);

	if (!r || !copy) {
		free(r);
		free(copy);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(copy, data, size);
	r->feed.fd = -1;
	r->data = copy;
	r->size = size;
	if (reader_init(r, "input", NULL, 0, err, errlen)) {
		perf_reader__close(r);
		return NULL;
	}
	return r;
}

/* Header checks and event setup, once the input is open. */
static int reader_init(struct perf_reader *r, const char *path, const char *dir, unsigned flags,
		       char *err, size_t errlen)
{
	int kind = r->pipe ? 1 : header_kind(r->data, r->size);

	if (kind < 0) {
		snprintf(err, errlen, "%s is not a perf.data file (%s)",
			 strcmp(path, "-") ? path : "standard input",
			 r->size < 16 ? "too short" : "bad magic at offset 0");
		return -EINVAL;
	}
	if (kind == 1 && !r->pipe) {
		/* pipe mode in memory: read as a stream of what is there */
		r->pipe = true;
		input_feed__open_mem(&r->feed, r->data + 16, r->size - 16);
		r->feed.off = 16;
	} else if (kind == 0 && reader_file_open(r)) {
		snprintf(err, errlen, "%s: %s", path, r->err);
		return -EINVAL;
	}
	r->base = r->data;
	/*
	 * An empty data section is legitimate in a directory, whose data.N
	 * streams hold the records (perf record --threads of a quiet command).
	 */
	if (!r->pipe && r->hdr.data.size == 0 && !r->truncated) {
		if (!r->feat[FEAT_DIR_FORMAT].size) {
			snprintf(err, errlen, "%s: data size is 0: the recording was not finished",
				 path);
			return -EINVAL;
		}
		if (!dir) {
			snprintf(err, errlen, "%s: data size is 0: the records are in the data.N "
				 "files next to it; read the directory that holds them", path);
			return -EINVAL;
		}
	}
	if (dir && !r->pipe && reader_dir_open(r, dir, flags, err, errlen))
		return -EINVAL;
	r->err[0] = 0;
	return 0;
}

int perf_reader__next(struct perf_reader *r, const struct perf_event_header **rec)
{
	int ret = r->pipe ? reader_pipe_next(r, rec) : reader_file_next(r, rec);

	if (ret <= 0)
		return ret;
	r->stats.records++;
	r->stats.samples += (*rec)->type == PERF_RECORD_SAMPLE;
	/* file mode names events with EVENT_UPDATE too: a file that never got its EVENT_DESC */
	if (r->pipe || (*rec)->type == PERF_RECORD_EVENT_UPDATE) {
		int err = reader_meta(r, *rec);

		if (err)
			return err;
	}
	return 1;
}

size_t perf_reader__warning(const struct perf_reader *r, char *buf, size_t len)
{
	if (!len)
		return 0;
	buf[0] = 0;
	return r->pipe ? reader_pipe_warning(r, buf, len) : reader_file_warning(r, buf, len);
}

void perf_reader__close(struct perf_reader *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nr_events; i++) {
		free(r->events[i].name);
		free(r->events[i].ids);
	}
	free(r->events);
	free(r->idx);
	for (i = 0; i < FEAT_MAX; i++)
		free(r->pipe_feat[i]);
	input_feed__close(&r->feed);
	input__free_streams(r->streams, r->nr_streams);
	free(r->st);
	if (r->mapped) {
		input__unguard(r->data);
		munmap((void *)r->data, r->size);
	} else {
		free((void *)r->data);
	}
	free(r);
}
