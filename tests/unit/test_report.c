// SPDX-License-Identifier: GPL-2.0
/*
 * Report unit tests: the symbolizer against this test binary (symbols, source
 * lines, build id check), demangling, and the folded and pprof outputs of a
 * profile built by hand, read back byte by byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "unit.h"
#include "util/util.h"
#include "report/profile.h"
#include "report/symbolizer.h"
#include "report/session.h"
#include "perfdata/writer.h"
#include "perfdata/sample.h"
#include "perfdata/wakers.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

enum { PROBE_LINE = __LINE__ };
__attribute__((noinline)) int unit_probe_fn(int x)
{
	return x * 3 + 1;
}

/* The file offset of @addr in this process, and the mapped file's path. */
static int self_offset(uintptr_t addr, uint64_t *off, char *path, size_t cap)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char perm[8], file[4096] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &start, &end, perm, &pgoff,
			   file) < 4)
			continue;
		if (addr >= start && addr < end) {
			*off = addr - start + pgoff;
			snprintf(path, cap, "%s", file);
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

static void test_symbolizer_self(void)
{
	struct symbolizer_opts o = { .demangle = true };
	struct symbolizer *s = symbolizer__new(&o);
	struct sym_frame fr[8];
	char path[4096];
	uint64_t off = 0;
	uint8_t bad_id[20] = { 1, 2, 3 };
	int n;

	CHECK(unit_probe_fn(1) == 4);
	CHECK(s != NULL);
	CHECK(self_offset((uintptr_t)&unit_probe_fn, &off, path, sizeof(path)) == 0);
	n = sym_dso__resolve(s, symbolizer__dso(s, path, NULL, 0), off + 2, false, fr, 8);
	CHECK(n == 1);
	if (n == 1)
		CHECK_STR(fr[0].name, "unit_probe_fn");
	/* a return address just past the function still names the caller */
	n = sym_dso__resolve(s, symbolizer__dso(s, path, NULL, 0), off + 1, true, fr, 8);
	CHECK(n == 1 && !strcmp(fr[0].name, "unit_probe_fn"));
	/* a recorded build id that the file does not have: no names */
	n = sym_dso__resolve(s, symbolizer__dso(s, path, bad_id, 20), off + 2, false, fr, 8);
	CHECK_EQ_U64(n, 0);
	symbolizer__free(s);

	/* --lines: this file, the function's first lines */
	o.lines = true;
	s = symbolizer__new(&o);
	n = sym_dso__resolve(s, symbolizer__dso(s, path, NULL, 0), off, false, fr, 8);
	CHECK(n >= 1);
	if (n >= 1) {
		CHECK_STR(fr[n - 1].name, "unit_probe_fn");
		CHECK(fr[n - 1].file && strstr(fr[n - 1].file, "tests/unit/test_report.c"));
		CHECK(fr[n - 1].line >= PROBE_LINE && fr[n - 1].line <= PROBE_LINE + 3);
		if (fr[n - 1].line < PROBE_LINE || fr[n - 1].line > PROBE_LINE + 3)
			fprintf(stderr, "  line %u of %s\n", fr[n - 1].line, fr[n - 1].file);
	}
	symbolizer__free(s);
}

/* Paths come from the input: a fifo or a device is never opened for reading. */
static void test_symbolizer_special_files(void)
{
	struct symbolizer_opts o = { 0 };
	struct symbolizer *s = symbolizer__new(&o);
	char fifo[] = "/tmp/offcpu-unit-fifo.XXXXXX";
	struct sym_frame fr[2];
	int fd = mkstemp(fifo);

	CHECK(fd >= 0);
	close(fd);
	unlink(fifo);
	CHECK(mkfifo(fifo, 0600) == 0);
	alarm(10); /* a hang fails the test by SIGALRM */
	CHECK_EQ_U64(sym_dso__resolve(s, symbolizer__dso(s, fifo, NULL, 0), 0x1000, false, fr, 2), 0);
	CHECK_EQ_U64(sym_dso__resolve(s, symbolizer__dso(s, "/dev/zero", NULL, 0), 0x10, false, fr, 2), 0);
	CHECK_EQ_U64(sym_dso__resolve(s, symbolizer__dso(s, "//anon", NULL, 0), 0x10, false, fr, 2), 0);
	alarm(0);
	unlink(fifo);
	symbolizer__free(s);
}

static void test_demangle(void)
{
	char *a = symbolizer__demangle("_ZN3foo3barEi");
	char *b = symbolizer__demangle("_ZN4core3fmt5write17h0123456789abcdefE");
	char *c = symbolizer__demangle("main");

	CHECK_STR(a, "foo::bar(int)");
	CHECK_STR(b, "core::fmt::write");
	CHECK(c == NULL);
	free(a);
	free(b);
}

/* The row of (event, pid, tid, comm, stack), with no state or waker. */
static uint32_t add_row(struct profile *p, uint32_t event, uint32_t pid, uint32_t tid,
			const char *comm, uint32_t stack)
{
	struct profile_row key = { .event = event, .pid = pid, .tid = tid, .stack = stack };

	key.comm = strtab__add(&p->str, comm);
	return profile__row(p, &key);
}

/*
 * A profile by hand: event 0 off-CPU, two rows with the same stack for two
 * threads of one command, one kernel frame, and a sampling event 1.
 */
static void make_profile(struct profile *p)
{
	struct profile_frame f = { 0 };
	uint32_t fr[3], st, r;
	uint8_t id[4] = { 0xde, 0xad, 0xbe, 0xef };

	CHECK(profile__init(p, 2) == 0);
	p->events[0].name = strtab__add(&p->str, "offcpu-time");
	p->events[0].offcpu = true;
	p->events[1].name = strtab__add(&p->str, "cpu-clock");
	f.dso = profile__dso(p, "/usr/bin/app", id, 4, false);
	f.sym = strtab__add(&p->str, "main");
	f.addr = 0x1100;
	fr[0] = profile__frame(p, &f);
	f.sym = strtab__add(&p->str, "wait_for_it");
	f.addr = 0x1200;
	fr[1] = profile__frame(p, &f);
	f.dso = profile__dso(p, "[kernel.kallsyms]", NULL, 0, true);
	f.kernel = true;
	f.sym = strtab__add(&p->str, "schedule");
	fr[2] = profile__frame(p, &f);
	st = profile__stack(p, fr, 3);
	CHECK(profile__stack(p, fr, 3) == st);
	r = add_row(p, 0, 10, 11, "app", st);
	p->rows[r].period = 1500000; /* 1.5 ms */
	p->rows[r].count = 2;
	r = add_row(p, 0, 10, 12, "app", st);
	p->rows[r].period = 499;
	p->rows[r].count = 1;
	r = add_row(p, 1, 10, 12, "app", profile__stack(p, fr, 2));
	p->rows[r].period = 7000;
	p->rows[r].count = 7;
	p->events[0].period = 1500499;
	p->events[0].count = 3;
	p->events[1].period = 7000;
	p->events[1].count = 7;
}

static void test_folded(void)
{
	struct profile p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	make_profile(&p);
	f = open_memstream(&buf, &len);
	CHECK(folded__write(&p, 0, f) == 0);
	fclose(f);
	/* one line for both threads, microseconds, kernel frame marked */
	CHECK_STR(buf, "app;main;wait_for_it;schedule_[k] 1500\n");
	free(buf);
	f = open_memstream(&buf, &len);
	CHECK(folded__write(&p, 1, f) == 0);
	fclose(f);
	CHECK_STR(buf, "app;main;wait_for_it 7\n");
	free(buf);
	CHECK(profile__pick_event(&p, NULL) == 0);
	CHECK(profile__pick_event(&p, "cpu-clock") == 1);
	profile__free(&p);
}

/* A sample whose call chain was empty (found by fuzz-session): every output copes. */
static void test_empty_stack(void)
{
	struct text_opts t = { .keys = { SORT_COMM, SORT_DSO, SORT_SYM }, .nr_keys = 3, .top = 5 };
	struct profile p;
	uint32_t none[1] = { 0 }, r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	make_profile(&p);
	r = add_row(&p, 0, 10, 13, "lonely", profile__stack(&p, none, 0));
	p.rows[r].period = 2000000000;
	p.rows[r].count = 1;
	p.events[0].period += 2000000000;
	p.events[0].count++;
	f = open_memstream(&buf, &len);
	CHECK(text__write(&p, &t, f) == 0);
	CHECK(folded__write(&p, 0, f) == 0);
	CHECK(json__write(&p, f) == 0);
	CHECK(svg__write(&p, 0, "t", f) == 0);
	fclose(f);
	CHECK(buf && strstr(buf, "[no frames]"));
	CHECK(buf && strstr(buf, "\nlonely 2000000\n"));
	free(buf);
	profile__free(&p);
}

/* Minimal protobuf reading for the check: varint at *pos. */
static uint64_t varint(const uint8_t *b, size_t len, size_t *pos)
{
	uint64_t v = 0;
	int shift = 0;

	while (*pos < len && shift < 64) {
		uint8_t c = b[(*pos)++];

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
		shift += 7;
	}
	return v;
}

static void test_pprof(void)
{
	char path[] = "/tmp/offcpu-unit-pprof.XXXXXX";
	uint8_t buf[65536];
	size_t pos = 0, len, nsamples = 0, nstr = 0, nmap = 0, nloc = 0, nfn = 0;
	bool has_wait = false, has_offcpu = false, has_id = false;
	uint64_t vals_sum = 0;
	struct profile p;
	gzFile gz;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	make_profile(&p);
	CHECK(pprof__write(&p, 0, fd) == 0);
	close(fd);
	gz = gzopen(path, "rb");
	CHECK(gz != NULL);
	if (!gz)
		return;
	len = (size_t)gzread(gz, buf, sizeof(buf));
	gzclose(gz);
	unlink(path);
	while (pos < len) {
		uint64_t key = varint(buf, len, &pos), n = 0;
		size_t end;

		if ((key & 7) == 0) {
			varint(buf, len, &pos);
			continue;
		}
		CHECK((key & 7) == 2);
		if ((key & 7) != 2)
			break;
		n = varint(buf, len, &pos);
		end = pos + n;
		switch (key >> 3) {
		case 2: /* Sample: field 2 packed values */
			nsamples++;
			while (pos < end) {
				/* every Sample field is length-delimited: packed or a Label */
				uint64_t k = varint(buf, len, &pos), l = varint(buf, len, &pos);
				size_t e = pos + l;

				if (k >> 3 == 2) {
					vals_sum += varint(buf, len, &pos); /* nanoseconds */
					varint(buf, len, &pos); /* count */
				}
				pos = e;
			}
			break;
		case 3: nmap++; break;
		case 4: nloc++; break;
		case 5: nfn++; break;
		case 6:
			nstr++;
			has_wait |= n == 11 && !memcmp(buf + pos, "wait_for_it", 11);
			has_offcpu |= n == 6 && !memcmp(buf + pos, "offcpu", 6);
			has_id |= n == 8 && !memcmp(buf + pos, "deadbeef", 8);
			break;
		}
		pos = end;
	}
	CHECK_EQ_U64(nsamples, 2);
	CHECK_EQ_U64(vals_sum, 1500499);
	CHECK_EQ_U64(nloc, 3);
	CHECK_EQ_U64(nfn, 3);
	CHECK_EQ_U64(nmap, 2);
	CHECK(has_wait && has_offcpu && has_id);
	CHECK(nstr > 5);
	profile__free(&p);
}

/* Append a side-band record with the sample_id trailer of @st. */
static void put_sideband(struct perf_writer *w, uint64_t st, char *buf, size_t body, uint32_t type,
			 uint32_t pid, uint64_t time)
{
	struct perf_event_header *h = (void *)buf;
	struct perf_sample id = { .pid = pid, .tid = pid, .time = time, .id = 7 };

	body = (body + 7) & ~7UL;
	perf_sample_id__encode(st, &id, buf + body);
	h->type = type;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)(body + perf_sample_id__size(st));
	CHECK(perf_writer__write(w, h) == 0);
}

