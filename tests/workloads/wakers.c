// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for "who woke each waiting thread, and what kind of wait was
 * it". One thread, wakee, waits in turn in five known functions and
 * measures each wait with off_now() (truth.h: the time it did not run):
 *
 *   wakee_pipe_a  3 x read() of pipe A, written ~100 ms later by waker_alpha
 *                 in waker_alpha_write()                        -> by_alpha
 *   wakee_pipe_b  3 x read() of pipe B, written ~200 ms later by waker_bravo
 *                 in waker_bravo_write()                        -> by_bravo
 *   wakee_cond    3 x pthread_cond_wait, signalled ~100 ms later by
 *                 waker_charlie in waker_charlie_signal()       -> by_charlie
 *   wakee_sleep   1 x clock_nanosleep(250 ms): a timer, no task -> timer_sleep
 *   wakee_vfork   1 x vfork() whose child sleeps 200 ms and exits: the
 *                 parent waits in D (TASK_KILLABLE)             -> vfork_d
 *
 * Before each pipe or condvar wait the wakee writes one byte to the waker's
 * own "go" pipe (which never blocks it); the waker reads it, sleeps its delay
 * in clock_nanosleep and then does its one write or signal. A waker wakes
 * the wakee in no other way: it never holds a lock the wakee wants, and
 * signals the condvar after releasing the mutex. The wakee and the wakers are
 * pinned to CPU 0 when there are 2+ CPUs.
 *
 * When the wakee is done, spin_a and spin_b start together, both pinned to
 * the same CPU (1 when there are 2+ CPUs, else 0), and each spins until its
 * own CPU time reaches SPIN_CPU_MS; the CPU is shared, so each also waits
 * about as long for it. Each publishes wall time minus CPU time (the time it
 * was runnable but not running) and, as CALLS, its involuntary context
 * switches. A third thread on their CPU, at nice 19, sleeps 2 ms RUNQ_ROUNDS
 * times and waits for the CPU after each wakeup; it publishes the kernel's
 * own account of that wait (schedstat's run_delay) as runq_wait, and of the
 * part of it in its sleep calls (from before each to after it: the wait
 * after the wakeup, and any preemption in the call) as runq_woken. (How much
 * of its wait comes after wakeups is the scheduler's: a nice 19 thread that
 * the spinners preempt may not run again before they end.)
 *
 * Result lines (-r FILE, default stdout), COMM TID BLOCKED_NS CALLS, where
 * COMM is a label and TID the thread that waited (the wakee for the first
 * five):
 *   by_alpha ~300 ms 3, by_bravo ~600 ms 3, by_charlie ~300 ms 3,
 *   timer_sleep ~250 ms 1, vfork_d ~200 ms 1, spin_a ~500 ms, spin_b ~500 ms,
 *   runq_wait (varies: 100-900 ms), runq_woken (a part of it)
 * -s SCALE multiplies every duration; -w FILE waits for FILE before starting.
 * A failed call prints to stderr and exits 1. About 2.7 s with -s 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include "truth.h"

#define ALPHA_MS	100
#define BRAVO_MS	200
#define CHARLIE_MS	100
#define SLEEP_MS	250
#define VFORK_MS	200
#define SPIN_CPU_MS	500	/* two on one CPU: ~500 ms waiting each */
#define ROUNDS		3
#define RUNQ_ROUNDS	50	/* the sleeper beside the spinners: 2 ms sleeps */

static int pipe_a[2], pipe_b[2];		/* the wakee's waits */
static int go_alpha[2], go_bravo[2], go_charlie[2];	/* wakee -> waker */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int signalled;
static int wakee_cpu, spin_cpu;
static pthread_barrier_t spin_start;

static void die(const char *what)
{
	fprintf(stderr, "wakers: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* pthread_* return their error instead of setting errno */
static void check(int err, const char *what)
{
	if (err) {
		errno = err;
		die(what);
	}
}

static void sleep_ms(double ms)
{
	long long ns = (long long)(ms * scale * 1e6);
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };
	int err;

	while ((err = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts)) == EINTR)
		;
	if (err) {
		errno = err;
		die("clock_nanosleep");
	}
}

static void put_byte(int fd, const char *what)
{
	ssize_t n;

	while ((n = write(fd, "x", 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		die(what);
}

static void get_byte(int fd, const char *what)
{
	ssize_t n;
	char c;

	while ((n = read(fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1) {
		if (n == 0)
			errno = EPIPE;
		die(what);
	}
}

/* ---- the wakers: each wakes the wakee only in its *_write / *_signal ---- */

__attribute__((noinline)) static void waker_alpha_write(void)
{
	put_byte(pipe_a[1], "write pipe A");
}

__attribute__((noinline)) static void *waker_alpha_main(void *arg)
{
	int i;

	pthread_setname_np(pthread_self(), "waker_alpha");
	for (i = 0; i < ROUNDS; i++) {
		get_byte(go_alpha[0], "read go pipe (alpha)");
		sleep_ms(ALPHA_MS);
		waker_alpha_write();
	}
	return arg;
}

__attribute__((noinline)) static void waker_bravo_write(void)
{
	put_byte(pipe_b[1], "write pipe B");
}

__attribute__((noinline)) static void *waker_bravo_main(void *arg)
{
	int i;

	pthread_setname_np(pthread_self(), "waker_bravo");
	for (i = 0; i < ROUNDS; i++) {
		get_byte(go_bravo[0], "read go pipe (bravo)");
		sleep_ms(BRAVO_MS);
		waker_bravo_write();
	}
	return arg;
}

/* The mutex is free here: the wakee released it in pthread_cond_wait. */
__attribute__((noinline)) static void waker_charlie_signal(void)
{
	check(pthread_mutex_lock(&lock), "pthread_mutex_lock");
	signalled++;
	check(pthread_mutex_unlock(&lock), "pthread_mutex_unlock");
	check(pthread_cond_signal(&cond), "pthread_cond_signal");
}

__attribute__((noinline)) static void *waker_charlie_main(void *arg)
{
	int i;

	pthread_setname_np(pthread_self(), "waker_charlie");
	for (i = 0; i < ROUNDS; i++) {
		get_byte(go_charlie[0], "read go pipe (charlie)");
		sleep_ms(CHARLIE_MS);
		waker_charlie_signal();
	}
	return arg;
}

/* ---- the wakee: one function per kind of wait ---- */

__attribute__((noinline)) static void wakee_pipe_a(void)
{
	get_byte(pipe_a[0], "read pipe A");
}

__attribute__((noinline)) static void wakee_pipe_b(void)
{
	get_byte(pipe_b[0], "read pipe B");
}

/* Called with the mutex held. */
__attribute__((noinline)) static void wakee_cond(int want)
{
	while (signalled < want)
		check(pthread_cond_wait(&cond, &lock), "pthread_cond_wait");
}

__attribute__((noinline)) static void wakee_sleep(void)
{
	sleep_ms(SLEEP_MS);
}

/* Returns the child, for the caller to reap outside the measured wait. */
__attribute__((noinline)) static pid_t wakee_vfork(void)
{
	long long ns = (long long)(VFORK_MS * scale * 1e6);
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };
	pid_t pid = vfork();

	if (pid == 0) {
		/* the child of vfork: only syscalls, then _exit */
		while (syscall(SYS_nanosleep, &ts, &ts) && errno == EINTR)
			;
		_exit(0);
	}
	if (pid < 0)
		die("vfork");
	return pid;
}

__attribute__((noinline)) static void *wakee_main(void *arg)
{
	long long blocked, t;
	int status, i;
	pid_t pid;

	pthread_setname_np(pthread_self(), "wakee");

	for (blocked = 0, i = 0; i < ROUNDS; i++) {
		put_byte(go_alpha[1], "write go pipe (alpha)");
		t = off_now();
		wakee_pipe_a();
		blocked += off_now() - t;
	}
	publish("by_alpha", blocked, ROUNDS);

	for (blocked = 0, i = 0; i < ROUNDS; i++) {
		put_byte(go_bravo[1], "write go pipe (bravo)");
		t = off_now();
		wakee_pipe_b();
		blocked += off_now() - t;
	}
	publish("by_bravo", blocked, ROUNDS);

	check(pthread_mutex_lock(&lock), "pthread_mutex_lock");
	for (blocked = 0, i = 0; i < ROUNDS; i++) {
		put_byte(go_charlie[1], "write go pipe (charlie)");
		t = off_now();
		wakee_cond(i + 1);
		blocked += off_now() - t;
	}
	check(pthread_mutex_unlock(&lock), "pthread_mutex_unlock");
	publish("by_charlie", blocked, ROUNDS);

	t = off_now();
	wakee_sleep();
	publish("timer_sleep", off_now() - t, 1);

	t = off_now();
	pid = wakee_vfork();
	blocked = off_now() - t;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "wakers: the vfork child failed (status %#x)\n", status);
		exit(1);
	}
	publish("vfork_d", blocked, 1);
	return arg;
}

/* ---- the spinners: two threads sharing one CPU ---- */

static long long clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts))
		die("clock_gettime");
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile unsigned long sink;

__attribute__((noinline)) static void spin_hot(void)
{
	unsigned long i;

	for (i = 0; i < 10000; i++)
		sink += i * i;
}

static long involuntary_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		die("getrusage");
	return ru.ru_nivcsw;
}

