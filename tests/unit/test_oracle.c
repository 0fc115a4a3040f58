// SPDX-License-Identifier: GPL-2.0
/*
 * The libdw reference unwinder against the truth. No root needed: a chain of
 * functions of this binary, through libc's qsort, captures its own registers
 * and stack, recording every return address on the way down; the oracle must
 * find them in order. In the main thread, in another thread, in a child.
 */
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <search.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "unit.h"
#include "unwind/oracle.h"

/* a frame of its own, whatever the optimization: no inlining, cloning or tail call */
#ifdef __clang__
#define ORACLE_FN __attribute__((noinline))
#else
#define ORACLE_FN __attribute__((noipa))
#endif
#define BARRIER() asm volatile("" ::: "memory")
#define RA() ((uint64_t)(uintptr_t)__builtin_return_address(0))

#define MAX_FRAMES 64

struct oracle_sample {
	uint64_t ip, sp, bp; /* at the capture */
	uint64_t limit; /* the end of the stack's mapping */
	size_t len;
	int tid;
	/* the return addresses, innermost first, the call in libc's qsort aside */
	uint64_t ra_capture, ra_leaf, ra_match, ra_cmp, ra_mid, ra_top;
	unsigned char stack[8192];
};

static __thread struct oracle_sample *cur;

static uint64_t mapping_end(const void *addr)
{
	unsigned long long start, end, a = (uintptr_t)addr;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx", &start, &end) == 2 && a >= start && a < end) {
			fclose(f);
			return end;
		}
	}
	fclose(f);
	return 0;
}

/* Byte by byte, not through ASan: the stack holds its redzones. */
__attribute__((noinline, no_sanitize_address)) static void copy_stack(struct oracle_sample *s)
{
	const volatile unsigned char *src = (const volatile unsigned char *)(uintptr_t)s->sp;
	size_t i, n = s->limit > s->sp ? s->limit - s->sp : 0;

	if (n > sizeof(s->stack))
		n = sizeof(s->stack);
	for (i = 0; i < n; i++)
		s->stack[i] = src[i];
	s->len = n;
}

ORACLE_FN static void oracle_capture(void)
{
	uint64_t ip, sp, bp;

	cur->ra_capture = RA();
	/* rbp first: an output register may be rbp itself */
	asm volatile("mov %%rbp, %2\n\t"
		     "mov %%rsp, %1\n\t"
		     "lea 0(%%rip), %0"
		     : "=r"(ip), "=r"(sp), "=r"(bp));
	cur->ip = ip;
	cur->sp = sp;
	cur->bp = bp;
	cur->tid = gettid();
	copy_stack(cur);
	BARRIER();
}

ORACLE_FN static void oracle_leaf(void)
{
	cur->ra_leaf = RA();
	oracle_capture();
	BARRIER();
}

/* called by libc's lfind, which no sanitizer intercepts */
ORACLE_FN static int oracle_match(const void *key, const void *elem)
{
	if (!cur->ra_match) {
		cur->ra_match = RA();
		oracle_leaf();
	}
	BARRIER();
	return *(const int *)key != *(const int *)elem;
}

/* called by qsort: libc's, or the sanitizers' own */
ORACLE_FN static int oracle_cmp(const void *a, const void *b)
{
	size_t one = 1;

	if (!cur->ra_cmp) {
		cur->ra_cmp = RA();
		CHECK(lfind(a, a, &one, sizeof(int), oracle_match) == a);
	}
	BARRIER();
	return *(const int *)a - *(const int *)b;
}

ORACLE_FN static int oracle_mid(int x)
{
	int v[2] = { x + 1, x };

	cur->ra_mid = RA();
	qsort(v, 2, sizeof(v[0]), oracle_cmp);
	BARRIER();
	return v[0];
}

ORACLE_FN static int oracle_top(int x)
{
	int r;

	cur->ra_top = RA();
	r = oracle_mid(x);
	BARRIER();
	return r + 1;
}

