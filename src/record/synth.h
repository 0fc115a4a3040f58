/* SPDX-License-Identifier: GPL-2.0 */
/* COMM and MMAP2 (and CGROUP) records synthesized from /proc for what already runs. */
#ifndef OFFCPU_SYNTH_H
#define OFFCPU_SYNTH_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

struct synth {
	uint64_t sample_type; /* the trailer layout (sample_id_all) */
	uint64_t id; /* the id the trailer carries */
	uint64_t time; /* the time the trailer carries */
	int (*emit)(const struct perf_event_header *rec, void *arg);
	void *arg;
};

/* COMM for every thread of @tgid and MMAP2 for its executable mappings.
 * Returns 0, -ESRCH when the process is gone (or went while it was read),
 * or another -errno. */
int synth__process(const struct synth *s, int tgid);
/* Every process on the system (kernel threads get COMM only). */
int synth__all(const struct synth *s);
/* One CGROUP record per directory under the cgroup v2 mount @root. */
int synth__cgroups(const struct synth *s, const char *root);
/* Build and emit a COMM record. */
int synth__comm(const struct synth *s, int pid, int tid, const char *comm);
/* Build and emit a MMAP2 record. */
int synth__mmap2(const struct synth *s, int pid, int tid, uint64_t start, uint64_t len,
		 uint64_t pgoff, uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot,
		 uint32_t flags, uint16_t misc, const char *filename);

/* The kernel's MMAP ([kernel.kallsyms]_text at _text, pid -1) perf needs to
 * name kernel frames with kallsyms. Returns 0, or -ENOENT without _text. */
int synth__kernel_mmap(const struct synth *s);

/*
 * A named frame's MMAP2 (offcpu.h, "Named frames"): process @pid's code at
 * [@start, @start + @len), r-x and private, named @name ("[py] ...", "[jit] ...").
 */
int synth__named(const struct synth *s, int pid, uint64_t start, uint64_t len, const char *name);

struct perf_queue;
/* An emit target (struct synth's arg): records pushed into @q at @time as @kind. */
struct synth_queue {
	struct perf_queue *q;
	uint64_t time;
	int kind;
};
int synth__to_queue(const struct perf_event_header *rec, void *arg);

#endif
