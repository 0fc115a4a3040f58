// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for the table walk, built -O2 -fomit-frame-pointer: threads
 * that block for known times under their own functions, and measure what
 * they blocked, as groundtruth.c does. No frame pointer leads a walk here.
 *
 *   nf-sleep   4 x nanosleep(250 ms)                      in nf_sleep_block
 *   nf-cond    3 x pthread_cond_wait, signalled after 200 ms in nf_cond_block
 *   nf-mutex   3 x pthread_mutex_lock of a mutex held 200 ms in nf_mutex_block
 *   nf-pipe    4 x read() of a pipe written every 150 ms   in nf_pipe_block
 *   nf-epoll   4 x epoll_wait, readable after 120 ms       in nf_epoll_block
 *   nf-deep    4 x nanosleep(100 ms) under 64 frames of 512 bytes (32 KiB,
 *              past the 8 KiB copied window)              in nf_deep_block
 * nf-feed, nf-signal, nf-holder and nf-poke drive them and are not measured.
 *
 * Output, one line per measured thread (-r FILE, default stdout):
 *   COMM TID BLOCKED_NS CALLS
 * -w FILE waits until FILE exists before starting; -s SCALE scales durations.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "truth.h"

#define NOINLINE __attribute__((noinline))
/* a call after which something happens: not a tail call, not folded away */
#define KEEP() __asm__ volatile("" ::: "memory")
/* and each a body of its own: identical ones may be folded into one */
static volatile int mark_of[8];
#define MARK(i) (mark_of[i]++)

static int feed_pipe[2], poke_pipe[2];
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int signalled;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t hold_gate;

static void sleep_ms(double ms)
{
	long long ns = (long long)(ms * scale * 1e6);
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

NOINLINE static void nf_sleep_block(double ms)
{
	sleep_ms(ms);
	MARK(0);
}

NOINLINE static void *nf_sleep_thread(void *arg)
{
	long long blocked = 0, t;
	int i;

	pthread_setname_np(pthread_self(), "nf-sleep");
	for (i = 0; i < 4; i++) {
		t = off_now();
		nf_sleep_block(250);
		blocked += off_now() - t;
	}
	publish("nf-sleep", blocked, 4);
	return arg;
}

NOINLINE static void nf_cond_block(int want)
{
	while (signalled < want)
		pthread_cond_wait(&cond, &cond_lock);
	KEEP();
}

NOINLINE static void *nf_cond_thread(void *arg)
{
	long long blocked = 0, t;
	int i;

	pthread_setname_np(pthread_self(), "nf-cond");
	pthread_mutex_lock(&cond_lock);
	for (i = 0; i < 3; i++) {
		t = off_now();
		nf_cond_block(i + 1);
		blocked += off_now() - t;
	}
	pthread_mutex_unlock(&cond_lock);
	publish("nf-cond", blocked, 3);
	return arg;
}

NOINLINE static void *nf_signal_thread(void *arg)
{
	int i;

	pthread_setname_np(pthread_self(), "nf-signal");
	for (i = 0; i < 3; i++) {
		sleep_ms(200);
		pthread_mutex_lock(&cond_lock);
		signalled++;
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&cond_lock);
	}
	return arg;
}

NOINLINE static void nf_mutex_block(void)
{
	pthread_mutex_lock(&held);
	KEEP();
	pthread_mutex_unlock(&held);
}

NOINLINE static void *nf_mutex_thread(void *arg)
{
	long long blocked = 0, t;
	int i;

	pthread_setname_np(pthread_self(), "nf-mutex");
	for (i = 0; i < 3; i++) {
		pthread_barrier_wait(&hold_gate); /* the holder has it now */
		t = off_now();
		nf_mutex_block();
		blocked += off_now() - t;
		pthread_barrier_wait(&hold_gate);
	}
	publish("nf-mutex", blocked, 3);
	return arg;
}

