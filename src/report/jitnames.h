/* SPDX-License-Identifier: GPL-2.0 */
/*
 * JIT frames named whatever the time of their names. A frame in a process's
 * anonymous executable memory that no named code held when its sample was
 * resolved (a JVM writes its perf map at its exit; jcmd Compiler.perfmap
 * mid-run; offcpu record then names the frames of earlier samples by
 * records written after them) is noted with its process and address; at
 * the end of the session each such frame is named by the named code its
 * process has by then. A process the recording named no JIT code of has its
 * map read at report time, as perf does: /tmp/perf-PID.map on this machine,
 * opened as objread.h opens another user's file (no link followed, no file
 * system a user serves, never waited for), only if it is a regular file
 * owned by the user running the report or by root (perf's rule), read up to
 * JITNAMES_MAP_MAX bytes and JITNAMES_ENTRIES_MAX entries; the report says
 * it read one (it may be another process's by now: its pid reused).
 *
 * A frame shared by processes (the same object and address) is named only
 * if one process used it. Outputs that render names as the samples come
 * (--perfetto) keep the names the samples had.
 */
#ifndef OFFCPU_REPORT_JITNAMES_H
#define OFFCPU_REPORT_JITNAMES_H

#include <stdint.h>
#include "profile.h"
#include "threads.h"
#include "../util/hashmap.h"
#include "../util/intset.h"

#define JITNAMES_MAP_MAX (64ULL << 20)
#define JITNAMES_ENTRIES_MAX (1u << 20)

struct jitname_note {
	uint32_t frame, pid; /* pid UINT32_MAX: used by more than one process */
	uint64_t addr;
};

struct jitnames {
	struct hashmap of_frame; /* frame id -> 1 + index in notes */
	struct jitname_note *notes;
	size_t nr, cap;
	struct intset tried; /* processes whose map was looked for at report time */
	/* what happened, for the report's messages */
	uint64_t named; /* frames named at the end */
	uint32_t maps_read, first_read;
	uint32_t maps_refused, first_refused;
	const char *refused_why;
};

void jitnames__init(struct jitnames *j);
void jitnames__free(struct jitnames *j);

/* Frame @frame is the unnamed address @addr of process @pid's anonymous memory. 0 or -ENOMEM. */
int jitnames__note(struct jitnames *j, uint32_t frame, uint32_t pid, uint64_t addr);

/*
 * Name the noted frames of @p by the named code @th has now, reading the
 * maps of processes the recording named no JIT code of; says what it read.
 * 0 or -ENOMEM.
 */
int jitnames__finish(struct jitnames *j, struct threads *th, struct profile *p);

#endif
