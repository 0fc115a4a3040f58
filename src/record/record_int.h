/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The parts of offcpu record and what they share. record.c builds the parts,
 * runs a mode and tears down; each part is one file:
 *   options.c   the command line            target.c   what to record, the process filter
 *   events.c    BPF ABI -> perf records     round.c    sources -> time-ordered queue -> filter -> writer
 *   file.c      a file's life, the summary  threads.c  --threads writers
 *   flight.c    the flight recorder         output.c   where files go (never what others own)
 *   summary.c   the loss table, the summary collector.c, rings.c, sideband.c, synth.c: the sources
 */
#ifndef OFFCPU_RECORD_INT_H
#define OFFCPU_RECORD_INT_H

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include "buildids.h"
#include "collector.h"
#include "options.h"
#include "output.h"
#include "rings.h"
#include "stackstore.h"
#include "target.h"
#include "workload.h"
#include "summary.h"
#include "unwinder.h"
#include "userstacks.h"
#include "waitstore.h"
#include "python.h"
#include "v8.h"
#include "perfmap.h"
#include "../push/push.h"
#include "named.h"
#include "../perfdata/queue.h"
#include "../perfdata/writer.h"
#include "../util/intset.h"
#include "../util/u64set.h"

#define ONCPU_EVENT_NAME "cpu-clock"
/* distinct stacks counted for the summary at most (16 MiB of hashes at most) */
#define DISTINCT_STACKS_MAX (1u << 20)

/* Where a batched record came from. */
/* SRC_WAIT and SRC_WAKER follow their block's sample, in that order;
 * SRC_OPEN_END: a block still under way at the end, written as its own sample ending there */
enum { SRC_SIDEBAND, SRC_ONCPU, SRC_OFFCPU, SRC_SUMMED, SRC_WAKER, SRC_WAIT, SRC_OPEN_END };


/* The perf events a file declares, and how their records are encoded (events.c). */
struct events {
	uint64_t offcpu_id, sideband_id; /* the ids the offcpu-time and side-band records carry */
	uint64_t sample_type; /* of offcpu-time */
	uint64_t waker_id; /* --wakers: the id offcpu-waker samples carry */
	uint64_t wait_id; /* the id offcpu-wait samples carry */
	uint64_t before_id; /* stacks finished in user space: offcpu-before samples' id */
	struct perf_event_attr oncpu_attr; /* cpu-clock, with -F */
	struct perf_event_attr bpf_out_attr; /* --overwrite: where BPF writes blocks */
};

struct stats {
	uint64_t summed_samples, streamed_samples, oncpu_samples;
	uint64_t offcpu_ns;
	uint64_t sideband_lost, oncpu_lost;
	uint64_t unwind_ns[UNW_REASONS]; /* off-CPU time by how its table walk ended */
	uint64_t flushes; /* drains of the summed map */
	struct intset threads;
	struct u64set stacks; /* the call chains written (their hashes), for the summary */
};

struct record {
	struct record_opts o;
	int self; /* offcpu's own process id: never recorded */
	struct collector *coll;
	struct stackstore *stacks; /* the collector's stacks, chains and wakeups, cached */
	struct waitstore *waits; /* the collector's wait objects, cached */
	struct unwinder *unw; /* --unwind=tables: the table loader */
	struct userstacks *us; /* stacks finished in user space, or NULL */
	struct python *py; /* Python frames (python.c), or NULL */
	struct v8 *v8; /* JavaScript frames (v8.c), or NULL */
	struct perfmap *perfmap; /* JIT frames named from perf maps (perfmap.c), or NULL */
	struct push *push; /* --push: each file handed over to it (src/push/), or NULL */
	struct named *named; /* named frames in every file, and their symbols (named.c), or NULL */
	bool tables; /* user stacks are walked by tables */
	struct perf_rings *sb, *oncpu;
	struct perf_rings *bpf_out; /* --overwrite: where BPF writes blocks */
	uint64_t snap_last; /* newest time already in a snapshot */
	struct writer_thread *wt; /* --threads */
	pthread_mutex_t lock; /* maps and stats, shared by writer threads */
	volatile int threads_stop;
	struct perf_writer *w;
	struct maptab *maps;
	struct workload wl;
	bool have_workload, workload_started;
	uint64_t workload_start_ns; /* when the command was started */
	struct output out;
	uint64_t file_start_ns;
	uint64_t file_base; /* bytes a file starts with (synthesized side-band) */
	uint64_t next_flush_ns; /* --flush: the summed map is drained next then */
	uint64_t start_ns, end_ns; /* the recording's start and end (CLOCK_MONOTONIC) */
	uint64_t lost_reported; /* lost samples already written to earlier files */
	size_t files;
	struct targets tg;
	struct events ev;
	struct perf_queue batch;
	struct stats st;
};

