/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The analysed profile every output reads: interned strings, frames (one per
 * distinct function, or function and source line with --lines), stacks
 * (frame ids, root first) and rows (event, process, thread, command, stack,
 * and for off-CPU time the wait's state and waker) with their summed period
 * and sample count; and the threads that were already waiting when the
 * recording began (offcpu-before), apart from the rows.
 *
 * The session interns names, frames and stacks here as it resolves samples
 * (every consumer of its stream reads them, stream.h); the rows are the
 * aggregate of that stream (profile_sink, one consumer of it), the
 * before-waits another's (befores.h). Outputs only read the profile.
 */
#ifndef OFFCPU_REPORT_PROFILE_H
#define OFFCPU_REPORT_PROFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "../offcpu.h"
#include "../util/hashmap.h"
#include "stream.h"

#ifndef OFFCPU_BEFORE_EVENT_NAME
/*
 * offcpu record's event for the threads blocked when the recording began:
 * one sample each, at the recording's start, whose period is how long the
 * block had lasted by then (0: not known), whose call chain is the block's
 * and whose weight its state, as offcpu-time's. The block's time during the
 * recording is in offcpu-time, as any block's. (Defined here until the
 * recorder's perf.data definitions have it; the same text.)
 */
#define OFFCPU_BEFORE_EVENT_NAME "offcpu-before"
#endif

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

/* Whose code a dso is, for --sort runtime. */
enum dso_runtime {
	DSO_NATIVE = 0,
	DSO_PYTHON, /* offcpu's named Python frames ("[python]") */
	DSO_JS, /* offcpu's named JavaScript frames ("[js]") */
	DSO_JIT, /* code named from a perf map ("[jit]") */
	DSO_GO, /* a Go object */
};

struct profile_dso {
	uint32_t name; /* path as recorded */
	uint32_t short_name; /* basename */
	uint8_t build_id[20];
	uint8_t build_id_len;
	bool kernel;
	uint8_t runtime; /* enum dso_runtime */
	uint64_t max_addr; /* highest address seen, for pprof mappings */
};

struct profile_frame {
	uint32_t sym; /* function name (strtab); "[unknown]" when not found */
	uint32_t dso; /* index into dsos, UINT32_MAX when the address has no mapping */
	uint32_t file; /* source file with --lines, else 0 */
	uint32_t line;
	uint64_t addr; /* address in the dso (file-relative) of the first sample seen */
	bool kernel, inlined;
	bool label; /* not code: a name drawn as a frame ([S], "--", a waker's name) */
};

struct profile_stack {
	uint32_t nr;
	uint32_t first; /* into profile.stack_frames: nr frame ids, root first */
};

/*
 * A row's identity is everything but exe, period and count. Off-CPU rows
 * also say why the thread waited: the state (from the sample's weight) and,
 * when an offcpu-waker sample followed the wait, who woke it. A row with
 * period and count 0 (none is made so today) is skipped by every output
 * (profile__row_empty).
 */
struct profile_row {
	uint32_t event, pid, tid, comm, stack;
	uint32_t wait; /* what it waited on: 1 + its index in waits; 0: not known */
	uint32_t state; /* the state waited in + 1 (enum offcpu_state, runqueue); 0 unknown */
	uint32_t waker; /* strtab: the waker's name (chain[0]); 0: no wakeup recorded */
	uint32_t chain; /* strtab: who woke the waker just before, and so on: "b;c"; 0 none */
	uint32_t waker_stack; /* the waker's stack, root first; UINT32_MAX none */
	uint32_t exe; /* dso of the process's executable (its first mapping since exec), or UINT32_MAX */
	uint64_t period, count;
};

struct profile_event {
	uint32_t name;
	bool offcpu; /* value is blocked time (ns), not samples */
	uint64_t period, count; /* totals after filters */
};

/*
 * What the recording saw of a wait under way at its start (how the session
 * tells, session.c finish_befores()):
 *   TO_END    still waiting when the recording ended: @during is all of it
 *   ENDED     it ended @during after the start (its offcpu-time sample says)
 *   ENDED_BY  it ended during the recording, within @during of the start (a
 *             short block, summed where its own length cannot be told)
 *   NOT_SEEN  no offcpu-time sample of the thread: @during is 0 (the wait
 *             went on past this file's end, --switch-output, or was lost)
 */
enum before_end { BEFORE_TO_END, BEFORE_ENDED, BEFORE_ENDED_BY, BEFORE_NOT_SEEN };

/*
 * What waits waited on (offcpu-wait, waitobj.c), one entry per object: a
 * futex address in a process, a file (device and inode) any process may
 * share, a system call with no object. Its kind is the most a wait on it
 * told: a futex is a mutex when a wait's stack was in pthread_mutex_lock.
 */
enum wait_kind {
	WAIT_KIND_FUTEX, /* a futex nothing told more of */
	WAIT_KIND_MUTEX,
	WAIT_KIND_LIBC_LOCK, /* glibc's own internal lock (__lll_lock_wait_private) */
	WAIT_KIND_CONDVAR,
	WAIT_KIND_RWLOCK,
	WAIT_KIND_SEMAPHORE,
	WAIT_KIND_BARRIER,
	WAIT_KIND_JOIN, /* pthread_join: the joined thread's id is the owner */
	WAIT_KIND_PIPE,
	WAIT_KIND_SOCKET,
	WAIT_KIND_FILE,
	WAIT_KIND_FILE_LOCK, /* flock, fcntl(F_SETLKW) */
	WAIT_KIND_EVENTFD,
	WAIT_KIND_TIMERFD,
	WAIT_KIND_SIGNALFD,
	WAIT_KIND_EPOLL,
	WAIT_KIND_DEVICE,
	WAIT_KIND_FD, /* a descriptor offcpu could not read */
	WAIT_KIND_NONE, /* no object: the system call alone (a thread waiting at the end) */
	WAIT_KIND_NR,
};

struct profile_wait {
	uint32_t kind; /* enum wait_kind */
	uint32_t pid; /* whose address or descriptor (0: a file any process may share) */
	uint64_t addr; /* a futex's address */
	uint64_t ino; /* a file's inode and device */
	uint32_t dev;
	uint32_t syscall; /* the system call of its first wait (x86-64 number); ~0: none */
	uint32_t name; /* strtab: what it is, without its kind: "lk_mutex (locks)", "pipe:[1234]" */
	int32_t fd; /* the descriptor of its first wait; -1 */
	/* a socket's, to find its peer among the others */
	uint16_t family, protocol, lport, rport;
	uint8_t laddr[16], raddr[16];
	uint64_t peer_ino; /* a unix socket's peer */
};

/* A thread waiting when the recording began (its offcpu-before sample), after the filters. */
struct profile_before {
	uint32_t pid, tid, comm;
	uint32_t stack; /* the wait's call chain as the sample has it, root first */
	uint32_t state; /* + 1, as a row's; 0 unknown */
	uint32_t own; /* the frame it waits in (profile__own_frame); UINT32_MAX: no frame */
	uint32_t end; /* enum before_end */
	uint64_t start; /* the sample's time: the recording's start (CLOCK_MONOTONIC ns) */
	uint64_t before; /* ns it had waited by then; 0: not known */
	uint64_t during; /* ns it went on waiting in the recording, as @end says */
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
	/*
	 * The recording's span (CLOCK_MONOTONIC ns; 0, 0: not known), within
	 * --time: from its start (offcpu-before's time, else the earliest block's
	 * start, offcpu-time's time less its period, else the first sample) to
	 * its last sample (offcpu's last drain of summed blocks, at its end).
	 */
	uint64_t start_time, end_time;
	bool has_states; /* offcpu-time samples carry their state (weight; offcpu 0.2+) */
	bool has_wakers; /* the file declares the offcpu-waker event (record --wakers) */
	uint64_t orphan_wakers; /* offcpu-waker samples not right after their wait: ignored */
	/* threads waiting when the recording began, longest wait first; their
	 * samples are in no row unless --event offcpu-before chose them */
	struct profile_before *befores;
	uint32_t nr_befores, cap_befores;
	bool has_before; /* the file declares the offcpu-before event */
	/* CLOCK_DATA: the wall-clock time (ns since the epoch) of a CLOCK_MONOTONIC instant */
	bool has_clock;
	uint64_t clock_wall_ns, clock_mono_ns;
	/* what folded, SVG and pprof draw (report --states, --wakers): profile__row_frames */
	bool show_states, show_wakers;
	bool show_srcline; /* folded: NAME (FILE:LINE) where the source is known */
	uint32_t sep_frame; /* the label "--" between a wakee's and its waker's frames */
	uint32_t state_frames[OFFCPU_STATES_ALL + 1]; /* labels [?], [preempted], [S], ... by row state */
	/* what waits waited on (offcpu-wait), waitobj.c */
	struct profile_wait *waits;
	uint32_t nr_waits, cap_waits;
	struct hashmap wait_idx;
	bool has_waits; /* the file declares offcpu-wait (offcpu record 0.2+) */
	uint64_t wait_samples, wait_samples_switch; /* offcpu-wait samples; of them, taken at a switch-out */
	uint64_t orphan_waits; /* offcpu-wait samples not right after their wait: ignored */
};

int profile__init(struct profile *p, uint32_t nr_events);
void profile__free(struct profile *p);
/* Have at least @nr events (new ones zeroed: no name yet). 0 or -ENOMEM. */
int profile__events(struct profile *p, uint32_t nr);

/*
 * The rows as a consumer of the session's samples: each sample the filters
 * let through (SAMPLE_ROWS) adds its period and a count to its row (made on
 * its first sample) and to its event's totals.
 */
struct profile_sink {
	struct sample_consumer c;
	struct profile *p;
};
void profile_sink__init(struct profile_sink *k, struct profile *p);
int profile__add_sample(struct profile *p, const struct report_sample *s);

/* Intern a dso by path and build id; returns its index or UINT32_MAX. */
uint32_t profile__dso(struct profile *p, const char *path, const uint8_t *build_id,
		      size_t build_id_len, bool kernel);
/* Intern a frame; frames are equal when name, dso, file and line are. */
uint32_t profile__frame(struct profile *p, const struct profile_frame *f);
/* Intern a stack of @nr frame ids, root first. */
uint32_t profile__stack(struct profile *p, const uint32_t *frames, uint32_t nr);
/* Intern a label frame named @name; returns its id or UINT32_MAX. */
uint32_t profile__label(struct profile *p, const char *name);
/* The label frame of the first @len bytes of @name, interned before; UINT32_MAX if none. */
uint32_t profile__find_label(const struct profile *p, const char *name, size_t len);
/*
 * Find or add the row with @key's identity (event, pid, tid, comm, stack,
 * state, waker, chain, waker_stack; a key without a waker has no chain and
 * no waker stack). Returns its index or UINT32_MAX.
 */
uint32_t profile__row(struct profile *p, const struct profile_row *key);
/* A row's state as a column ("S", "D", "preempted", "runqueue", "?"). */
const char *profile__state_name(uint32_t state);
/* Who woke a row's wait as one string: "w", "w <- b <- c"; "[none]" when not recorded. */
const char *profile__waker_text(const struct profile *p, const struct profile_row *r, char *buf,
				size_t cap);
/*
 * The frames folded, SVG and pprof draw for row @r, root first, into @out
 * (@cap entries): with show_states the state's label ([S]; off-CPU rows
 * only), the row's stack, and with show_wakers, when the row has a waker,
 * "--", the waker's frames innermost first, its name and the hops before
 * it: BCC offwaketime's layout, which flamegraph.pl draws with the waker on
 * top. The command is not among them: folded and SVG put it at *comm_at.
 * One definition for the three outputs, so that they draw the same stacks.
 * @*buf holds *@cap entries and grows as needed (free it after the last
 * row). Returns how many frames, or -ENOMEM.
 */
int profile__row_frames(const struct profile *p, const struct profile_row *r, uint32_t **buf,
			uint32_t *cap, uint32_t *comm_at);

/* A row with no time and no sample in it: no output shows it. */
static inline bool profile__row_empty(const struct profile_row *r)
{
	return !r->period && !r->count;
}

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

/*
 * Where a thread waits, in its own code: the innermost frame of @stack that
 * is neither the kernel's nor in libc, the dynamic loader or the vDSO (the
 * calls every wait goes through); else its innermost user frame, else its
 * innermost frame; UINT32_MAX when it has none.
 */
uint32_t profile__own_frame(const struct profile *p, uint32_t stack);
/* Append a before-wait; returns its index, or UINT32_MAX when out of memory. */
uint32_t profile__add_before(struct profile *p, const struct profile_before *b);
/* How profile__before_total() bounds a wait: exactly, at least, at most; NONE: not known. */
enum before_bound { BOUND_EXACT, BOUND_AT_LEAST, BOUND_AT_MOST, BOUND_NONE };
/* How long @b has waited in all, as far as the file tells (see profile__before_bound()). */
static inline uint64_t profile__before_total(const struct profile_before *b)
{
	return b->before + b->during;
}
/*
 * Still waiting at the end, or since a moment not known: at least; a short
 * block's end bounded: at most; both, or nothing seen of a wait of unknown
 * start: nothing.
 */
static inline enum before_bound profile__before_bound(const struct profile_before *b)
{
	switch (b->end) {
	case BEFORE_TO_END:
		return BOUND_AT_LEAST;
	case BEFORE_ENDED:
		return b->before ? BOUND_EXACT : BOUND_AT_LEAST;
	case BEFORE_ENDED_BY:
		return b->before ? BOUND_AT_MOST : BOUND_NONE;
	default:
		return b->before ? BOUND_AT_LEAST : BOUND_NONE;
	}
}

/* A frame's function name and binary; UINT32_MAX (no frame) gives placeholders. */
const char *profile__frame_name(const struct profile *p, uint32_t frame);
/*
 * The innermost frame of @stack that is a runtime's own code: a Python or
 * JavaScript function, a method a JIT compiled (named from a perf map: a
 * signature, "JS:..." or "py::..."), a Go function outside Go's runtime
 * (runtime, syscall, internal/...); UINT32_MAX when none is.
 */
uint32_t profile__runtime_frame(const struct profile *p, uint32_t stack);
const char *profile__frame_dso(const struct profile *p, uint32_t frame);

/* Output writers; each returns 0 or -errno. */
struct text_opts {
	int keys[8];
	size_t nr_keys;
	double min_percent;
	int top; /* entries whose call paths are shown */
	bool no_before; /* leave out the threads waiting since before the recording */
};
enum sort_key {
	SORT_COMM, SORT_PID, SORT_TID, SORT_DSO, SORT_SYM, SORT_STATE, SORT_WAKER, SORT_OBJECT,
	SORT_RUNTIME, SORT_NR
};

int text__write(const struct profile *p, const struct text_opts *o, FILE *f);
/* For the text outputs (text.c): a wait's length as people read it (812.5 ms, 47.213 s,
 * 12 min 03.4 s, 3 h 02 min 10 s); the local wall-clock time of CLOCK_MONOTONIC
 * instant @mono (the file's CLOCK_DATA relates the two), with the date when @date,
 * false without it; whether two instants fall on the same local day. */
const char *fmt_wait(uint64_t ns, char *buf, size_t cap);
bool fmt_clock(const struct profile *p, uint64_t mono, bool date, char *buf, size_t cap);
bool same_day(const struct profile *p, uint64_t a, uint64_t b);
int folded__write(const struct profile *p, int event, FILE *f);
int pprof__write(const struct profile *p, int event, int fd);
/*
 * pprof__write()'s profile of @event's rows that @keep takes (NULL: all of
 * them), with the labels whose keys are given (NULL leaves one out): the
 * thread's name, pid, tid, the state, the waker (its name alone with
 * @waker_name_only, else with the chain before it) and the waker's own
 * function (profile__own_frame() of its stack, when a user frame). gzip'ed, appended to @out.
 */
struct pb;
struct pprof_opts {
	int event;
	int with_event; /* 1 + another event whose rows count as @event's; 0: none */
	bool (*keep)(const struct profile_row *r, void *arg);
	void *arg;
	const char *thread, *pid, *tid, *state, *waker, *waker_function;
	bool waker_name_only;
};
int pprof__encode(const struct profile *p, const struct pprof_opts *o, struct pb *out);
int svg__write(const struct profile *p, int event, const char *title, FILE *f);
int json__write(const struct profile *p, FILE *f);

#endif
