/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the ground-truth workloads share: the clock their threads measure
 * their blocks with, the results they publish, and the command line:
 *   -r FILE  one line per measured thread, COMM TID BLOCKED_NS CALLS
 *            (default stdout); BLOCKED_NS is the time the thread did not
 *            run during its blocking calls (off_now())
 *   -w FILE  wait until FILE exists before starting (for offcpu -p)
 *   -s SCALE multiply every duration
 */
#ifndef OFFCPU_TESTS_TRUTH_H
#define OFFCPU_TESTS_TRUTH_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

struct result {
	char comm[16];
	long tid;
	long long blocked_ns;
	int calls;
};

static double scale = 1.0;
static struct result results[16];
static int nr_results;
static pthread_mutex_t results_lock = PTHREAD_MUTEX_INITIALIZER;

static long long now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * The wall clock minus the calling thread's CPU time: a difference of two
 * readings is the time the thread did not run in between (blocked, or
 * waiting for a CPU), which is what offcpu records of a blocking call. The
 * wall clock alone would count the thread's own running in the call too:
 * microseconds, but milliseconds where the host holds a guest's vCPU in the
 * middle of it (QEMU on a busy machine: the guest's clocks go on, and the
 * thread was running as far as the guest knows).
 */
static long long off_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return now() - (ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

static void publish(const char *comm, long long blocked, int calls)
{
	pthread_mutex_lock(&results_lock);
	if (nr_results == (int)(sizeof(results) / sizeof(results[0])))
		abort();
	snprintf(results[nr_results].comm, 16, "%s", comm);
	results[nr_results].tid = syscall(SYS_gettid);
	results[nr_results].blocked_ns = blocked;
	results[nr_results].calls = calls;
	nr_results++;
	pthread_mutex_unlock(&results_lock);
}

/*
 * Read the command line (@name in the usage message) and wait for -w's
 * file. Returns the -r path (NULL: stdout), or exits with status 2.
 */
static const char *truth_start(int argc, char **argv, const char *name)
{
	const char *result_path = NULL, *wait_file = NULL;
	int opt;

	while ((opt = getopt(argc, argv, "r:w:s:")) != -1) {
		switch (opt) {
		case 'r':
			result_path = optarg;
			break;
		case 'w':
			wait_file = optarg;
			break;
		case 's':
			scale = atof(optarg);
			if (scale <= 0)
				exit(2);
			break;
		default:
			fprintf(stderr, "usage: %s [-r RESULT] [-w WAITFILE] [-s SCALE]\n", name);
			exit(2);
		}
	}
	if (wait_file) {
		struct stat st;

		while (stat(wait_file, &st))
			usleep(5000);
	}
	return result_path;
}

/* Write the results: 0, or 1 when the file cannot be written. */
static int truth_write(const char *result_path)
{
	FILE *out = stdout;
	int i;

	if (result_path && !(out = fopen(result_path, "w")))
		return 1;
	for (i = 0; i < nr_results; i++)
		fprintf(out, "%s %ld %lld %d\n", results[i].comm, results[i].tid,
			results[i].blocked_ns, results[i].calls);
	return fclose(out) ? 1 : 0;
}

#endif
