// SPDX-License-Identifier: GPL-2.0
/* The command offcpu starts (workload.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "hold.h"
#include "target.h"
#include "workload.h"
#include "../util/util.h"

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
		execvp(argv[0], argv);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(errp[1]);
	w->pid = pid;
	w->file = argv[0];
	w->go_fd = go[1];
	w->err_fd = errp[0];
	w->pidfd = pidfd_for(pid);
	return 0;
}

int workload__start(struct workload *w, void (*load)(void *arg, int pid), void *arg,
		    volatile sig_atomic_t *stop)
{
	int e = 0;
	ssize_t n;
	bool hold = false;
#if defined(__x86_64__)
	char why[256];

	/* seized while it waits for the go: the exec is its first stop */
	if (load) {
		hold = !hold__seize(w, why, sizeof(why));
		if (!hold)
			pr_warn("cannot hold the command before it runs: %s; its first blocks "
				"may be walked before its unwind tables are loaded", why);
	}
#endif
	if (write(w->go_fd, "g", 1) != 1)
		return -errno;
	close(w->go_fd);
	w->go_fd = -1;
#if defined(__x86_64__)
	if (hold) {
		e = hold__until_loaded(w, load, arg, stop);
		if (e && e != -ECHILD && e != -EAGAIN)
			pr_warn("could not hold the command until its unwind tables were "
				"loaded (%s): its first blocks may be walked before they are",
				strerror(-e));
		e = 0;
	}
#endif
	/* at EOF once it exec'd (the pipe is close-on-exec): no wait after a hold */
	do
		n = read(w->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(w->err_fd);
	w->err_fd = -1;
	if (n == sizeof(e)) {
		if (!w->reaped)
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