struct sink {
	struct record *r;
	struct perf_queue *batch;
	bool shared; /* other threads use the stack caches and maps: lock them */
};

/* round.c: one round of records into a file */
/*
 * How a batch is written: by the main loop (into r->w), a writer thread (its
 * own stream; maps and stats shared, so locked; follows says which processes
 * the collector follows) or a snapshot (what an earlier one wrote skipped).
 */
struct round {
	struct perf_writer *w;
	struct perf_queue *batch;
	bool shared;
	bool (*follows)(void *arg, int pid); /* NULL: the tracked set */
	void *arg;
	uint64_t after; /* skip timed records up to this time */
	uint64_t newest; /* in and out: the newest time written */
	bool finish; /* FINISHED_ROUND after a round that wrote (a flush in pipe mode) */
	int stream; /* named.h: 0, the main file; 1 + N: --threads' data.N */
	/* --switch-output=SIZE: ends r->w's file mid-round when it reached its
	 * size, and begins the next (the main loop's rounds); NULL: never */
	int (*split)(struct record *r);
};
/* Sort the batch, filter, count and write it. Returns 0 or -errno. */
int round__write(struct record *r, struct round *rd);
/* Drain every source and write the round into r->w. */
int flush_round(struct record *r);
/* The same with the summed blocks, stamped now, and a prune of the stack maps. */
int flush_round_sums(struct record *r);
/* The summed blocks alone, stamped now, into r->w; then a prune. */
int round__write_sums(struct record *r);
/*
 * The end of a recording written to one file (not --threads, not
 * --overwrite), as one round: the summed blocks of the last interval, then
 * the blocks still under way (OFFCPU_OPEN_END's iterator at @end), each a
 * sample of its own ending at @end, and what the buffers hold. Returns the
 * iterator's count of blocks, or -errno.
 */
long flush_round_open_end(struct record *r, uint64_t end);
/* Whether the --flush interval is over; then drain the summed blocks. */
int flush_due_sums(struct record *r);
uint64_t lost_count(const struct perf_event_header *h);
/* A summed block, stamped with the end of its interval (push_summed()'s argument). */
struct summed_sink {
	struct sink *k;
	uint64_t time;
	bool open_end; /* the blocks under way at the end, alone in the map: SRC_OPEN_END */
};
int push_summed(const struct offcpu_key *key, const struct offcpu_val *v, void *arg);
int push_stream(const struct offcpu_event *e, void *arg);
int write_record(struct record *r, const struct perf_event_header *h);
/* named.h's writer of @arg, a struct perf_writer */
int write_to_writer(void *arg, const struct perf_event_header *h);
int push_sideband(const struct perf_event_header *h, void *arg);
int push_oncpu(const struct perf_event_header *h, void *arg);

/* events.c: perf records from the BPF ABI */
int declare_events(struct record *r);
/* @kind: SRC_*; @unw: 1 + how the table walk of its user stack ended (enum offcpu_unw_end), 0: no walk */
int encode_offcpu(struct record *r, const struct offcpu_key *k, uint64_t time,
			 uint64_t period, uint32_t cpu, int kind, char *buf, size_t cap, unsigned *unw);
