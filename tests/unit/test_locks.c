// SPDX-License-Identifier: GPL-2.0
/*
 * Wait objects, unit tests: the offcpu-wait payload encoded and parsed back;
 * and a file written by hand (perf_writer) read by the session: offcpu-wait
 * samples joined to their offcpu-time samples, objects named by the data
 * symbol of this test binary that holds them, owners checked against the
 * process's threads, the --locks table, and the threads waiting at the end
 * with their deadlock and the chain into it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "unit.h"
#include "util/util.h"
#include "report/profile.h"
#include "report/session.h"
#include "report/locks.h"
#include "report/waitobj.h"
#include "perfdata/writer.h"
#include "perfdata/sample.h"
#include "perfdata/waits.h"

/* Two "mutexes" of this binary, named by their symbols in the report. */
uint64_t unit_lock_a[5], unit_lock_b[5];

__attribute__((noinline)) int unit_lock_fn(int x)
{
	return x * 5 + 3;
}

static void test_wait_payload(void)
{
	struct offcpu_wait w = { .kind = OFFCPU_WAIT_FD, .flags = OFFCPU_WAIT_AT_END, .tgid = 7,
				 .syscall = 0, .fd = 5, .file = OFFCPU_FILE_SOCKET, .ino = 1234,
				 .dev = 8, .sock_family = 2, .sock_protocol = 6, .sock_lport = 40000,
				 .sock_rport = 80, .words = { 1, 2, 3, 4, 5, 6 } };
	struct offcpu_wait_obj o;
	char buf[256];
	int n;

	memcpy(w.name, "file-name-that-is-exactly-32-ch!", OFFCPU_WAIT_NAME);
	n = wait__encode(&w, 7, 8, 999, buf, sizeof(buf));
	CHECK(n > 0 && (4 + n) % 8 == 0);
	CHECK(wait__parse(buf, (size_t)n, &o) == 0);
	CHECK_EQ_U64(o.r.pid, 7);
	CHECK_EQ_U64(o.r.tid, 8);
	CHECK_EQ_U64(o.r.fd, 5);
	CHECK_EQ_U64(o.r.ino, 1234);
	CHECK_EQ_U64(o.r.sock_lport, 40000);
	CHECK_EQ_U64(o.r.words[5], 6);
	CHECK_EQ_U64(o.r.end_time, 999);
	/* the name is ended even when it fills its field */
	CHECK_STR(o.name, "file-name-that-is-exactly-32-ch!");
	/* cut short, or not a payload: refused */
	CHECK(wait__parse(buf, sizeof(struct offcpu_wait_raw) - 1, &o) == -EINVAL);
	buf[0] ^= 1;
	CHECK(wait__parse(buf, (size_t)n, &o) == -EINVAL);
	CHECK(wait__encode(&w, 7, 8, 0, buf, 16) == -ENOSPC);
}

struct lk_file {
	char path[64];
	struct perf_writer *w;
	uint64_t ips[3];
	uint64_t base; /* where this binary's first mapping starts here */
	char bin[4096];
	char buf[8192];
};

#define TIME_TYPE (OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_WEIGHT)
#define MAPPED 0x400000ULL

/* This binary's first mapping (file offset 0) in this process, and its path. */
static void self_base(struct lk_file *lf)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char file[4096] = "";

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &start, &end, &pgoff, file) == 4 &&
		    strstr(file, "/tests/unit") && pgoff == 0) {
			lf->base = start;
			snprintf(lf->bin, sizeof(lf->bin), "%s", file);
			break;
		}
	}
	if (f)
		fclose(f);
	CHECK(lf->base != 0);
}

/* @p as it is mapped in the file (the binary at MAPPED from offset 0). */
static uint64_t in_file(const struct lk_file *lf, const void *p)
{
	return MAPPED + ((uint64_t)(uintptr_t)p - lf->base);
}

static void put(struct lk_file *lf, uint64_t st, const struct perf_sample *smp)
{
	int size = perf_sample__encode(st, smp, lf->buf, sizeof(lf->buf));

	CHECK(size > 0 && perf_writer__write(lf->w, (void *)lf->buf) == 0);
}

static void sideband(struct lk_file *lf, size_t body, uint32_t type, uint32_t pid, uint32_t tid)
{
	struct perf_event_header *h = (void *)lf->buf;
	struct perf_sample id = { .pid = pid, .tid = tid, .time = 1, .id = 7 };

	body = (body + 7) & ~7UL;
	perf_sample_id__encode(TIME_TYPE, &id, lf->buf + body);
	h->type = type;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)(body + perf_sample_id__size(TIME_TYPE));
	CHECK(perf_writer__write(lf->w, h) == 0);
}

