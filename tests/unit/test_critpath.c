// SPDX-License-Identifier: GPL-2.0
/*
 * The critical path (report/critpath.h) on files written by hand: a chain
 * through a waker and an interrupt, its clock checked segment by segment;
 * what a file without wakers or with summed blocks leaves unknown; a waker
 * nothing is recorded of; a damaged file whose wakers wake each other; a
 * window. In every case the charged time is the roots' waiting time.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "unit.h"
#include "report/critpath.h"
#include "report/session.h"
#include "perfdata/writer.h"
#include "perfdata/sample.h"
#include "perfdata/wakers.h"

#define US 1000ULL
#define T0 1000000000ULL /* the files' times: T0 + microseconds */
#define TICK_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		   PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)

struct cpf {
	char path[64];
	struct perf_writer *w;
	char buf[4096];
};

static void cpf_put(struct cpf *f, uint64_t st, const struct perf_sample *s)
{
	int size = perf_sample__encode(st, s, f->buf, sizeof(f->buf));

	CHECK(size > 0 && perf_writer__write(f->w, (void *)f->buf) == 0);
}

static void cpf_open(struct cpf *f, bool wakers)
{
	struct perf_event_attr attr = { .size = PERFDATA_ATTR_SIZE, .type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_BPF_OUTPUT, .sample_id_all = 1 };
	uint64_t id = 7, wid = 8, tid = 9;
	int fd;

	snprintf(f->path, sizeof(f->path), "/tmp/offcpu-unit-cp.XXXXXX");
	fd = mkstemp(f->path);
	CHECK(fd >= 0);
	f->w = perf_writer__new(fd);
	attr.sample_type = OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_WEIGHT;
	CHECK(perf_writer__add_event(f->w, &attr, OFFCPU_EVENT_NAME, &id, 1) == 0);
	if (wakers) {
		attr.sample_type = WAKER_SAMPLE_TYPE;
		CHECK(perf_writer__add_event(f->w, &attr, OFFCPU_WAKER_EVENT_NAME, &wid, 1) == 0);
	}
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_type = TICK_TYPE;
	CHECK(perf_writer__add_event(f->w, &attr, "cpu-clock", &tid, 1) == 0);
}

/* A COMM record naming thread @tid of process 1 @comm. */
static void cpf_comm(struct cpf *f, uint32_t tid, const char *comm)
{
	struct perf_event_header *h = (void *)f->buf;
	struct perf_sample id = { .pid = 1, .tid = tid, .time = 1, .id = 7 };
	size_t body = (16 + strlen(comm) + 1 + 7) & ~7UL;

	memset(f->buf, 0, sizeof(f->buf));
	*(uint32_t *)(f->buf + 8) = 1;
	*(uint32_t *)(f->buf + 12) = tid;
	strcpy(f->buf + 16, comm);
	perf_sample_id__encode(OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_WEIGHT, &id, f->buf + body);
	h->type = PERF_RECORD_COMM;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)(body + perf_sample_id__size(OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_WEIGHT));
	CHECK(perf_writer__write(f->w, h) == 0);
}

/* A block of @tid ending at @end (us) after @len us in @state; @res: OFFCPU_CPU_RES_*. */
static void cpf_block(struct cpf *f, uint32_t tid, uint64_t end, uint64_t len, uint32_t state,
		      uint32_t res)
{
	uint64_t ips[2] = { (uint64_t)PERF_CONTEXT_USER, 0x1000 + tid };
	struct perf_sample s = { .id = 7, .ip = ips[1], .pid = 1, .tid = tid, .time = T0 + end * US,
				 .period = len * US, .nr_ips = 2, .ips = ips, .weight = state + 1,
				 .cpu_res = res };

	cpf_put(f, OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_WEIGHT, &s);
}