/*
 * perf's ordering: within a round a sample may come before the MMAP2 it
 * needs when they were read from different CPUs' buffers; sorted by time,
 * the sample still resolves.
 */
static void test_session_orders_rounds(void)
{
	static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
	char path[] = "/tmp/offcpu-unit-order.XXXXXX", bin[4096], buf[8192] = { 0 };
	struct perf_event_attr attr = { 0 };
	struct session_opts o = { .input = path, .sym = { .demangle = true } };
	uint64_t id = 7, off = 0, ips[3];
	struct perf_sample smp = { 0 };
	struct perf_writer *w;
	struct profile p;
	uint32_t nr;
	int fd = mkstemp(path), size;

	CHECK(fd >= 0);
	CHECK(self_offset((uintptr_t)&unit_probe_fn, &off, bin, sizeof(bin)) == 0);
	w = perf_writer__new(fd);
	attr.size = PERFDATA_ATTR_SIZE;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_type = OFFCPU_SAMPLE_TYPE;
	attr.sample_id_all = 1;
	CHECK(perf_writer__add_event(w, &attr, OFFCPU_EVENT_NAME, &id, 1) == 0);
	/* sample at t=30: pc in unit_probe_fn, mapped at 0x400000 + its offset */
	ips[0] = (uint64_t)PERF_CONTEXT_USER;
	ips[1] = 0x400000 + off + 2;
	smp = (struct perf_sample){ .id = 7, .ip = ips[1], .pid = 99, .tid = 99, .time = 30,
				    .period = 5000, .nr_ips = 2, .ips = ips };
	size = perf_sample__encode(attr.sample_type, &smp, buf, sizeof(buf));
	CHECK(size > 0 && perf_writer__write(w, (void *)buf) == 0);
	/* then its COMM (t=10) and MMAP2 (t=20), in the same round */
	memset(buf, 0, sizeof(buf));
	*(uint32_t *)(buf + 8) = 99;
	*(uint32_t *)(buf + 12) = 99;
	strcpy(buf + 16, "ordered");
	put_sideband(w, attr.sample_type, buf, 16 + 8, PERF_RECORD_COMM, 99, 10);
	memset(buf, 0, sizeof(buf));
	*(uint32_t *)(buf + 8) = 99;
	*(uint32_t *)(buf + 12) = 99;
	*(uint64_t *)(buf + 16) = 0x400000;
	*(uint64_t *)(buf + 24) = 0x10000000;
	*(uint32_t *)(buf + 64) = PROT_READ | PROT_EXEC;
	strcpy(buf + 72, bin);
	put_sideband(w, attr.sample_type, buf, 72 + strlen(bin) + 1, PERF_RECORD_MMAP2, 99, 20);
	CHECK(perf_writer__write(w, &round) == 0);
	CHECK(perf_writer__finish(w) == 0);
	perf_writer__free(w);
	close(fd);
	CHECK(session__load(&o, &p) == 0);
	unlink(path);
	CHECK_EQ_U64(p.nr_rows, 1);
	if (p.nr_rows == 1) {
		const uint32_t *fr = profile__stack_frames(&p, p.rows[0].stack, &nr);

		CHECK_STR(strtab__get(&p.str, p.rows[0].comm), "ordered");
		CHECK_EQ_U64(nr, 1);
		if (nr == 1)
			CHECK_STR(profile__frame_name(&p, fr[0]), "unit_probe_fn");
		CHECK_EQ_U64(p.rows[0].period, 5000);
	}
	profile__free(&p);
}

