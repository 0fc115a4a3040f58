// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for "what each thread waited on, and who held it" (offcpu
 * record --wait-objects, offcpu report --locks). Known waits, each measured
 * by the thread that waits with now():
 *
 *   lk-holder   locks the static mutex lk_mutex, passes a barrier with the
 *               two waiters, sleeps HOLD_MS in lk_hold_mutex() and unlocks
 *   lk-waiter1  pthread_mutex_lock(&lk_mutex) in lk_wait_mutex(), right after
 *   lk-waiter2  the barrier: each waits about HOLD_MS  -> mutex_wait (x2)
 *   lk-reader   read() of a pipe in lk_read_pipe(), written PIPE_MS later by
 *               lk-writer in lk_write_pipe()            -> pipe_wait
 *   lk-client   connect() to 127.0.0.1 and read() in lk_read_socket(): the
 *               server, another process (lk-server, forked at the start,
 *               listening already), accepts, sleeps SOCKET_MS and writes one
 *               byte                                    -> socket_wait
 *
 * The mutex part runs first, then the pipe and the socket parts together.
 * Result lines (-r FILE, default stdout), COMM TID BLOCKED_NS CALLS as
 * truth.h, COMM a label: mutex_wait (one per waiter), pipe_wait,
 * socket_wait; and for the test's checks, with BLOCKED_NS 0: holder TID,
 * writer TID, server PID (its TID, the process's id), port PORT (CALLS).
 * -s SCALE multiplies every duration; -w FILE waits for FILE before
 * starting. A failed call prints to stderr and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include "truth.h"

#define HOLD_MS 400
#define PIPE_MS 300
#define SOCKET_MS 300

#define NOINLINE __attribute__((noinline))
#define KEEP() __asm__ volatile("" ::: "memory")

static pthread_mutex_t lk_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t lk_barrier;
static int lk_pipe[2];
static int listen_fd, port;

static void die(const char *what)
{
	fprintf(stderr, "locks: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { 0, 0 };
	long long ns = (long long)(ms * scale * 1e6);

	ts.tv_sec = ns / 1000000000LL;
	ts.tv_nsec = ns % 1000000000LL;
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

static void name(const char *comm)
{
	prctl(PR_SET_NAME, comm);
}

NOINLINE static void lk_hold_mutex(void)
{
	pthread_mutex_lock(&lk_mutex);
	pthread_barrier_wait(&lk_barrier);
	sleep_ms(HOLD_MS);
	pthread_mutex_unlock(&lk_mutex);
	KEEP();
}

static void *holder(void *arg)
{
	(void)arg;
	name("lk-holder");
	publish("holder", 0, 0);
	lk_hold_mutex();
	return NULL;
}

NOINLINE static void lk_wait_mutex(void)
{
	long long t0;

	pthread_barrier_wait(&lk_barrier);
	t0 = now();
	pthread_mutex_lock(&lk_mutex);
	publish("mutex_wait", now() - t0, 1);
	pthread_mutex_unlock(&lk_mutex);
	KEEP();
}

static void *waiter(void *arg)
{
	(void)arg;
	name(arg);
	lk_wait_mutex();
	return NULL;
}

NOINLINE static void lk_read_pipe(void)
{
	long long t0 = now();
	char c;

	if (read(lk_pipe[0], &c, 1) != 1)
		die("read of the pipe");
	publish("pipe_wait", now() - t0, 1);
	KEEP();
}

static void *reader(void *arg)
{
	(void)arg;
	name("lk-reader");
	lk_read_pipe();
	return NULL;
}

NOINLINE static void lk_write_pipe(void)
{
	sleep_ms(PIPE_MS);
	if (write(lk_pipe[1], "x", 1) != 1)
		die("write of the pipe");
	KEEP();
}

static void *writer(void *arg)
{
	(void)arg;
	name("lk-writer");
	publish("writer", 0, 0);
	lk_write_pipe();
	return NULL;
}

NOINLINE static void lk_read_socket(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	long long t0;
	char c;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		die("connect to the server");
	t0 = now();
	if (read(fd, &c, 1) != 1)
		die("read of the socket");
	publish("socket_wait", now() - t0, 1);
	close(fd);
	KEEP();
}

static void *client(void *arg)
{
	(void)arg;
	name("lk-client");
	lk_read_socket();
	return NULL;
}

/* The server process: one connection, answered SOCKET_MS after it came. */
NOINLINE static void lk_serve(void)
{
	int fd = accept(listen_fd, NULL, NULL);

	if (fd < 0)
		die("accept");
	sleep_ms(SOCKET_MS);
	if (write(fd, "y", 1) != 1)
		die("write of the socket");
	close(fd);
	KEEP();
}

static pid_t start_server(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	pid_t pid;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(listen_fd, 4) || getsockname(listen_fd, (struct sockaddr *)&a, &len))
		die("listen on 127.0.0.1");
	port = ntohs(a.sin_port);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		name("lk-server");
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		lk_serve();
		_exit(0);
	}
	close(listen_fd);
	return pid;
}

int main(int argc, char **argv)
{
	const char *result_path = truth_start(argc, argv, "locks");
	pthread_t t[8];
	pid_t server;
	int status, i;

	name("lk-main");
	server = start_server();
	if (pthread_barrier_init(&lk_barrier, NULL, 3) || pipe(lk_pipe))
		die("barrier, pipe");
	if (pthread_create(&t[0], NULL, holder, NULL) ||
	    pthread_create(&t[1], NULL, waiter, "lk-waiter1") ||
	    pthread_create(&t[2], NULL, waiter, "lk-waiter2"))
		die("pthread_create");
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	if (pthread_create(&t[3], NULL, reader, NULL) || pthread_create(&t[4], NULL, writer, NULL) ||
	    pthread_create(&t[5], NULL, client, NULL))
		die("pthread_create");
	for (i = 3; i < 6; i++)
		pthread_join(t[i], NULL);
	if (waitpid(server, &status, 0) != server || !WIFEXITED(status) || WEXITSTATUS(status))
		die("the server did not end well");
	results[nr_results] = (struct result){ "server", server, 0, 0 };
	nr_results++;
	results[nr_results] = (struct result){ "port", 0, 0, port };
	nr_results++;
	return truth_write(result_path);
}