/* The waker of the block just written (@tid's, @end, @len): thread @waker, or the timer (0). */
static void cpf_waker(struct cpf *f, uint32_t waker, uint32_t tid, uint64_t end, uint64_t len)
{
	struct offcpu_waker wk = { .wakee_pid = 1, .wakee_tid = tid, .state = OFFCPU_STATE_S,
				   .kind = waker ? OFFCPU_WAKER_TASK : OFFCPU_WAKER_TIMER,
				   .nr_chain = 1 };
	uint64_t ips[2] = { (uint64_t)PERF_CONTEXT_USER, 0x2000 + waker };
	struct perf_sample s = { .id = 8, .pid = waker ? 1 : 0, .tid = waker, .time = T0 + end * US,
				 .period = len * US, .nr_ips = 2, .ips = ips };
	char raw[256];
	int size;

	snprintf(wk.chain[0], sizeof(wk.chain[0]), "%s", waker ? "w" : "[timer]");
	size = waker__encode(&wk, NULL, 0, raw, sizeof(raw));
	CHECK(size > 0);
	s.raw = raw;
	s.raw_size = (uint32_t)size;
	cpf_put(f, WAKER_SAMPLE_TYPE, &s);
}

static void cpf_tick(struct cpf *f, uint32_t tid, uint64_t at)
{
	uint64_t ips[2] = { (uint64_t)PERF_CONTEXT_USER, 0x3000 + tid };
	struct perf_sample s = { .id = 9, .ip = ips[1], .pid = 1, .tid = tid, .time = T0 + at * US,
				 .period = 1, .nr_ips = 2, .ips = ips };

	cpf_put(f, TICK_TYPE, &s);
}

static void cpf_close(struct cpf *f)
{
	static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };

	CHECK(perf_writer__write(f->w, &round) == 0);
	CHECK(perf_writer__finish(f->w) == 0);
	perf_writer__free(f->w);
}

struct cp_run {
	struct profile p;
	struct critpath *c;
	uint64_t kind[CP_NR]; /* us by kind */
	uint64_t waited, charged; /* us */
	size_t roots;
};

/* The critical path of thread @root in @f, within [@w0, @w1) us when @w1. */
static void cp_run(struct cp_run *r, struct cpf *f, int root, uint64_t w0, uint64_t w1)
{
	int tids[1] = { root };
	struct critpath_opts o = { .tids = tids, .nr_tids = 1, .time_filter = w1 != 0,
				   .time_start = T0 + w0 * US, .time_end = T0 + w1 * US };
	struct session_opts so = { .input = f->path, .sym = { .kallsyms = "/dev/null" } };
	struct sample_consumer *cs;
	const struct cp_root *rt;
	size_t i;

	memset(r, 0, sizeof(*r));
	r->c = critpath__new(&r->p, &o);
	CHECK(r->c != NULL);
	if (!r->c)
		return;
	cs = critpath__consumer(r->c);
	CHECK(session__run(&so, &r->p, &cs, 1) == 0);
	CHECK(critpath__walk(r->c) == 0);
	for (i = 0; i < CP_NR; i++)
		r->kind[i] = critpath__by_kind(r->c)[i] / US;
	rt = critpath__roots(r->c, &r->roots);
	for (i = 0; i < r->roots; i++) {
		r->waited += rt[i].waited / US;
		r->charged += rt[i].charged / US;
		CHECK_EQ_U64(rt[i].waited, rt[i].charged);
	}
}

/* The run's memory; with @f, its file too. */
static void cp_done(struct cp_run *r, struct cpf *f)
{
	critpath__free(r->c);
	profile__free(&r->p);
	if (f)
		unlink(f->path);
}

/*
 * Root 10 waits [100, 1000) for 20, then 10 us in the run queue. 20 waited
 * [50, 600) for 30 and 20 us for a CPU, then ran to 1000 (3 samples). 30
 * slept [0, 300) to a timer, then ran, unsampled, to 600.
 */