__attribute__((noinline)) static void *spin_main(void *arg)
{
	const char *name = arg;
	long long target = (long long)(SPIN_CPU_MS * scale * 1e6);
	long long wall, cpu, wall0, cpu0;
	long ivcsw0;
	int err;

	pthread_setname_np(pthread_self(), name);
	err = pthread_barrier_wait(&spin_start);
	if (err && err != PTHREAD_BARRIER_SERIAL_THREAD)
		check(err, "pthread_barrier_wait");
	ivcsw0 = involuntary_switches();
	wall0 = clock_ns(CLOCK_MONOTONIC);
	cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	do
		spin_hot();
	while ((cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID)) - cpu0 < target);
	wall = clock_ns(CLOCK_MONOTONIC) - wall0;
	cpu -= cpu0;
	publish(name, wall > cpu ? wall - cpu : 0,
		(int)(involuntary_switches() - ivcsw0));
	return NULL;
}

/* This thread's run queue wait so far, the scheduler's own account (the
 * second field of /proc/thread-self/schedstat, CONFIG_SCHED_INFO). */
static long long run_delay_ns(void)
{
	unsigned long long ran, delay;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (!f)
		die("/proc/thread-self/schedstat");
	if (fscanf(f, "%llu %llu", &ran, &delay) != 2) {
		errno = EINVAL;
		die("/proc/thread-self/schedstat");
	}
	fclose(f);
	return (long long)delay;
}

