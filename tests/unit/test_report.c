// SPDX-License-Identifier: GPL-2.0
/*
 * Report unit tests: the symbolizer against this test binary (symbols, source
 * lines, build id check), demangling, and the folded and pprof outputs of a
 * profile built by hand, read back byte by byte; and files written by hand
 * (perf_writer) read by the session: wait states and wakers, threads waiting
 * since before the recording began.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "unit.h"
#include "util/util.h"
#include "report/profile.h"
#include "report/symbolizer.h"
#include "report/resolve.h"
#include "report/session.h"
#include "report/perfetto.h"
#include "perfdata/writer.h"
#include "perfdata/sample.h"
#include "perfdata/wakers.h"
#include <dlfcn.h>
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

/*
 * A wait of @tid (process 99): @ns long at @time, in state @weight - 1 (0:
 * unknown); the D wait (time 200) is summed short blocks.
 */
static void why_wait(struct why_file *wf, uint32_t tid, uint64_t time, uint64_t ns, uint64_t weight)
{
	struct perf_sample smp = { .id = 7, .ip = wf->wakee_ips[1], .pid = 99, .tid = tid,
				   .time = time, .period = ns, .nr_ips = 3, .ips = wf->wakee_ips,
				   .weight = weight,
				   .cpu_res = time == 200 ? OFFCPU_CPU_RES_SUMMED : 0 };

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

/*
 * Threads waiting when the recording began, as offcpu record -p writes them:
 * an offcpu-before sample each at the start (T0), its period how long its
 * block had lasted by then, its weight its state; and the block's time during
 * the recording in offcpu-time samples, as offcpu record writes a block under
 * way at the start: streamed at its end when long, else summed at the next
 * drain of the summed map (D1, one second in), or at the last one (F, a few
 * ms after the recording's end, E) when still under way at the end. Process
 * 99 ("app", this binary and libc mapped), one thread per case:
 *   101 alpha    45 s before, still waiting at the end             in unit_probe_fn
 *   102 bravo    10 s before, streamed at T0 + 1.5 s (1 ms of it on
 *                a run queue), then a short block summed at F      in unit_probe_fn
 *   103 charlie  since a moment not known, still waiting at the end in test_demangle
 *   104 delta    5 s before, 200 ms in the recording, summed at D1
 *                with the mark of a stack its recorder did not read
 *   105 echo     3 s before, a short block summed at D1 (its stack),
 *                then another, summed at F                         in unit_probe_fn
 *   106 (a hostile name) 1 s before, still waiting at the end     in unit_probe_fn
 *   110 foxtrot  no wait before the recording: 300 ms, streamed
 * and process 200 ("other"), thread 201: 20 s before, to the end, in test_pprof.
 */
#define T0 1000000000ULL
#define SEC 1000000000ULL
#define BF_END (T0 + 2 * SEC)
#define BF_LAST (BF_END + 6000000) /* the last drain: 6 ms after the end */
#define BF_D1 (T0 + SEC)
#define BF_WALL 1700000000ULL /* 2023-11-14 22:13:20 UTC: the wall clock at T0 */

struct bf_file {
	struct why_file wf;
	uint64_t libc_ip; /* read() in libc, mapped at 0x7f0000000000 */
	uint64_t own[3]; /* user chain: libc's read, unit_probe_fn, test_demangle */
	uint64_t other[3]; /* test_demangle alone */
	uint64_t pprof[2];
	uint64_t mark[2]; /* a stack taken before offcpu ran */
};

/* A sample of @id (7 offcpu-time, 9 offcpu-before) of @pid/@tid. */
static void bf_sample(struct bf_file *bf, uint64_t id, uint32_t pid, uint32_t tid, uint64_t time,
		      uint64_t period, uint32_t state, const uint64_t *ips, uint32_t nr)
{
	struct perf_sample smp = { .id = id, .pid = pid, .tid = tid, .time = time,
				   .period = period, .weight = state + 1, .ips = ips,
				   .nr_ips = nr, .ip = nr > 1 ? ips[1] : 0 };

	why_record(&bf->wf, bf->wf.time_type, &smp);
}

static void bf_comm(struct bf_file *bf, uint32_t pid, uint32_t tid, const char *comm)
{
	memset(bf->wf.buf, 0, sizeof(bf->wf.buf));
	*(uint32_t *)(bf->wf.buf + 8) = pid;
	*(uint32_t *)(bf->wf.buf + 12) = tid;
	strcpy(bf->wf.buf + 16, comm);
	put_sideband(bf->wf.w, bf->wf.time_type, bf->wf.buf, 16 + strlen(comm) + 1,
		     PERF_RECORD_COMM, pid, 30);
}

/* libc, as process @pid maps it; 0 in @bf->libc_ip when read() is not found in a file. */
static void bf_libc(struct bf_file *bf, uint32_t pid)
{
	/* libc's own read(), not an interceptor's (the sanitizers' build has one) */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *fn = libc ? dlsym(libc, "read") : NULL;
	char lib[4096];
	uint64_t off = 0;

	bf->libc_ip = 0;
	if (libc)
		dlclose(libc);
	if (!fn || self_offset((uintptr_t)fn, &off, lib, sizeof(lib)) || !strstr(lib, "/libc"))
		return;
	memset(bf->wf.buf, 0, sizeof(bf->wf.buf));
	*(uint32_t *)(bf->wf.buf + 8) = pid;
	*(uint32_t *)(bf->wf.buf + 12) = pid;
	*(uint64_t *)(bf->wf.buf + 16) = 0x7f0000000000ULL;
	*(uint64_t *)(bf->wf.buf + 24) = 0x10000000;
	*(uint32_t *)(bf->wf.buf + 64) = PROT_READ | PROT_EXEC;
	strcpy(bf->wf.buf + 72, lib);
	put_sideband(bf->wf.w, bf->wf.time_type, bf->wf.buf, 72 + strlen(lib) + 1,
		     PERF_RECORD_MMAP2, pid, 25);
	bf->libc_ip = 0x7f0000000000ULL + off + 2;
}

/*
 * The file above; @before: offcpu-before declared and written; @clock: with
 * perf's CLOCK_DATA (T0 is BF_WALL).
 */
static void bf_write(struct bf_file *bf, bool before, bool clock)
{
	static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
	struct why_file *wf = &bf->wf;
	struct perf_event_attr attr = { 0 };
	uint64_t id = 7, bid = 9;
	int fd;

	snprintf(wf->path, sizeof(wf->path), "/tmp/offcpu-unit-before.XXXXXX");
	fd = mkstemp(wf->path);
	CHECK(fd >= 0);
	wf->time_type = OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_WEIGHT;
	wf->w = perf_writer__new(fd);
	attr.size = PERFDATA_ATTR_SIZE;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_type = wf->time_type;
	attr.sample_id_all = 1;
	CHECK(perf_writer__add_event(wf->w, &attr, OFFCPU_EVENT_NAME, &id, 1) == 0);
	if (before)
		CHECK(perf_writer__add_event(wf->w, &attr, OFFCPU_BEFORE_EVENT_NAME, &bid, 1) == 0);
	if (clock) {
		struct {
			uint32_t version, clockid;
			uint64_t wall, mono;
		} ck = { 1, CLOCK_MONOTONIC, BF_WALL * SEC, T0 };

		CHECK(perf_writer__set_feature(wf->w, FEAT_CLOCK_DATA, &ck, sizeof(ck)) == 0);
	}
	why_process(wf, 99, "app", 10);
	why_process(wf, 200, "other", 20);
	bf_libc(bf, 99);
	bf_comm(bf, 99, 101, "alpha");
	bf_comm(bf, 99, 102, "bravo");
	bf_comm(bf, 99, 103, "charlie");
	bf_comm(bf, 99, 104, "delta");
	bf_comm(bf, 99, 105, "echo");
	bf_comm(bf, 99, 106, "evil\x1b[2J;x");
	bf_comm(bf, 99, 110, "foxtrot");
	bf->own[0] = bf->other[0] = bf->pprof[0] = bf->mark[0] = (uint64_t)PERF_CONTEXT_USER;
	bf->own[1] = bf->libc_ip;
	bf->own[2] = mapped((void *)&unit_probe_fn);
	bf->other[1] = mapped((void *)&test_demangle);
	bf->pprof[1] = mapped((void *)&test_pprof);
	bf->mark[1] = OFFCPU_UNW_MARK_OF(OFFCPU_UNW_BEFORE_START, 0);
	if (before) {
		bf_sample(bf, 9, 99, 101, T0, 45 * SEC, OFFCPU_STATE_S, bf->own, 3);
		bf_sample(bf, 9, 99, 102, T0, 10 * SEC, OFFCPU_STATE_S, bf->own, 3);
		bf_sample(bf, 9, 99, 103, T0, 0, OFFCPU_STATE_D, bf->other, 2);
		bf_sample(bf, 9, 99, 104, T0, 5 * SEC, OFFCPU_STATE_S, bf->own, 3);
		bf_sample(bf, 9, 99, 105, T0, 3 * SEC, OFFCPU_STATE_S, bf->own, 3);
		bf_sample(bf, 9, 99, 106, T0, 1 * SEC, OFFCPU_STATE_S, bf->own, 3);
		bf_sample(bf, 9, 200, 201, T0, 20 * SEC, OFFCPU_STATE_S, bf->pprof, 2);
	}
	/* bravo's block, streamed at its end: the wait, then its run queue part */
	bf_sample(bf, 7, 99, 102, T0 + 1500000000, 1499000000, OFFCPU_STATE_S, bf->own, 3);
	bf_sample(bf, 7, 99, 102, T0 + 1500000000, 1000000, OFFCPU_STATE_RUNQ, bf->own, 3);
	bf_sample(bf, 7, 99, 110, T0 + 1700000000, 300000000, OFFCPU_STATE_S, bf->own, 3);
	CHECK(perf_writer__write(wf->w, &round) == 0);
	/* the first drain */
	bf_sample(bf, 7, 99, 104, BF_D1, 200000000, OFFCPU_STATE_S, bf->mark, 2);
	bf_sample(bf, 7, 99, 105, BF_D1, 100000000, OFFCPU_STATE_S, bf->own, 3);
	CHECK(perf_writer__write(wf->w, &round) == 0);
	/* the last drain: the waits under way at the end, counted up to it */
	bf_sample(bf, 7, 99, 101, BF_LAST, BF_END - T0, OFFCPU_STATE_S, bf->own, 3);
	bf_sample(bf, 7, 99, 102, BF_LAST, 300000000, OFFCPU_STATE_S, bf->other, 2);
	bf_sample(bf, 7, 99, 103, BF_LAST, BF_END - T0, OFFCPU_STATE_D, bf->other, 2);
	bf_sample(bf, 7, 99, 105, BF_LAST, 400000000, OFFCPU_STATE_S, bf->own, 3);
	bf_sample(bf, 7, 99, 106, BF_LAST, BF_END - T0, OFFCPU_STATE_S, bf->own, 3);
	bf_sample(bf, 7, 200, 201, BF_LAST, BF_END - T0, OFFCPU_STATE_S, bf->pprof, 2);
	CHECK(perf_writer__write(wf->w, &round) == 0);
	CHECK(perf_writer__finish(wf->w) == 0);
	perf_writer__free(wf->w);
	close(fd);
}

/* offcpu-time's periods in the file above: the before-samples' are in no total */
#define BF_OFFCPU_NS                                                                       \
	(1499000000ULL + 1000000 + 300000000 + 200000000 + 100000000 + 4 * (BF_END - T0) +  \
	 300000000 + 400000000)

static const struct profile_before *bf_find(const struct profile *p, uint32_t tid)
{
	uint32_t i;

	for (i = 0; i < p->nr_befores; i++)
		if (p->befores[i].tid == tid)
			return &p->befores[i];
	return NULL;
}

/* The text line of thread @tid (after its "pid/tid"), or NULL. */
static const char *bf_line(const char *text, const char *id, char *out, size_t cap)
{
	const char *l = text ? strstr(text, id) : NULL;
	size_t n;

	if (!l)
		return NULL;
	n = strcspn(l, "\n");
	snprintf(out, cap, "%.*s", (int)n, l);
	return out;
}

static void test_before_waits(void)
{
	struct text_opts t = { .keys = { SORT_COMM }, .nr_keys = 1 };
	struct session_opts o = { 0 };
	const struct profile_before *b;
	struct bf_file bf;
	struct profile p;
	char *buf = NULL, line[512];
	int ev;

	setenv("TZ", "UTC", 1);
	tzset();
	bf_write(&bf, true, true);
	if (why_load(&bf.wf, &o, &p))
		goto out;
	CHECK(bf.libc_ip != 0);
	CHECK(p.has_before && p.has_clock);
	CHECK_EQ_U64(p.nr_befores, 7);
	/* longest first: 45 + 2, 20 + 2, 10 + 1.5, 5 + 0.2, 3 + at most 1, 1 + 2, 0 + 2 */
	if (p.nr_befores == 7) {
		static const uint32_t order[] = { 101, 201, 102, 104, 105, 106, 103 };
		uint32_t i;

		for (i = 0; i < 7; i++)
			CHECK_EQ_U64(p.befores[i].tid, order[i]);
	}
	b = bf_find(&p, 101);
	CHECK(b && b->end == BEFORE_TO_END && b->before == 45 * SEC && b->during == 2 * SEC);
	CHECK(b && profile__before_bound(b) == BOUND_AT_LEAST);
	CHECK(b && !strcmp(profile__frame_name(&p, b->own), "unit_probe_fn"));
	b = bf_find(&p, 102);
	CHECK(b && b->end == BEFORE_ENDED && b->during == 1500000000);
	CHECK(b && profile__before_bound(b) == BOUND_EXACT);
	b = bf_find(&p, 103);
	CHECK(b && b->end == BEFORE_TO_END && !b->before && b->during == 2 * SEC);
	CHECK(b && !strcmp(profile__state_name(b->state), "D"));
	CHECK(b && !strcmp(profile__frame_name(&p, b->own), "test_demangle"));
	b = bf_find(&p, 104);
	CHECK(b && b->end == BEFORE_ENDED && b->during == 200000000);
	b = bf_find(&p, 105);
	CHECK(b && b->end == BEFORE_ENDED_BY && b->during == SEC);
	CHECK(b && profile__before_bound(b) == BOUND_AT_MOST);
	b = bf_find(&p, 201);
	CHECK(b && b->end == BEFORE_TO_END);
	CHECK(b && !strcmp(profile__frame_name(&p, b->own), "test_pprof"));
	/* totals, tables, folded and json rows: offcpu-time's alone */
	ev = profile__pick_event(&p, NULL);
	CHECK(ev >= 0 && !strcmp(strtab__get(&p.str, p.events[ev].name), OFFCPU_EVENT_NAME));
	if (ev >= 0) {
		CHECK_EQ_U64(p.events[ev].period, BF_OFFCPU_NS);
		CHECK_EQ_U64(p.events[ev].count, 11);
	}
	/* offcpu-before: no time of its own (that is offcpu-time's), but its
	 * samples are counted, one a thread waiting since before (--json) */
	CHECK_EQ_U64(p.events[1].period, 0);
	CHECK_EQ_U64(p.events[1].count, p.nr_befores);
	OUTPUT(buf, folded__write(&p, ev < 0 ? 0 : ev, f));
	{
		uint64_t sum = 0;
		const char *c;

		/* each line ends with its value: the number after its last space */
		for (c = buf; c && *c; c += strcspn(c, "\n") + 1) {
			const char *v = c + strcspn(c, "\n");

			while (v > c && v[-1] != ' ')
				v--;
			sum += strtoull(v, NULL, 10);
		}
		CHECK_EQ_U64(sum, BF_OFFCPU_NS / 1000);
	}
	free(buf);
	OUTPUT(buf, text__write(&p, &t, f));
	CHECK(buf && strstr(buf, "# threads waiting since before the recording began at 2023-11-14 "
				 "22:13:20, longest first: 7\n"));
	CHECK(buf && strstr(buf, "# offcpu-time: 10800.000 ms off-CPU in 11 samples\n"));
	CHECK(buf && !strstr(buf, "# offcpu-before"));
	/* the section comes first, and its rows in order */
	CHECK(buf && strstr(buf, "# threads") == buf);
	CHECK(buf && strstr(buf, "99/101") < strstr(buf, "200/201"));
	CHECK(buf && strstr(buf, "200/201") < strstr(buf, "99/102"));
	CHECK(buf && strstr(buf, "99/106") < strstr(buf, "99/103"));
	CHECK_STR(bf_line(buf, "99/101", line, sizeof(line)),
		  "99/101  S  waiting in unit_probe_fn for at least 47.000 s (since 22:12:35, "
		  "45.000 s before the recording; still waiting at its end)");
	CHECK_STR(bf_line(buf, "99/102", line, sizeof(line)),
		  "99/102  S  waited in unit_probe_fn for 11.500 s in all (since 22:13:10, "
		  "10.000 s before the recording; it ended 1.500 s into the recording)");
	CHECK_STR(bf_line(buf, "99/103", line, sizeof(line)),
		  "99/103  D  waiting in test_demangle for at least 2.000 s (since before the "
		  "recording; still waiting at its end)");
	CHECK_STR(bf_line(buf, "99/104", line, sizeof(line)),
		  "99/104  S  waited in unit_probe_fn for 5.200 s in all (since 22:13:15, 5.000 s "
		  "before the recording; it ended 200.0 ms into the recording)");
	CHECK_STR(bf_line(buf, "99/105", line, sizeof(line)),
		  "99/105  S  waited in unit_probe_fn for at most 4.000 s in all (since 22:13:17, "
		  "3.000 s before the recording; it ended within the recording's first 1.000 s)");
	CHECK(buf && strstr(buf, "\n  alpha              99/101  S  waiting"));
	CHECK(buf && strstr(buf, "\n  other             200/201  S  waiting in test_pprof"));
	/* another user's thread name, escaped: no escape sequence reaches the terminal */
	CHECK(buf && strstr(buf, "\n  evil\\x1b[2J;x      99/106  S  "));
	CHECK(buf && !strchr(buf, '\x1b'));
	free(buf);
	/* json: every wait, and no row of offcpu-before */
	OUTPUT(buf, json__write(&p, f));
	CHECK(buf && strstr(buf, "\"before_waits\": [\n  {\"comm\": \"alpha\", \"pid\": 99, "
				 "\"tid\": 101, \"state\": \"S\", \"function\": \"unit_probe_fn\", "
				 "\"dso\": "));
	CHECK(buf && strstr(buf, "\"before_ns\": 45000000000, \"during_ns\": 2000000000, \"end\": "
				 "\"end\", \"total_ns\": 47000000000, \"bound\": \"at_least\", "
				 "\"since_wall_ns\": 1699999955000000000, \"stack\": ["));
	CHECK(buf && strstr(buf, "\"before_ns\": null, \"during_ns\": 2000000000, "
				 "\"end\": \"end\""));
	CHECK(buf && strstr(buf, "\"end\": \"ended_within\", \"total_ns\": 4000000000, "
				 "\"bound\": \"at_most\""));
	CHECK(buf && strstr(buf, "\"comm\": \"evil\\u001b[2J;x\""));
	CHECK(buf && !strstr(buf, "{\"event\": \"offcpu-before\""));
	free(buf);
	/* --no-before */
	t.no_before = true;
	OUTPUT(buf, text__write(&p, &t, f));
	CHECK(buf && !strstr(buf, "waiting since before"));
	free(buf);
out:
	unlink(bf.wf.path);
	profile__free(&p);
}

/* --pid, --tid, --comm choose the threads; --event another event leaves them out. */
static void test_before_filters(void)
{
	struct bf_file bf;
	int pids[1] = { 200 }, tids[2] = { 103, 101 };
	char *comms[1] = { "echo" };
	struct session_opts o = { 0 };
	struct profile p;
	char *buf = NULL;

	bf_write(&bf, true, false);
	o.pids = pids;
	o.nr_pids = 1;
	if (!why_load(&bf.wf, &o, &p)) {
		CHECK_EQ_U64(p.nr_befores, 1);
		CHECK(p.nr_befores == 1 && p.befores[0].tid == 201);
		/* still at the end: the other process's waits tell where the end is */
		CHECK(p.nr_befores == 1 && p.befores[0].end == BEFORE_TO_END);
		CHECK_EQ_U64(p.events[0].period, BF_END - T0);
	}
	profile__free(&p);
	bf_write(&bf, true, false);
	memset(&o, 0, sizeof(o));
	o.tids = tids;
	o.nr_tids = 2;
	if (!why_load(&bf.wf, &o, &p)) {
		struct text_opts t = { .keys = { SORT_COMM }, .nr_keys = 1 };

		CHECK_EQ_U64(p.nr_befores, 2);
		CHECK(p.nr_befores == 2 && p.befores[0].tid == 101 && p.befores[1].tid == 103);
		OUTPUT(buf, text__write(&p, &t, f));
		/* no CLOCK_DATA: the relative times alone */
		CHECK(buf && strstr(buf, "# threads waiting since before the recording began, "
					 "longest first: 2\n"));
		CHECK(buf && strstr(buf, "for at least 47.000 s (since 45.000 s before the "
					 "recording; still waiting at its end)\n"));
		free(buf);
	}
	profile__free(&p);
	bf_write(&bf, true, false);
	memset(&o, 0, sizeof(o));
	o.comms = comms;
	o.nr_comms = 1;
	if (!why_load(&bf.wf, &o, &p))
		CHECK(p.nr_befores == 1 && p.befores[0].tid == 105);
	profile__free(&p);
	/* --event offcpu-before: its samples are the rows, the waits still listed */
	bf_write(&bf, true, false);
	memset(&o, 0, sizeof(o));
	o.event = OFFCPU_BEFORE_EVENT_NAME;
	if (!why_load(&bf.wf, &o, &p)) {
		int ev = profile__pick_event(&p, OFFCPU_BEFORE_EVENT_NAME);

		CHECK_EQ_U64(p.nr_befores, 7);
		CHECK(ev == 1);
		if (ev == 1) {
			CHECK_EQ_U64(p.events[1].period, (45 + 10 + 5 + 3 + 1 + 20) * SEC);
			CHECK_EQ_U64(p.events[1].count, 7);
			CHECK_EQ_U64(p.events[0].count, 0);
		}
	}
	profile__free(&p);
	unlink(bf.wf.path);
}

/*
 * Waits at the last drain: to the end when their period reaches where the
 * recording ended, which is where two of them end, or where one ends within
 * 250 ms of the drain; a lone one that ended long before the drain (a short
 * block summed there, its thread running since) did not last. And a wait
 * with no sample after the start.
 */
static void test_before_lone(void)
{
	static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
	static const struct {
		uint64_t period; /* of each thread's one sample at the drain; 0: none */
		uint64_t drain; /* the drain's time */
		int threads;
		uint32_t end;
		uint64_t during;
	} pass[] = {
		{ BF_END - T0, BF_LAST, 1, BEFORE_TO_END, BF_END - T0 },
		{ 300000000, BF_LAST, 1, BEFORE_ENDED_BY, BF_LAST - T0 },
		{ 0, BF_LAST, 1, BEFORE_NOT_SEEN, 0 },
		/* a drain 400 ms late: two waits that end together are still the end */
		{ BF_END - T0, BF_END + 400000000, 2, BEFORE_TO_END, BF_END - T0 },
		/* one alone is not: that it lasted is more than the file can say */
		{ BF_END - T0, BF_END + 400000000, 1, BEFORE_ENDED_BY, BF_END + 400000000 - T0 },
	};
	struct text_opts t = { .keys = { SORT_COMM }, .nr_keys = 1 };
	struct session_opts o = { 0 };
	struct perf_event_attr attr = { 0 };
	struct profile p;
	struct bf_file bf;
	uint64_t id = 7, bid = 9, ips[2];
	char *buf = NULL;
	size_t i;
	int k, fd;

	for (i = 0; i < ARRAY_SIZE(pass); i++) {
		struct why_file *wf = &bf.wf;

		snprintf(wf->path, sizeof(wf->path), "/tmp/offcpu-unit-lone.XXXXXX");
		fd = mkstemp(wf->path);
		CHECK(fd >= 0);
		wf->time_type = OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_WEIGHT;
		wf->w = perf_writer__new(fd);
		attr.size = PERFDATA_ATTR_SIZE;
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_BPF_OUTPUT;
		attr.sample_type = wf->time_type;
		attr.sample_id_all = 1;
		CHECK(perf_writer__add_event(wf->w, &attr, OFFCPU_EVENT_NAME, &id, 1) == 0);
		CHECK(perf_writer__add_event(wf->w, &attr, OFFCPU_BEFORE_EVENT_NAME, &bid, 1) == 0);
		why_process(wf, 99, "app", 10);
		ips[0] = (uint64_t)PERF_CONTEXT_USER;
		ips[1] = mapped((void *)&unit_probe_fn);
		for (k = 0; k < pass[i].threads; k++)
			bf_sample(&bf, 9, 99, 99 + k, T0, 7 * SEC, OFFCPU_STATE_S, ips, 2);
		for (k = 0; k < pass[i].threads && pass[i].period; k++)
			bf_sample(&bf, 7, 99, 99 + k, pass[i].drain, pass[i].period, OFFCPU_STATE_S,
				  ips, 2);
		CHECK(perf_writer__write(wf->w, &round) == 0);
		CHECK(perf_writer__finish(wf->w) == 0);
		perf_writer__free(wf->w);
		close(fd);
		if (!why_load(wf, &o, &p) && p.nr_befores == (uint32_t)pass[i].threads) {
			CHECK_EQ_U64(p.befores[0].end, pass[i].end);
			CHECK_EQ_U64(p.befores[0].during, pass[i].during);
		} else {
			CHECK(0);
		}
		if (pass[i].end == BEFORE_NOT_SEEN) {
			OUTPUT(buf, text__write(&p, &t, f));
			CHECK(buf && strstr(buf, "  S  waiting in unit_probe_fn for at least "
						 "7.000 s (since 7.000 s before the recording; "
						 "none of it since is in this file)\n"));
			free(buf);
		}
		unlink(wf->path);
		profile__free(&p);
	}
}

/* At most 20 lines: the rest counted; a file without offcpu-before has no such section. */
static void test_before_cap(void)
{
	static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
	struct text_opts t = { .keys = { SORT_COMM }, .nr_keys = 1 };
	struct session_opts o = { 0 };
	struct perf_event_attr attr = { 0 };
	struct why_file wf;
	struct bf_file bf;
	struct profile p;
	uint64_t id = 7, bid = 9, ips[2];
	char *buf = NULL;
	uint32_t tid;
	int fd;

	snprintf(bf.wf.path, sizeof(bf.wf.path), "/tmp/offcpu-unit-cap.XXXXXX");
	fd = mkstemp(bf.wf.path);
	CHECK(fd >= 0);
	bf.wf.time_type = OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_WEIGHT;
	bf.wf.w = perf_writer__new(fd);
	attr.size = PERFDATA_ATTR_SIZE;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_type = bf.wf.time_type;
	attr.sample_id_all = 1;
	CHECK(perf_writer__add_event(bf.wf.w, &attr, OFFCPU_EVENT_NAME, &id, 1) == 0);
	CHECK(perf_writer__add_event(bf.wf.w, &attr, OFFCPU_BEFORE_EVENT_NAME, &bid, 1) == 0);
	why_process(&bf.wf, 99, "app", 10);
	ips[0] = (uint64_t)PERF_CONTEXT_USER;
	ips[1] = mapped((void *)&unit_probe_fn);
	for (tid = 1000; tid < 1023; tid++)
		bf_sample(&bf, 9, 99, tid, T0, (tid - 999) * SEC, OFFCPU_STATE_S, ips, 2);
	for (tid = 1000; tid < 1023; tid++)
		bf_sample(&bf, 7, 99, tid, BF_LAST, BF_END - T0, OFFCPU_STATE_S, ips, 2);
	CHECK(perf_writer__write(bf.wf.w, &round) == 0);
	CHECK(perf_writer__finish(bf.wf.w) == 0);
	perf_writer__free(bf.wf.w);
	close(fd);
	if (!why_load(&bf.wf, &o, &p)) {
		CHECK_EQ_U64(p.nr_befores, 23);
		OUTPUT(buf, text__write(&p, &t, f));
			CHECK(buf && strstr(buf, "longest first: 23\n  app               99/1022  "
					 "S  waiting in unit_probe_fn for at least 25.000 s"));
		CHECK(buf && strstr(buf, "99/1003") && !strstr(buf, "99/1002 "));
		CHECK(buf && strstr(buf, "\n  ... and 3 more (--pid, --tid, --comm to choose, "
					 "--json for all)\n\n# offcpu-time"));
		free(buf);
	}
	unlink(bf.wf.path);
	profile__free(&p);
	/* none: no section, no json list */
	why_write(&wf, true, true);
	if (!why_load(&wf, &o, &p)) {
		CHECK(!p.has_before && !p.nr_befores);
		OUTPUT(buf, text__write(&p, &t, f));
		CHECK(buf && !strstr(buf, "waiting since before"));
		CHECK(buf && !strncmp(buf, "# offcpu-time:", 14));
		free(buf);
		OUTPUT(buf, json__write(&p, f));
		CHECK(buf && !strstr(buf, "before_waits"));
		free(buf);
	}
	unlink(wf.path);
	profile__free(&p);
}

/* What a consumer of the session's stream saw. */
struct seen {
	struct sample_consumer c;
	struct report_sample s[16];
	size_t n, all;
};

static int seen_sample(struct sample_consumer *c, const struct report_sample *s)
{
	struct seen *v = consumer_of(c, struct seen, c);

	if (v->n < ARRAY_SIZE(v->s))
		v->s[v->n++] = *s;
	v->all++;
	return 0;
}

/*
 * One stream of samples: a consumer of its own, beside the profile's rows,
 * gets each wait once, in time order, with its waker; a waker sample is no
 * sample of its own; each sample of the file is parsed once.
 */
static void test_stream_once(void)
{
	struct perf_reader_stats st = { 0 };
	struct session_opts o = { .stats = &st };
	struct profile_sink rows;
	struct seen v = { .c = { .sample = seen_sample } };
	struct sample_consumer *c[] = { &rows.c, &v.c };
	struct why_file wf;
	struct profile p;
	size_t i;

	why_write(&wf, true, true);
	o.input = wf.path;
	o.sym.demangle = true;
	o.sym.kallsyms = "/dev/null";
	log_verbosity = -1; /* the orphans' warning */
	profile_sink__init(&rows, &p);
	CHECK(session__run(&o, &p, c, ARRAY_SIZE(c)) == 0);
	log_verbosity = 0;
	unlink(wf.path);
	/* 5 waits and 5 waker samples, each parsed once */
	CHECK_EQ_U64(st.samples, 10);
	CHECK_EQ_U64(st.sample_parses, 10);
	CHECK_EQ_U64(v.all, 5);
	for (i = 0; i < v.n; i++) {
		const struct report_sample *s = &v.s[i];

		CHECK(s->role == SAMPLE_WAIT);
		CHECK((s->flags & (SAMPLE_TIME | SAMPLE_ROWS)) == (SAMPLE_TIME | SAMPLE_ROWS));
		CHECK_EQ_U64(s->time, 100 * (i + 1));
		CHECK(s->stack != UINT32_MAX);
		CHECK_STR(strtab__get(&p.str, s->comm), "wakee");
	}
	if (v.n == 5) {
		/* streamed blocks and summed ones told apart; the waking thread, not an interrupt */
		CHECK(!(v.s[0].flags & SAMPLE_SUMMED) && (v.s[1].flags & SAMPLE_SUMMED));
		CHECK_EQ_U64(v.s[0].waker_tid, 200);
		CHECK_EQ_U64(v.s[0].waker_pid, 200);
		CHECK_EQ_U64(v.s[2].waker_tid, 0);
		CHECK_STR(strtab__get(&p.str, v.s[0].waker), "bravo");
		CHECK_STR(strtab__get(&p.str, v.s[0].chain), "charlie");
		CHECK(v.s[0].waker_stack != UINT32_MAX);
		CHECK_EQ_U64(v.s[1].waker, 0);
		CHECK_STR(strtab__get(&p.str, v.s[2].waker), "[timer]");
		CHECK_EQ_U64(v.s[2].waker_stack, UINT32_MAX);
		CHECK_EQ_U64(v.s[3].waker, 0); /* its waker sample has another period */
		CHECK_EQ_U64(v.s[4].waker, 0); /* and this one's, another thread */
		CHECK_EQ_U64(v.s[4].tid, 98);
	}
	/* the rows, the other consumer: every wait in one, no empty one */
	CHECK_EQ_U64(p.orphan_wakers, 3);
	CHECK_EQ_U64(p.events[0].period, 3000000 + 1000000 + 2000000 + 500000 + 4000000);
	for (i = 0; i < p.nr_rows; i++)
		CHECK(!profile__row_empty(&p.rows[i]));
	profile__free(&p);
}

/* Folded lines in the order of their text, names with characters that sort before ';'. */
static void test_folded_order(void)
{
	static const char *const names[][2] = { { "foo (x)" }, { "foo", "b" }, { "foo!" },
						{ "foo", "a" }, { "fo" }, { "foo" } };
	struct profile_frame f = { .dso = UINT32_MAX };
	struct profile p;
	char *buf = NULL;
	size_t i, len = 0;
	FILE *out;

	CHECK(profile__init(&p, 1) == 0);
	p.events[0].name = strtab__add(&p.str, "offcpu-time");
	p.events[0].offcpu = true;
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		uint32_t fr[2], n, r;

		for (n = 0; n < 2 && names[i][n]; n++) {
			f.sym = strtab__add(&p.str, names[i][n]);
			fr[n] = profile__frame(&p, &f);
		}
		r = add_row(&p, 0, 10, 11, "c", profile__stack(&p, fr, n));
		p.rows[r].period = 1000 * (i + 1);
		p.rows[r].count = 1;
	}
	out = open_memstream(&buf, &len);
	CHECK(folded__write(&p, 0, out) == 0);
	fclose(out);
	CHECK_STR(buf, "c;fo 5\nc;foo 6\nc;foo (x) 1\nc;foo! 3\nc;foo;a 4\nc;foo;b 2\n");
	free(buf);
	profile__free(&p);
}