static void write_chain(struct cpf *f, bool wakers)
{
	cpf_open(f, wakers);
	cpf_comm(f, 10, "root");
	cpf_comm(f, 20, "worker");
	cpf_comm(f, 30, "holder");
	cpf_block(f, 30, 300, 300, OFFCPU_STATE_S, 0);
	if (wakers)
		cpf_waker(f, 0, 30, 300, 300);
	cpf_block(f, 20, 620, 550, OFFCPU_STATE_S, 0);
	if (wakers)
		cpf_waker(f, 30, 20, 620, 550);
	cpf_block(f, 20, 620, 20, OFFCPU_STATE_RUNQ, 0);
	cpf_tick(f, 20, 700);
	cpf_tick(f, 20, 800);
	cpf_tick(f, 20, 900);
	cpf_block(f, 10, 1010, 900, OFFCPU_STATE_S, 0);
	if (wakers)
		cpf_waker(f, 20, 10, 1010, 900);
	cpf_block(f, 10, 1010, 10, OFFCPU_STATE_RUNQ, 0);
	cpf_close(f);
}

static void test_chain(void)
{
	struct cpf f;
	struct cp_run r;
	const struct cp_entry *e;
	size_t ne, i;
	int ev;

	write_chain(&f, true);
	cp_run(&r, &f, 10, 0, 0);
	CHECK_EQ_U64(r.roots, 1);
	CHECK_EQ_U64(r.waited, 910);
	CHECK_EQ_U64(r.charged, 910);
	CHECK_EQ_U64(r.kind[CP_RUNQ], 30); /* the root's 10, the worker's 20 */
	CHECK_EQ_U64(r.kind[CP_RUN], 380); /* the worker, sampled */
	CHECK_EQ_U64(r.kind[CP_RUN_UNSAMPLED], 300); /* the holder */
	CHECK_EQ_U64(r.kind[CP_IRQ], 200); /* its sleep, clipped to the root's wait */
	e = critpath__entries(r.c, &ne);
	for (i = 0; i < ne; i++) {
		const char *who = strtab__get(&r.p.str, e[i].who);

		if (e[i].kind == CP_IRQ) {
			CHECK_STR(who, "[timer]");
			CHECK_EQ_U64(e[i].tid, 30);
			CHECK_EQ_U64(e[i].state, OFFCPU_STATE_S + 1);
		}
		if (e[i].kind == CP_RUN)
			CHECK_STR(who, "worker");
	}
	/* as rows of their own event: the root's command, the thread, its state */
	ev = critpath__rows(r.c);
	CHECK(ev >= 0);
	if (ev >= 0) {
		char *buf = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&buf, &len);

		CHECK(folded__write(&r.p, ev, out) == 0);
		fclose(out);
		CHECK(strstr(buf, "root;[timer];[S];") != NULL);
		CHECK(strstr(buf, "root;worker;[running];") != NULL);
		CHECK(strstr(buf, "root;holder;[running, not sampled];") != NULL);
		CHECK(strstr(buf, "root;root;[runqueue];") != NULL);
		free(buf);
	}
	cp_done(&r, &f);
	/* a window: the part of the wait in it, still all charged */
	write_chain(&f, true);
	cp_run(&r, &f, 10, 400, 800);
	CHECK_EQ_U64(r.waited, 400);
	CHECK_EQ_U64(r.charged, 400);
	CHECK_EQ_U64(r.kind[CP_RUN], 180); /* [620, 800) */
	CHECK_EQ_U64(r.kind[CP_RUNQ], 20);
	CHECK_EQ_U64(r.kind[CP_RUN_UNSAMPLED], 200); /* [400, 600) */
	cp_done(&r, &f);
}

/* Without wakers no wait is followed: each is charged to its own thread, and said. */
static void test_no_wakers(void)
{
	struct cpf f;
	struct cp_run r;

	write_chain(&f, false);
	cp_run(&r, &f, 10, 0, 0);
	CHECK_EQ_U64(r.waited, 910);
	CHECK_EQ_U64(r.charged, 910);
	CHECK_EQ_U64(r.kind[CP_NO_WAKER], 900);
	CHECK_EQ_U64(r.kind[CP_RUNQ], 10);
	cp_done(&r, &f);
}

