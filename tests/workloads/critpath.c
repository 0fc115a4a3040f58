// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for the critical path: three requests, each a thread that
 * asks another through a pipe and waits for its answer in read(), one
 * after the other. What each request waited for is known by construction:
 *
 *  req_chain  writes to the worker's pipe and waits in req_chain_wait. The
 *             worker (worker_main) reads it and takes a mutex that holder
 *             has held since before: holder, told by req_chain at the same
 *             moment, sleeps HOLD_SLEEP_MS in holder_sleep (ended by a
 *             timer), computes HOLD_CPU_MS of its own CPU time in
 *             holder_compute and unlocks; the worker then computes
 *             WORK_CPU_MS in worker_compute and answers.
 *             Its critical path: ~300 ms [timer] in holder_sleep, ~100 ms
 *             holder running in holder_compute, ~50 ms worker running in
 *             worker_compute, the rest small (run queue waits, the calls).
 *  req_timer  asks napper, which sleeps NAP_MS in napper_sleep (a timer)
 *             and answers: ~200 ms [timer] in napper_sleep.
 *  req_irq    asks reader, which reads READS blocks of a file of its own
 *             with O_DIRECT in reader_read: waits in D that the disk's
 *             interrupt ends.
 *
 * The computes spin until the thread's own CPU time (CLOCK_THREAD_CPUTIME_ID)
 * has grown by their length, so a busy machine stretches them in wall time
 * (preempted) but not in CPU time.
 *
 * Result lines (-r FILE), COMM TID BLOCKED_NS CALLS: req_chain, req_timer
 * and req_irq with the time each measured around its read() of the answer;
 * holder_sleep, holder_cpu, worker_cpu, napper_sleep with what they slept
 * or computed; reader_reads, the time reader spent in its reads. -s SCALE
 * multiplies the durations. With -d DIR the reader's file is made in DIR
 * (default .); a filesystem without O_DIRECT makes it print "no O_DIRECT"
 * and skip req_irq. A failed call prints to stderr and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include "truth.h"

#define HOLD_SLEEP_MS 300
#define HOLD_CPU_MS 100
#define WORK_CPU_MS 50
#define NAP_MS 200
#define READS 64
#define BLOCK 4096

static int req_worker[2], rep_worker[2], go_holder[2], holder_ready[2];
static int req_napper[2], rep_napper[2];
static int req_reader[2], rep_reader[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *dir = ".";
static int direct_fd = -1;

static void die(const char *what)
{
	fprintf(stderr, "critpath: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void name(const char *n)
{
	prctl(PR_SET_NAME, n, 0, 0, 0);
}

static long long ms(double v)
{
	return (long long)(v * scale * 1e6);
}

static void put_byte(int fd)
{
	char c = 1;

	if (write(fd, &c, 1) != 1)
		die("write");
}

static void get_byte(int fd)
{
	char c;

	if (read(fd, &c, 1) != 1)
		die("read");
}

static long long thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Spin until this thread has run @ns more; returns the CPU time it took. */
static __attribute__((noinline)) long long spin(long long ns)
{
	long long t0 = thread_cpu(), t;
	volatile unsigned long x = 0;

	do {
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i * 7;
		t = thread_cpu();
	} while (t - t0 < ns);
	return t - t0;
}

static __attribute__((noinline)) long long nap(long long ns)
{
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };
	long long t0 = now();

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
	return now() - t0;
}

static __attribute__((noinline)) long long holder_sleep(void)
{
	return nap(ms(HOLD_SLEEP_MS));
}

static __attribute__((noinline)) long long holder_compute(void)
{
	return spin(ms(HOLD_CPU_MS));
}

static void *holder_main(void *arg)
{
	long long slept, cpu;

	(void)arg;
	name("holder");
	pthread_mutex_lock(&lock);
	put_byte(holder_ready[1]);
	get_byte(go_holder[0]);
	slept = holder_sleep();
	cpu = holder_compute();
	pthread_mutex_unlock(&lock);
	publish("holder_sleep", slept, 1);
	publish("holder_cpu", cpu, 1);
	return NULL;
}

static __attribute__((noinline)) void worker_lock(void)
{
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
}

static __attribute__((noinline)) long long worker_compute(void)
{
	return spin(ms(WORK_CPU_MS));
}

static void *worker_main(void *arg)
{
	long long cpu;

	(void)arg;
	name("worker");
	get_byte(req_worker[0]);
	worker_lock();
	cpu = worker_compute();
	put_byte(rep_worker[1]);
	publish("worker_cpu", cpu, 1);
	return NULL;
}

static __attribute__((noinline)) long long napper_sleep(void)
{
	return nap(ms(NAP_MS));
}

static void *napper_main(void *arg)
{
	long long slept;

	(void)arg;
	name("napper");
	get_byte(req_napper[0]);
	slept = napper_sleep();
	put_byte(rep_napper[1]);
	publish("napper_sleep", slept, 1);
	return NULL;
}

/* One block at @off with O_DIRECT: a wait in D that the disk's interrupt ends. */
static __attribute__((noinline)) void reader_read(void *buf, off_t off)
{
	if (pread(direct_fd, buf, BLOCK, off) != BLOCK)
		die("pread O_DIRECT");
}

static void *reader_main(void *arg)
{
	long long t0, in_reads = 0;
	void *buf;
	int i;

	(void)arg;
	name("reader");
	if (posix_memalign(&buf, BLOCK, BLOCK))
		die("posix_memalign");
	get_byte(req_reader[0]);
	for (i = 0; i < READS; i++) {
		t0 = now();
		/* every other block, backwards: no read-ahead serves the next */
		reader_read(buf, (off_t)(2 * READS - 2 * i - 1) * BLOCK);
		in_reads += now() - t0;
	}
	put_byte(rep_reader[1]);
	publish("reader_reads", in_reads, READS);
	free(buf);
	return NULL;
}

/* A request: ask through @req, wait for the answer in @rep, publish the wait as @label. */
static __attribute__((noinline)) void request(const char *label, int req, int rep)
{
	long long t0;

	put_byte(req);
	t0 = now();
	get_byte(rep);
	publish(label, now() - t0, 1);
}

static __attribute__((noinline)) void req_chain_wait(void)
{
	put_byte(go_holder[1]);
	request("req_chain", req_worker[1], rep_worker[0]);
}

static __attribute__((noinline)) void req_timer_wait(void)
{
	request("req_timer", req_napper[1], rep_napper[0]);
}

static __attribute__((noinline)) void req_irq_wait(void)
{
	request("req_irq", req_reader[1], rep_reader[0]);
}

static void *req_chain_main(void *arg)
{
	(void)arg;
	name("req_chain");
	req_chain_wait();
	return NULL;
}

static void *req_timer_main(void *arg)
{
	(void)arg;
	name("req_timer");
	req_timer_wait();
	return NULL;
}

static void *req_irq_main(void *arg)
{
	(void)arg;
	name("req_irq");
	req_irq_wait();
	return NULL;
}

static void run(void *(*fn)(void *))
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, NULL) || pthread_join(t, NULL))
		die("pthread");
}