/*
 * Wait states and wakers, as offcpu record --wakers --state SDR writes them:
 * offcpu-time samples with their state in the weight, each followed by the
 * offcpu-waker sample of its wakeup when there was one. Thread 99 of
 * "wakee" waits in test_demangle -> unit_probe_fn; thread 200 ("bravo", woken
 * by "charlie") wakes it from test_pprof -> test_folded. Both processes map
 * this binary at 0x400000.
 */
struct why_file {
	char path[64];
	struct perf_writer *w;
	uint64_t time_type; /* the offcpu-time event's sample_type */
	uint64_t wakee_ips[3], waker_ips[3];
	char buf[8192];
};

/* This binary's function @fn as mapped at 0x400000, a little past its entry. */
static uint64_t mapped(void *fn)
{
	char bin[4096];
	uint64_t off = 0;

	CHECK(self_offset((uintptr_t)fn, &off, bin, sizeof(bin)) == 0);
	return 0x400000 + off + 2;
}

static void why_record(struct why_file *wf, uint64_t st, const struct perf_sample *smp)
{
	int size = perf_sample__encode(st, smp, wf->buf, sizeof(wf->buf));

	CHECK(size > 0 && perf_writer__write(wf->w, (void *)wf->buf) == 0);
}

/* A wait of @tid (process 99): @ns long at @time, in state @weight - 1 (0: unknown). */
static void why_wait(struct why_file *wf, uint32_t tid, uint64_t time, uint64_t ns, uint64_t weight)
{
	struct perf_sample smp = { .id = 7, .ip = wf->wakee_ips[1], .pid = 99, .tid = tid,
				   .time = time, .period = ns, .nr_ips = 3, .ips = wf->wakee_ips,
				   .weight = weight };

	why_record(wf, wf->time_type, &smp);
}

