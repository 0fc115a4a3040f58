// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include "options.h"
#include "target.h"
#include "../perfdata/format.h"
#include "../util/util.h"

#define CGROUP2_SUPER_MAGIC 0x63677270

int tid_to_tgid(int tid)
{
	char path[64], line[256];
	FILE *f;
	int tgid = -ESRCH;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

bool is_kernel_thread(int tid)
{
	char path[64], buf[1024], *p;
	unsigned long flags = 0;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the command name may hold anything */
	if (!p)
		return false;
	/* state ppid pgrp session tty_nr tpgid flags */
	for (i = 0; i < 6 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %*s %lu", &flags) != 1)
		return false;
	return flags & 0x00200000; /* PF_KTHREAD */
}

bool thread_alive(int tgid, int tid)
{
	return syscall(SYS_tgkill, tgid, tid, 0) == 0 || errno == EPERM;
}

int pidfd_for(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : fd;
}

bool have_capabilities(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &h, d))
		return false;
	/* CAP_PERFMON is 38 and CAP_BPF 39: bits 6 and 7 of the second word. */
	return (d[1].effective & (1u << 6)) && (d[1].effective & (1u << 7));
}

int cgroup2_mount(char *out, size_t cap)
{
	char line[4096], dev[256], dir[2048], type[64];
	FILE *f = fopen("/proc/self/mounts", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %2047s %63s", dev, dir, type) != 3)
			continue;
		if (!strcmp(type, "cgroup2")) {
			snprintf(out, cap, "%s", dir);
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

static int open_cgroup(const char *arg, char *msg, size_t len)
{
	char root[2048], path[PATH_MAX];
	struct statfs sfs;
	int fd;

	if (arg[0] == '/' && statfs(arg, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC) {
		snprintf(path, sizeof(path), "%s", arg);
	} else {
		if (cgroup2_mount(root, sizeof(root))) {
			snprintf(msg, len, "cgroup '%s': no cgroup v2 hierarchy is mounted", arg);
			return -ENOENT;
		}
		snprintf(path, sizeof(path), "%s/%s", root, arg[0] == '/' ? arg + 1 : arg);
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		snprintf(msg, len, "cgroup '%s': cannot open %s: %s", arg, path, strerror(-err));
		return err;
	}
	if (fstatfs(fd, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC) {
		snprintf(msg, len, "cgroup '%s': %s is not a cgroup v2 directory", arg, path);
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* The cgroup's id (its inode number, the kernel's kernfs id) and depth below the root. */
static void cgroup_id_level(int fd, uint64_t *id, uint32_t *level)
{
	char link[64], path[PATH_MAX], root[2048], rroot[PATH_MAX];
	struct stat st;
	ssize_t n;
	const char *p;

	*id = fstat(fd, &st) == 0 ? (uint64_t)st.st_ino : 0;
	*level = 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || cgroup2_mount(root, sizeof(root)) || !realpath(root, rroot))
		return;
	path[n] = 0;
	if (strncmp(path, rroot, strlen(rroot)))
		return;
	for (p = path + strlen(rroot); *p; p++)
		if (*p == '/' && p[1] && p[1] != '/')
			(*level)++;
}

/* One of -p or -t: the process it belongs to, refused when gone or a kernel thread. */
static int resolve(int id, const char *what, char *msg, size_t len)
{
	int tgid = tid_to_tgid(id);

	if (tgid < 0) {
		snprintf(msg, len, "%s %d does not exist", what, id);
		return -ESRCH;
	}
	if (is_kernel_thread(id)) {
		snprintf(msg, len, "%d is a kernel thread: offcpu records user tasks only (kernel "
			 "threads are left out of every recording)", id);
		return -EINVAL;
	}
	return tgid;
}

/* The parent of every process now: its (pid, ppid) pairs, from /proc/PID/stat. */
static int parents(int (**pp)[2], size_t *nr)
{
	size_t cap = 0;
	struct dirent *d;
	DIR *dir = opendir("/proc");

	*pp = NULL;
	*nr = 0;
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		char path[64], buf[512], *close_paren;
		int pid = atoi(d->d_name), ppid, fd;
		ssize_t n;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		/* "pid (comm) state ppid ...": the command may hold any byte */
		close_paren = strrchr(buf, ')');
		if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1 || ppid <= 0)
			continue;
		if (grow_array((void **)pp, &cap, *nr + 1, sizeof(**pp))) {
			closedir(dir);
			return -ENOMEM;
		}
		(*pp)[*nr][0] = pid;
		(*pp)[(*nr)++][1] = ppid;
	}
	closedir(dir);
	return 0;
}

/*
 * -p's processes follow what they fork from the attach on; those they (and
 * their children...) forked before run already: found now and added to
 * o->pids, so that every mode that follows -p's processes follows them.
 * (One forked between this look and the attach is not seen.)
 */
static int add_descendants(struct targets *t, struct record_opts *o)
{
	int (*pp)[2], self = (int)getpid(), *pids;
	size_t nr, i, added = 0;
	bool more = true;
	int err = parents(&pp, &nr);

	if (err)
		return err;
	while (more && !err) {
		more = false;
		for (i = 0; i < nr && !err; i++) {
			if (pp[i][0] == self || !intset__has(&t->tracked, pp[i][1]) ||
			    intset__has(&t->tracked, pp[i][0]))
				continue;
			pids = realloc(o->pids, (o->nr_pids + 1) * sizeof(*pids));
			if (!pids || intset__add(&t->tracked, pp[i][0]) < 0) {
				if (pids)
					o->pids = pids;
				err = -ENOMEM;
				break;
			}
			o->pids = pids;
			o->pids[o->nr_pids++] = pp[i][0];
			added++;
			more = true;
		}
	}
	free(pp);
	t->descendants = added;
	return err;
}

int targets__init(struct targets *t, struct record_opts *o, char *msg, size_t len)
{
	size_t i;
	int tgid;

	memset(t, 0, sizeof(*t));
	t->cgroup_fd = -1;
	for (i = 0; i < o->nr_pids; i++) {
		tgid = resolve(o->pids[i], "process", msg, len);
		if (tgid < 0)
			return tgid;
		if (tgid != o->pids[i])
			pr_warn("%d is a thread of process %d: recording the whole process",
				o->pids[i], tgid);
		o->pids[i] = tgid;
		if (intset__add(&t->tracked, tgid) < 0)
			return -ENOMEM;
	}
	for (i = 0; i < o->nr_tids; i++) {
		tgid = resolve(o->tids[i], "thread", msg, len);
		if (tgid < 0)
			return tgid;
		if (intset__add(&t->tracked, tgid) < 0 || intset__add(&t->tids, o->tids[i]) < 0)
			return -ENOMEM;
	}
	t->only_tids = o->nr_tids > 0;
	/* -C and -G alone mean "everything on those cpus / in that cgroup" */
	t->filter = (!o->system_wide && !o->nr_cpus && !o->cgroup) || (o->argc && !o->system_wide);
	/* processes forked by the command or by -p processes, as perf follows them */
	t->follow = (o->argc > 0 || o->nr_pids > 0) && !o->no_inherit;
	t->given = o->nr_pids;
	/* and, for -p, those they forked before: running already */
	if (t->follow && o->nr_pids && !o->argc && add_descendants(t, o)) {
		snprintf(msg, len, "out of memory");
		return -ENOMEM;
	}
	if (o->cgroup) {
		t->cgroup_fd = open_cgroup(o->cgroup, msg, len);
		if (t->cgroup_fd < 0)
			return t->cgroup_fd;
		cgroup_id_level(t->cgroup_fd, &t->cgroup_id, &t->cgroup_level);
	}
	return 0;
}

int targets__track(struct targets *t, int pid)
{
	return intset__add(&t->tracked, pid) < 0 ? -ENOMEM : 0;
}

bool targets__keep_sideband(struct targets *t, const struct perf_event_header *h)
{
	struct perf_record_task task; /* pid first, as in COMM, MMAP and MMAP2 */
	struct perf_record_comm c; /* the common pid, tid prefix */
	int pid;

	switch (h->type) {
	case PERF_RECORD_FORK:
		if (!perf_record__copy(h, &task, sizeof(task)))
			return true;
		pid = (int)task.pid;
		if (t->follow && intset__has(&t->tracked, (int)task.ppid))
			intset__add(&t->tracked, pid);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_EXIT:
		if (!perf_record__copy(h, &c, sizeof(c)))
			return true;
		pid = (int)c.pid;
		break;
	default:
		return true;
	}
	return !t->filter || intset__has(&t->tracked, pid);
}

bool targets__keep_sample(const struct targets *t, int tid, bool tracked)
{
	if (t->only_tids)
		return intset__has(&t->tids, tid);
	return !t->filter || tracked;
}

void targets__free(struct targets *t)
{
	intset__free(&t->tracked);
	intset__free(&t->tids);
	if (t->cgroup_fd >= 0)
		close(t->cgroup_fd);
	t->cgroup_fd = -1;
}