static void comm(struct lk_file *lf, uint32_t pid, uint32_t tid, const char *name)
{
	memset(lf->buf, 0, sizeof(lf->buf));
	*(uint32_t *)(lf->buf + 8) = pid;
	*(uint32_t *)(lf->buf + 12) = tid;
	strcpy(lf->buf + 16, name);
	sideband(lf, 16 + strlen(name) + 1, PERF_RECORD_COMM, pid, tid);
}

/* The whole binary mapped at MAPPED from offset 0 (its code and data), as r-x. */
static void mmap2(struct lk_file *lf, uint32_t pid)
{
	memset(lf->buf, 0, sizeof(lf->buf));
	*(uint32_t *)(lf->buf + 8) = pid;
	*(uint32_t *)(lf->buf + 12) = pid;
	*(uint64_t *)(lf->buf + 16) = MAPPED;
	*(uint64_t *)(lf->buf + 24) = 0x10000000;
	*(uint32_t *)(lf->buf + 64) = PROT_READ | PROT_EXEC;
	strcpy(lf->buf + 72, lf->bin);
	sideband(lf, 72 + strlen(lf->bin) + 1, PERF_RECORD_MMAP2, pid, pid);
}

/*
 * A wait of @tid (process 99), @ns long at @time, then its offcpu-wait
 * sample: a futex at @addr whose glibc owner word is @owner, AT_END with
 * @end (else taken at a switch-out); @period_off makes the wait sample's
 * period another (an orphan).
 */
static void wait_futex(struct lk_file *lf, uint32_t tid, uint64_t time, uint64_t ns, uint64_t addr,
		       uint32_t owner, uint64_t end, uint64_t period_off)
{
	struct perf_sample smp = { .id = 7, .ip = lf->ips[1], .pid = 99, .tid = tid,
				   .time = time, .period = ns, .nr_ips = 3, .ips = lf->ips,
				   .weight = OFFCPU_STATE_S + 1 };
	struct offcpu_wait w = { .kind = OFFCPU_WAIT_FUTEX, .tgid = 99, .syscall = 202,
				 .addr = addr, .fd = -1,
				 .flags = OFFCPU_WAIT_WORDS | (end ? OFFCPU_WAIT_AT_END : 0) };
	char raw[256];
	int n;

	w.words[OFFCPU_GLIBC_MUTEX_LOCK] = 2;
	w.words[OFFCPU_GLIBC_MUTEX_OWNER] = owner;
	put(lf, TIME_TYPE, &smp);
	n = wait__encode(&w, 99, tid, end, raw, sizeof(raw));
	CHECK(n > 0);
	smp = (struct perf_sample){ .id = 9, .pid = 99, .tid = tid, .time = time,
				    .period = ns + period_off, .addr = addr, .raw = raw,
				    .raw_size = (uint32_t)n };
	put(lf, WAIT_SAMPLE_TYPE, &smp);
}

/* A wait of @tid on a pipe of inode @ino. */
static void wait_pipe(struct lk_file *lf, uint32_t tid, uint64_t time, uint64_t ns, uint64_t ino)
{
	struct perf_sample smp = { .id = 7, .ip = lf->ips[1], .pid = 99, .tid = tid,
				   .time = time, .period = ns, .nr_ips = 3, .ips = lf->ips,
				   .weight = OFFCPU_STATE_S + 1 };
	struct offcpu_wait w = { .kind = OFFCPU_WAIT_FD, .tgid = 99, .syscall = 0, .fd = 3,
				 .file = OFFCPU_FILE_PIPE, .ino = ino, .dev = 13 };
	char raw[256];
	int n = wait__encode(&w, 99, tid, 0, raw, sizeof(raw));

	CHECK(n > 0);
	put(lf, TIME_TYPE, &smp);
	smp = (struct perf_sample){ .id = 9, .pid = 99, .tid = tid, .time = time, .period = ns,
				    .raw = raw, .raw_size = (uint32_t)n };
	put(lf, WAIT_SAMPLE_TYPE, &smp);
}

/*
 * Process 99: alpha (100) waits on unit_lock_b held by bravo (101), bravo
 * on unit_lock_a held by alpha, both to the end: a deadlock; charlie (102)
 * waits on unit_lock_a too, to the end; delta (103) waited on unit_lock_a
 * earlier, its owner 4242 no thread of the process; echo (104) read a pipe.
 * One wait sample is an orphan (its period is not its wait's).
 */