/*
 * Beside the spinners, on their CPU, at nice 19: sleeps 2 ms RUNQ_ROUNDS
 * times and, after each wakeup, waits for the CPU a spinner holds. Publishes
 * the kernel's account of its run queue wait over that time, and over its
 * sleep calls alone (it is read while running, so no wait is half counted).
 */
__attribute__((noinline)) static void *runq_sleeper_main(void *arg)
{
	long long before, woken;
	int err, i;

	(void)arg;
	pthread_setname_np(pthread_self(), "runq_sleeper");
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19))
		die("setpriority");
	/* read before the barrier: the wait after its wakeup counts too */
	before = run_delay_ns();
	err = pthread_barrier_wait(&spin_start);
	if (err && err != PTHREAD_BARRIER_SERIAL_THREAD)
		check(err, "pthread_barrier_wait");
	for (woken = 0, i = 0; i < RUNQ_ROUNDS; i++) {
		long long t = run_delay_ns();

		sleep_ms(2);
		woken += run_delay_ns() - t;
	}
	publish("runq_wait", run_delay_ns() - before, RUNQ_ROUNDS);
	publish("runq_woken", woken, RUNQ_ROUNDS);
	return NULL;
}

static void start_on(pthread_t *th, int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	check(pthread_attr_init(&attr), "pthread_attr_init");
	check(pthread_attr_setaffinity_np(&attr, sizeof(set), &set),
	      "pthread_attr_setaffinity_np");
	check(pthread_create(th, &attr, fn, arg), "pthread_create");
	check(pthread_attr_destroy(&attr), "pthread_attr_destroy");
}

static void join(pthread_t th)
{
	check(pthread_join(th, NULL), "pthread_join");
}

/* The lowest and second-lowest CPUs this process may run on. */
static void pick_cpus(void)
{
	cpu_set_t set;
	int cpu, found = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity");
	for (cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		if (found++ == 0)
			wakee_cpu = spin_cpu = cpu;
		else
			spin_cpu = cpu;
	}
	if (!found) {
		fprintf(stderr, "wakers: no CPU to run on\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const char *result_path = truth_start(argc, argv, "wakers");
	pthread_t wakee, alpha, bravo, charlie, spin_a, spin_b, sleeper;

	pick_cpus();
	if (pipe(pipe_a) || pipe(pipe_b) || pipe(go_alpha) || pipe(go_bravo) ||
	    pipe(go_charlie))
		die("pipe");

	start_on(&alpha, wakee_cpu, waker_alpha_main, NULL);
	start_on(&bravo, wakee_cpu, waker_bravo_main, NULL);
	start_on(&charlie, wakee_cpu, waker_charlie_main, NULL);
	start_on(&wakee, wakee_cpu, wakee_main, NULL);
	join(wakee);
	join(alpha);
	join(bravo);
	join(charlie);

	check(pthread_barrier_init(&spin_start, NULL, 3), "pthread_barrier_init");
	start_on(&spin_a, spin_cpu, spin_main, "spin_a");
	start_on(&spin_b, spin_cpu, spin_main, "spin_b");
	start_on(&sleeper, spin_cpu, runq_sleeper_main, NULL);
	join(spin_a);
	join(spin_b);
	join(sleeper);

	if (truth_write(result_path)) {
		fprintf(stderr, "wakers: cannot write %s: %s\n",
			result_path ? result_path : "stdout", strerror(errno));
		return 1;
	}
	return 0;
}