/* @depth more frames of its own above the chain */
ORACLE_FN static int oracle_deep(int depth)
{
	int r = depth ? oracle_deep(depth - 1) : oracle_top(depth);

	BARRIER();
	return r + 1;
}

static void run_chain(struct oracle_sample *s, int depth)
{
	int here;

	memset(s, 0, sizeof(*s));
	s->limit = mapping_end(&here);
	cur = s;
	oracle_deep(depth);
	cur = NULL;
}

static bool same_object(uint64_t addr, const void *base)
{
	Dl_info info;

	return dladdr((void *)(uintptr_t)addr, &info) && info.dli_fbase == base;
}

static bool within(uint64_t addr, const void *fn)
{
	return addr > (uintptr_t)fn && addr - (uintptr_t)fn < 4096;
}

/*
 * The walk of a sample from run_chain(s, 0): the chain's return addresses,
 * libc's lfind, qsort's frames (libc's, or the sanitizers' interceptor), the
 * returns into oracle_cmp and oracle_mid, then the outer frames down to the
 * outermost, in libc (a thread's clone3) or in the executable (_start).
 * Returns the index of ra_top, or -1.
 */
static int check_walk(const struct oracle_sample *s, const uint64_t *ips, int n,
		      bool outermost_in_exe)
{
	Dl_info libc, exe;
	int i, j;

	if (getenv("ORACLE_DEBUG"))
		for (j = 0; j < n; j++) {
			Dl_info info;
			bool ok = dladdr((void *)(uintptr_t)ips[j], &info);

			fprintf(stderr, "  #%d %#llx %s %s\n", j, (unsigned long long)ips[j],
				ok && info.dli_sname ? info.dli_sname : "?",
				ok ? info.dli_fname : "?");
		}
	CHECK(s->ra_capture && s->ra_leaf && s->ra_match && s->ra_cmp && s->ra_mid && s->ra_top &&
	      s->len >= 1024);
	CHECK(dladdr((void *)gnu_get_libc_version, &libc) && strstr(libc.dli_fname, "libc.so"));
	CHECK(dladdr((void *)(uintptr_t)s->ra_top, &exe) && exe.dli_fbase != libc.dli_fbase);
	CHECK(n >= 10 && n < MAX_FRAMES);
	if (n < 10)
		return -1;
	CHECK_EQ_U64(ips[0], s->ip);
	CHECK_EQ_U64(ips[1], s->ra_capture);
	CHECK_EQ_U64(ips[2], s->ra_leaf);
	CHECK_EQ_U64(ips[3], s->ra_match);
	CHECK(same_object(ips[3], libc.dli_fbase)); /* in lfind */
	CHECK(within(ips[4], oracle_cmp)); /* lfind's return */
	CHECK_EQ_U64(ips[5], s->ra_cmp);
	for (i = 5; i < n && !same_object(ips[i], exe.dli_fbase); i++)
		;
	CHECK(i + 2 < n);
	if (i + 2 >= n)
		return -1;
	CHECK(within(ips[i], oracle_mid)); /* qsort's return */
	CHECK_EQ_U64(ips[i + 1], s->ra_mid);
	CHECK_EQ_U64(ips[i + 2], s->ra_top);
	/* down to the outermost frame */
	CHECK(same_object(ips[n - 1], outermost_in_exe ? exe.dli_fbase : libc.dli_fbase));
	return i + 2;
}

