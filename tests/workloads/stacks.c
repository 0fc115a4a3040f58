// SPDX-License-Identifier: GPL-2.0
/*
 * Many distinct stacks, each blocked in once: block i sleeps USEC
 * microseconds at the end of a call path that spells i in binary, one
 * frame per bit (path_0 or path_1 call sites), BITS frames deep.
 * Usage: stacks N USEC     (N up to 2^BITS)
 * Prints the number of distinct paths it blocked in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BITS 10

static void path_0(unsigned v, int depth, long usec);
static void path_1(unsigned v, int depth, long usec);

static volatile int sink;

__attribute__((noinline)) static void leaf(long usec)
{
	struct timespec ts = { usec / 1000000, (usec % 1000000) * 1000 };

	nanosleep(&ts, NULL);
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
	printf("%u\n", n);
	return 0;
}
