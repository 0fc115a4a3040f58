// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/auxv.h>
#include <elf.h>
#include "options.h"
#include "target.h"
#include "../perfdata/format.h"
#include "../util/util.h"

#define CGROUP2_SUPER_MAGIC 0x63677270

int workload__prepare(struct workload *w, char **argv, bool stdout_to_stderr)
{
	int go[2], errp[2];
	pid_t pid;

	memset(w, 0, sizeof(*w));
	w->pidfd = -1;
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(errp, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		close(errp[0]);
		close(errp[1]);
		return err;
	}
	if (pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(errp[0]);
		sigset_t none;

		/*
		 * Signals offcpu catches go back to their default here (exec would
		 * do it too); those ignored from the start (nohup) stay ignored.
		 * SIGPIPE is ignored by offcpu itself: the command gets the default.
		 */
		for (int sig = 1; sig < NSIG; sig++) {
			struct sigaction cur;

			if (sig != SIGKILL && sig != SIGSTOP && !sigaction(sig, NULL, &cur) &&
			    cur.sa_handler != SIG_IGN && cur.sa_handler != SIG_DFL)
				signal(sig, SIG_DFL);
		}
		signal(SIGPIPE, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* offcpu's stdout is the recording (-o -): the command's goes to stderr, as perf does */
		if (stdout_to_stderr && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(127);
		/* Wait for the collector; EOF (parent died) means do not run. */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		/* held at its entry point (workload__start): stopped by the exec */
		if (c == 'h' && ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			_exit(127);
		execvp(argv[0], argv);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(errp[1]);
	w->pid = pid;
	w->go_fd = go[1];
	w->err_fd = errp[0];
	w->pidfd = pidfd_for(pid);
	return 0;
}

#if defined(__x86_64__)
/* The program's entry point, from its auxiliary vector. */
static uint64_t entry_point(int pid)
{
	uint64_t av[2], entry = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	f = fopen(path, "re");
	while (f && fread(av, sizeof(av), 1, f) == 1 && av[0] != AT_NULL)
		if (av[0] == AT_ENTRY)
			entry = av[1];
	if (f)
		fclose(f);
	return entry;
}

/* Wait for the traced child's next stop: 0, or -ECHILD when it ended (reaped). */
static int wait_stop(struct workload *w, int *st)
{
	if (waitpid(w->pid, st, 0) != w->pid)
		return -errno;
	if (!WIFSTOPPED(*st)) {
		w->status = *st;
		w->reaped = true;
		return -ECHILD;
	}
	return 0;
}

/*
 * Run the traced child, stopped after its exec, up to its entry point: the
 * dynamic loader has mapped its libraries then and nothing of the program
 * has run. Call @at_entry there, then let it go. Returns 0, or -errno when
 * it could not be held (it runs on untraced), or -ECHILD when it ended.
 */
static int hold_at_entry(struct workload *w, void (*at_entry)(void *arg, int pid), void *arg)
{
	struct user_regs_struct regs;
	uint64_t entry;
	long orig;
	int st, sig = 0, err = 0;

	err = wait_stop(w, &st);
	if (err)
		return err;
	/* the program and the dynamic loader are mapped: the loader's blocks
	 * (reading the libraries) come before the entry point */
	at_entry(arg, w->pid);
	entry = entry_point(w->pid);
	errno = 0;
	orig = entry ? ptrace(PTRACE_PEEKTEXT, w->pid, (void *)entry, NULL) : -1;
	if (!entry || errno ||
	    ptrace(PTRACE_POKETEXT, w->pid, (void *)entry, (void *)((orig & ~0xffL) | 0xcc))) {
		err = entry ? -errno : -ENOENT;
		ptrace(PTRACE_DETACH, w->pid, NULL, NULL);
		return err;
	}
	for (;;) {
		if (ptrace(PTRACE_CONT, w->pid, NULL, (void *)(long)sig))
			return -errno;
		err = wait_stop(w, &st);
		if (err)
			return err;
		sig = WSTOPSIG(st);
		if (sig != SIGTRAP)
			continue; /* its own signal: delivered */
		if (ptrace(PTRACE_GETREGS, w->pid, NULL, &regs))
			return -errno;
		if (regs.rip == entry + 1)
			break;
	}
	regs.rip = entry;
	if (ptrace(PTRACE_POKETEXT, w->pid, (void *)entry, (void *)orig) ||
	    ptrace(PTRACE_SETREGS, w->pid, NULL, &regs))
		err = -errno;
	if (!err)
		at_entry(arg, w->pid);
	if (ptrace(PTRACE_DETACH, w->pid, NULL, NULL) && !err)
		err = -errno;
	return err;
}
#endif

int workload__start(struct workload *w, void (*at_entry)(void *arg, int pid), void *arg)
{
	int e = 0;
	ssize_t n;
	bool hold = false;

#if defined(__x86_64__)
	hold = at_entry != NULL;
#endif
	if (write(w->go_fd, hold ? "h" : "g", 1) != 1)
		return -errno;
	close(w->go_fd);
	w->go_fd = -1;
	do
		n = read(w->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(w->err_fd);
	w->err_fd = -1;
	if (n == sizeof(e)) {
		waitpid(w->pid, &w->status, 0);
		w->reaped = true;
		return -e;
	}
#if defined(__x86_64__)
	if (hold) {
		e = hold_at_entry(w, at_entry, arg);
		if (e && e != -ECHILD)
			pr_warn("could not hold the command at its entry point (%s): its first blocks may "
				"be walked before its unwind tables are loaded", strerror(-e));
	}
#endif
	return 0;
}

bool workload__reap(struct workload *w)
{
	if (w->reaped)
		return true;
	if (waitpid(w->pid, &w->status, WNOHANG) == w->pid)
		w->reaped = true;
	return w->reaped;
}

void workload__kill(struct workload *w, int sig)
{
	if (!w->pid)
		return;
	if (w->go_fd >= 0) {
		close(w->go_fd); /* a child still waiting sees EOF and exits */
		w->go_fd = -1;
	}
	if (w->err_fd >= 0) {
		close(w->err_fd);
		w->err_fd = -1;
	}
	if (!w->reaped) {
		kill(w->pid, sig);
		w->signal_sent = sig;
		/* SIGTERM is a request: a command that ignores it for 2 s is killed */
		if (sig == SIGTERM && w->pidfd >= 0) {
			struct pollfd p = { .fd = w->pidfd, .events = POLLIN };

			if (poll(&p, 1, 2000) == 0) {
				kill(w->pid, SIGKILL);
				w->signal_sent = SIGKILL;
			}
		}
		waitpid(w->pid, &w->status, 0);
		w->reaped = true;
	}
	if (w->pidfd >= 0) {
		close(w->pidfd);
		w->pidfd = -1;
	}
}

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
