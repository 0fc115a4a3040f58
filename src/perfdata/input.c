// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "input.h"
#include "format.h"
#include "reader.h"
#include "../util/util.h"

#define MAX_STREAMS 4096

/* Read from @fd until @buf holds @want bytes or the input ends (@fd -1: it has). */
static int read_upto(int fd, uint8_t **buf, size_t *cap, size_t *len, size_t want)
{
	while (*len < want && fd >= 0) {
		ssize_t n;

		if (*len == *cap) {
			size_t ncap = *cap ? *cap * 2 : INPUT_FEED_WINDOW;
			uint8_t *nb;

			if (ncap < *cap) /* overflow */
				return -EFBIG;
			nb = realloc(*buf, ncap);
			if (!nb)
				return -ENOMEM;
			*buf = nb;
			*cap = ncap;
		}
		n = read(fd, *buf + *len, *cap - *len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	return 0;
}

int input_feed__open(struct input_feed *f, int fd, bool own_fd)
{
	memset(f, 0, sizeof(*f));
	f->fd = fd;
	f->own_fd = own_fd;
	f->cap = INPUT_FEED_WINDOW;
	f->buf = malloc(f->cap);
	return f->buf ? 0 : -ENOMEM;
}

void input_feed__open_mem(struct input_feed *f, const uint8_t *data, size_t size)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->eof = true;
	f->borrowed = true;
	f->buf = (uint8_t *)data;
	f->cap = f->len = size;
}

ssize_t input_feed__want(struct input_feed *f, size_t n)
{
	size_t have = f->len - f->pos;
	int err;

	if (have >= n || f->eof)
		return (ssize_t)(have < n ? have : n);
	/* keep only what is not consumed: the window does not grow with the input */
	if (f->pos) {
		memmove(f->buf, f->buf + f->pos, have);
		f->off += f->pos;
		f->len = have;
		f->pos = 0;
	}
	if (n > f->cap) {
		uint8_t *nb = realloc(f->buf, n);

		if (!nb)
			return -ENOMEM;
		f->buf = nb;
		f->cap = n;
	}
	/* each read asks for what the window can take; short only at the end of the input */
	err = read_upto(f->fd, &f->buf, &f->cap, &f->len, n);
	if (err)
		return err;
	if (f->len < n)
		f->eof = true;
	have = f->len - f->pos;
	return (ssize_t)(have < n ? have : n);
}

void input_feed__close(struct input_feed *f)
{
	if (f->own_fd && f->fd >= 0)
		close(f->fd);
	if (!f->borrowed)
		free(f->buf);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

/*
 * Read a file-mode file that comes on a stream into memory, checking as it
 * goes, so that something that is not perf.data is refused after a few
 * bytes, not read to its end (-i /dev/zero): the 16-byte header first; no
 * more than the header says the file holds.
 */
int input__slurp(struct input_feed *f, const uint8_t **data, size_t *size)
{
	uint8_t *buf = f->buf;
	size_t cap = f->cap, len = f->len;
	uint64_t magic = 0, hsize = 0;
	int fd = f->fd, err = 0;

	if (f->borrowed || f->pos || f->off) {
		input_feed__close(f);
		return -EINVAL; /* not what it is for */
	}
	/* the feed's buffer, from its first byte, becomes the file's */
	f->buf = NULL;
	err = read_upto(fd, &buf, &cap, &len, 16);
	if (err)
		goto out;
	if (len >= 16) {
		memcpy(&magic, buf, 8);
		memcpy(&hsize, buf + 8, 8);
	}
	if (magic != PERF_MAGIC2)
		goto out; /* reader_init() says what is wrong */
	if (hsize == sizeof(struct perf_file_header)) {
		struct perf_file_header h;
		uint64_t end, pos, last;
		int bits, i;

		err = read_upto(fd, &buf, &cap, &len, sizeof(h));
		if (err || len < sizeof(h))
			goto out;
		memcpy(&h, buf, sizeof(h));
		/* what open_file_mode() would refuse is not read further */
		if (h.attr_size < 64 + 16 || h.attr_size > 512 + 16 || (h.features[0] & 1) ||
		    h.features[1] || h.features[2] || h.features[3] ||
		    h.attrs.offset < sizeof(h) || h.attrs.size > (1ULL << 30) ||
		    h.attrs.offset + h.attrs.size > h.data.offset ||
		    h.data.offset + h.data.size < h.data.offset || h.data.offset > (256ULL << 20))
			goto out;
		end = h.data.offset + h.data.size;
		err = read_upto(fd, &buf, &cap, &len, (size_t)h.data.offset);
		if (err || len < h.data.offset)
			goto out;
		/* the data section, its record sizes checked as they come */
		for (pos = h.data.offset; pos < end;) {
			struct perf_event_header rh;
			size_t before = len;

			while (pos + sizeof(rh) <= len && pos < end) {
				memcpy(&rh, buf + pos, sizeof(rh));
				if (rh.size < sizeof(rh))
					goto out;
				pos += rh.size;
			}
			if (pos >= end)
				break;
			err = read_upto(fd, &buf, &cap, &len, len + (1 << 20));
			if (err || len == before)
				goto out;
		}
		/* the feature index, then the sections it points at */
		bits = __builtin_popcountll(h.features[0]);
		last = end + (uint64_t)bits * sizeof(struct perf_file_section);
		err = read_upto(fd, &buf, &cap, &len, (size_t)last);
		if (err || len < last)
			goto out;
		for (i = 0; i < bits; i++) {
			struct perf_file_section sec;

			memcpy(&sec, buf + end + (size_t)i * sizeof(sec), sizeof(sec));
			if (sec.size < (1ULL << 30) && sec.offset < (1ULL << 40) &&
			    sec.offset + sec.size > last)
				last = sec.offset + sec.size;
		}
		err = read_upto(fd, &buf, &cap, &len, (size_t)last);
	}
out:
	input_feed__close(f);
	if (err) {
		free(buf);
		return err;
	}
	*data = buf;
	*size = len;
	return 0;
}

/*
 * A mapped file that shrinks under the reader (truncated by another process)
 * raises SIGBUS on the next access past its new end. The handler turns that
 * into a clear error instead of a crash: it knows which file each mapping is.
 */
#define MAX_GUARDED (MAX_STREAMS + 8) /* every data.N of a directory, and its data */
static struct {
	const uint8_t *start;
	size_t size;
	char path[256];
} guarded[MAX_GUARDED];
static bool guard_installed;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	const uint8_t *a = si->si_addr;
	size_t i;

	(void)uc;
	for (i = 0; i < MAX_GUARDED; i++) {
		if (guarded[i].start && a >= guarded[i].start &&
		    a < guarded[i].start + guarded[i].size) {
			static const char pre[] = "offcpu: error: ", post[] =
				" shrank while it was being read (truncated by another process?)\n";

			if (write(2, pre, sizeof(pre) - 1) < 0 ||
			    write(2, guarded[i].path, strlen(guarded[i].path)) < 0 ||
			    write(2, post, sizeof(post) - 1) < 0)
				_exit(1);
			_exit(1);
		}
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

void input__guard(const void *start, size_t size, const char *path)
{
	size_t i;

	if (!guard_installed) {
		struct sigaction sa = { 0 };

		sa.sa_sigaction = on_sigbus;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGBUS, &sa, NULL);
		guard_installed = true;
	}
	for (i = 0; i < MAX_GUARDED; i++) {
		if (!guarded[i].start) {
			snprintf(guarded[i].path, sizeof(guarded[i].path), "%s", path);
			guarded[i].size = size;
			guarded[i].start = start; /* last: the handler reads it first */
			return;
		}
	}
}

void input__unguard(const void *start)
{
	size_t i;

	for (i = 0; i < MAX_GUARDED; i++)
		if (guarded[i].start == start)
			guarded[i].start = NULL;
}

/*
 * perf's rule: a file owned by another user (not root) may have been planted
 * or changed by them; it is read only with -f.
 */
int input__check_owner(const struct stat *st, const char *path, unsigned flags, char *err,
		       size_t errlen)
{
	if ((flags & PERF_READER_FORCE) || !st->st_uid || st->st_uid == geteuid())
		return 0;
	snprintf(err, errlen, "%s is owned by user %u, not by the current user or root (-f reads "
		 "it anyway)", path, (unsigned)st->st_uid);
	return -EPERM;
}

static int map_file(const char *path, const uint8_t **data, size_t *size, unsigned flags,
		    char *err, size_t errlen)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;
	void *m;

	if (fd < 0) {
		e = -errno;
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return e;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "cannot read %s: not a regular file", path);
		return -EINVAL;
	}
	e = input__check_owner(&st, path, flags, err, errlen);
	if (e) {
		close(fd);
		return e;
	}
	*size = (size_t)st.st_size;
	*data = NULL;
	if (st.st_size > 0) {
		m = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			e = -errno;
			close(fd);
			snprintf(err, errlen, "cannot map %s: %s", path, strerror(-e));
			return e;
		}
		*data = m;
		input__guard(m, *size, path);
	}
	close(fd);
	return 0;
}