static void lk_write(struct lk_file *lf)
{
	static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
	struct perf_event_attr attr = { 0 };
	uint64_t id = 7, wid = 9, a, b, end = 5000000000ULL;
	int fd;

	self_base(lf);
	snprintf(lf->path, sizeof(lf->path), "/tmp/offcpu-unit-locks.XXXXXX");
	fd = mkstemp(lf->path);
	CHECK(fd >= 0);
	lf->ips[0] = (uint64_t)PERF_CONTEXT_USER;
	lf->ips[1] = in_file(lf, (void *)&unit_lock_fn) + 2;
	lf->ips[2] = in_file(lf, (void *)&unit_lock_fn) + 2;
	a = in_file(lf, unit_lock_a);
	b = in_file(lf, unit_lock_b);
	lf->w = perf_writer__new(fd);
	attr.size = PERFDATA_ATTR_SIZE;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_type = TIME_TYPE;
	attr.sample_id_all = 1;
	CHECK(perf_writer__add_event(lf->w, &attr, OFFCPU_EVENT_NAME, &id, 1) == 0);
	attr.sample_type = WAIT_SAMPLE_TYPE;
	CHECK(perf_writer__add_event(lf->w, &attr, OFFCPU_WAIT_EVENT_NAME, &wid, 1) == 0);
	comm(lf, 99, 99, "lockproc");
	comm(lf, 99, 100, "alpha");
	comm(lf, 99, 101, "bravo");
	comm(lf, 99, 102, "charlie");
	comm(lf, 99, 103, "delta");
	comm(lf, 99, 104, "echo");
	mmap2(lf, 99);
	wait_futex(lf, 103, 1000000000, 2000000, a, 4242, 0, 0);
	wait_futex(lf, 103, 1100000000, 3000000, a, 4242, 0, 1); /* an orphan */
	wait_pipe(lf, 104, 1200000000, 7000000, 555);
	wait_futex(lf, 100, 5100000000ULL, 3000000000ULL, b, 101, end, 0);
	wait_futex(lf, 101, 5100000000ULL, 2900000000ULL, a, 100, end, 0);
	wait_futex(lf, 102, 5100000000ULL, 1000000000ULL, a, 100, end, 0);
	CHECK(perf_writer__write(lf->w, &round) == 0);
	CHECK(perf_writer__finish(lf->w) == 0);
	perf_writer__free(lf->w);
	close(fd);
}