/* The waker sample of @wakee_tid's wait: @waker_tid (0: an interrupt) named by @chain. */
static void why_waker(struct why_file *wf, uint32_t waker_tid, uint32_t wakee_tid, uint64_t time,
		      uint64_t ns, const char *chain)
{
	struct offcpu_waker wk = { .wakee_pid = 99, .wakee_tid = wakee_tid, .state = 1,
				   .kind = waker_tid ? OFFCPU_WAKER_TASK : OFFCPU_WAKER_TIMER };
	struct perf_sample smp = { .id = 8, .pid = waker_tid, .tid = waker_tid, .time = time,
				   .period = ns };
	char raw[512];
	const char *c = chain;
	int size;

	/* "a,b,c": the waker, then who woke it */
	while (*c && wk.nr_chain < OFFCPU_CHAIN_MAX) {
		size_t n = strcspn(c, ",");

		snprintf(wk.chain[wk.nr_chain++], OFFCPU_COMM_LEN + 1, "%.*s", (int)n, c);
		c += n + (c[n] == ',');
	}
	size = waker__encode(&wk, wf->wakee_ips, 3, raw, sizeof(raw));
	CHECK(size > 0);
	smp.raw = raw;
	smp.raw_size = (uint32_t)size;
	if (waker_tid) { /* an interrupt has no stack here */
		smp.ip = wf->waker_ips[1];
		smp.nr_ips = 3;
		smp.ips = wf->waker_ips;
	}
	why_record(wf, WAKER_SAMPLE_TYPE, &smp);
}