NOINLINE static void *nf_holder_thread(void *arg)
{
	int i;

	pthread_setname_np(pthread_self(), "nf-holder");
	for (i = 0; i < 3; i++) {
		pthread_mutex_lock(&held);
		pthread_barrier_wait(&hold_gate);
		sleep_ms(200);
		pthread_mutex_unlock(&held);
		pthread_barrier_wait(&hold_gate);
	}
	return arg;
}

NOINLINE static void nf_pipe_block(void)
{
	char c;

	if (read(feed_pipe[0], &c, 1) != 1)
		abort();
	KEEP();
}

NOINLINE static void *nf_pipe_thread(void *arg)
{
	long long blocked = 0, t;
	int i;

	pthread_setname_np(pthread_self(), "nf-pipe");
	for (i = 0; i < 4; i++) {
		t = off_now();
		nf_pipe_block();
		blocked += off_now() - t;
	}
	publish("nf-pipe", blocked, 4);
	return arg;
}

NOINLINE static void *nf_feed_thread(void *arg)
{
	int i;

	pthread_setname_np(pthread_self(), "nf-feed");
	for (i = 0; i < 4; i++) {
		sleep_ms(150);
		if (write(feed_pipe[1], "x", 1) != 1)
			abort();
	}
	return arg;
}

NOINLINE static void nf_epoll_block(int ep)
{
	struct epoll_event ev;
	char c;

	if (epoll_wait(ep, &ev, 1, (int)(1000 * scale)) == 1 && read(poke_pipe[0], &c, 1) != 1)
		abort();
	KEEP();
}

NOINLINE static void *nf_epoll_thread(void *arg)
{
	struct epoll_event ev = { .events = EPOLLIN };
	long long blocked = 0, t;
	int ep = epoll_create1(0), i;

	pthread_setname_np(pthread_self(), "nf-epoll");
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, poke_pipe[0], &ev))
		abort();
	for (i = 0; i < 4; i++) {
		t = off_now();
		nf_epoll_block(ep);
		blocked += off_now() - t;
	}
	close(ep);
	publish("nf-epoll", blocked, 4);
	return arg;
}

NOINLINE static void *nf_poke_thread(void *arg)
{
	int i;

	pthread_setname_np(pthread_self(), "nf-poke");
	for (i = 0; i < 4; i++) {
		sleep_ms(120);
		if (write(poke_pipe[1], "x", 1) != 1)
			abort();
	}
	return arg;
}

NOINLINE static void nf_deep_block(double ms)
{
	sleep_ms(ms);
	MARK(1);
}

/* 64 frames of over 512 bytes each, then the block */
NOINLINE static long nf_deep_recurse(int depth, double ms)
{
	volatile char pad[512];
	long r;

	memset((char *)pad, depth, sizeof(pad));
	if (depth == 0) {
		nf_deep_block(ms);
		r = 0;
	} else {
		r = nf_deep_recurse(depth - 1, ms);
	}
	return r + pad[depth % sizeof(pad)];
}

NOINLINE static void *nf_deep_thread(void *arg)
{
	long long blocked = 0, t;
	int i;

	pthread_setname_np(pthread_self(), "nf-deep");
	for (i = 0; i < 4; i++) {
		t = off_now();
		nf_deep_recurse(64, 100);
		blocked += off_now() - t;
	}
	publish("nf-deep", blocked, 4);
	return arg;
}

int main(int argc, char **argv)
{
	void *(*fns[])(void *) = { nf_sleep_thread, nf_cond_thread, nf_signal_thread,
				   nf_mutex_thread, nf_holder_thread, nf_pipe_thread,
				   nf_feed_thread, nf_epoll_thread, nf_poke_thread, nf_deep_thread };
	enum { NR = sizeof(fns) / sizeof(fns[0]) };
	const char *result_path = truth_start(argc, argv, "gt_nofp");
	pthread_t th[NR];
	int i;

	if (pipe(feed_pipe) || pipe(poke_pipe) || pthread_barrier_init(&hold_gate, NULL, 2))
		return 1;
	for (i = 0; i < NR; i++)
		if (pthread_create(&th[i], NULL, fns[i], NULL))
			return 1;
	for (i = 0; i < NR; i++)
		pthread_join(th[i], NULL);
	return truth_write(result_path);
}