/* --sort sym: a function's call paths under one header, the command only when it is one. */
static void test_sort_sym_header(void)
{
	struct text_opts t = { .keys = { SORT_SYM }, .nr_keys = 1, .top = 10 };
	struct session_opts o = { 0 };
	struct bf_file bf;
	struct profile p;
	char *buf = NULL;

	bf_write(&bf, false, false);
	if (!why_load(&bf.wf, &o, &p)) {
		OUTPUT(buf, text__write(&p, &t, f));
		/* alpha, bravo, echo... wait in libc's read: the binary alone */
		CHECK(buf && strstr(buf, "\n  read (libc"));
		CHECK(buf && !strstr(buf, " (, "));
		free(buf);
		t.keys[0] = SORT_COMM;
		t.keys[1] = SORT_SYM;
		t.nr_keys = 2;
		OUTPUT(buf, text__write(&p, &t, f));
		CHECK(buf && strstr(buf, "\n  read (alpha, libc"));
		free(buf);
	}
	unlink(bf.wf.path);
	profile__free(&p);
}

/*
 * Named code and frames without a symbol, in a file written by hand: a
 * process maps this binary, two Python functions ("[py] ...", at their
 * addresses above 2^56), two pieces of JIT code ("[jit] ..."), a library
 * that is not on this machine and anonymous memory. Named frames take their
 * names (Python: file and line too), in one pseudo-object per kind; frames
 * no symbol names keep their object and offset, each its own; an address
 * outside every mapping is [unknown].
 */
