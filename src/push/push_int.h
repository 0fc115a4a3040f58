/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What push's files share: push.c (its life, the recorder's side, the
 * encoder thread) and send.c (the queue of requests, the sender thread,
 * what is said of drops). The recorder's thread touches only the pipe, the
 * pending count and the statistics marked atomic; everything else is the
 * push threads', under lock.
 */
#ifndef OFFCPU_PUSH_INT_H
#define OFFCPU_PUSH_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "push.h"
#include "http.h"
#include "meta.h"
#include "payload.h"
#include "spool.h"

/* Files waiting for the encoder, at most: past it an interval is dropped. */
#define PUSH_MAX_FILES 4
/* The requests waiting in memory, at most: these many intervals' and bytes. */
#define PUSH_QUEUE_INTERVALS 4
#define PUSH_QUEUE_BYTES (32ULL << 20)
/* An OTLP request compressed past this is split in two (a collector takes 20 MiB). */
#define PUSH_MAX_REQUEST (4ULL << 20)

/* A finished file, from the recorder to the encoder: small enough for one atomic write. */
struct push_msg {
	uint64_t start, end;
	char name[232];
};

struct push_stats {
	_Atomic uint64_t intervals; /* files handed over */
	_Atomic uint64_t intervals_dropped; /* not read: too many waiting, unreadable, too late */
	uint64_t intervals_empty; /* no off-CPU time in it: nothing sent */
	uint64_t requests, sent, sent_spooled, spooled, dropped, rejected, failures;
	uint64_t profiles_sent, bytes_sent;
	uint64_t rejected_profiles; /* in answers that took a request (OTLP's partial success) */
};

struct push {
	const struct push_opts *o;
	bool quiet;
	struct push_meta meta;
	char *dir, *base, *endpoint;
	const char *content_type, *content_encoding, *header;
	struct spool *spool; /* NULL: none */
	struct http *http; /* the sender's */
	int pipe[2];
	_Atomic int pending; /* files handed over, not yet taken by the encoder */
	volatile int cancel; /* the encoder's session ends (the deadline passed) */
	uint64_t max_request; /* PUSH_MAX_REQUEST; test builds: OFFCPU_TEST_PUSH_MAX_REQUEST */
	pthread_t enc, snd;
	bool enc_running, snd_running;
	bool stopped;
	bool left_behind; /* a thread did not end in time: what it holds is not freed */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct payload *head, *tail; /* oldest first */
	size_t q_count;
	uint64_t q_bytes;
	uint64_t ivl_seq; /* the encoder's count of intervals, for the queue's bound */
	bool encoder_done; /* nothing more will be queued */
	bool final; /* the recording ended: send what is queued until the deadline */
	uint64_t deadline;
	bool failing; /* the backend did not take the last request */
	bool gave_up; /* at the end, a request failed: the rest is not tried */
	uint64_t backoff_ns, backoff_until;
	bool sender_done;
	/* the last drop said, not said again for each request of its interval */
	uint64_t said_start;
	const char *said_why;
	struct push_stats st;
};

/* push.c: a push thread yields to the machine's work (SCHED_BATCH) */
void push_thread_yields(void);

/* send.c */
/* Queue @pl (push's from now on): in memory, or in the spool while the backend fails. */
void push_enqueue(struct push *p, struct payload *pl, uint64_t interval);
void *push_sender(void *arg);
/* What is still queued at the end: into the spool, or dropped (said). Locked. */
void push_flush_queue(struct push *p);
/* Say that @pl was dropped, and why; counted. */
void push_say_drop(struct push *p, const struct payload *pl, const char *why);
/* spool__put() of @pl, a failure said as a drop. 0 or -errno. */
int push_spool(struct push *p, const struct payload *pl);
/* Format an interval (ns since the epoch) as HH:MM:SS-HH:MM:SS into @out. */
void push_window(uint64_t start, uint64_t end, char *out, size_t cap);

#endif
