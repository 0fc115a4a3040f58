/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What to record: a workload started by offcpu, existing processes or
 * threads, a cgroup; their resolution, liveness, and the one process filter
 * every mode applies to side-band and on-CPU samples.
 */
#ifndef OFFCPU_TARGET_H
#define OFFCPU_TARGET_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>
#include "../util/intset.h"

struct record_opts;

struct targets {
	struct intset tracked; /* processes whose side-band and samples are kept */
	struct intset tids; /* -t: threads whose on-CPU samples are kept */
	bool filter; /* keep only what concerns tracked processes */
	bool follow; /* a process forked by a tracked one is tracked */
	bool only_tids; /* -t: on-CPU samples of those threads only */
	int cgroup_fd; /* -G, or -1 */
	uint64_t cgroup_id; /* -G: its id and depth below the root */
	uint32_t cgroup_level;
};

/*
 * Resolve -p, -t and -G of @o: every pid becomes its process id (o->pids is
 * rewritten), a missing one or a kernel thread is refused, the cgroup is
 * opened. Returns 0 or -errno with the reason in @msg.
 */
int targets__init(struct targets *t, struct record_opts *o, char *msg, size_t len);
/* A process to follow from the start (the workload). */
int targets__track(struct targets *t, int pid);
/*
 * The process filter for side-band (COMM, MMAP, FORK, EXIT), in time order:
 * a FORK of a tracked process makes its child tracked. Other records pass.
 */
bool targets__keep_sideband(struct targets *t, const struct perf_event_header *h);
/*
 * Is an on-CPU sample of thread @tid one of the targets'? @tracked says whether
 * its process is followed, as the caller knows it (the tracked set, or the
 * collector's view in a writer thread).
 */
bool targets__keep_sample(const struct targets *t, int tid, bool tracked);
void targets__free(struct targets *t);

/* Where the cgroup v2 hierarchy is mounted. Returns 0 or -ENOENT. */
int cgroup2_mount(char *out, size_t cap);
/* Root, or CAP_BPF and CAP_PERFMON. */
bool have_capabilities(void);

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

/* Is @tid a kernel thread (PF_KTHREAD)? offcpu never records those. */
bool is_kernel_thread(int tid);
/* The process id of thread @tid, or -errno (-ESRCH when it does not exist). */
int tid_to_tgid(int tid);
/* Whether thread @tid of process @tgid still exists. */
bool thread_alive(int tgid, int tid);
/* A pidfd for @pid, or -errno. */
int pidfd_for(pid_t pid);

#endif