static void named_mmap(struct perf_writer *w, uint64_t st, char *buf, uint64_t start, uint64_t len,
		       uint64_t pgoff, const char *name, uint64_t time)
{
	memset(buf, 0, 8192);
	*(uint32_t *)(buf + 8) = 300;
	*(uint32_t *)(buf + 12) = 300;
	*(uint64_t *)(buf + 16) = start;
	*(uint64_t *)(buf + 24) = len;
	*(uint64_t *)(buf + 32) = pgoff;
	*(uint32_t *)(buf + 64) = PROT_READ | PROT_EXEC;
	*(uint32_t *)(buf + 68) = MAP_PRIVATE;
	strcpy(buf + 72, name);
	put_sideband(w, st, buf, 72 + strlen(name) + 1, PERF_RECORD_MMAP2, 300, time);
}

static const struct profile_frame *frame_named(const struct profile *p, const char *name)
{
	uint32_t i;

	for (i = 0; i < p->nr_frames; i++)
		if (!strcmp(profile__frame_name(p, i), name))
			return &p->frames[i];
	return NULL;
}

static void test_named_and_unnamed_frames(void)
{
	static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
	char path[] = "/tmp/offcpu-unit-named.XXXXXX", bin[4096], buf[8192] = { 0 };
	struct perf_event_attr attr = { 0 };
	struct session_opts o = { .input = path, .sym = { .demangle = true, .kallsyms = "/dev/null" } };
	struct text_opts t = { .keys = { SORT_SYM }, .nr_keys = 1, .top = 10 };
	const uint64_t py_run = OFFCPU_PYFRAME_OF(5), py_main = OFFCPU_PYFRAME_OF(6);
	uint64_t id = 7, off = 0, ips[3][8];
	struct perf_sample smp = { 0 };
	const struct profile_frame *f, *g;
	struct perf_writer *w;
	struct profile p;
	char *out = NULL;
	uint32_t i, n;
	int fd = mkstemp(path), size;

	unsetenv("DEBUGINFOD_URLS"); /* the library not found is never asked for */
	CHECK(fd >= 0);
	CHECK(py_run > (1ULL << 56));
	CHECK(self_offset((uintptr_t)&unit_probe_fn, &off, bin, sizeof(bin)) == 0);
	w = perf_writer__new(fd);
	attr.size = PERFDATA_ATTR_SIZE;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_type = OFFCPU_SAMPLE_TYPE;
	attr.sample_id_all = 1;
	CHECK(perf_writer__add_event(w, &attr, OFFCPU_EVENT_NAME, &id, 1) == 0);
	memset(buf, 0, sizeof(buf));
	*(uint32_t *)(buf + 8) = 300;
	*(uint32_t *)(buf + 12) = 300;
	strcpy(buf + 16, "pyapp");
	put_sideband(w, attr.sample_type, buf, 16 + 8, PERF_RECORD_COMM, 300, 10);
	named_mmap(w, attr.sample_type, buf, 0x400000, 0x10000000, 0, bin, 11);
	named_mmap(w, attr.sample_type, buf, py_run, OFFCPU_PYFRAME_SIZE, 0,
		   OFFCPU_NAMED_PY "Handler.run (/srv/app (v2)/app.py:42)", 12);
	named_mmap(w, attr.sample_type, buf, py_main, OFFCPU_PYFRAME_SIZE, 0,
		   OFFCPU_NAMED_PY "<module> (/srv/main.py:1)", 13);
	named_mmap(w, attr.sample_type, buf, 0x7f0000001000, 0x100, 0,
		   OFFCPU_NAMED_JIT "LazyCompile:~work /srv/x.js:3", 14);
	named_mmap(w, attr.sample_type, buf, 0x7f0000002000, 0x80, 0, OFFCPU_NAMED_JIT "Builtin:Call", 15);
	named_mmap(w, attr.sample_type, buf, 0x20000000, 0x10000, 0x2000, "/nonexistent/libfoo.so", 16);
	named_mmap(w, attr.sample_type, buf, 0x30000000, 0x1000, 0, "//anon", 17);
	/* native leaf, two Python frames, the native root */
	ips[0][0] = (uint64_t)PERF_CONTEXT_USER;
	ips[0][1] = mapped((void *)&unit_probe_fn);
	ips[0][2] = py_run;
	ips[0][3] = py_main;
	ips[0][4] = mapped((void *)&test_demangle);
	/* JIT code, then unnamed code in a library and in anonymous memory */
	ips[1][0] = (uint64_t)PERF_CONTEXT_USER;
	ips[1][1] = 0x7f0000001010;
	ips[1][2] = 0x7f0000002020;
	ips[1][3] = 0x20000100;
	ips[1][4] = 0x20000200;
	ips[1][5] = 0x30000010;
	/* another library frame and an address no mapping holds */
	ips[2][0] = (uint64_t)PERF_CONTEXT_USER;
	ips[2][1] = 0x20000300;
	ips[2][2] = 0x90000000;
	for (i = 0; i < 3; i++) {
		static const uint64_t nr[3] = { 5, 6, 3 };

		smp = (struct perf_sample){ .id = 7, .ip = ips[i][1], .pid = 300, .tid = 300,
					    .time = 100 + i, .period = 1000000 * (3 - i),
					    .nr_ips = nr[i], .ips = ips[i] };
		size = perf_sample__encode(attr.sample_type, &smp, buf, sizeof(buf));
		CHECK(size > 0 && perf_writer__write(w, (void *)buf) == 0);
	}
	CHECK(perf_writer__write(w, &round) == 0);
	CHECK(perf_writer__finish(w) == 0);
	perf_writer__free(w);
	close(fd);
	CHECK(session__load(&o, &p) == 0);
	unlink(path);
	CHECK_EQ_U64(p.nr_rows, 3);
	OUTPUT(out, folded__write(&p, 0, f));
	CHECK_STR(out, "pyapp;[unknown];libfoo.so+0x2300 1000\n"
		       "pyapp;anon@0x30000010;libfoo.so+0x2200;libfoo.so+0x2100;Builtin:Call;"
		       "LazyCompile:~work /srv/x.js:3 2000\n"
		       "pyapp;test_demangle;<module>;Handler.run;unit_probe_fn 3000\n");
	free(out);
	/* Python: function, file and line; one pseudo-object per kind */
	f = frame_named(&p, "Handler.run");
	g = frame_named(&p, "<module>");
	CHECK(f && g);
	if (f && g) {
		CHECK_STR(strtab__get(&p.str, f->file), "/srv/app (v2)/app.py");
		CHECK_EQ_U64(f->line, 42);
		CHECK_STR(strtab__get(&p.str, g->file), "/srv/main.py");
		CHECK_EQ_U64(g->line, 1);
		CHECK(f->dso == g->dso && f->dso < p.nr_dsos);
		CHECK_STR(profile__frame_dso(&p, (uint32_t)(f - p.frames)), "[python]");
	}
	f = frame_named(&p, "Builtin:Call");
	g = frame_named(&p, "LazyCompile:~work /srv/x.js:3");
	CHECK(f && g && f->dso == g->dso && !f->file);
	if (f)
		CHECK_STR(profile__frame_dso(&p, (uint32_t)(f - p.frames)), "[jit]");
	for (i = 0, n = 0; i < p.nr_dsos; i++)
		n += !strncmp(strtab__get(&p.str, p.dsos[i].name), "[py", 3) ||
		     !strncmp(strtab__get(&p.str, p.dsos[i].name), "[jit", 4);
	CHECK_EQ_U64(n, 2);
	/* what the report counts as frames without a symbol */
	for (i = 0, n = 0; i < p.nr_frames; i++)
		n += resolver__unnamed(&p, i);
	CHECK_EQ_U64(n, 4);
	f = frame_named(&p, "libfoo.so+0x2100");
	CHECK(f && f->addr == 0x2100 && resolver__unnamed(&p, (uint32_t)(f - p.frames)));
	f = frame_named(&p, "[unknown]");
	CHECK(f && !resolver__unnamed(&p, (uint32_t)(f - p.frames)));
	/* the table's call paths show a Python frame's file and line */
	OUTPUT(out, text__write(&p, &t, f));
	CHECK(out && strstr(out, "Handler.run  ([python] /srv/app (v2)/app.py:42)"));
	free(out);
	profile__free(&p);
}

