/* SPDX-License-Identifier: GPL-2.0 */
/* What to record: a workload started by offcpu, existing processes or threads. */
#ifndef OFFCPU_TARGET_H
#define OFFCPU_TARGET_H

#include <stdbool.h>
#include <sys/types.h>

struct workload {
	pid_t pid;
	int go_fd; /* write end: releases the child */
	int err_fd; /* read end: errno from a failed exec, EOF on success */
	int pidfd;
	int status; /* wait status once reaped */
	bool reaped;
};

/* Fork a child that waits, then execs @argv. Returns 0 or -errno. */
int workload__prepare(struct workload *w, char **argv);
/* Release the child. Returns 0 once it exec'd, or -errno of the failed exec. */
int workload__start(struct workload *w);
/* Reap without blocking; true once it has exited. */
bool workload__reap(struct workload *w);
/* Kill a prepared or running workload and reap it. */
void workload__kill(struct workload *w, int sig);

/* Is @tid a kernel thread (PF_KTHREAD)? offcpu never records those. */
bool is_kernel_thread(int tid);
/* The process id of thread @tid, or -errno (-ESRCH when it does not exist). */
int tid_to_tgid(int tid);
/* Whether thread @tid of process @tgid still exists. */
bool thread_alive(int tgid, int tid);
/* A pidfd for @pid, or -errno. */
int pidfd_for(pid_t pid);

#endif