static void test_main_thread(void)
{
	struct oracle_sample *s = calloc(1, sizeof(*s));
	struct unwind_oracle *o = unwind_oracle__new();
	uint64_t ips[MAX_FRAMES], again[MAX_FRAMES];
	int n, m, top;

	CHECK(s && o);
	if (!s || !o)
		goto out;
	run_chain(s, 0);
	CHECK(s->tid == getpid());
	n = unwind_oracle__unwind(o, getpid(), s->tid, s->ip, s->sp, s->bp, s->stack, s->len, ips,
				  MAX_FRAMES);
	top = check_walk(s, ips, n, true);
	CHECK(top > 0 && n > top + 3); /* the test runner, main, libc's start, _start */

	/* the cached Dwfl gives the same walk; @max cuts it */
	m = unwind_oracle__unwind(o, getpid(), s->tid, s->ip, s->sp, s->bp, s->stack, s->len,
				  again, MAX_FRAMES);
	CHECK(m == n && !memcmp(ips, again, n * sizeof(ips[0])));
	m = unwind_oracle__unwind(o, getpid(), s->tid, s->ip, s->sp, s->bp, s->stack, s->len,
				  again, 3);
	CHECK(m == 3 && !memcmp(ips, again, 3 * sizeof(ips[0])));
	CHECK(unwind_oracle__unwind(o, getpid(), s->tid, s->ip, s->sp, s->bp, s->stack, s->len,
				    again, 0) == -EINVAL);

	/* a copy of 64 bytes: a prefix of the walk, then the end */
	m = unwind_oracle__unwind(o, getpid(), s->tid, s->ip, s->sp, s->bp, s->stack, 64, again,
				  MAX_FRAMES);
	CHECK(m >= 1 && m < n && !memcmp(ips, again, m * sizeof(ips[0])));
	/* no copy at all */
	m = unwind_oracle__unwind(o, getpid(), s->tid, s->ip, s->sp, s->bp, NULL, 0, again,
				  MAX_FRAMES);
	CHECK(m >= 1 && m < n && again[0] == s->ip);
	/* a copy that is not the stack: no crash, whatever is found */
	memset(s->stack, 0xa5, 512);
	m = unwind_oracle__unwind(o, getpid(), s->tid, s->ip, s->sp, s->bp, s->stack, s->len,
				  again, MAX_FRAMES);
	CHECK(m >= 1 && again[0] == s->ip);
out:
	unwind_oracle__free(o);
	free(s);
}

static void test_garbage(void)
{
	struct oracle_sample *s = calloc(1, sizeof(*s));
	struct unwind_oracle *o = unwind_oracle__new();
	uint64_t ips[MAX_FRAMES];
	int n;

	CHECK(s && o);
	if (!s || !o)
		goto out;
	run_chain(s, 0);
	/* an ip in no module: that frame alone (perf stops there too), or an error */
	n = unwind_oracle__unwind(o, getpid(), s->tid, 0x10, s->sp, s->bp, s->stack, s->len, ips,
				  MAX_FRAMES);
	CHECK(n == 1 || n < 0);
	if (n == 1)
		CHECK_EQ_U64(ips[0], 0x10);
	n = unwind_oracle__unwind(o, getpid(), s->tid, UINT64_MAX - 3, UINT64_MAX - 7, 0,
				  s->stack, s->len, ips, MAX_FRAMES);
	CHECK(n == 1 || n < 0);
	/* a stack pointer that wraps around with the copy */
	n = unwind_oracle__unwind(o, getpid(), s->tid, s->ip, UINT64_MAX - 15, s->bp, s->stack,
				  s->len, ips, MAX_FRAMES);
	CHECK(n >= 1 && ips[0] == s->ip);
	/* a thread or process that is not there */
	n = unwind_oracle__unwind(o, getpid(), 0, s->ip, s->sp, s->bp, s->stack, s->len, ips,
				  MAX_FRAMES);
	CHECK(n == -EINVAL);
	n = unwind_oracle__unwind(o, -1, 1, s->ip, s->sp, s->bp, s->stack, s->len, ips, MAX_FRAMES);
	CHECK(n == -EINVAL);
out:
	unwind_oracle__free(o);
	free(s);
}

static void *thread_fn(void *arg)
{
	run_chain(arg, 0);
	return NULL;
}