/* pprof's duration_nanos (field 10) in the pprof of @p's event @ev. */
static uint64_t pprof_duration(const struct profile *p, int ev)
{
	char path[] = "/tmp/offcpu-unit-span.XXXXXX";
	static uint8_t buf[1 << 20];
	size_t pos = 0, len;
	uint64_t dur = 0;
	gzFile gz;
	int fd = mkstemp(path);

	CHECK(fd >= 0 && pprof__write(p, ev, fd) == 0);
	close(fd);
	gz = gzopen(path, "rb");
	len = gz ? (size_t)gzread(gz, buf, sizeof(buf)) : 0;
	if (gz)
		gzclose(gz);
	unlink(path);
	while (pos < len) {
		uint64_t key = varint(buf, len, &pos), v = varint(buf, len, &pos);

		if ((key & 7) == 0 && key >> 3 == 10)
			dur = v;
		else if ((key & 7) == 2)
			pos += v;
		else if ((key & 7) != 0)
			break;
	}
	return dur;
}

/*
 * The recording's span, pprof's Duration: from its start (offcpu-before's
 * time; without it, the earliest block's start) to its last drain, not
 * from the first sample written (off-CPU time is written as it ends).
 */
static void test_span(void)
{
	struct session_opts o = { 0 };
	struct bf_file bf;
	struct profile p;

	bf_write(&bf, true, false);
	if (!why_load(&bf.wf, &o, &p)) {
		CHECK_EQ_U64(p.start_time, T0);
		CHECK_EQ_U64(p.end_time, BF_LAST);
		CHECK_EQ_U64(pprof_duration(&p, 0), BF_LAST - T0);
	}
	unlink(bf.wf.path);
	profile__free(&p);
	/* without offcpu-before: bravo's block began 1 ms after the start */
	bf_write(&bf, false, false);
	if (!why_load(&bf.wf, &o, &p)) {
		CHECK_EQ_U64(p.start_time, T0 + 1000000);
		CHECK_EQ_U64(p.end_time, BF_LAST);
	}
	unlink(bf.wf.path);
	profile__free(&p);
	/* within --time */
	bf_write(&bf, false, false);
	o.time_filter = true;
	o.time_start = T0 + SEC;
	o.time_end = UINT64_MAX;
	if (!why_load(&bf.wf, &o, &p)) {
		CHECK_EQ_U64(p.start_time, T0 + SEC);
		CHECK_EQ_U64(p.end_time, BF_LAST);
	}
	unlink(bf.wf.path);
	profile__free(&p);
}

