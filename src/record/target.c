// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "target.h"
#include "../util/util.h"

int workload__prepare(struct workload *w, char **argv)
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
		/* Wait for the collector; EOF (parent died) means do not run. */
		if (read(go[0], &c, 1) != 1)
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

int workload__start(struct workload *w)
{
	int e = 0;
	ssize_t n;

	if (write(w->go_fd, "g", 1) != 1)
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