/* A COMM and an executable MMAP2 of this binary for process @pid, at @time. */
static void why_process(struct why_file *wf, uint32_t pid, const char *comm, uint64_t time)
{
	char bin[4096];
	uint64_t off;

	CHECK(self_offset((uintptr_t)&unit_probe_fn, &off, bin, sizeof(bin)) == 0);
	memset(wf->buf, 0, sizeof(wf->buf));
	*(uint32_t *)(wf->buf + 8) = pid;
	*(uint32_t *)(wf->buf + 12) = pid;
	strcpy(wf->buf + 16, comm);
	put_sideband(wf->w, wf->time_type, wf->buf, 16 + strlen(comm) + 1, PERF_RECORD_COMM, pid, time);
	memset(wf->buf, 0, sizeof(wf->buf));
	*(uint32_t *)(wf->buf + 8) = pid;
	*(uint32_t *)(wf->buf + 12) = pid;
	*(uint64_t *)(wf->buf + 16) = 0x400000;
	*(uint64_t *)(wf->buf + 24) = 0x10000000;
	*(uint32_t *)(wf->buf + 64) = PROT_READ | PROT_EXEC;
	strcpy(wf->buf + 72, bin);
	put_sideband(wf->w, wf->time_type, wf->buf, 72 + strlen(bin) + 1, PERF_RECORD_MMAP2, pid,
		     time + 1);
}

/*
 * The file: @states puts WEIGHT on offcpu-time, @wakers declares offcpu-waker
 * and writes its samples. Waits of thread 99 (and 98), in ms: S 3 woken by
 * bravo <- charlie, D 1, S 2 woken by [timer], runqueue 0.5, S 4 (thread 98);
 * and three waker samples without their wait: a second one for the first
 * wait, one whose period is not its wait's, one for another thread.
 */
static void why_write(struct why_file *wf, bool states, bool wakers)
{
	static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
	struct perf_event_attr attr = { 0 };
	uint64_t id = 7, wid = 8;
	int fd;

	snprintf(wf->path, sizeof(wf->path), "/tmp/offcpu-unit-why.XXXXXX");
	fd = mkstemp(wf->path);
	CHECK(fd >= 0);
	wf->wakee_ips[0] = wf->waker_ips[0] = (uint64_t)PERF_CONTEXT_USER;
	wf->wakee_ips[1] = mapped((void *)&unit_probe_fn);
	wf->wakee_ips[2] = mapped((void *)&test_demangle);
	wf->waker_ips[1] = mapped((void *)&test_folded);
	wf->waker_ips[2] = mapped((void *)&test_pprof);
	wf->time_type = OFFCPU_SAMPLE_TYPE | (states ? PERF_SAMPLE_WEIGHT : 0);
	wf->w = perf_writer__new(fd);
	attr.size = PERFDATA_ATTR_SIZE;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_type = wf->time_type;
	attr.sample_id_all = 1;
	CHECK(perf_writer__add_event(wf->w, &attr, OFFCPU_EVENT_NAME, &id, 1) == 0);
	if (wakers) {
		attr.sample_type = WAKER_SAMPLE_TYPE;
		CHECK(perf_writer__add_event(wf->w, &attr, OFFCPU_WAKER_EVENT_NAME, &wid, 1) == 0);
	}
	why_process(wf, 99, "wakee", 10);
	why_process(wf, 200, "bravo", 20);
	why_wait(wf, 99, 100, 3000000, OFFCPU_STATE_S + 1);
	if (wakers) {
		why_waker(wf, 200, 99, 100, 3000000, "bravo,charlie");
		why_waker(wf, 200, 99, 100, 3000000, "bravo,charlie"); /* one waker per wait */
	}
	why_wait(wf, 99, 200, 1000000, OFFCPU_STATE_D + 1);
	why_wait(wf, 99, 300, 2000000, OFFCPU_STATE_S + 1);
	if (wakers)
		why_waker(wf, 0, 99, 300, 2000000, "[timer]");
	why_wait(wf, 99, 400, 500000, OFFCPU_STATE_RUNQ + 1);
	if (wakers)
		why_waker(wf, 200, 99, 400, 499999, "bravo"); /* not its period */
	why_wait(wf, 98, 500, 4000000, OFFCPU_STATE_S + 1);
	if (wakers)
		why_waker(wf, 200, 99, 500, 4000000, "bravo"); /* not its thread */
	CHECK(perf_writer__write(wf->w, &round) == 0);
	CHECK(perf_writer__finish(wf->w) == 0);
	perf_writer__free(wf->w);
	close(fd);
}

