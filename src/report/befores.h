/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The threads waiting since before the recording began: a consumer of the
 * session's samples (stream.h). Each offcpu-before sample is a thread
 * blocked at the start, listed (profile.befores) when --pid, --tid, --comm
 * and --event let it through; what became of its wait (how long it lasted
 * into the recording, or that it lasted to the end) is told at the end from
 * all its thread's offcpu-time samples, whatever the filters, and from its
 * thread's fork (a tid given to a new thread) and exit.
 */
#ifndef OFFCPU_REPORT_BEFORES_H
#define OFFCPU_REPORT_BEFORES_H

#include "profile.h"
#include "stream.h"

struct before_track;

struct befores {
	struct sample_consumer c;
	struct profile *p;
	struct hashmap track_idx; /* tid -> index into tracks */
	struct before_track *tracks;
	size_t nr_tracks, cap_tracks;
	uint64_t offcpu_last; /* the newest offcpu-time sample: the last drain of summed blocks */
};

void befores__init(struct befores *b, struct profile *p);
/* Once every sample was consumed: each listed wait's end and length, longest first. */
void befores__finish(struct befores *b);
void befores__free(struct befores *b);

#endif
