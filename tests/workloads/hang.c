// SPDX-License-Identifier: GPL-2.0
/*
 * Ground truth for the threads already waiting when a recording begins
 * (offcpu record -p PID, the offcpu-before event): a stuck process whose
 * threads each block for good, in a function of their own, and say when.
 *
 *   hang-alpha    pthread_mutex_lock of a mutex main holds   in hang_mutex_alpha
 *   hang-bravo    pthread_cond_wait, never signalled         in hang_cond_bravo
 *   hang-charlie  read() of a pipe nobody writes             in hang_read_charlie
 *   hang-delta    nanosleep(1 hour)                          in hang_sleep_delta
 *   hang-echo     epoll_wait with no fd ready, no timeout    in hang_epoll_echo
 *   hang-foxtrot  D state: a CLONE_VFORK child that sleeps   in hang_vfork_foxtrot
 *                 (the parent waits uninterruptibly, killable, for a child
 *                 that neither execs nor exits; the child has its own
 *                 stack, and dies with the thread: PR_SET_PDEATHSIG)
 *
 * The main thread holds alpha's mutex and waits in pause() until killed.
 *
 * Output (-r FILE, default stdout), one line per thread, written just
 * before it blocks:
 *   COMM TID MONOTONIC_NS FUNCTION
 * where MONOTONIC_NS is CLOCK_MONOTONIC just before the blocking call. It
 * runs until killed. Built with frame pointers (the Makefile) and without
 * (tests/integration/waiting.sh: -fomit-frame-pointer): the function must be
 * found either way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define NOINLINE __attribute__((noinline))
/* a call after which something happens: not a tail call, not folded away */
#define KEEP() __asm__ volatile("" ::: "memory")

static int out_fd = STDOUT_FILENO;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cond_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static volatile int signalled;
static int quiet_pipe[2];

static long long now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One line, one write: threads append at once to an O_APPEND file. */
NOINLINE static void announce(const char *fn)
{
	char comm[16] = "", line[128];
	int n;

	prctl(PR_GET_NAME, comm);
	n = snprintf(line, sizeof(line), "%s %ld %lld %s\n", comm, (long)syscall(SYS_gettid), now(),
		     fn);
	if (write(out_fd, line, (size_t)n) != n)
		_exit(3);
}

NOINLINE static void hang_mutex_alpha(void)
{
	announce(__func__);
	pthread_mutex_lock(&held);
	KEEP();
	pthread_mutex_unlock(&held);
}

NOINLINE static void hang_cond_bravo(void)
{
	pthread_mutex_lock(&cond_lock);
	announce(__func__);
	while (!signalled)
		pthread_cond_wait(&cond, &cond_lock);
	pthread_mutex_unlock(&cond_lock);
	KEEP();
}

NOINLINE static void hang_read_charlie(void)
{
	char c;

	announce(__func__);
	while (read(quiet_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	KEEP();
}

NOINLINE static void hang_sleep_delta(void)
{
	struct timespec ts = { 3600, 0 };

	announce(__func__);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	KEEP();
}

NOINLINE static void hang_epoll_echo(void)
{
	struct epoll_event ev = { .events = EPOLLIN }, got;
	int ep = epoll_create1(EPOLL_CLOEXEC);

	/* the quiet pipe's read end: never readable */
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, quiet_pipe[0], &ev))
		_exit(4);
	announce(__func__);
	while (epoll_wait(ep, &got, 1, -1) < 0 && errno == EINTR)
		;
	KEEP();
}

static pid_t foxtrot_parent;

/*
 * The vfork child: its own stack, the parent's memory. It touches nothing
 * of the parent's (raw system calls only) and dies when the parent thread
 * does: its parent death signal, checked against a parent already gone.
 * Not static: the asm below calls it by its name.
 */
NOINLINE __attribute__((noreturn, used)) void hang_foxtrot_child(void);
NOINLINE __attribute__((noreturn, used)) void hang_foxtrot_child(void)
{
	struct timespec ts = { 3600, 0 };

	syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (syscall(SYS_getppid) != foxtrot_parent)
		syscall(SYS_exit, 0);
	for (;;)
		syscall(SYS_nanosleep, &ts, NULL);
}

/*
 * D state, safely: the parent of a CLONE_VFORK child waits, killably, until
 * the child execs or exits. The system call is made here, not in libc's
 * clone(), whose unwind information ends before its syscall instruction (a
 * walk from there skips its caller): the thread waits at a pc of this
 * function. The child starts on its own stack and calls hang_foxtrot_child().
 */
NOINLINE static void hang_vfork_foxtrot(void)
{
	size_t size = 64 * 1024;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
			   -1, 0);
	long ret;

	if (stack == MAP_FAILED)
		_exit(5);
	foxtrot_parent = getpid();
	announce(__func__);
#if defined(__x86_64__)
	{
		register long r10 __asm__("r10") = 0;
		register long r8 __asm__("r8") = 0;

		/* clone(flags, newsp, parent_tid, child_tid, tls); the child, on its
		 * new stack (16-byte aligned), calls hang_foxtrot_child and never returns */
		__asm__ volatile("syscall\n\t"
				 "test %%rax, %%rax\n\t"
				 "jnz 1f\n\t"
				 "call hang_foxtrot_child\n\t"
				 "1:"
				 : "=a"(ret)
				 : "0"((long)SYS_clone), "D"((long)(CLONE_VM | CLONE_VFORK | SIGCHLD)),
				   "S"(stack + size), "d"(0L), "r"(r10), "r"(r8)
				 : "rcx", "r11", "memory");
	}
#else
	ret = vfork();
	if (ret == 0)
		hang_foxtrot_child();
#endif
	if (ret < 0)
		_exit(6);
	KEEP();
}

struct hang {
	const char *name;
	void (*fn)(void);
};

static const struct hang hangs[] = {
	{ "hang-alpha", hang_mutex_alpha },
	{ "hang-bravo", hang_cond_bravo },
	{ "hang-charlie", hang_read_charlie },
	{ "hang-delta", hang_sleep_delta },
	{ "hang-echo", hang_epoll_echo },
	{ "hang-foxtrot", hang_vfork_foxtrot },
};

NOINLINE static void *hang_thread(void *arg)
{
	const struct hang *h = arg;

	prctl(PR_SET_NAME, h->name);
	h->fn();
	KEEP();
	return NULL;
}

NOINLINE static void hang_main(void)
{
	announce(__func__);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	pthread_t t;
	size_t i;
	int opt;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt != 'r') {
			fprintf(stderr, "usage: %s [-r FILE]\n", argv[0]);
			return 2;
		}
		out_fd = open(optarg, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
		if (out_fd < 0) {
			perror(optarg);
			return 2;
		}
	}
	if (pipe2(quiet_pipe, O_CLOEXEC))
		return 1;
	prctl(PR_SET_NAME, "hang");
	/* alpha's mutex, held for good */
	pthread_mutex_lock(&held);
	for (i = 0; i < sizeof(hangs) / sizeof(hangs[0]); i++)
		if (pthread_create(&t, NULL, hang_thread, (void *)&hangs[i]))
			return 1;
	hang_main();
	return 0;
}
