// SPDX-License-Identifier: GPL-2.0
/*
 * A CPU-bound workload: spins in spin_hot() for SPIN seconds (default 1), then
 * sleeps SLEEP seconds (default 0) in one nanosleep, ROUNDS times (default 1),
 * then prints its own CPU time and wall time in nanoseconds: "cpu_ns wall_ns".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void spin_hot(void)
{
	unsigned long i;

	for (i = 0; i < 100000; i++)
		sink += i * i;
}

static long long ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	double spin = argc > 1 ? atof(argv[1]) : 1.0, nap = argc > 2 ? atof(argv[2]) : 0;
	int rounds = argc > 3 ? atoi(argv[3]) : 1, r;
	long long start = ns(CLOCK_MONOTONIC), t;
	struct timespec ts = { (time_t)nap, (long)((nap - (time_t)nap) * 1e9) };

	for (r = 0; r < rounds; r++) {
		t = ns(CLOCK_MONOTONIC);
		do
			spin_hot();
		while (ns(CLOCK_MONOTONIC) - t < (long long)(spin * 1e9));
		if (nap > 0)
			nanosleep(&ts, NULL);
	}
	printf("%lld %lld\n", ns(CLOCK_PROCESS_CPUTIME_ID), ns(CLOCK_MONOTONIC) - start);
	return 0;
}