static void test_thread(void)
{
	struct oracle_sample *s = calloc(1, sizeof(*s)), *m = calloc(1, sizeof(*m));
	struct unwind_oracle *o = unwind_oracle__new();
	uint64_t ips[MAX_FRAMES];
	pthread_t t;
	int n;

	CHECK(s && m && o);
	if (!s || !m || !o)
		goto out;
	CHECK(pthread_create(&t, NULL, thread_fn, s) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(s->tid != getpid());
	/* the thread is gone, its stack copy and the process remain */
	n = unwind_oracle__unwind(o, getpid(), s->tid, s->ip, s->sp, s->bp, s->stack, s->len, ips,
				  MAX_FRAMES);
	check_walk(s, ips, n, false);
	/* the main thread through the same Dwfl, then the thread again */
	run_chain(m, 0);
	n = unwind_oracle__unwind(o, getpid(), m->tid, m->ip, m->sp, m->bp, m->stack, m->len, ips,
				  MAX_FRAMES);
	check_walk(m, ips, n, true);
	n = unwind_oracle__unwind(o, getpid(), s->tid, s->ip, s->sp, s->bp, s->stack, s->len, ips,
				  MAX_FRAMES);
	check_walk(s, ips, n, false);
out:
	unwind_oracle__free(o);
	free(s);
	free(m);
}

static bool read_all(int fd, void *buf, size_t len)
{
	while (len) {
		ssize_t r = read(fd, buf, len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		buf = (char *)buf + r;
		len -= r;
	}
	return true;
}

/* Another process: its own Dwfl, and forgotten once it is gone. */
static void test_child(void)
{
	struct oracle_sample *s = calloc(1, sizeof(*s));
	struct unwind_oracle *o = unwind_oracle__new();
	uint64_t ips[MAX_FRAMES], mine[MAX_FRAMES];
	int fds[2], n, status;
	pid_t pid;

	CHECK(s && o && pipe(fds) == 0);
	if (!s || !o)
		goto out;
	/* this process first: the child's Dwfl is a second one */
	run_chain(s, 0);
	CHECK(unwind_oracle__unwind(o, getpid(), s->tid, s->ip, s->sp, s->bp, s->stack, s->len,
				    mine, MAX_FRAMES) >= 8);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		run_chain(s, 0);
		if (write(fds[1], s, sizeof(*s)) != (ssize_t)sizeof(*s))
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	CHECK(read_all(fds[0], s, sizeof(*s)));
	close(fds[0]);
	CHECK(s->tid == pid);
	n = unwind_oracle__unwind(o, pid, s->tid, s->ip, s->sp, s->bp, s->stack, s->len, ips,
				  MAX_FRAMES);
	check_walk(s, ips, n, true);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid);
	/* still cached after its exit; forgotten, it cannot be read any more */
	CHECK(unwind_oracle__unwind(o, pid, s->tid, s->ip, s->sp, s->bp, s->stack, s->len, mine,
				    MAX_FRAMES) == n);
	unwind_oracle__forget(o, pid);
	CHECK(unwind_oracle__unwind(o, pid, s->tid, s->ip, s->sp, s->bp, s->stack, s->len, mine,
				    MAX_FRAMES) == -ESRCH);
out:
	unwind_oracle__free(o);
	free(s);
}

/* An ip of this binary, shared with its children, and no stack: one frame. */
static int unwind_top(struct unwind_oracle *o, pid_t pid, uint64_t ip)
{
	uint64_t ips[4];

	return unwind_oracle__unwind(o, pid, pid, ip, 0, 0, NULL, 0, ips, 4);
}

/* 64 processes are cached, the least recently used evicted: seen once they exit */
static void test_eviction(void)
{
	enum { NR = 65 };
	struct unwind_oracle *o = unwind_oracle__new();
	uint64_t ip = (uintptr_t)oracle_top;
	pid_t pids[NR];
	int i, status;

	CHECK(o != NULL);
	if (!o)
		return;
	for (i = 0; i < NR; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			pause();
			_exit(0);
		}
		CHECK(pids[i] > 0);
		if (pids[i] < 0)
			break;
	}
	if (i == NR) {
		for (i = 0; i < NR - 1; i++)
			CHECK(unwind_top(o, pids[i], ip) == 1);
		CHECK(unwind_top(o, pids[0], ip) == 1);
		/* evicts pids[1], the least recently used */
		CHECK(unwind_top(o, pids[NR - 1], ip) == 1);
	}
	for (i = 0; i < NR && pids[i] > 0; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
	}
	if (i == NR) {
		CHECK(unwind_top(o, pids[0], ip) == 1);
		CHECK(unwind_top(o, pids[1], ip) == -ESRCH);
		CHECK(unwind_top(o, pids[2], ip) == 1);
		CHECK(unwind_top(o, pids[NR - 1], ip) == 1);
		/* a pc in no module of a process that is gone: forgotten at once */
		CHECK(unwind_top(o, pids[2], 0x10) == 1);
		CHECK(unwind_top(o, pids[2], ip) == -ESRCH);
	}
	unwind_oracle__free(o);
}

