// SPDX-License-Identifier: GPL-2.0
/*
 * Many distinct stacks, each blocked in once: block i sleeps USEC
 * microseconds at the end of a call path that spells i in binary, one
 * frame per bit (path_0 or path_1 call sites), BITS frames deep.
 * Usage: stacks N USEC     (N up to 2^BITS)
 * Prints its pid and the number of distinct paths it blocked in: a sleep
 * blocked when the thread switched out voluntarily during it (its nvcsw
 * grew), as a recorder of sleeps (state S) sees it. A short sleep whose
 * timer fires before the thread gets to switch out (it was held by an
 * interrupt, or its vCPU by the host) does not block.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#define BITS 10

static void path_0(unsigned v, int depth, long usec);
static void path_1(unsigned v, int depth, long usec);

static volatile int sink;
static unsigned blocked;

static long voluntary_switches(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nvcsw;
}

__attribute__((noinline)) static void leaf(long usec)
{
	struct timespec ts = { usec / 1000000, (usec % 1000000) * 1000 };
	long before = voluntary_switches();

	nanosleep(&ts, NULL);
	blocked += voluntary_switches() > before;
	sink++;
}

/* the next bit picks the call site; the work after each call keeps the frame */
#define STEP(v, depth, usec)                                   \
	do {                                                   \
		if (depth == 0)                                \
			leaf(usec);                            \
		else if ((v) & 1)                              \
			path_1((v) >> 1, (depth) - 1, usec);   \
		else                                           \
			path_0((v) >> 1, (depth) - 1, usec);   \
		sink++;                                        \
	} while (0)

__attribute__((noinline)) static void path_0(unsigned v, int depth, long usec)
{
	STEP(v, depth, usec);
}

__attribute__((noinline)) static void path_1(unsigned v, int depth, long usec)
{
	STEP(v, depth, usec);
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 600, i;
	long usec = argc > 2 ? atol(argv[2]) : 5000;

	if (n > 1u << BITS)
		n = 1u << BITS;
	for (i = 0; i < n; i++)
		STEP(i, BITS, usec);
	printf("%d %u\n", (int)getpid(), blocked);
	return 0;
}