/* data.N: N in decimal without leading zeros; -1 for any other name. */
static long stream_number(const char *name)
{
	const char *p = name + 5;
	long n = 0;

	if (strncmp(name, "data.", 5) || !*p || (p[0] == '0' && p[1]))
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || n > MAX_STREAMS)
			return -1;
		n = n * 10 + (*p - '0');
	}
	return n;
}

/*
 * X/data.0 ... X/data.N next to X/data, merged with its data section by
 * time. A directory whose streams are not exactly data.0 to data.N (one
 * missing, renamed or a copy of another) would give wrong totals without a
 * word: it is refused unless PERF_READER_FORCE, which reads what is there.
 */
int input__streams(const char *dir, unsigned flags, struct input_stream **out, size_t *nr,
		   char *err, size_t errlen)
{
	struct input_stream *v = NULL;
	size_t nv = 0;
	char path[4096], problem[512] = "";
	bool *present = NULL;
	long n, max = -1;
	struct dirent *de;
	size_t i, j;
	DIR *d;
	int e = 0;

	*out = NULL;
	*nr = 0;
	v = calloc(MAX_STREAMS + 1, sizeof(*v));
	present = calloc(MAX_STREAMS + 1, sizeof(*present));
	d = opendir(dir);
	if (!v || !present || !d) {
		e = d ? -ENOMEM : -errno;
		snprintf(err, errlen, "cannot read %s: %s", dir, strerror(-e));
		goto out;
	}
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "data.", 5))
			continue;
		n = stream_number(de->d_name);
		if (n < 0 || n >= MAX_STREAMS) {
			if (!problem[0])
				snprintf(problem, sizeof(problem), "%s is not a stream name (data.0 to "
					 "data.%d)", de->d_name, MAX_STREAMS - 1);
			continue;
		}
		present[n] = true;
		if (n > max)
			max = n;
	}
	for (n = 0; n <= max && !problem[0]; n++)
		if (!present[n])
			snprintf(problem, sizeof(problem), "data.%ld is missing, though data.%ld is "
				 "there", n, max);
	for (n = 0; n <= max; n++) {
		if (!present[n])
			continue;
		snprintf(path, sizeof(path), "%s/data.%ld", dir, n);
		e = map_file(path, &v[nv].data, &v[nv].size, flags, err, errlen);
		if (e)
			goto out;
		v[nv++].number = n;
	}
	/* a stream that is a byte-for-byte copy of another counts its time twice */
	for (i = 0; i < nv && !problem[0]; i++)
		for (j = i + 1; j < nv && !problem[0]; j++)
			if (v[i].size && v[i].size == v[j].size &&
			    !memcmp(v[i].data, v[j].data, v[i].size))
				snprintf(problem, sizeof(problem), "data.%ld is a byte-for-byte "
					 "copy of data.%ld", v[j].number, v[i].number);
	if (problem[0]) {
		if (!(flags & PERF_READER_FORCE)) {
			snprintf(err, errlen, "%s: %s; the recording is incomplete or altered (-f "
				 "reads what is there)", dir, problem);
			e = -EINVAL;
			goto out;
		}
		/* the directory's and the streams' names are the file's owner's */
		char *ed = str_escape_dup(dir), *ep = str_escape_dup(problem);

		fprintf(stderr, "offcpu: warning: %s: %s; reading what is there (-f)\n",
			ed ? ed : "?", ep ? ep : "?");
		free(ed);
		free(ep);
	}
out:
	if (d)
		closedir(d);
	free(present);
	if (e) {
		input__free_streams(v, nv);
		return e;
	}
	*out = v;
	*nr = nv;
	return 0;
}

void input__free_streams(struct input_stream *v, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++) {
		if (v[i].size) {
			input__unguard(v[i].data);
			munmap((void *)v[i].data, v[i].size);
		}
	}
	free(v);
}