static void test_locks_session(void)
{
	struct session_opts o = { 0 };
	struct sample_consumer *more[1];
	struct lk_file lf;
	struct locks l;
	struct profile p;
	char *text = NULL, *dl = NULL, buf[600];
	size_t len = 0;
	uint32_t i, wa = 0, wb = 0, wp = 0;
	FILE *f;
	int ret;

	lk_write(&lf);
	o.input = lf.path;
	o.sym.kallsyms = "/dev/null";
	locks__init(&l, &p, true);
	more[0] = &l.c;
	log_verbosity = -1; /* the orphan's warning */
	ret = session__load_with(&o, &p, more, 1);
	log_verbosity = 0;
	unlink(lf.path);
	CHECK(ret == 0);
	if (ret)
		goto out;
	CHECK(p.has_waits);
	CHECK_EQ_U64(p.wait_samples, 6);
	CHECK_EQ_U64(p.orphan_waits, 1);
	/* the objects: named by the data symbols holding them; a mutex by its words */
	for (i = 0; i < p.nr_waits; i++) {
		const char *n = waitobj__text(&p, i + 1, buf, sizeof(buf));

		if (!strncmp(n, "mutex unit_lock_a (unit", 23))
			wa = i + 1;
		else if (!strncmp(n, "mutex unit_lock_b (unit", 23))
			wb = i + 1;
		else if (!strcmp(n, "pipe pipe:[555]"))
			wp = i + 1;
		else
			fprintf(stderr, "  unexpected object: %s\n", n);
	}
	CHECK(wa && wb && wp);
	CHECK_EQ_U64(p.nr_waits, 3);
	/* each wait's row has its object, the orphan's none */
	for (i = 0; i < p.nr_rows; i++) {
		const struct profile_row *r = &p.rows[i];

		if (r->tid == 103)
			CHECK(r->wait == (r->period == 2000000 ? wa : 0));
		if (r->tid == 100)
			CHECK(r->wait == wb);
		if (r->tid == 104)
			CHECK(r->wait == wp);
	}
	/* --locks: the time per object, its waiters, its holder; an owner that is no thread */
	f = open_memstream(&text, &len);
	CHECK(locks__write(&l, f) == 0);
	fclose(f);
	CHECK(strstr(text, "  3902.000        3  mutex      unit_lock_a (unit") != NULL);
	CHECK(strstr(text, "waiters: bravo/101 2900.0 ms, charlie/102 1000.0 ms, delta/103 2.0 ms") !=
	      NULL);
	CHECK(strstr(text, "held by: alpha/100 in unit_lock_fn") != NULL);
	CHECK(strstr(text, "  3000.000        1  mutex      unit_lock_b (unit") != NULL);
	CHECK(strstr(text, "held by: bravo/101 in unit_lock_fn") != NULL);
	CHECK(strstr(text, "7.000        1  pipe       pipe:[555]") != NULL);
	CHECK(strstr(text, "4242") == NULL); /* delta's owner: unknown, and a's has others */
	/* the hang view: one deadlock, charlie's chain into it */
	len = 0;
	f = open_memstream(&dl, &len);
	CHECK(hang__write(&l, f) == 1);
	fclose(f);
	CHECK(strstr(dl, "deadlock: alpha/100 in unit_lock_fn (stack: unit_lock_fn <- unit_lock_fn) "
			 "waits on mutex unit_lock_b (unit") != NULL);
	CHECK(strstr(dl, "held by bravo/101; bravo/101 in unit_lock_fn") != NULL);
	CHECK(strstr(dl, "waits on mutex unit_lock_a (unit") != NULL);
	CHECK(strstr(dl, "  waiting for it: charlie/102 in unit_lock_fn") != NULL);
	CHECK(strstr(dl, "held by alpha/100, in deadlock 1\n") != NULL);
	/* since when: the end less each wait's time */
	CHECK(strstr(dl, "  alpha/100    S  waiting in unit_lock_fn for 3.000 s: mutex unit_lock_b") !=
	      NULL);
	CHECK(hang__write(&l, NULL) == 1);
	if (unit_failures)
		fprintf(stderr, "%s%s", text, dl);
	/* --json: each wait's row names its object */
	free(text);
	text = NULL;
	len = 0;
	f = open_memstream(&text, &len);
	CHECK(json__write(&p, f) == 0);
	fclose(f);
	CHECK(strstr(text, "\"tid\": 100, ") && strstr(text, "\"object\": \"mutex unit_lock_b (unit"));
	CHECK(strstr(text, "\"object\": \"pipe pipe:[555]\"") != NULL);
	CHECK(strstr(text, "\"object\": null") != NULL); /* the orphan's wait */
out:
	free(text);
	free(dl);
	locks__free(&l);
	profile__free(&p);
}

/* An owner id that is no thread of the process: unknown, never a holder. */
static void test_locks_owner_hint(void)
{
	struct session_opts o = { 0 };
	struct sample_consumer *more[1];
	struct lk_file lf;
	struct locks l;
	struct profile p;
	char *text = NULL;
	size_t len = 0, i;
	FILE *f;
	int ret;

	lk_write(&lf);
	o.input = lf.path;
	o.sym.kallsyms = "/dev/null";
	o.tids = (int[]){ 103 };
	o.nr_tids = 1;
	locks__init(&l, &p, true);
	more[0] = &l.c;
	log_verbosity = -1;
	ret = session__load_with(&o, &p, more, 1);
	log_verbosity = 0;
	unlink(lf.path);
	CHECK(ret == 0);
	if (ret)
		goto out;
	for (i = 0; i < l.nr; i++) {
		CHECK_EQ_U64(l.w[i].owner, 0);
		CHECK(!l.w[i].wait || l.w[i].owner_hint == 4242);
	}
	f = open_memstream(&text, &len);
	CHECK(locks__write(&l, f) == 0);
	fclose(f);
	if (!strstr(text, "held by: unknown"))
		fputs(text, stderr);
	CHECK(strstr(text, "held by: unknown (its memory names thread 4242, no thread of the "
			   "process in the recording)") != NULL);
	CHECK(hang__write(&l, NULL) == 0);
out:
	free(text);
	locks__free(&l);
	profile__free(&p);
}

const struct unit_test locks_tests[] = {
	{ "locks: the offcpu-wait payload, encoded and parsed back", test_wait_payload },
	{ "locks: objects named, owners checked, --locks, a deadlock at the end",
	  test_locks_session },
	{ "locks: an owner that is no thread of the process is unknown", test_locks_owner_hint },
	{ 0 },
};