/* One protobuf field at *pos of @b: its number, wire type, varint or fixed64 value, or bytes. */
static bool pf_field(const uint8_t *b, size_t len, size_t *pos, uint32_t *field, uint64_t *v,
		     const uint8_t **sub, size_t *sub_len)
{
	uint64_t key;
	int i;

	if (*pos >= len)
		return false;
	key = varint(b, len, pos);
	*field = (uint32_t)(key >> 3);
	*sub = NULL;
	*sub_len = 0;
	switch (key & 7) {
	case 0:
		*v = varint(b, len, pos);
		return true;
	case 1:
		if (*pos + 8 > len)
			return false;
		for (*v = 0, i = 7; i >= 0; i--)
			*v = *v << 8 | b[*pos + (size_t)i];
		*pos += 8;
		return true;
	case 2:
		*sub_len = varint(b, len, pos);
		if (*sub_len > len - *pos)
			return false;
		*sub = b + *pos;
		*pos += *sub_len;
		return true;
	}
	return false;
}

/* What a Perfetto trace holds, read back with the decoder above. */
struct pf_read {
	unsigned packets, bad, threads, procs, counters, first_flags;
	unsigned begins, ends, instants, counter_events, callstacks;
	uint64_t ts[16], type[16], track[16], flow[16], tflow[16], value[16];
	unsigned nr_ev;
	uint64_t thread_uuid[8], thread_tid[8];
	unsigned nr_thread_uuid;
};

