// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for offcpu's tests: threads that block for known times in
 * known functions, and measure what they blocked.
 *
 *   gt-sleep   4 x nanosleep(250 ms)              in gt_sleep_thread
 *   gt-pipe    4 x read() of a pipe fed every 150 ms  in gt_pipe_thread
 *   gt-cond    3 x pthread_cond_wait, signalled after 200 ms  in gt_cond_thread
 *   gt-poll    5 x poll() timing out after 100 ms    in gt_poll_thread
 *   gt-feed / gt-signal: the helpers that feed the pipe and signal the condvar
 *
 * Each thread adds up the time it did not run in its blocking calls (off_now(),
 * truth.h); at the end one line
 * per thread goes to the result file (-r FILE, default stdout):
 *   COMM TID BLOCKED_NS CALLS
 * Options: -w FILE waits until FILE exists before starting (for offcpu -p);
 *          -s SCALE multiplies every duration.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "truth.h"
#include <sys/stat.h>

static int feed_pipe[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int ready;

static void ms_to_ts(double ms, struct timespec *ts)
{
	long long ns = (long long)(ms * scale * 1e6);

	ts->tv_sec = ns / 1000000000LL;
	ts->tv_nsec = ns % 1000000000LL;
}

/* Each *_block function is the known place a thread waits. */
__attribute__((noinline)) static void gt_sleep_block(double ms)
{
	struct timespec ts;

	ms_to_ts(ms, &ts);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

__attribute__((noinline)) static void *gt_sleep_thread(void *arg)
{
	long long blocked = 0, t;
	int i;

	pthread_setname_np(pthread_self(), "gt-sleep");
	for (i = 0; i < 4; i++) {
		t = off_now();
		gt_sleep_block(250);
		blocked += off_now() - t;
	}
	publish("gt-sleep", blocked, 4);
	return arg;
}

__attribute__((noinline)) static void *gt_feed_thread(void *arg)
{
	long long blocked = 0, t;
	int i;

	pthread_setname_np(pthread_self(), "gt-feed");
	for (i = 0; i < 4; i++) {
		t = off_now();
		gt_sleep_block(150);
		blocked += off_now() - t;
		if (write(feed_pipe[1], "x", 1) != 1)
			abort();
	}
	publish("gt-feed", blocked, 4);
	return arg;
}

__attribute__((noinline)) static void gt_pipe_block(void)
{
	char c;

	if (read(feed_pipe[0], &c, 1) != 1)
		abort();
}

__attribute__((noinline)) static void *gt_pipe_thread(void *arg)
{
	long long blocked = 0, t;
	int i;

	pthread_setname_np(pthread_self(), "gt-pipe");
	for (i = 0; i < 4; i++) {
		t = off_now();
		gt_pipe_block();
		blocked += off_now() - t;
	}
	publish("gt-pipe", blocked, 4);
	return arg;
}

__attribute__((noinline)) static void *gt_signal_thread(void *arg)
{
	long long blocked = 0, t;
	int i;

	pthread_setname_np(pthread_self(), "gt-signal");
	for (i = 0; i < 3; i++) {
		t = off_now();
		gt_sleep_block(200);
		blocked += off_now() - t;
		pthread_mutex_lock(&lock);
		ready++;
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&lock);
	}
	publish("gt-signal", blocked, 3);
	return arg;
}

__attribute__((noinline)) static void gt_cond_block(int want)
{
	while (ready < want)
		pthread_cond_wait(&cond, &lock);
}

__attribute__((noinline)) static void *gt_cond_thread(void *arg)
{
	long long blocked = 0, t;
	int i;

	pthread_setname_np(pthread_self(), "gt-cond");
	pthread_mutex_lock(&lock);
	for (i = 0; i < 3; i++) {
		t = off_now();
		gt_cond_block(i + 1);
		blocked += off_now() - t;
	}
	pthread_mutex_unlock(&lock);
	publish("gt-cond", blocked, 3);
	return arg;
}

__attribute__((noinline)) static void gt_poll_block(int fd, double ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	poll(&p, 1, (int)(ms * scale));
}

__attribute__((noinline)) static void *gt_poll_thread(void *arg)
{
	long long blocked = 0, t;
	int quiet[2], i;

	pthread_setname_np(pthread_self(), "gt-poll");
	if (pipe(quiet))
		abort();
	for (i = 0; i < 5; i++) {
		t = off_now();
		gt_poll_block(quiet[0], 100);
		blocked += off_now() - t;
	}
	publish("gt-poll", blocked, 5);
	return arg;
}

int main(int argc, char **argv)
{
	void *(*fns[])(void *) = { gt_sleep_thread, gt_feed_thread, gt_pipe_thread,
				   gt_signal_thread, gt_cond_thread, gt_poll_thread };
	pthread_t th[6];
	const char *result_path = truth_start(argc, argv, "groundtruth");
	int i;

	if (pipe(feed_pipe))
		return 1;
	for (i = 0; i < 6; i++)
		if (pthread_create(&th[i], NULL, fns[i], NULL))
			return 1;
	for (i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	return truth_write(result_path);
}
