// SPDX-License-Identifier: GPL-2.0
/* Requests kept on disk while the backend does not take them (spool.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "spool.h"
#include "../util/util.h"

#define HEADER_MAX 4352 /* the first lines, the query (at most 4 KiB) included */

struct entry {
	uint64_t seq, size; /* size: of the file */
	uint64_t start, end;
	uint32_t profiles;
};

struct spool {
	pthread_mutex_t lock;
	int dirfd;
	char *dir;
	const char *ext;
	uint64_t max_bytes, bytes;
	struct entry *e; /* oldest first */
	size_t nr, cap;
	uint64_t next_seq;
	uint64_t busy; /* the one being sent; 0: none */
	size_t found, others;
};

static int by_seq(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void file_name(const struct spool *s, uint64_t seq, char *out, size_t cap)
{
	snprintf(out, cap, "%016llx.%s", (unsigned long long)seq, s->ext);
}

/* The header of an open spool file: @e filled, the body's offset and length. */
static int read_header(int fd, struct entry *e, char **query, size_t *body_off, size_t *body_len)
{
	char buf[HEADER_MAX + 1], fmt[16], *nl1, *nl2, *nl3;
	unsigned long long start, end, len;
	unsigned profiles;
	ssize_t n = pread(fd, buf, HEADER_MAX, 0);

	if (n <= 0)
		return -EINVAL;
	buf[n] = 0;
	nl1 = strchr(buf, '\n');
	nl2 = nl1 ? strchr(nl1 + 1, '\n') : NULL;
	nl3 = nl2 ? strchr(nl2 + 1, '\n') : NULL;
	if (!nl3 || sscanf(buf, "offcpu-push 1 %15s", fmt) != 1 ||
	    sscanf(nl1 + 1, "%llu %llu %u %llu", &start, &end, &profiles, &len) != 4)
		return -EINVAL;
	e->start = start;
	e->end = end;
	e->profiles = profiles;
	*body_off = (size_t)(nl3 + 1 - buf);
	*body_len = (size_t)len;
	if (query) {
		*nl3 = 0;
		*query = strcmp(nl2 + 1, "-") ? strdup(nl2 + 1) : NULL;
		if (strcmp(nl2 + 1, "-") && !*query)
			return -ENOMEM;
	}
	return 0;
}

/* A regular file of ours in the spool, opened for reading without blocking. */
static int open_entry(const struct spool *s, const char *name, struct stat *st)
{
	int fd = openat(s->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

static int scan(struct spool *s)
{
	int fd = fcntl(s->dirfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	size_t extlen = strlen(s->ext);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		const char *dot = strchr(de->d_name, '.');
		unsigned long long seq;
		struct entry e = { 0 };
		struct stat st;
		size_t off, len;
		char *end;
		int f;

		if (de->d_name[0] == '.' && !strncmp(de->d_name, ".tmp.", 5)) {
			/* a request being written when an earlier run ended: not complete */
			if (!fstatat(s->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
			    S_ISREG(st.st_mode) && st.st_uid == geteuid())
				unlinkat(s->dirfd, de->d_name, 0);
			continue;
		}
		if (!dot || dot - de->d_name != 16)
			continue;
		seq = strtoull(de->d_name, &end, 16);
		if (end != dot || !seq)
			continue;
		if (strlen(dot + 1) != extlen || memcmp(dot + 1, s->ext, extlen)) {
			s->others++;
			continue;
		}
		f = open_entry(s, de->d_name, &st);
		if (f < 0)
			continue;
		if (!read_header(f, &e, NULL, &off, &len) && off + len == (uint64_t)st.st_size &&
		    !grow_array((void **)&s->e, &s->cap, s->nr + 1, sizeof(*s->e))) {
			e.seq = seq;
			e.size = (uint64_t)st.st_size;
			s->e[s->nr++] = e;
			s->bytes += e.size;
		}
		close(f);
	}
	closedir(d);
	qsort(s->e, s->nr, sizeof(*s->e), by_seq);
	s->next_seq = s->nr ? s->e[s->nr - 1].seq + 1 : 1;
	s->found = s->nr;
	return 0;
}

struct spool *spool__open(const char *dir, uint64_t max_bytes, enum push_format f, char *msg,
			  size_t len)
{
	struct spool *s = calloc(1, sizeof(*s));
	struct stat st;

	if (!s || !(s->dir = strdup(dir))) {
		snprintf(msg, len, "out of memory");
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->dirfd = -1;
	s->ext = f == PUSH_OTLP ? "otlp" : "pyroscope";
	s->max_bytes = max_bytes;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		snprintf(msg, len, "cannot make --push-spool %s: %s", dir, strerror(errno));
		goto fail;
	}
	s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->dirfd < 0) {
		snprintf(msg, len, "cannot open --push-spool %s: %s", dir,
			 errno == ENOTDIR || errno == ELOOP ? "not a directory (a symbolic link is "
							      "not followed)" : strerror(errno));
		goto fail;
	}
	if (fstat(s->dirfd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(msg, len, "--push-spool %s must be a directory of yours that no one else "
			 "may write", dir);
		goto fail;
	}
	if (scan(s)) {
		snprintf(msg, len, "cannot read --push-spool %s: %s", dir, strerror(errno));
		goto fail;
	}
	return s;
fail:
	spool__free(s);
	return NULL;
}

void spool__free(struct spool *s)
{
	if (!s)
		return;
	if (s->dirfd >= 0)
		close(s->dirfd);
	pthread_mutex_destroy(&s->lock);
	free(s->e);
	free(s->dir);
	free(s);
}

/* Remove entry @i (its file, if still ours) and forget it. Locked. */
static void forget(struct spool *s, size_t i, bool unlink_it)
{
	char name[64];

	if (unlink_it) {
		file_name(s, s->e[i].seq, name, sizeof(name));
		unlinkat(s->dirfd, name, 0);
	}
	s->bytes -= s->e[i].size;
	memmove(s->e + i, s->e + i + 1, (s->nr - i - 1) * sizeof(*s->e));
	s->nr--;
}

int spool__put(struct spool *s, const struct payload *pl, spool_drop_fn dropped, void *arg)
{
	char head[HEADER_MAX + 128], name[64], tmp[80];
	struct entry e = { .start = pl->start, .end = pl->end, .profiles = pl->profiles };
	int n, fd, err = 0;

	if (pl->query && strlen(pl->query) > 4096)
		return -E2BIG;
	n = snprintf(head, sizeof(head), "offcpu-push 1 %s\n%llu %llu %u %zu\n%s\n", s->ext,
		     (unsigned long long)pl->start, (unsigned long long)pl->end, pl->profiles,
		     pl->len, pl->query ? pl->query : "-");
	e.size = (uint64_t)n + pl->len;
	if (e.size > s->max_bytes)
		return -EFBIG;
	pthread_mutex_lock(&s->lock);
	/* room: the oldest go first, but the one being sent */
	while (s->bytes + e.size > s->max_bytes) {
		size_t i = s->nr && s->e[0].seq == s->busy ? 1 : 0;
		struct payload what = { 0 };

		if (i >= s->nr)
			break;
		what.start = s->e[i].start;
		what.end = s->e[i].end;
		what.profiles = s->e[i].profiles;
		forget(s, i, true);
		if (dropped)
			dropped(arg, &what, "the spool was full");
	}
	e.seq = s->next_seq++;
	file_name(s, e.seq, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), ".tmp.%s", name);
	fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
	} else {
		err = write_full(fd, head, (size_t)n);
		err = err ?: write_full(fd, pl->body, pl->len);
		if (close(fd) && !err)
			err = -errno;
		if (!err && renameat(s->dirfd, tmp, s->dirfd, name))
			err = -errno;
		if (err)
			unlinkat(s->dirfd, tmp, 0);
	}
	if (!err && !grow_array((void **)&s->e, &s->cap, s->nr + 1, sizeof(*s->e))) {
		s->e[s->nr++] = e;
		s->bytes += e.size;
	} else if (!err) {
		unlinkat(s->dirfd, name, 0);
		err = -ENOMEM;
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

struct payload *spool__take(struct spool *s, spool_drop_fn dropped, void *arg)
{
	struct payload *pl = NULL;

	pthread_mutex_lock(&s->lock);
	while (s->nr && !s->busy) {
		struct entry *e = &s->e[0];
		char name[64];
		struct stat st;
		size_t off, len;
		int fd, err;

		file_name(s, e->seq, name, sizeof(name));
		fd = open_entry(s, name, &st);
		pl = calloc(1, sizeof(*pl));
		err = fd < 0 ? fd : !pl ? -ENOMEM : read_header(fd, e, &pl->query, &off, &len);
		if (!err && off + len != (uint64_t)st.st_size)
			err = -EINVAL;
		if (!err && !(pl->body = malloc(len ? len : 1)))
			err = -ENOMEM;
		if (!err && pread(fd, pl->body, len, (off_t)off) != (ssize_t)len)
			err = -EIO;
		if (fd >= 0)
			close(fd);
		if (!err) {
			pl->len = len;
			pl->seq = e->seq;
			pl->start = e->start;
			pl->end = e->end;
			pl->profiles = e->profiles;
			s->busy = e->seq;
			break;
		}
		payload__free(pl);
		pl = NULL;
		if (err == -ENOMEM)
			break;
		{
			struct payload what = { .start = e->start, .end = e->end,
						.profiles = e->profiles };

			forget(s, 0, err != -ENOENT && err != -EPERM);
			if (dropped)
				dropped(arg, &what, "its spool file could not be read back");
		}
	}
	pthread_mutex_unlock(&s->lock);
	return pl;
}

void spool__done(struct spool *s, uint64_t seq, bool sent)
{
	size_t i;

	pthread_mutex_lock(&s->lock);
	if (s->busy == seq)
		s->busy = 0;
	for (i = 0; sent && i < s->nr; i++)
		if (s->e[i].seq == seq) {
			forget(s, i, true);
			break;
		}
	pthread_mutex_unlock(&s->lock);
}

void spool__usage(struct spool *s, size_t *count, uint64_t *bytes)
{
	pthread_mutex_lock(&s->lock);
	*count = s->nr;
	*bytes = s->bytes;
	pthread_mutex_unlock(&s->lock);
}

void spool__found(struct spool *s, size_t *ours, size_t *others)
{
	*ours = s->found;
	*others = s->others;
}