static void pf_read_event(struct pf_read *r, uint64_t ts, const uint8_t *b, size_t len)
{
	size_t pos = 0, sl;
	const uint8_t *sub;
	uint32_t f;
	uint64_t v;
	unsigned i = r->nr_ev < 16 ? r->nr_ev++ : 15;

	r->ts[i] = ts;
	r->flow[i] = r->tflow[i] = r->value[i] = 0;
	while (pf_field(b, len, &pos, &f, &v, &sub, &sl)) {
		if (f == 9)
			r->type[i] = v;
		else if (f == 11)
			r->track[i] = v;
		else if (f == 47)
			r->flow[i] = v;
		else if (f == 48)
			r->tflow[i] = v;
		else if (f == 30)
			r->value[i] = v;
		else if (f == 55)
			r->callstacks++;
	}
	r->begins += r->type[i] == 1;
	r->ends += r->type[i] == 2;
	r->instants += r->type[i] == 3;
	r->counter_events += r->type[i] == 4;
}

static void pf_read_descriptor(struct pf_read *r, const uint8_t *b, size_t len)
{
	size_t pos = 0, sl, p2, sl2;
	const uint8_t *sub, *s2;
	uint32_t f, f2;
	uint64_t v, uuid = 0, v2;

	while (pf_field(b, len, &pos, &f, &v, &sub, &sl)) {
		if (f == 1)
			uuid = v;
		else if (f == 3)
			r->procs++;
		else if (f == 8)
			r->counters++;
		else if (f == 4 && r->nr_thread_uuid < 8) {
			r->threads++;
			r->thread_uuid[r->nr_thread_uuid] = uuid;
			for (p2 = 0; pf_field(sub, sl, &p2, &f2, &v2, &s2, &sl2);)
				if (f2 == 2)
					r->thread_tid[r->nr_thread_uuid] = v2;
			r->nr_thread_uuid++;
		}
	}
}