/* A library loaded after the Dwfl was built: the mappings are read again. */
static void test_dlopen(void)
{
	static const char *const libs[][2] = {
		{ "libresolv.so.2", "__b64_ntop" },
		{ "libthread_db.so.1", "td_init" },
		{ "libanl.so.1", "getaddrinfo_a" },
		{ "libm.so.6", "cos" },
	};
	struct unwind_oracle *o = unwind_oracle__new();
	uint64_t ips[MAX_FRAMES], stack[1];
	void *h = NULL, *fn = NULL;
	size_t i;
	int n;

	CHECK(o != NULL);
	if (!o)
		return;
	/* at a function's entry the return address is at rsp: here into oracle_top */
	stack[0] = (uintptr_t)oracle_top + 1;
	n = unwind_oracle__unwind(o, getpid(), getpid(), (uintptr_t)oracle_top, (uintptr_t)stack, 0,
				  stack, sizeof(stack), ips, MAX_FRAMES);
	CHECK(n == 2 && ips[0] == (uintptr_t)oracle_top && ips[1] == stack[0]);
	/* the Dwfl is built; now a library this process has not loaded yet */
	for (i = 0; i < sizeof(libs) / sizeof(libs[0]) && !fn; i++) {
		h = dlopen(libs[i][0], RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			dlclose(h);
			continue;
		}
		h = dlopen(libs[i][0], RTLD_NOW | RTLD_LOCAL);
		fn = h ? dlsym(h, libs[i][1]) : NULL;
		if (h && !fn)
			dlclose(h);
	}
	if (!fn) {
		fprintf(stderr, "  (skipped: no library left to load)\n");
	} else {
		n = unwind_oracle__unwind(o, getpid(), getpid(), (uintptr_t)fn, (uintptr_t)stack, 0,
					  stack, sizeof(stack), ips, MAX_FRAMES);
		CHECK(n == 2 && ips[0] == (uintptr_t)fn && ips[1] == stack[0]);
		dlclose(h);
	}
	unwind_oracle__free(o);
}

/* The vDSO, read from the process's memory: at the entry of its clock_gettime. */
static void test_vdso(void)
{
	struct unwind_oracle *o = unwind_oracle__new();
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *fn = h ? dlsym(h, "__vdso_clock_gettime") : NULL;
	uint64_t ips[MAX_FRAMES], stack[1] = { (uintptr_t)oracle_top + 1 };

	CHECK(o != NULL);
	if (!fn) {
		fprintf(stderr, "  (skipped: no vDSO clock_gettime)\n");
	} else if (o) {
		CHECK(unwind_oracle__unwind(o, getpid(), getpid(), (uintptr_t)fn, (uintptr_t)stack,
					    0, stack, sizeof(stack), ips, MAX_FRAMES) == 2);
		CHECK(ips[0] == (uintptr_t)fn && ips[1] == stack[0]);
	}
	if (h)
		dlclose(h);
	unwind_oracle__free(o);
}

const struct unit_test oracle_tests[] = {
	{ "oracle: the main thread's walk, cut short and from a bad copy", test_main_thread },
	{ "oracle: a garbage ip or stack pointer", test_garbage },
	{ "oracle: another thread through the same Dwfl", test_thread },
	{ "oracle: another process, forgotten once gone", test_child },
	{ "oracle: the least recently used process evicted", test_eviction },
	{ "oracle: a library loaded after the Dwfl was built", test_dlopen },
	{ "oracle: a frame in the vDSO", test_vdso },
	{ 0 },
};
