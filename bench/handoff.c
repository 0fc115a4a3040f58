// SPDX-License-Identifier: GPL-2.0
/*
 * A context-switch workload for bench/overhead: THREADS threads pass one
 * token round-robin through futexes, PASSES times in all. A thread waits on
 * its own futex word until it holds the token, hands it to the next thread
 * and waits again, so every pass blocks one thread (an S-state switch) when
 * the threads share a cpu (taskset -c 1).
 *
 *   handoff [-t THREADS] [-n PASSES]
 *
 * Prints, like perf bench: "<usecs> usecs/op" (one op is one pass), and the
 * process's voluntary and involuntary context switches during the passes.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>

struct slot {
	_Alignas(64) uint32_t token; /* 1 while this thread holds the token */
};

static struct slot *slots;
static long nthreads = 16, rounds;
static pthread_barrier_t ready;

static long futex(uint32_t *uaddr, int op, uint32_t val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

static void wait_token(struct slot *s)
{
	while (!__atomic_load_n(&s->token, __ATOMIC_ACQUIRE))
		futex(&s->token, FUTEX_WAIT_PRIVATE, 0);
	s->token = 0;
}

static void give_token(struct slot *s)
{
	__atomic_store_n(&s->token, 1, __ATOMIC_RELEASE);
	futex(&s->token, FUTEX_WAKE_PRIVATE, 1);
}

static void *worker(void *arg)
{
	long i = (long)arg, r;

	pthread_barrier_wait(&ready);
	for (r = 0; r < rounds; r++) {
		wait_token(&slots[i]);
		give_token(&slots[(i + 1) % nthreads]);
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long passes = 200000, i;
	struct rusage r0, r1;
	pthread_t *tids;
	double t0, t1;
	int opt, err;

	while ((opt = getopt(argc, argv, "t:n:")) != -1) {
		switch (opt) {
		case 't':
			nthreads = strtol(optarg, NULL, 10);
			break;
		case 'n':
			passes = strtol(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: handoff [-t THREADS] [-n PASSES]\n");
			return 2;
		}
	}
	if (nthreads < 2 || passes < nthreads) {
		fprintf(stderr, "handoff: need at least 2 threads and one pass per thread\n");
		return 2;
	}
	rounds = passes / nthreads;
	passes = rounds * nthreads;
	slots = calloc((size_t)nthreads, sizeof(*slots));
	tids = calloc((size_t)nthreads, sizeof(*tids));
	if (!slots || !tids)
		return 1;
	pthread_barrier_init(&ready, NULL, (unsigned)nthreads + 1);
	for (i = 0; i < nthreads; i++) {
		err = pthread_create(&tids[i], NULL, worker, (void *)i);
		if (err) {
			fprintf(stderr, "handoff: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	pthread_barrier_wait(&ready);
	getrusage(RUSAGE_SELF, &r0);
	t0 = now();
	give_token(&slots[0]);
	for (i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	t1 = now();
	getrusage(RUSAGE_SELF, &r1);

	printf("# handoff: %ld threads, %ld passes, %.3f s\n", nthreads, passes, t1 - t0);
	printf("%14.6f usecs/op\n", (t1 - t0) * 1e6 / (double)passes);
	printf("%14ld voluntary switches\n", r1.ru_nvcsw - r0.ru_nvcsw);
	printf("%14ld involuntary switches\n", r1.ru_nivcsw - r0.ru_nivcsw);
	free(slots);
	free(tids);
	return 0;
}