static void pf_read(struct pf_read *r, const uint8_t *b, size_t len)
{
	size_t pos = 0, sl, p2, sl2;
	const uint8_t *sub, *s2;
	uint32_t f, f2;
	uint64_t v, v2, ts;

	memset(r, 0, sizeof(*r));
	while (pos < len) {
		if (!pf_field(b, len, &pos, &f, &v, &sub, &sl) || f != 1 || !sub) {
			r->bad++;
			return;
		}
		r->packets++;
		ts = 0;
		for (p2 = 0; pf_field(sub, sl, &p2, &f2, &v2, &s2, &sl2);) {
			if (f2 == 8)
				ts = v2;
			else if (f2 == 10 && v2 != 1)
				r->bad++;
			else if (f2 == 13 && r->packets == 1)
				r->first_flags = (unsigned)v2;
		}
		for (p2 = 0; pf_field(sub, sl, &p2, &f2, &v2, &s2, &sl2);) {
			if (f2 == 11)
				pf_read_event(r, ts, s2, sl2);
			else if (f2 == 60)
				pf_read_descriptor(r, s2, sl2);
		}
	}
}

/* The tid of the thread track @uuid; 0 when no thread descriptor declared it. */
static uint64_t pf_tid(const struct pf_read *r, uint64_t uuid)
{
	unsigned i;

	for (i = 0; i < r->nr_thread_uuid; i++)
		if (r->thread_uuid[i] == uuid)
			return r->thread_tid[i];
	return 0;
}