/* Load the file with @o's filters; unlinks it. */
static int why_load(struct why_file *wf, struct session_opts *o, struct profile *p)
{
	int ret;

	o->input = wf->path;
	o->sym.demangle = true;
	o->sym.kallsyms = "/dev/null";
	log_verbosity = -1; /* the orphans' warning */
	ret = session__load(o, p);
	log_verbosity = 0;
	CHECK(ret == 0);
	return ret;
}

/* The sum of the rows whose state (@by_state) or waker name is @key, in ns. */
static uint64_t why_total(const struct profile *p, bool by_state, const char *key)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < p->nr_rows; i++) {
		const struct profile_row *r = &p->rows[i];
		const char *k = by_state ? profile__state_name(r->state) :
			       r->waker ? strtab__get(&p->str, r->waker) : "[none]";

		if (p->events[r->event].offcpu && !strcmp(k, key))
			sum += r->period;
	}
	return sum;
}

/* An output into a string (free it). */
#define OUTPUT(buf, call)                                                                  \
	do {                                                                               \
		size_t _len = 0;                                                           \
		FILE *f = open_memstream(&(buf), &_len);                                   \
		CHECK((call) == 0);                                                        \
		fclose(f);                                                                 \
	} while (0)

static void test_why_totals(void)
{
	struct why_file wf;
	struct session_opts o = { 0 };
	struct profile p;
	int ev, wev;
	uint32_t i, nr;

	why_write(&wf, true, true);
	if (why_load(&wf, &o, &p))
		goto out;
	CHECK(p.has_states && p.has_wakers);
	ev = profile__pick_event(&p, OFFCPU_EVENT_NAME);
	wev = profile__pick_event(&p, OFFCPU_WAKER_EVENT_NAME);
	CHECK(ev >= 0 && wev >= 0);
	if (ev < 0 || wev < 0)
		goto out;
	/* the waits' time, all of it; the waker samples add none */
	CHECK_EQ_U64(p.events[ev].period, 3000000 + 1000000 + 2000000 + 500000 + 4000000);
	CHECK_EQ_U64(p.events[ev].count, 5);
	CHECK_EQ_U64(p.events[wev].period, 0);
	CHECK_EQ_U64(p.events[wev].count, 0);
	CHECK_EQ_U64(p.orphan_wakers, 3);
	CHECK_EQ_U64(why_total(&p, true, "S"), 9000000);
	CHECK_EQ_U64(why_total(&p, true, "D"), 1000000);
	CHECK_EQ_U64(why_total(&p, true, "runqueue"), 500000);
	CHECK_EQ_U64(why_total(&p, true, "?"), 0);
	CHECK_EQ_U64(why_total(&p, false, "bravo"), 3000000);
	CHECK_EQ_U64(why_total(&p, false, "[timer]"), 2000000);
	CHECK_EQ_U64(why_total(&p, false, "[none]"), 5500000);
	for (i = 0; i < p.nr_rows; i++) {
		const struct profile_row *r = &p.rows[i];

		if (!r->waker)
			continue;
		if (!strcmp(strtab__get(&p.str, r->waker), "bravo")) {
			const uint32_t *fr = profile__stack_frames(&p, r->waker_stack, &nr);

			/* the chain, and the waker's stack from its own process's mappings */
			CHECK_STR(strtab__get(&p.str, r->chain), "charlie");
			CHECK(r->waker_stack != UINT32_MAX);
			CHECK_EQ_U64(nr, 2);
			if (nr == 2) {
				CHECK_STR(profile__frame_name(&p, fr[0]), "test_pprof");
				CHECK_STR(profile__frame_name(&p, fr[1]), "test_folded");
			}
		} else {
			CHECK_EQ_U64(r->chain, 0);
			CHECK_EQ_U64(r->waker_stack, UINT32_MAX); /* the timer: no stack */
		}
		CHECK_EQ_U64(r->tid, 99);
		CHECK_STR(strtab__get(&p.str, r->comm), "wakee");
		CHECK_STR(profile__state_name(r->state), "S");
	}
out:
	unlink(wf.path);
	profile__free(&p);
}