/* The reader's file, 2 * READS blocks, out of the page cache: NULL when O_DIRECT is refused. */
static int make_direct_file(void)
{
	char path[4096];
	void *buf;
	int fd, i;

	snprintf(path, sizeof(path), "%s/critpath.direct.XXXXXX", dir);
	fd = mkstemp(path);
	if (fd < 0)
		die("mkstemp");
	unlink(path);
	if (posix_memalign(&buf, BLOCK, BLOCK))
		die("posix_memalign");
	memset(buf, 0x5a, BLOCK);
	for (i = 0; i < 2 * READS; i++)
		if (write(fd, buf, BLOCK) != BLOCK)
			die("write");
	if (fsync(fd))
		die("fsync");
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	free(buf);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	direct_fd = open(path, O_RDONLY | O_DIRECT);
	close(fd);
	return direct_fd >= 0;
}

int main(int argc, char **argv)
{
	pthread_t th[4];
	const char *result_path;
	int i, direct;

	for (i = 1; i + 1 < argc; i++) /* -d DIR, taken out before truth_start's options */
		if (!strcmp(argv[i], "-d")) {
			dir = argv[i + 1];
			memmove(&argv[i], &argv[i + 2], (size_t)(argc - i - 1) * sizeof(*argv));
			argc -= 2;
			break;
		}
	result_path = truth_start(argc, argv, "critpath [-d DIR]");
	direct = make_direct_file();
	if (!direct)
		fprintf(stderr, "critpath: no O_DIRECT in %s: %s\n", dir, strerror(errno));
	if (pipe(req_worker) || pipe(rep_worker) || pipe(go_holder) || pipe(holder_ready) ||
	    pipe(req_napper) || pipe(rep_napper) || pipe(req_reader) || pipe(rep_reader))
		die("pipe");
	if (pthread_create(&th[0], NULL, holder_main, NULL) ||
	    pthread_create(&th[1], NULL, worker_main, NULL) ||
	    pthread_create(&th[2], NULL, napper_main, NULL) ||
	    (direct && pthread_create(&th[3], NULL, reader_main, NULL)))
		die("pthread_create");
	get_byte(holder_ready[0]); /* the mutex is held */
	usleep(50000); /* the worker and napper wait in their reads */
	run(req_chain_main);
	usleep(20000);
	run(req_timer_main);
	if (direct) {
		usleep(20000);
		run(req_irq_main);
	}
	for (i = 0; i < 3 + direct; i++)
		pthread_join(th[i], NULL);
	return truth_write(result_path);
}