/*
 * Summed blocks of the worker over [400, 900): what it did then is unknown;
 * a waker with nothing recorded; wakers that wake each other (a damaged
 * file) end at the depth limit. Conserved all the same.
 */
static void test_unknown(void)
{
	struct cpf f;
	struct cp_run r;

	cpf_open(&f, true);
	cpf_comm(&f, 10, "root");
	cpf_comm(&f, 20, "worker");
	cpf_block(&f, 20, 50, 10, OFFCPU_STATE_S, 0);
	cpf_block(&f, 99, 400, 1, OFFCPU_STATE_S, OFFCPU_CPU_RES_SUMMED); /* a drain */
	cpf_block(&f, 20, 900, 30, OFFCPU_STATE_S, OFFCPU_CPU_RES_SUMMED); /* the next */
	cpf_tick(&f, 20, 700);
	cpf_tick(&f, 20, 950);
	cpf_block(&f, 10, 1000, 900, OFFCPU_STATE_S, 0);
	cpf_waker(&f, 20, 10, 1000, 900);
	/* 11 waits [1000, 2000) for 12, which "waited" the same for 11 */
	cpf_block(&f, 12, 2000, 1000, OFFCPU_STATE_S, 0);
	cpf_waker(&f, 11, 12, 2000, 1000);
	cpf_block(&f, 11, 2000, 1000, OFFCPU_STATE_S, 0);
	cpf_waker(&f, 12, 11, 2000, 1000);
	/* 13 waits for 40, of which nothing is recorded */
	cpf_block(&f, 13, 2500, 100, OFFCPU_STATE_S, 0);
	cpf_waker(&f, 40, 13, 2500, 100);
	cpf_close(&f);

	cp_run(&r, &f, 10, 0, 0);
	CHECK_EQ_U64(r.waited, 900);
	CHECK_EQ_U64(r.charged, 900);
	CHECK_EQ_U64(r.kind[CP_SUMMED], 500); /* [400, 900) */
	CHECK_EQ_U64(r.kind[CP_RUN], 100); /* [900, 1000): the sample at 950 */
	/* [100, 400): before the first drain's interval, the worker ran unsampled */
	CHECK_EQ_U64(r.kind[CP_RUN_UNSAMPLED], 300);
	cp_done(&r, NULL);
	cp_run(&r, &f, 11, 0, 0);
	CHECK_EQ_U64(r.charged, 1000);
	CHECK_EQ_U64(r.kind[CP_DEPTH], 1000);
	cp_done(&r, NULL);
	cp_run(&r, &f, 13, 0, 0);
	CHECK_EQ_U64(r.charged, 100);
	CHECK_EQ_U64(r.kind[CP_NOT_RECORDED], 100);
	cp_done(&r, &f);
}

/* A wait still under way at the end: nobody ended it, and a block ends there, not later. */
static void test_open_end(void)
{
	struct cpf f;
	struct cp_run r;

	cpf_open(&f, true);
	cpf_comm(&f, 10, "root");
	cpf_block(&f, 10, 100, 50, OFFCPU_STATE_S, 0);
	cpf_waker(&f, 0, 10, 100, 50);
	cpf_block(&f, 10, 5000, 4800, OFFCPU_STATE_D, OFFCPU_CPU_RES_OPEN_END);
	cpf_close(&f);
	cp_run(&r, &f, 10, 0, 0);
	CHECK_EQ_U64(r.waited, 4850);
	CHECK_EQ_U64(r.kind[CP_IRQ], 50);
	CHECK_EQ_U64(r.kind[CP_OPEN], 4800);
	cp_done(&r, &f);
}

const struct unit_test critpath_tests[] = {
	{ "critpath: a chain through a waker and a timer, each segment timed; a window",
	  test_chain },
	{ "critpath: without wakers each wait is its own thread's", test_no_wakers },
	{ "critpath: summed, not recorded, too deep: unknown, conserved", test_unknown },
	{ "critpath: a wait still under way at the end", test_open_end },
	{ 0 },
};
