// SPDX-License-Identifier: GPL-2.0
/* Mounts a file of another user may be read from (mounts.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include "mounts.h"
#include "util.h"

#define READ_CHUNK (64 << 10)
_Static_assert(MOUNTS_MAX == 10000, "mounts__why() says 10,000");

struct mnt_ent {
	uint64_t id;
	bool refused;
};

struct ns_table {
	uint64_t dev, ino; /* of the namespace (nsfs) */
	int fd; /* its mountinfo, open: poll() says when it changed */
	bool user_made; /* owned by a user namespace below ours */
	bool too_large;
	bool stale; /* changed since it was read */
	uint64_t read_ns;
	uint64_t window_ns; /* reads again since then: at most MOUNTS_REREADS in a window */
	unsigned rereads;
	uint64_t used; /* for the least recently used */
	struct mnt_ent *e; /* by id */
	size_t nr, cap;
};

static struct {
	pthread_mutex_t lock;
	struct ns_table *t;
	size_t nr, cap;
	uint64_t tick;
	uint64_t own_userns; /* inode of this process's user namespace, 0: not known */
	struct mounts_stats st;
} M = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void table_free(struct ns_table *t)
{
	if (t->fd >= 0)
		close(t->fd);
	free(t->e);
}

void mounts__reset(void)
{
	size_t i;

	pthread_mutex_lock(&M.lock);
	for (i = 0; i < M.nr; i++)
		table_free(&M.t[i]);
	free(M.t);
	M.t = NULL;
	M.nr = M.cap = 0;
	pthread_mutex_unlock(&M.lock);
}

static int by_id(const void *a, const void *b)
{
	const struct mnt_ent *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* One line of mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE ..." */
static int add_line(struct ns_table *t, const char *line)
{
	const char *sep = strstr(line, " - "), *type;
	unsigned long long id;
	char *end;
	bool refused;

	id = strtoull(line, &end, 10);
	if (end == line || *end != ' ' || !sep)
		return 0; /* not a mount: nothing to look up */
	type = sep + 3;
	refused = !strncmp(type, "fuse", 4) ||
		  (t->user_made && !strncmp(type, "overlay ", 8));
	if (t->nr >= MOUNTS_MAX) {
		t->too_large = true;
		return -E2BIG;
	}
	if (grow_array((void **)&t->e, &t->cap, t->nr + 1, sizeof(*t->e)))
		return -ENOMEM;
	t->e[t->nr++] = (struct mnt_ent){ .id = id, .refused = refused };
	return 0;
}

/* Read @t's table (again), from its start. 0 or -errno. */
static int table_read(struct ns_table *t)
{
	struct pollfd p = { .fd = t->fd, .events = POLLPRI };
	char *buf = malloc(READ_CHUNK + 4096 + 1);
	size_t have = 0;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	t->nr = 0;
	t->too_large = false;
	/* the change seen now is the one this read takes in */
	poll(&p, 1, 0);
	if (lseek(t->fd, 0, SEEK_SET) < 0) {
		free(buf);
		return -errno;
	}
	for (;;) {
		ssize_t n = read(t->fd, buf + have, READ_CHUNK);
		char *line = buf, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		have += (size_t)n;
		buf[have] = 0;
		while (!err && (nl = memchr(line, '\n', have - (size_t)(line - buf)))) {
			*nl = 0;
			err = add_line(t, line);
			line = nl + 1;
		}
		if (err || n == 0)
			break;
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have > 4096)
			have = 0; /* a line longer than any mount's: dropped */
	}
	free(buf);
	if (err == -E2BIG)
		err = 0; /* too_large says it */
	qsort(t->e, t->nr, sizeof(*t->e), by_id);
	t->read_ns = now_ns();
	t->stale = false;
	return err;
}

static uint64_t own_userns(void)
{
	struct stat st;

	if (!M.own_userns && !stat("/proc/self/ns/user", &st))
		M.own_userns = (uint64_t)st.st_ino;
	return M.own_userns;
}

/* Whether mount namespace @nsfd is owned by a user namespace other than ours. */
static bool user_made(int nsfd)
{
	struct stat st;
	int ufd = ioctl(nsfd, NS_GET_USERNS);
	bool made;

	if (ufd < 0)
		return errno != EPERM; /* not known: taken for a user's */
	made = fstat(ufd, &st) || (uint64_t)st.st_ino != own_userns();
	close(ufd);
	return made;
}

