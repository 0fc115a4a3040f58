// SPDX-License-Identifier: GPL-2.0
/* A CPU-bound workload: spins in spin_hot() for SECONDS (default 1). */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void spin_hot(void)
{
	unsigned long i;

	for (i = 0; i < 100000; i++)
		sink += i * i;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		spin_hot();
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 < secs);
	return 0;
}