/*
 * --perfetto on a hand-made file: a block of thread 99 woken by bravo (tid
 * 200) with its run queue part, one woken by the timer, one of thread 98,
 * summed blocks: tracks, slices at their real times, one arrow, a counter.
 */
static void test_perfetto(void)
{
	static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
	const uint64_t T = 1000000000, MS = 1000000;
	struct perf_event_attr attr = { 0 };
	struct session_opts o = { 0 };
	struct sample_consumer *c[1];
	struct perfetto_stats st;
	struct perfetto *t;
	struct why_file wf;
	struct pf_read r;
	struct profile p;
	uint64_t id = 7, wid = 8;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f;
	int fd, ret;

	snprintf(wf.path, sizeof(wf.path), "/tmp/offcpu-unit-pf.XXXXXX");
	fd = mkstemp(wf.path);
	CHECK(fd >= 0);
	wf.wakee_ips[0] = wf.waker_ips[0] = (uint64_t)PERF_CONTEXT_USER;
	wf.wakee_ips[1] = mapped((void *)&unit_probe_fn);
	wf.wakee_ips[2] = mapped((void *)&test_demangle);
	wf.waker_ips[1] = mapped((void *)&test_folded);
	wf.waker_ips[2] = mapped((void *)&test_pprof);
	wf.time_type = OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_WEIGHT;
	wf.w = perf_writer__new(fd);
	attr.size = PERFDATA_ATTR_SIZE;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_type = wf.time_type;
	attr.sample_id_all = 1;
	CHECK(perf_writer__add_event(wf.w, &attr, OFFCPU_EVENT_NAME, &id, 1) == 0);
	attr.sample_type = WAKER_SAMPLE_TYPE;
	CHECK(perf_writer__add_event(wf.w, &attr, OFFCPU_WAKER_EVENT_NAME, &wid, 1) == 0);
	why_process(&wf, 99, "wakee", 10);
	why_process(&wf, 200, "bravo", 20);
	why_wait(&wf, 99, 200, MS, OFFCPU_STATE_D + 1); /* summed (why_wait: time 200) */
	why_wait(&wf, 99, T + 10 * MS, 3 * MS, OFFCPU_STATE_S + 1);
	why_waker(&wf, 200, 99, T + 10 * MS, 3 * MS, "bravo,charlie");
	why_wait(&wf, 99, T + 10 * MS, MS / 2, OFFCPU_STATE_RUNQ + 1);
	why_wait(&wf, 99, T + 20 * MS, 2 * MS, OFFCPU_STATE_S + 1);
	why_waker(&wf, 0, 99, T + 20 * MS, 2 * MS, "[timer]");
	why_wait(&wf, 98, T + 30 * MS, 4 * MS, OFFCPU_STATE_S + 1);
	CHECK(perf_writer__write(wf.w, &round) == 0);
	CHECK(perf_writer__finish(wf.w) == 0);
	perf_writer__free(wf.w);
	close(fd);

	f = open_memstream(&buf, &len);
	t = perfetto__new(&p, f);
	CHECK(f && t);
	if (!f || !t)
		goto out;
	c[0] = perfetto__consumer(t);
	o.input = wf.path;
	o.sym.demangle = true;
	o.sym.kallsyms = "/dev/null";
	log_verbosity = -1; /* the summed samples' warning */
	ret = session__load_with(&o, &p, c, 1);
	CHECK(ret == 0);
	CHECK(perfetto__finish(t, &st) == 0);
	log_verbosity = 0;
	fclose(f);
	f = NULL;
	CHECK_EQ_U64(st.slices, 4);
	CHECK_EQ_U64(st.flows, 1);
	CHECK_EQ_U64(st.summed, 1);
	CHECK_EQ_U64(st.summed_ns, MS);
	CHECK_EQ_U64(st.threads, 3);
	pf_read(&r, (const uint8_t *)buf, len);
	CHECK_EQ_U64(r.bad, 0);
	CHECK_EQ_U64(r.first_flags, 1);
	CHECK_EQ_U64(r.threads, 3); /* 99, 98 and the waker, 200 */
	CHECK_EQ_U64(r.procs, 2);
	CHECK_EQ_U64(r.begins, 4);
	CHECK_EQ_U64(r.ends, 4);
	CHECK_EQ_U64(r.callstacks, 4);
	CHECK_EQ_U64(r.instants, 1);
	CHECK_EQ_U64(r.counters, 1);
	CHECK_EQ_U64(r.counter_events, 2); /* the interval's total, then 0 at its end */
	CHECK_EQ_U64(r.nr_ev, 11);
	for (i = 0; i < r.nr_ev && i < 16; i++) {
		uint64_t tid = pf_tid(&r, r.track[i]);

		if (r.type[i] == 3) { /* the waker's instant, where the run queue wait began */
			CHECK_EQ_U64(tid, 200);
			CHECK_EQ_U64(r.ts[i], T + 9 * MS + MS / 2);
			CHECK(r.flow[i] != 0);
		}
		if (r.type[i] == 4 && r.value[i]) {
			/* the first interval: its start unknown, the total as long as it fits before 200 */
			CHECK_EQ_U64(r.value[i], MS);
			CHECK_EQ_U64(r.ts[i], 1);
		} else if (r.type[i] == 4) {
			CHECK_EQ_U64(r.ts[i], 200);
		}
		if (r.type[i] != 1 && r.type[i] != 2)
			continue;
		CHECK(tid == 99 || tid == 98);
		/* the woken block: from 3.5 ms before its sample to the run queue wait */
		if (r.type[i] == 1 && tid == 99 && r.ts[i] < T + 9 * MS) {
			CHECK_EQ_U64(r.ts[i], T + 6 * MS + MS / 2);
			CHECK(i + 1 < r.nr_ev && r.type[i + 1] == 2);
			if (i + 1 < r.nr_ev) {
				CHECK_EQ_U64(r.ts[i + 1], T + 9 * MS + MS / 2);
				CHECK(r.tflow[i + 1] != 0 && i > 0 && r.tflow[i + 1] == r.flow[i - 1]);
			}
		}
		if (r.type[i] == 1 && tid == 98)
			CHECK_EQ_U64(r.ts[i], T + 26 * MS);
	}
out:
	if (f)
		fclose(f);
	perfetto__free(t);
	free(buf);
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
	{ "report: waits since before the recording: rows, order, durations", test_before_waits },
	{ "report: waits since before the recording: filters", test_before_filters },
	{ "report: waits since before the recording: which lasted to the end", test_before_lone },
	{ "report: waits since before the recording: 20 lines, none without", test_before_cap },
	{ "report: one stream of samples, each parsed once, waits with their wakers",
	  test_stream_once },
	{ "report: folded lines in the order of their text", test_folded_order },
	{ "report: --sort sym headers name what the rows share", test_sort_sym_header },
	{ "report: the recording's span, pprof's duration", test_span },
	{ "report: named python and jit frames, unnamed frames keep object and offset",
	  test_named_and_unnamed_frames },
	{ "report: --perfetto: tracks, slices at their times, wakeup arrows, summed counters",
	  test_perfetto },
	{ 0 },
};