/* A new table for the namespace of @pid (@dev, @ino), under the lock; NULL with errno. */
static struct ns_table *table_new(int pid, uint64_t dev, uint64_t ino)
{
	struct ns_table t = { .dev = dev, .ino = ino, .fd = -1 };
	char path[64];
	size_t i, victim = 0;
	int nsfd, err;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/mnt");
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0)
		return NULL;
	t.user_made = user_made(nsfd);
	close(nsfd);
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/mountinfo", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/mountinfo");
	t.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (t.fd < 0)
		return NULL;
	err = table_read(&t);
	M.st.namespaces++;
	if (err) {
		table_free(&t);
		errno = -err;
		return NULL;
	}
	if (M.nr >= MOUNTS_NS_MAX) {
		for (i = 1; i < M.nr; i++)
			if (M.t[i].used < M.t[victim].used)
				victim = i;
		table_free(&M.t[victim]);
		M.t[victim] = M.t[--M.nr];
	}
	if (grow_array((void **)&M.t, &M.cap, M.nr + 1, sizeof(*M.t))) {
		table_free(&t);
		errno = ENOMEM;
		return NULL;
	}
	M.t[M.nr] = t;
	return &M.t[M.nr++];
}

int mounts__check(int pid, uint64_t mnt_id)
{
	struct mnt_ent key = { .id = mnt_id }, *e;
	struct ns_table *t = NULL;
	struct pollfd p;
	struct stat st;
	char path[64];
	int err;
	size_t i;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/mnt");
	if (stat(path, &st))
		return -ESRCH;
	pthread_mutex_lock(&M.lock);
	for (i = 0; i < M.nr; i++)
		if (M.t[i].ino == (uint64_t)st.st_ino && M.t[i].dev == (uint64_t)st.st_dev)
			t = &M.t[i];
	if (!t) {
		t = table_new(pid, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
		if (!t) {
			err = errno == ENOENT ? -ESRCH : -(errno ? errno : ENOMEM);
			goto out;
		}
	}
	t->used = ++M.tick;
	p = (struct pollfd){ .fd = t->fd, .events = POLLPRI };
	if (poll(&p, 1, 0) > 0 && (p.revents & (POLLPRI | POLLERR)))
		t->stale = true;
	if (t->stale) {
		uint64_t now = now_ns();

		/* read again at once, but a few times a window at most: a namespace
		 * whose mounts keep changing (its user's doing) costs little */
		if (now - t->window_ns >= MOUNTS_REREAD_MS * 1000000ULL) {
			t->window_ns = now;
			t->rereads = 0;
		}
		if (t->rereads < MOUNTS_REREADS) {
			t->rereads++;
			M.st.reads++;
			err = table_read(t);
			if (err)
				goto out;
		}
	}
	if (t->stale) {
		err = -EAGAIN;
		goto out;
	}
	if (t->too_large) {
		err = -E2BIG;
		goto out;
	}
	e = bsearch(&key, t->e, t->nr, sizeof(*t->e), by_id);
	err = !e ? -ENOENT : e->refused ? -EXDEV : 0;
out:
	if (err) {
		M.st.refused++;
		M.st.served += err == -EXDEV;
	}
	pthread_mutex_unlock(&M.lock);
	return err;
}

int mounts__check_fd(int pid, int fd)
{
	struct statx stx;

	/* the VFS fills the mount id; AT_STATX_DONT_SYNC keeps FUSE to its cache */
	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_MNT_ID,
		  &stx))
		return -errno;
	if (!(stx.stx_mask & STATX_MNT_ID))
		return -ENOTSUP;
	return mounts__check(pid, stx.stx_mnt_id);
}

const char *mounts__why(int err)
{
	switch (err) {
	case -EXDEV:
		return "on a file system a user serves (FUSE, or an overlay a user mounted), which "
		       "may never answer";
	case -ENOENT:
		return "on a mount its process's mount table does not list";
	case -E2BIG:
		return "in a mount namespace of more than 10,000 mounts";
	case -EAGAIN:
		return "in a mount namespace whose mounts keep changing";
	case -ESRCH:
		return "its process is gone";
	default:
		return strerror(-err);
	}
}

void mounts__stats(struct mounts_stats *st)
{
	pthread_mutex_lock(&M.lock);
	*st = M.st;
	pthread_mutex_unlock(&M.lock);
}
