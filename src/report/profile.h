/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The analysed profile every output reads: interned strings, frames (one per
 * distinct function, or function and source line with --lines), stacks
 * (frame ids, root first) and rows (event, process, thread, command, stack)
 * with their summed period and sample count. The session fills it; outputs
 * only read it.
 */
#ifndef OFFCPU_REPORT_PROFILE_H
#define OFFCPU_REPORT_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "../util/hashmap.h"

struct strtab {
	struct hashmap idx;
	char **strs;
	uint32_t nr, cap;
};

/* Intern @s; returns its index, or UINT32_MAX when out of memory. Index 0 is "". */
uint32_t strtab__add(struct strtab *t, const char *s);
static inline const char *strtab__get(const struct strtab *t, uint32_t i)
{
	return i < t->nr ? t->strs[i] : "";
}

struct profile_dso {
	uint32_t name; /* path as recorded */
	uint32_t short_name; /* basename */
	uint8_t build_id[20];
	uint8_t build_id_len;
	bool kernel;
	uint64_t max_addr; /* highest address seen, for pprof mappings */
};

struct profile_frame {
	uint32_t sym; /* function name (strtab); "[unknown]" when not found */
	uint32_t dso; /* index into dsos, UINT32_MAX when the address has no mapping */
	uint32_t file; /* source file with --lines, else 0 */
	uint32_t line;
	uint64_t addr; /* address in the dso (file-relative) of the first sample seen */
	bool kernel, inlined;
};

struct profile_stack {
	uint32_t nr;
	uint32_t first; /* into profile.stack_frames: nr frame ids, root first */
};

struct profile_row {
	uint32_t event, pid, tid, comm, stack;
	uint32_t exe; /* dso of the process's executable (its first mapping since exec), or UINT32_MAX */
	uint32_t state; /* off-CPU: the state waited in + 1 (enum offcpu_state, runqueue); 0 unknown */
	uint32_t waker; /* who ended the wait, and its chain ("w <- its waker"); 0: none recorded */
	uint64_t period, count;
};

struct profile_event {
	uint32_t name;
	bool offcpu; /* value is blocked time (ns), not samples */
	uint64_t period, count; /* totals after filters */
};

struct profile {
	struct strtab str;
	struct profile_event *events;
	uint32_t nr_events;
	struct profile_dso *dsos;
	uint32_t nr_dsos, cap_dsos;
	struct hashmap dso_idx;
	struct profile_frame *frames;
	uint32_t nr_frames, cap_frames;
	struct hashmap frame_idx;
	uint32_t *stack_frames;
	uint64_t nr_stack_frames, cap_stack_frames;
	struct profile_stack *stacks;
	uint32_t nr_stacks, cap_stacks;
	struct hashmap stack_idx;
	struct profile_row *rows;
	uint32_t nr_rows, cap_rows;
	struct hashmap row_idx;
	uint64_t lost_records, lost_samples;
	uint64_t first_time, last_time;
	bool has_states; /* off-CPU samples carry their state (offcpu 0.2+) */
	bool has_wakers; /* the file has offcpu-waker samples (record --wakers) */
	bool show_states; /* outputs root each stack with its state: [S];comm;... */
	uint32_t state_roots[8]; /* with show_states: the strings of profile__state_root(0..6) */
};

int profile__init(struct profile *p, uint32_t nr_events);
void profile__free(struct profile *p);

/* Intern a dso by path and build id; returns its index or UINT32_MAX. */
uint32_t profile__dso(struct profile *p, const char *path, const uint8_t *build_id,
		      size_t build_id_len, bool kernel);
/* Intern a frame; frames are equal when name, dso, file and line are. */
uint32_t profile__frame(struct profile *p, const struct profile_frame *f);
/* Intern a stack of @nr frame ids, root first. */
uint32_t profile__stack(struct profile *p, const uint32_t *frames, uint32_t nr);
/* Find or add the row for this key; returns its index or UINT32_MAX. */
uint32_t profile__row(struct profile *p, uint32_t event, uint32_t pid, uint32_t tid,
		      uint32_t comm, uint32_t stack, uint32_t state, uint32_t waker);
/* A row's state as a column ("S", "D", "preempted", "runqueue", "?") or a root ("[S]"). */
const char *profile__state_name(uint32_t state);
const char *profile__state_root(uint32_t state);

static inline const uint32_t *profile__stack_frames(const struct profile *p, uint32_t stack,
						    uint32_t *nr)
{
	*nr = p->stacks[stack].nr;
	return p->stack_frames + p->stacks[stack].first;
}

/* Value of a row or total in its event's unit: ns for off-CPU, samples otherwise. */
static inline uint64_t profile__value(const struct profile *p, uint32_t event, uint64_t period,
				      uint64_t count)
{
	return p->events[event].offcpu ? period : count;
}

/*
 * The event an output of one event shows: @name, else offcpu-time, else the
 * first with samples (else, with a warning, offcpu-time or the first).
 * Returns -1 with a message when @name is not there or there is no event.
 */
int profile__pick_event(const struct profile *p, const char *name);

/* A frame's function name and binary; UINT32_MAX (no frame) gives placeholders. */
const char *profile__frame_name(const struct profile *p, uint32_t frame);
const char *profile__frame_dso(const struct profile *p, uint32_t frame);

/* Output writers; each returns 0 or -errno. */
struct text_opts {
	int keys[8];
	size_t nr_keys;
	double min_percent;
	int top; /* entries whose call paths are shown */
};
enum sort_key { SORT_COMM, SORT_PID, SORT_TID, SORT_DSO, SORT_SYM, SORT_STATE, SORT_WAKER, SORT_NR };

int text__write(const struct profile *p, const struct text_opts *o, FILE *f);
int folded__write(const struct profile *p, int event, FILE *f);
int pprof__write(const struct profile *p, int event, int fd);
int svg__write(const struct profile *p, int event, const char *title, FILE *f);
int json__write(const struct profile *p, FILE *f);

#endif
