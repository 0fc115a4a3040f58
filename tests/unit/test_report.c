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
#include "report/profile.h"
#include "report/symbolizer.h"
#include "report/session.h"
#include "perfdata/writer.h"
#include "perfdata/sample.h"
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

const struct unit_test report_tests[] = {
	{ "report: session sorts records of a round by time", test_session_orders_rounds },
	{ "report: symbolizer resolves this binary, lines, build id check", test_symbolizer_self },
	{ "report: symbolizer never opens fifos or devices", test_symbolizer_special_files },
	{ "report: demangles c++ and rust", test_demangle },
	{ "report: folded output", test_folded },
	{ "report: a sample without frames in every output", test_empty_stack },
	{ "report: pprof output read back", test_pprof },
	{ 0 },
};