/*
 * The offcpu-waker sample of a block with a waker (--wakers), to follow its
 * offcpu-time sample: its size, 0 when the block has none, or -errno.
 */
int encode_waker(struct record *r, const struct offcpu_key *k, uint64_t time, uint64_t period,
		 uint32_t cpu, char *buf, size_t cap);
/*
 * The offcpu-wait sample of a block whose wait object is known, to follow
 * its offcpu-time sample: its size, 0 when the block has none, or -errno.
 */
int encode_wait(struct record *r, const struct offcpu_key *k, uint64_t time, uint64_t period,
		uint32_t cpu, char *buf, size_t cap);
/*
 * Push a block's samples into @q as @kind: offcpu-time (and offcpu-waker)
 * for @period, and for @runq, its wait for a CPU after the wakeup, an
 * offcpu-time sample of state OFFCPU_STATE_RUNQ.
 */
int push_block(struct record *r, struct perf_queue *q, const struct offcpu_key *k, uint64_t time,
	       uint64_t period, uint64_t runq, uint32_t cpu, int kind, bool lock);
int open_oncpu(struct record *r, int cgroup_fd);
/* One offcpu-before sample for each thread blocked at the start (r->us), into r->w. */
int write_before_samples(struct record *r);
int synthesize(struct record *r);
int write_lost_samples(struct record *r, uint64_t lost, uint64_t time);

/* file.c: a file's life */
int begin_file(struct record *r);
int end_file(struct record *r);
uint64_t output_size(struct record *r);
void print_summary(struct record *r, uint64_t file_size);
bool switch_due(struct record *r);
/* SIGUSR2: a new file (a snapshot when armed), async-signal-safe; and the
 * request taken (cleared), whether there was one */
void file_request_switch(void);
bool file_take_switch_request(void);
/* --switch-output=SIZE: a new file now if this one reached the size. */
int split_file(struct record *r);

/* threads.c: --threads */
void free_threads(struct record *r);
int start_threads(struct record *r);
int stop_threads(struct record *r);
/* The first error a writer thread met (its writes stopped), or 0. */
int threads_error(struct record *r);

/* flight.c: the flight recorder */
int open_bpf_output(struct record *r, struct collector_opts *co);
int snapshot(struct record *r);

/* run.c: the run */
/* Catch the signals that end a recording (SIGUSR2 switches files with @switch_on_usr2). */
void run_signals(bool switch_on_usr2);
/*
 * Hold the signals run_signals() handles (they stay pending), or let them
 * through again. The verifier gives up on a program while a signal is
 * pending (-EAGAIN, and libbpf tries 5 times): a SIGUSR2 or two while the
 * program loads made a piece of it fall back, as if the verifier had
 * refused it. Held while it loads, a signal acts once it is loaded.
 */
void run_signals_hold(bool hold);
/* The main loop: rounds as they come, flushes, file switches, until an end. */
int main_loop(struct record *r);
/* The flight recorder's: nothing read until a snapshot is asked for (SIGUSR2). */
int armed_loop(struct record *r);
/* Milliseconds to wait, at most @max, before @deadline (0: none); -1 once it passed. */
int wait_ms(uint64_t deadline, int max);
bool targets_gone(struct record *r, struct pollfd *pfds, size_t first_pidfd);
/* When -d ends the recording (0: never), counted from r->start_ns. */
uint64_t record_deadline(const struct record *r);
/* The loop is over: r->end_ns is now, or the deadline if that passed first;
 * blocks still under way are counted up to it. */
void record_ended(struct record *r);

/* SIGINT and the like end the recording; SIGUSR2 asks for a new file. */
extern volatile sig_atomic_t stop_signal;

#endif
