// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for the hang view (offcpu record -p PID, offcpu report): an
 * ABBA deadlock between two named threads, and a third thread waiting on
 * one of their mutexes.
 *
 *   dl-alpha    locks dl_mutex_a, then (once dl-bravo holds dl_mutex_b)
 *               dl_mutex_b, in dl_alpha_locks()
 *   dl-bravo    locks dl_mutex_b, then (once dl-alpha holds dl_mutex_a)
 *               dl_mutex_a, in dl_bravo_locks()
 *   dl-charlie  locks dl_mutex_a, held by dl-alpha, in dl_charlie_waits()
 *
 * None ever returns: the process hangs until killed. Once all three wait,
 * it writes one line per thread (-r FILE, default stdout), then "ready":
 *   COMM TID
 * A barrier makes each of the two hold its first mutex before either asks
 * for its second, so the deadlock happens every time.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define NOINLINE __attribute__((noinline))
#define KEEP() __asm__ volatile("" ::: "memory")

static pthread_mutex_t dl_mutex_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t dl_mutex_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold;
static long tids[3];

static void set_name(int i, const char *comm)
{
	prctl(PR_SET_NAME, comm);
	__atomic_store_n(&tids[i], syscall(SYS_gettid), __ATOMIC_RELEASE);
}

NOINLINE static void dl_alpha_locks(void)
{
	pthread_mutex_lock(&dl_mutex_a);
	pthread_barrier_wait(&both_hold);
	pthread_mutex_lock(&dl_mutex_b);
	KEEP();
}

NOINLINE static void dl_bravo_locks(void)
{
	pthread_mutex_lock(&dl_mutex_b);
	pthread_barrier_wait(&both_hold);
	pthread_mutex_lock(&dl_mutex_a);
	KEEP();
}

NOINLINE static void dl_charlie_waits(void)
{
	pthread_mutex_lock(&dl_mutex_a);
	KEEP();
}

static void *alpha(void *arg)
{
	(void)arg;
	set_name(0, "dl-alpha");
	dl_alpha_locks();
	return NULL;
}

static void *bravo(void *arg)
{
	(void)arg;
	set_name(1, "dl-bravo");
	dl_bravo_locks();
	return NULL;
}

static void *charlie(void *arg)
{
	(void)arg;
	set_name(2, "dl-charlie");
	/* alpha holds dl_mutex_a by now: it passed the barrier after locking it */
	dl_charlie_waits();
	return NULL;
}

/* Whether thread @tid sleeps in a futex (its /proc state S and syscall 202). */
static int in_futex(long tid)
{
	char path[96], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/syscall", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return !strncmp(buf, "202 ", 4);
}

int main(int argc, char **argv)
{
	static const char *names[3] = { "dl-alpha", "dl-bravo", "dl-charlie" };
	const char *out_path = argc > 2 && !strcmp(argv[1], "-r") ? argv[2] : NULL;
	struct timespec ms = { 0, 1000000 };
	pthread_t t[3];
	FILE *out = stdout;
	int i, n;

	prctl(PR_SET_NAME, "dl-main");
	if (pthread_barrier_init(&both_hold, NULL, 2) || pthread_create(&t[0], NULL, alpha, NULL) ||
	    pthread_create(&t[1], NULL, bravo, NULL))
		return 1;
	/* charlie once alpha holds dl_mutex_a */
	while (!__atomic_load_n(&tids[0], __ATOMIC_ACQUIRE) ||
	       !__atomic_load_n(&tids[1], __ATOMIC_ACQUIRE) || !in_futex(tids[0]) ||
	       !in_futex(tids[1]))
		nanosleep(&ms, NULL);
	if (pthread_create(&t[2], NULL, charlie, NULL))
		return 1;
	for (n = 0; n < 5000; n++) {
		if (__atomic_load_n(&tids[2], __ATOMIC_ACQUIRE) && in_futex(tids[2]))
			break;
		nanosleep(&ms, NULL);
	}
	if (out_path && !(out = fopen(out_path, "w")))
		return 1;
	for (i = 0; i < 3; i++)
		fprintf(out, "%s %ld\n", names[i], tids[i]);
	fprintf(out, "ready\n");
	if (fclose(out))
		return 1;
	pause();
	return 0;
}