/* Filters choose waits: a waker sample whose wait was left out goes with it, and is no orphan. */
static void test_why_filters(void)
{
	struct why_file wf;
	int tids[1] = { 98 };
	struct session_opts o = { .tids = tids, .nr_tids = 1 };
	struct profile p;
	char *buf = NULL;

	why_write(&wf, true, true);
	if (!why_load(&wf, &o, &p)) {
		CHECK_EQ_U64(p.events[0].period, 4000000);
		CHECK_EQ_U64(p.orphan_wakers, 3);
		CHECK_EQ_U64(why_total(&p, false, "[none]"), 4000000);
		p.show_wakers = true;
		OUTPUT(buf, folded__write(&p, 0, f));
		CHECK_STR(buf, "wakee;test_demangle;unit_probe_fn 4000\n");
		free(buf);
	}
	unlink(wf.path);
	profile__free(&p);
}

/* --wakers --folded: offwaketime's layout, byte for byte, in microseconds; --states roots. */
static void test_why_folded(void)
{
	struct why_file wf;
	struct session_opts o = { 0 };
	struct profile p;
	char *buf = NULL;

	why_write(&wf, true, true);
	if (why_load(&wf, &o, &p))
		goto out;
	/* without --wakers and --states: as before */
	OUTPUT(buf, folded__write(&p, 0, f));
	CHECK_STR(buf, "wakee;test_demangle;unit_probe_fn 10500\n");
	free(buf);
	p.show_wakers = true;
	OUTPUT(buf, folded__write(&p, 0, f));
	CHECK_STR(buf, "wakee;test_demangle;unit_probe_fn 5500\n"
		       "wakee;test_demangle;unit_probe_fn;--;[timer] 2000\n"
		       "wakee;test_demangle;unit_probe_fn;--;test_folded;test_pprof;bravo;charlie 3000\n");
	free(buf);
	p.show_wakers = false;
	p.show_states = true;
	OUTPUT(buf, folded__write(&p, 0, f));
	CHECK_STR(buf, "[D];wakee;test_demangle;unit_probe_fn 1000\n"
		       "[S];wakee;test_demangle;unit_probe_fn 9000\n"
		       "[runqueue];wakee;test_demangle;unit_probe_fn 500\n");
	free(buf);
	p.show_wakers = true;
	OUTPUT(buf, folded__write(&p, 0, f));
	CHECK_STR(buf, "[D];wakee;test_demangle;unit_probe_fn 1000\n"
		       "[S];wakee;test_demangle;unit_probe_fn 4000\n"
		       "[S];wakee;test_demangle;unit_probe_fn;--;[timer] 2000\n"
		       "[S];wakee;test_demangle;unit_probe_fn;--;test_folded;test_pprof;bravo;charlie 3000\n"
		       "[runqueue];wakee;test_demangle;unit_probe_fn 500\n");
	free(buf);
	/* the SVG draws the same stacks */
	OUTPUT(buf, svg__write(&p, 0, "t", f));
	CHECK(buf && strstr(buf, "data-n=\"--\""));
	CHECK(buf && strstr(buf, "data-n=\"charlie\""));
	CHECK(buf && strstr(buf, "data-n=\"[runqueue]\""));
	free(buf);
	/* json says why, and shows no row whose time all went to its waker's */
	OUTPUT(buf, json__write(&p, f));
	CHECK(buf && strstr(buf, "\"state\": \"D\", \"waker\": null}"));
	CHECK(buf && strstr(buf, "\"state\": \"S\", \"waker\": \"bravo\", \"chain\": [\"charlie\"], "
				 "\"waker_stack\": [{\"sym\": \"test_pprof\""));
	CHECK(buf && !strstr(buf, "\"samples\": 0,"));
	free(buf);
	/* pprof: the same stacks as locations, and labels */
	{
		char path[] = "/tmp/offcpu-unit-pprof.XXXXXX";
		static char pb[65536];
		int fd = mkstemp(path), len = 0;
		gzFile gz;

		CHECK(fd >= 0 && pprof__write(&p, 0, fd) == 0);
		close(fd);
		gz = gzopen(path, "rb");
		if (gz) {
			len = gzread(gz, pb, sizeof(pb));
			gzclose(gz);
		}
		unlink(path);
		CHECK(len > 0 && memmem(pb, (size_t)len, "\x10" "bravo <- charlie", 17));
		CHECK(len > 0 && memmem(pb, (size_t)len, "\x02--", 3));
		CHECK(len > 0 && memmem(pb, (size_t)len, "\x07" "charlie", 8));
		CHECK(len > 0 && memmem(pb, (size_t)len, "\x0a[runqueue]", 11));
		CHECK(len > 0 && memmem(pb, (size_t)len, "\x05state", 6));
	}
out:
	unlink(wf.path);
	profile__free(&p);
}

