/* SPDX-License-Identifier: GPL-2.0 */
/* The command offcpu starts and records (-- COMMAND): prepared, held, released, reaped. */
#ifndef OFFCPU_WORKLOAD_H
#define OFFCPU_WORKLOAD_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

struct workload {
	pid_t pid;
	const char *file; /* what it execs (argv[0]) */
	int go_fd; /* write end: releases the child */
	int err_fd; /* read end: errno from a failed exec, EOF on success */
	int pidfd;
	int status; /* wait status once reaped */
	bool reaped;
	int signal_sent; /* what workload__kill() sent it, 0: nothing */
};

/*
 * Fork a child that waits, then execs @argv; with @stdout_to_stderr its
 * standard output is offcpu's standard error. Returns 0 or -errno.
 */
int workload__prepare(struct workload *w, char **argv, bool stdout_to_stderr);
/*
 * Release the child. Returns 0 once it exec'd, or -errno of the failed exec.
 * With @load (x86-64), the command is held while @load loads its unwind
 * tables: at its exec (the program and its dynamic loader mapped), then at
 * its first system call from outside the loader (its libraries mapped, none
 * of their code or the program's blocked yet). The hold changes nothing in
 * the command and the kernel undoes it if offcpu dies; once *@stop is set,
 * it ends at once. A command that cannot be held (traced already, a
 * privileged exec) runs unheld, with a warning.
 */
int workload__start(struct workload *w, void (*load)(void *arg, int pid), void *arg,
		    volatile sig_atomic_t *stop);
/* Reap without blocking; true once it has exited. */
bool workload__reap(struct workload *w);
/* Kill a prepared or running workload and reap it (SIGTERM: SIGKILL after 2 s). */
void workload__kill(struct workload *w, int sig);

#endif
