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
	size_t given; /* -p's processes */
	size_t descendants; /* and those they forked before the recording, followed too */
	int cgroup_fd; /* -G, or -1 */
	uint64_t cgroup_id; /* -G: its id and depth below the root */
	uint32_t cgroup_level;
};

/*
 * Resolve -p, -t and -G of @o: every pid becomes its process id (o->pids is
 * rewritten), a missing one or a kernel thread is refused, the cgroup is
 * opened; unless --no-inherit, the processes -p's processes forked before
 * (their children, and theirs) are added to o->pids. Returns 0 or -errno
 * with the reason in @msg.
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

/* Is @tid a kernel thread (PF_KTHREAD)? offcpu never records those. */
bool is_kernel_thread(int tid);
/* The process id of thread @tid, or -errno (-ESRCH when it does not exist). */
int tid_to_tgid(int tid);
/* Whether thread @tid of process @tgid still exists. */
bool thread_alive(int tgid, int tid);
/* A pidfd for @pid, or -errno. */
int pidfd_for(pid_t pid);

#endif