/* The text table: --sort comm,state and --sort waker. */
static void test_why_table(void)
{
	struct text_opts t = { .keys = { SORT_COMM, SORT_STATE }, .nr_keys = 2 };
	struct why_file wf;
	struct session_opts o = { 0 };
	struct profile p;
	char *buf = NULL;

	why_write(&wf, true, true);
	if (why_load(&wf, &o, &p))
		goto out;
	OUTPUT(buf, text__write(&p, &t, f));
	CHECK_STR(buf, "# offcpu-time: 10.500 ms off-CPU in 5 samples\n"
		       "#           ms        %  comm              state    \n"
		       "         9.000   85.71%  wakee             S        \n"
		       "         1.000    9.52%  wakee             D        \n"
		       "         0.500    4.76%  wakee             runqueue \n"
		       "\n");
	free(buf);
	t.keys[0] = SORT_WAKER;
	t.nr_keys = 1;
	OUTPUT(buf, text__write(&p, &t, f));
	CHECK_STR(buf, "# offcpu-time: 10.500 ms off-CPU in 5 samples\n"
		       "#           ms        %  waker           \n"
		       "         5.500   52.38%  [none]          \n"
		       "         3.000   28.57%  bravo <- charlie\n"
		       "         2.000   19.05%  [timer]         \n"
		       "\n");
	free(buf);
out:
	unlink(wf.path);
	profile__free(&p);
}

/* Files without states or wakers (perf's, offcpu before 0.2) read as before. */
static void test_why_old_files(void)
{
	struct text_opts t = { .keys = { SORT_COMM, SORT_STATE }, .nr_keys = 2 };
	struct why_file wf;
	struct session_opts o = { 0 };
	struct profile p;
	char *buf = NULL;
	uint32_t i;

	why_write(&wf, false, false);
	if (!why_load(&wf, &o, &p)) {
		CHECK(!p.has_states && !p.has_wakers);
		CHECK_EQ_U64(p.events[0].period, 10500000);
		for (i = 0; i < p.nr_rows; i++)
			CHECK(!p.rows[i].state && !p.rows[i].waker);
		OUTPUT(buf, folded__write(&p, 0, f));
		CHECK_STR(buf, "wakee;test_demangle;unit_probe_fn 10500\n");
		free(buf);
		OUTPUT(buf, text__write(&p, &t, f));
		CHECK(buf && strstr(buf, "  wakee             ?        \n"));
		free(buf);
	}
	unlink(wf.path);
	profile__free(&p);
	/* states, no wakers */
	why_write(&wf, true, false);
	if (!why_load(&wf, &o, &p)) {
		CHECK(p.has_states && !p.has_wakers);
		CHECK_EQ_U64(why_total(&p, true, "S"), 9000000);
		CHECK_EQ_U64(p.orphan_wakers, 0);
	}
	unlink(wf.path);
	profile__free(&p);
}

const struct unit_test report_tests[] = {
	{ "report: session sorts records of a round by time", test_session_orders_rounds },
	{ "report: symbolizer resolves this binary, lines, build id check", test_symbolizer_self },
	{ "report: symbolizer never opens fifos or devices", test_symbolizer_special_files },
	{ "report: demangles c++ and rust", test_demangle },
	{ "report: folded output", test_folded },
	{ "report: a sample without frames in every output", test_empty_stack },
	{ "report: pprof output read back", test_pprof },
	{ "report: wait states and wakers: totals, orphan waker samples", test_why_totals },
	{ "report: wait states and wakers: filters apply to the wait", test_why_filters },
	{ "report: wait states and wakers: folded, svg and json", test_why_folded },
	{ "report: wait states and wakers: text table sorted by state and waker", test_why_table },
	{ "report: files without states or wakers", test_why_old_files },
	{ 0 },
};
