// SPDX-License-Identifier: GPL-2.0
/* The perf.data writer read back by the reader, field by field. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "unit.h"
#include "perfdata/writer.h"
#include "perfdata/input.h"
#include "perfdata/reader.h"
#include "perfdata/sample.h"

#define OFF_ID 1001
#define SB_ID1 2001
#define SB_ID2 2002

static char tmpdir[] = "/tmp/offcpu-unit-XXXXXX";
static int tmp_ready;

static const char *tmp_path(const char *name)
{
	static char buf[256];

	if (!tmp_ready) {
		if (!mkdtemp(tmpdir))
			abort();
		tmp_ready = 1;
	}
	snprintf(buf, sizeof(buf), "%s/%s", tmpdir, name);
	return buf;
}

static size_t make_comm(char *buf, uint32_t pid, uint32_t tid, const char *comm, uint64_t time)
{
	struct perf_event_header *h = (void *)buf;
	struct perf_sample id = { .pid = pid, .tid = tid, .time = time, .id = SB_ID1, .cpu = 1 };
	size_t body = PERF_ALIGN(16 + strlen(comm) + 1, 8);

	memset(buf, 0, 256);
	*(uint32_t *)(buf + 8) = pid;
	*(uint32_t *)(buf + 12) = tid;
	strcpy(buf + 16, comm);
	perf_sample_id__encode(SIDEBAND_SAMPLE_TYPE, &id, buf + body);
	h->type = PERF_RECORD_COMM;
	h->misc = 0;
	h->size = (uint16_t)(body + perf_sample_id__size(SIDEBAND_SAMPLE_TYPE));
	return h->size;
}

static void fill_attrs(struct perf_event_attr *off, struct perf_event_attr *sb)
{
	memset(off, 0, sizeof(*off));
	off->size = sizeof(*off);
	off->type = PERF_TYPE_SOFTWARE;
	off->config = PERF_COUNT_SW_BPF_OUTPUT;
	off->sample_period = 1;
	off->sample_type = OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_CGROUP;
	off->sample_id_all = 1;
	memset(sb, 0, sizeof(*sb));
	sb->size = sizeof(*sb);
	sb->type = PERF_TYPE_SOFTWARE;
	sb->config = PERF_COUNT_SW_DUMMY;
	sb->sample_type = SIDEBAND_SAMPLE_TYPE;
	sb->sample_id_all = 1;
	sb->mmap2 = 1;
	sb->comm = 1;
}

/* Writes a file with two events, a COMM, a sample with a call chain, features. */
static int write_sample_file(const char *path, uint64_t *sample_size)
{
	struct perf_event_attr off, sb;
	uint64_t sb_ids[] = { SB_ID1, SB_ID2 }, off_id = OFF_ID;
	uint64_t ips[] = { PERF_CONTEXT_USER, 0x401000, 0x402000, 0x403000 };
	struct perf_sample s = { .id = OFF_ID, .ip = 0x401000, .pid = 100, .tid = 101,
				 .time = 5000000000ULL, .cpu = 1, .cpu_res = OFFCPU_CPU_RES_SUMMED,
				 .period = 250000000ULL, .nr_ips = 4, .ips = ips, .cgroup = 77 };
	char buf[1024];
	uint8_t bid[20];
	char *argv[] = { "offcpu", "record", "-a" };
	struct perf_writer *w;
	int fd, size, i, err = 0;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	w = perf_writer__new(fd);
	if (!w) {
		close(fd);
		return -ENOMEM;
	}
	fill_attrs(&off, &sb);
	make_comm(buf, 100, 101, "worker", 0);
	err = err ?: perf_writer__write(w, (void *)buf);
	size = perf_sample__encode(off.sample_type, &s, buf, sizeof(buf));
	if (size < 0)
		err = size;
	else
		*sample_size = (uint64_t)size;
	err = err ?: perf_writer__write(w, (void *)buf);
	perf_writer__note_time(w, s.time);
	perf_writer__note_time(w, s.time + 10);
	err = err ?: perf_writer__add_event(w, &off, "offcpu-time", &off_id, 1);
	err = err ?: perf_writer__add_event(w, &sb, "dummy:u", sb_ids, 2);
	err = err ?: perf_writer__add_host_features(w, 3, argv);
	for (i = 0; i < 20; i++)
		bid[i] = (uint8_t)(i * 7);
	err = err ?: perf_writer__add_build_id(w, -1, false, bid, 20, "/usr/bin/worker");
	err = err ?: perf_writer__finish(w);
	perf_writer__free(w);
	close(fd);
	return err;
}

static void test_roundtrip(void)
{
	const char *path = tmp_path("rt.data");
	const struct perf_event_header *h;
	const struct perf_reader_event *ev;
	struct perf_reader *r;
	struct perf_sample s;
	char err[512];
	uint64_t sample_size = 0;
	size_t evi, fsize;
	const uint8_t *feat;
	const char *str;
	int n;

	CHECK(write_sample_file(path, &sample_size) == 0);
	r = perf_reader__open(path, 0, err, sizeof(err));
	CHECK(r != NULL);
	if (!r) {
		fprintf(stderr, "  %s\n", err);
		return;
	}
	CHECK(!perf_reader__is_pipe(r));
	CHECK_EQ_U64(perf_reader__nr_events(r), 2);
	ev = perf_reader__event(r, 0);
	CHECK_STR(ev->name, "offcpu-time");
	CHECK_EQ_U64(ev->attr.size, 128);
	CHECK_EQ_U64(ev->attr.type, PERF_TYPE_SOFTWARE);
	CHECK_EQ_U64(ev->attr.config, PERF_COUNT_SW_BPF_OUTPUT);
	CHECK_EQ_U64(ev->attr.sample_type, OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_CGROUP);
	CHECK_EQ_U64(ev->nr_ids, 1);
	CHECK_EQ_U64(ev->ids[0], OFF_ID);
	ev = perf_reader__event(r, 1);
	CHECK_STR(ev->name, "dummy:u");
	CHECK_EQ_U64(ev->nr_ids, 2);
	CHECK_EQ_U64(ev->ids[1], SB_ID2);
	CHECK(ev->attr.mmap2 && ev->attr.comm && ev->attr.sample_id_all);

	/* record 1: COMM with its sample_id trailer */
	n = perf_reader__next(r, &h);
	CHECK_EQ_U64(n, 1);
	if (n == 1) {
		CHECK_EQ_U64(h->type, PERF_RECORD_COMM);
		CHECK_EQ_U64(*(const uint32_t *)((const char *)h + 8), 100);
		CHECK_EQ_U64(*(const uint32_t *)((const char *)h + 12), 101);
		CHECK_STR((const char *)h + 16, "worker");
		CHECK(perf_reader__parse_id(r, h, &s) == 0);
		CHECK_EQ_U64(s.pid, 100);
		CHECK_EQ_U64(s.tid, 101);
		CHECK_EQ_U64(s.id, SB_ID1);
		CHECK_EQ_U64(s.cpu, 1);
	}
	/* record 2: the sample, every field */
	n = perf_reader__next(r, &h);
	CHECK_EQ_U64(n, 1);
	if (n == 1) {
		CHECK_EQ_U64(h->type, PERF_RECORD_SAMPLE);
		CHECK_EQ_U64(h->size, sample_size);
		CHECK_EQ_U64(h->size, 8 + 8 * (9 + 4)); /* 9 fields, 4 chain entries */
		CHECK(perf_reader__parse_sample(r, h, &s, &evi) == 0);
		CHECK_EQ_U64(evi, 0);
		CHECK_EQ_U64(s.id, OFF_ID);
		CHECK_EQ_U64(s.ip, 0x401000);
		CHECK_EQ_U64(s.pid, 100);
		CHECK_EQ_U64(s.tid, 101);
		CHECK_EQ_U64(s.time, 5000000000ULL);
		CHECK_EQ_U64(s.cpu, 1);
		CHECK_EQ_U64(s.cpu_res, OFFCPU_CPU_RES_SUMMED);
		CHECK_EQ_U64(s.period, 250000000ULL);
		CHECK_EQ_U64(s.nr_ips, 4);
		if (s.nr_ips == 4) {
			CHECK_EQ_U64(s.ips[0], PERF_CONTEXT_USER);
			CHECK_EQ_U64(s.ips[3], 0x403000);
		}
		CHECK_EQ_U64(s.cgroup, 77);
	}
	CHECK_EQ_U64(perf_reader__next(r, &h), 0);

	/* features */
	feat = perf_reader__feature(r, FEAT_SAMPLE_TIME, &fsize);
	CHECK(feat && fsize == 16);
	if (feat && fsize == 16) {
		uint64_t t[2];

		memcpy(t, feat, sizeof(t)); /* feature payloads need not be aligned */
		CHECK_EQ_U64(t[0], 5000000000ULL);
		CHECK_EQ_U64(t[1], 5000000010ULL);
	}
	feat = perf_reader__feature(r, FEAT_ARCH, &fsize);
	CHECK(feat && perf_string__decode(feat, fsize, &str) > 0 && strlen(str) > 0);
	if (feat) {
		uint32_t len;

		memcpy(&len, feat, 4);
		CHECK(len % 64 == 0);
	}
	feat = perf_reader__feature(r, FEAT_NRCPUS, &fsize);
	if (feat && fsize == 8) {
		uint32_t v[2];

		memcpy(v, feat, 8);
		CHECK(v[1] >= 1 && v[0] >= v[1]);
	} else {
		CHECK(!"NRCPUS missing");
	}
	feat = perf_reader__feature(r, FEAT_CMDLINE, &fsize);
	if (feat) {
		uint32_t nr;

		memcpy(&nr, feat, 4);
		CHECK_EQ_U64(nr, 3);
	}
	if (feat) {
		int k = perf_string__decode(feat + 4, fsize - 4, &str);

		CHECK(k > 0);
		CHECK_STR(str, "offcpu");
	}
	feat = perf_reader__feature(r, FEAT_BUILD_ID, &fsize);
	CHECK(feat && fsize == sizeof(struct perf_build_id_entry) + 64);
	if (feat && fsize >= sizeof(struct perf_build_id_entry) + 64) {
		struct perf_build_id_entry ebuf, *e = &ebuf;

		memcpy(e, feat, sizeof(*e));

		CHECK_EQ_U64(e->header.size, fsize);
		CHECK(e->pid == -1);
		CHECK_EQ_U64(e->size, 20);
		CHECK_EQ_U64(e->build_id[19], 19 * 7);
		CHECK_STR((const char *)feat + sizeof(*e), "/usr/bin/worker");
	}
	feat = perf_reader__feature(r, FEAT_EVENT_DESC, &fsize);
	if (feat) {
		uint32_t v[2];

		memcpy(v, feat, 8);
		CHECK_EQ_U64(v[0], 2);
		CHECK_EQ_U64(v[1], 128);
	} else {
		CHECK(!"EVENT_DESC missing");
	}
	CHECK(perf_reader__feature(r, FEAT_TRACING_DATA, &fsize) == NULL);
	perf_reader__close(r);
}

static void test_header_layout(void)
{
	const char *path = tmp_path("hdr.data");
	struct perf_file_header h;
	uint64_t ss;
	int fd;

	CHECK(write_sample_file(path, &ss) == 0);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && read(fd, &h, sizeof(h)) == sizeof(h));
	close(fd);
	CHECK(!memcmp(&h.magic, "PERFILE2", 8));
	CHECK_EQ_U64(h.size, 104);
	CHECK_EQ_U64(h.attr_size, 128 + 16);
	CHECK_EQ_U64(h.attrs.size, 2 * (128 + 16));
	CHECK_EQ_U64(h.data.offset, 104);
	CHECK(h.data.size > 0 && h.data.size % 8 == 0);
	CHECK(h.features[0] & (1ULL << FEAT_EVENT_DESC));
	CHECK(h.features[0] & (1ULL << FEAT_SAMPLE_TIME));
	CHECK(h.features[0] & (1ULL << FEAT_HOSTNAME));
	CHECK(h.features[0] & (1ULL << FEAT_BUILD_ID));
	CHECK(!(h.features[0] & (1ULL << FEAT_TRACING_DATA)));
}

static void test_truncated_and_corrupt(void)
{
	const char *path = tmp_path("full.data");
	char err[512];
	struct perf_reader *r;
	uint64_t ss;
	struct stat st;
	char *buf;
	int fd;
	off_t cut;

	CHECK(write_sample_file(path, &ss) == 0);
	CHECK(stat(path, &st) == 0);
	buf = malloc((size_t)st.st_size);
	fd = open(path, O_RDONLY);
	CHECK(read(fd, buf, (size_t)st.st_size) == st.st_size);
	close(fd);

	/* every truncation is refused or read without a crash; header cuts are refused */
	for (cut = 0; cut < st.st_size; cut += 7) {
		const struct perf_event_header *h;
		const char *p = tmp_path("cut.data");
		int rc;

		fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
		CHECK(write(fd, buf, (size_t)cut) == cut);
		close(fd);
		r = perf_reader__open(p, 0, err, sizeof(err));
		if (cut < 104)
			CHECK(r == NULL);
		if (!r)
			continue;
		while ((rc = perf_reader__next(r, &h)) > 0)
			;
		perf_reader__close(r);
	}

	/* data size 0: an unfinished recording */
	{
		const char *p = tmp_path("zero.data");
		struct perf_file_header *h = (void *)buf;
		uint64_t saved = h->data.size;

		h->data.size = 0;
		fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
		CHECK(write(fd, buf, (size_t)st.st_size) == st.st_size);
		close(fd);
		r = perf_reader__open(p, 0, err, sizeof(err));
		CHECK(r == NULL);
		CHECK(strstr(err, "not finished") != NULL);
		h->data.size = saved;
	}
	/* a record whose size runs past the data: the error names the offset */
	{
		const char *p = tmp_path("bad.data");
		const struct perf_event_header *h;
		struct perf_event_header *first = (void *)(buf + 104);

		first->size = 4000;
		fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
		CHECK(write(fd, buf, (size_t)st.st_size) == st.st_size);
		close(fd);
		r = perf_reader__open(p, 0, err, sizeof(err));
		CHECK(r != NULL);
		if (r) {
			CHECK(perf_reader__next(r, &h) < 0);
			CHECK(strstr(perf_reader__error(r), "offset 104") != NULL);
			perf_reader__close(r);
		}
	}
	free(buf);
}

static void test_sample_encode_limits(void)
{
	struct perf_event_attr attr = { .sample_type = OFFCPU_SAMPLE_TYPE };
	uint64_t ips[3] = { PERF_CONTEXT_USER, 1, 2 };
	struct perf_sample s = { .nr_ips = 3, .ips = ips }, out;
	char buf[512];
	const char *why;
	int size;

	CHECK(perf_sample__encode(PERF_SAMPLE_BRANCH_STACK, &s, buf, sizeof(buf)) == -EINVAL);
	CHECK(perf_sample__encode(OFFCPU_SAMPLE_TYPE, &s, buf, 16) == -ENOSPC);
	size = perf_sample__encode(OFFCPU_SAMPLE_TYPE, &s, buf, sizeof(buf));
	CHECK(size > 0);
	/* a call chain that claims more entries than the record holds */
	((uint64_t *)(buf + 8))[7] = 1000;
	CHECK(perf_sample__parse(&attr, (void *)buf, &out, &why) == -EINVAL);
	CHECK(why && strstr(why, "callchain"));
	/* RAW round trip */
	{
		struct perf_event_attr ra = { .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_RAW };
		struct perf_sample rs = { .pid = 5, .tid = 6, .raw_size = 5, .raw = "abcde" };

		size = perf_sample__encode(ra.sample_type, &rs, buf, sizeof(buf));
		CHECK_EQ_U64(size, 8 + 8 + 16);
		CHECK(perf_sample__parse(&ra, (void *)buf, &out, &why) == 0);
		CHECK_EQ_U64(out.raw_size, 5);
		CHECK(out.raw && !memcmp(out.raw, "abcde", 5));
		CHECK_EQ_U64(out.tid, 6);
	}
}

static void test_string_encoding(void)
{
	struct featbuf b = { 0 };
	const char *out;

	featbuf__string(&b, "hello");
	CHECK_EQ_U64(b.len, 4 + 64);
	CHECK_EQ_U64(*(uint32_t *)b.data, 64);
	CHECK(perf_string__decode(b.data, b.len, &out) == 68);
	CHECK_STR(out, "hello");
	CHECK(perf_string__decode(b.data, 10, &out) < 0);
	featbuf__free(&b);
}

/* A copy of @fd's file as it is on disk now, as if its writer were killed here. */
static void snapshot_file(int fd, const char *to)
{
	char buf[65536];
	ssize_t n;
	off_t off = 0;
	int out = open(to, O_RDWR | O_CREAT | O_TRUNC, 0600);

	CHECK(out >= 0);
	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		CHECK(write(out, buf, (size_t)n) == n);
		off += n;
	}
	close(out);
}

static void *read_all(const char *path, size_t *size)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf && read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*size = (size_t)st.st_size;
	return buf;
}

static void write_bytes(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0 && write(fd, p, n) == (ssize_t)n);
	close(fd);
}

/* An offcpu-time sample of @tid at @time for @period. */
static int put_sample(struct perf_writer *w, uint32_t tid, uint64_t time, uint64_t period)
{
	uint64_t ips[] = { PERF_CONTEXT_USER, 0x401000, 0x402000 };
	struct perf_sample s = { .id = OFF_ID, .ip = 0x401000, .pid = 100, .tid = tid,
				 .time = time, .cpu = 0, .period = period, .nr_ips = 3,
				 .ips = ips, .cgroup = 1 };
	char buf[512];
	int size = perf_sample__encode(OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_CGROUP, &s, buf,
				       sizeof(buf));

	if (size < 0)
		return size;
	perf_writer__note_time(w, time);
	return perf_writer__write(w, (void *)buf);
}

/* Read @r to its end; the sum of the periods of its samples, or -1 on an error. */
static long long read_periods(struct perf_reader *r, size_t *samples)
{
	const struct perf_event_header *h;
	struct perf_sample s;
	long long sum = 0;
	size_t ev;
	int rc;

	*samples = 0;
	while ((rc = perf_reader__next(r, &h)) > 0) {
		if (h->type != PERF_RECORD_SAMPLE)
			continue;
		if (perf_reader__parse_sample(r, h, &s, &ev))
			return -1;
		sum += (long long)s.period;
		(*samples)++;
	}
	return rc < 0 ? -1 : sum;
}

/*
 * The layout a killed recording leaves: events declared first put their ids
 * and attrs after the header and their names (EVENT_UPDATE) at the start of
 * the data; each checkpoint rewrites the header for the records on disk,
 * with no feature; the reader takes the file up to that checkpoint, names
 * its events and says it never finished.
 */
static void test_checkpoint_layout(void)
{
	char path[256], copy[256];
	struct perf_event_attr off, sb;
	uint64_t sb_ids[] = { SB_ID1, SB_ID2 }, off_id = OFF_ID, ckpt_size;
	struct perf_file_header h;
	struct perf_reader *r;
	char err[512], warn[1024], buf[256];
	size_t n;
	int fd, i;
	struct perf_writer *w;

	snprintf(path, sizeof(path), "%s", tmp_path("ckpt.data")); /* tmp_path's buffer is reused */
	snprintf(copy, sizeof(copy), "%s", tmp_path("ckpt-killed.data"));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	w = perf_writer__new(fd);
	CHECK(w != NULL);
	if (!w)
		return;
	fill_attrs(&off, &sb);
	off.sample_type = OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_CGROUP;
	CHECK(perf_writer__add_event(w, &off, "offcpu-time", &off_id, 1) == 0);
	CHECK(perf_writer__add_event(w, &sb, "dummy:u", sb_ids, 2) == 0);
	CHECK(perf_writer__add_host_features(w, 0, NULL) == 0);
	make_comm(buf, 100, 101, "worker", 0);
	CHECK(perf_writer__write(w, (void *)buf) == 0);
	for (i = 0; i < 3; i++)
		CHECK(put_sample(w, 101, 1000 + i, 100) == 0);
	CHECK(perf_writer__checkpoint(w) == 0);
	ckpt_size = perf_writer__data_size(w);

	/* the header as a checkpoint leaves it */
	CHECK(pread(fd, &h, sizeof(h), 0) == sizeof(h));
	CHECK(!memcmp(&h.magic, "PERFILE2", 8));
	CHECK_EQ_U64(h.attrs.offset, 104 + 3 * 8); /* after the ids, right after the header */
	CHECK_EQ_U64(h.attrs.size, 2 * (128 + 16));
	CHECK_EQ_U64(h.data.offset, h.attrs.offset + h.attrs.size);
	CHECK_EQ_U64(h.data.size, ckpt_size);
	CHECK(!h.features[0] && !h.features[1] && !h.features[2] && !h.features[3]);
	{
		struct perf_file_section ids;
		uint64_t id;

		CHECK(pread(fd, &ids, sizeof(ids), (off_t)(h.attrs.offset + 128)) == sizeof(ids));
		CHECK_EQ_U64(ids.size, 8);
		CHECK(pread(fd, &id, 8, (off_t)ids.offset) == 8);
		CHECK_EQ_U64(id, OFF_ID);
	}
	/* the data opens with the names */
	{
		struct perf_event_header eh;
		char name[16] = "";

		CHECK(pread(fd, &eh, sizeof(eh), (off_t)h.data.offset) == sizeof(eh));
		CHECK_EQ_U64(eh.type, PERF_RECORD_EVENT_UPDATE);
		CHECK(pread(fd, name, 12, (off_t)h.data.offset + 24) == 12);
		CHECK_STR(name, "offcpu-time");
	}

	/* more records on disk, not checkpointed: not read, but counted */
	for (i = 0; i < 2; i++)
		CHECK(put_sample(w, 101, 2000 + i, 1000) == 0);
	CHECK(perf_writer__flush(w) == 0);
	snapshot_file(fd, copy);
	r = perf_reader__open(copy, 0, err, sizeof(err));
	CHECK(r != NULL);
	if (!r)
		fprintf(stderr, "  %s\n", err);
	if (r) {
		/* no EVENT_DESC: named by the EVENT_UPDATE records, once read */
		CHECK_STR(perf_reader__event(r, 0)->name, "bpf-output");
		CHECK(read_periods(r, &n) == 300);
		CHECK_EQ_U64(n, 3);
		CHECK_STR(perf_reader__event(r, 0)->name, "offcpu-time");
		CHECK_STR(perf_reader__event(r, 1)->name, "dummy:u");
		CHECK(perf_reader__warning(r, warn, sizeof(warn)) > 0);
		CHECK(strstr(warn, "did not finish") != NULL);
		CHECK(strstr(warn, "read 6 records") != NULL); /* 2 names, COMM, 3 samples */
		CHECK(strstr(warn, "written after that checkpoint") != NULL);
		perf_reader__close(r);
	}

	/* a directory's checkpoint: DIR_FORMAT alone, its index right after the data */
	{
		uint64_t version = 1, got = 0;
		struct perf_file_section index;

		CHECK(perf_writer__set_feature(w, FEAT_DIR_FORMAT, &version, 8) == 0);
		CHECK(perf_writer__checkpoint(w) == 0);
		CHECK(pread(fd, &h, sizeof(h), 0) == sizeof(h));
		CHECK_EQ_U64(h.features[0], 1ULL << FEAT_DIR_FORMAT);
		CHECK_EQ_U64(h.data.size, perf_writer__data_size(w));
		CHECK(pread(fd, &index, sizeof(index), (off_t)(h.data.offset + h.data.size)) ==
		      sizeof(index));
		CHECK_EQ_U64(index.size, 8);
		CHECK(pread(fd, &got, 8, (off_t)index.offset) == 8);
		CHECK_EQ_U64(got, 1);
		/* data over that index takes it out of the header first */
		CHECK(put_sample(w, 101, 3000, 10) == 0);
		CHECK(perf_writer__flush(w) == 0);
		CHECK(pread(fd, &h, sizeof(h), 0) == sizeof(h));
		CHECK_EQ_U64(h.features[0], 0);
		CHECK(h.data.size < perf_writer__data_size(w));
		/* nothing new: a checkpoint costs nothing, and changes nothing */
		CHECK(perf_writer__checkpoint(w) == 0);
		CHECK(pread(fd, &h, sizeof(h), 0) == sizeof(h));
		CHECK_EQ_U64(h.features[0], 1ULL << FEAT_DIR_FORMAT);
	}

	/* finished: the same attrs, every feature, no warning */
	CHECK(perf_writer__finish(w) == 0);
	CHECK(pread(fd, &h, sizeof(h), 0) == sizeof(h));
	CHECK_EQ_U64(h.attrs.offset, 104 + 3 * 8);
	CHECK(h.features[0] & (1ULL << FEAT_EVENT_DESC));
	CHECK(h.features[0] & (1ULL << FEAT_DIR_FORMAT));
	CHECK(h.features[0] & (1ULL << FEAT_SAMPLE_TIME));
	perf_writer__free(w);
	close(fd);
	r = perf_reader__open(path, 0, err, sizeof(err));
	CHECK(r != NULL);
	if (r) {
		CHECK(read_periods(r, &n) == 300 + 2000 + 10);
		CHECK_EQ_U64(n, 6);
		CHECK(perf_reader__warning(r, warn, sizeof(warn)) == 0);
		perf_reader__close(r);
	}
}

/* A finished file with events declared first: what offcpu record writes. */
static int write_front_file(const char *path, int samples)
{
	struct perf_event_attr off, sb;
	uint64_t sb_ids[] = { SB_ID1, SB_ID2 }, off_id = OFF_ID;
	static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
	char buf[256];
	struct perf_writer *w;
	int fd, i, err = 0;
	uint8_t bid[20] = { 1, 2, 3 };

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	w = perf_writer__new(fd);
	if (!w) {
		close(fd);
		return -ENOMEM;
	}
	fill_attrs(&off, &sb);
	err = err ?: perf_writer__add_event(w, &off, "offcpu-time", &off_id, 1);
	err = err ?: perf_writer__add_event(w, &sb, "dummy:u", sb_ids, 2);
	make_comm(buf, 100, 101, "worker", 0);
	err = err ?: perf_writer__write(w, (void *)buf);
	for (i = 0; i < samples && !err; i++) {
		err = put_sample(w, 101, 1000 + (uint64_t)i, 1);
		if (!err && i % 4 == 3)
			err = perf_writer__write(w, &round);
	}
	err = err ?: perf_writer__add_build_id(w, -1, false, bid, 20, "/usr/bin/worker");
	err = err ?: perf_writer__finish(w);
	perf_writer__free(w);
	close(fd);
	return err;
}

/*
 * A finished file cut at every length: refused with an error that says why
 * (a cut in the header or attrs), or read up to its last whole record with a
 * warning that says the file is cut short; never a crash.
 */
static void test_truncated_every_length(void)
{
	char path[256], p[256];
	struct perf_file_header h;
	size_t size, cut, samples, refused = 0, prefixes = 0;
	char err[512], warn[1024];
	char *buf;

	snprintf(path, sizeof(path), "%s", tmp_path("every.data"));
	snprintf(p, sizeof(p), "%s", tmp_path("every-cut.data"));
	CHECK(write_front_file(path, 12) == 0);
	buf = read_all(path, &size);
	CHECK(buf != NULL);
	if (!buf)
		return;
	memcpy(&h, buf, sizeof(h));
	for (cut = 0; cut <= size; cut++) {
		struct perf_reader *r;
		long long sum;

		write_bytes(p, buf, cut);
		r = perf_reader__open(p, 0, err, sizeof(err));
		if (!r) {
			/* only a cut before the data may refuse the file, and it says why */
			CHECK(cut < h.data.offset);
			CHECK(err[0] != 0);
			refused++;
			continue;
		}
		sum = read_periods(r, &samples);
		CHECK(sum >= 0);
		if (sum < 0)
			fprintf(stderr, "  cut at %zu: %s\n", cut, perf_reader__error(r));
		/* whole records only: no sample half read */
		CHECK_EQ_U64(sum, samples);
		if (cut < size) {
			CHECK(perf_reader__warning(r, warn, sizeof(warn)) > 0);
			CHECK(strstr(warn, "cut short") != NULL);
			prefixes++;
		} else {
			CHECK(perf_reader__warning(r, warn, sizeof(warn)) == 0);
			CHECK_EQ_U64(samples, 12);
		}
		if (cut >= h.data.offset + h.data.size)
			CHECK_EQ_U64(samples, 12);
		perf_reader__close(r);
	}
	CHECK(refused > 0 && prefixes > 0);
	free(buf);
}

/*
 * A pipe-mode stream (offcpu record -o - > file, killed) cut at every
 * length: read up to its last whole record, and said when a record is cut.
 */
static void test_pipe_cut_every_length(void)
{
	char path[256], p[256], err[512], warn[1024];
	struct perf_event_attr off, sb;
	uint64_t off_id = OFF_ID, sb_ids[] = { SB_ID1, SB_ID2 };
	struct perf_writer *w;
	size_t size, cut, samples, whole = 0;
	char *buf;
	int fd, i;

	snprintf(path, sizeof(path), "%s", tmp_path("pipe.data"));
	snprintf(p, sizeof(p), "%s", tmp_path("pipe-cut.data"));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	w = perf_writer__new_pipe(fd);
	CHECK(w != NULL);
	if (!w)
		return;
	fill_attrs(&off, &sb);
	CHECK(perf_writer__add_event(w, &off, "offcpu-time", &off_id, 1) == 0);
	CHECK(perf_writer__add_event(w, &sb, "dummy:u", sb_ids, 2) == 0);
	for (i = 0; i < 4; i++)
		CHECK(put_sample(w, 101, 1000 + (uint64_t)i, 1) == 0);
	CHECK(perf_writer__finish(w) == 0);
	perf_writer__free(w);
	close(fd);
	buf = read_all(path, &size);
	CHECK(buf != NULL);
	if (!buf)
		return;
	for (cut = 16; cut <= size; cut++) {
		struct perf_reader *r;
		long long sum;

		write_bytes(p, buf, cut);
		r = perf_reader__open(p, 0, err, sizeof(err));
		CHECK(r != NULL);
		if (!r)
			continue;
		sum = read_periods(r, &samples);
		CHECK(sum >= 0 && (size_t)sum == samples);
		if (perf_reader__warning(r, warn, sizeof(warn)))
			CHECK(strstr(warn, "ends inside a record") != NULL);
		else
			whole++;
		if (cut == size)
			CHECK_EQ_U64(samples, 4);
		perf_reader__close(r);
	}
	/* the cuts between records: the header, 2 events with a name each, 4 samples, the end */
	CHECK(whole >= 8);
	free(buf);
}

/*
 * A pipe-mode stream much longer than the reader's window, through a real
 * pipe that delivers it in odd-sized pieces: every record is read whole,
 * once, with its offset in the stream; the time of a sample is read without
 * parsing it, and parsing it later names its own offset in an error.
 */
static void test_pipe_streamed(void)
{
	struct perf_event_attr off, sb;
	uint64_t off_id = OFF_ID, sb_ids[] = { SB_ID1, SB_ID2 }, t, at = 0, last = 0;
	const struct perf_event_header *h;
	struct perf_reader_stats st;
	struct perf_reader *r;
	struct perf_writer *w;
	struct perf_sample s;
	char path[256], err[512], fdpath[64];
	size_t size, ev, n = 0, i;
	long long sum = 0;
	int fd, pfd[2], rc;
	pid_t child;
	char *buf;

	snprintf(path, sizeof(path), "%s", tmp_path("long.pipe"));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	w = perf_writer__new_pipe(fd);
	CHECK(w != NULL);
	if (!w)
		return;
	fill_attrs(&off, &sb);
	CHECK(perf_writer__add_event(w, &off, "offcpu-time", &off_id, 1) == 0);
	CHECK(perf_writer__add_event(w, &sb, "dummy:u", sb_ids, 2) == 0);
	for (i = 0; i < 60000; i++) /* about 6 MB: six times the window */
		CHECK(put_sample(w, 101 + (uint32_t)(i % 7), 1000 + i, i) == 0);
	CHECK(perf_writer__finish(w) == 0);
	perf_writer__free(w);
	close(fd);
	buf = read_all(path, &size);
	CHECK(buf != NULL && size > 5 * INPUT_FEED_WINDOW);
	if (!buf || pipe(pfd))
		return;
	child = fork();
	if (child == 0) { /* pieces of a prime size: records fall across reads */
		close(pfd[0]);
		for (i = 0; i < size; i += 4093)
			if (write(pfd[1], buf + i, size - i < 4093 ? size - i : 4093) < 0)
				_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", pfd[0]);
	r = perf_reader__open(fdpath, 0, err, sizeof(err));
	CHECK(r != NULL && perf_reader__is_pipe(r));
	while (r && (rc = perf_reader__next(r, &h)) > 0) {
		CHECK(perf_reader__offset(r) >= at);
		at = perf_reader__offset(r);
		if (h->type != PERF_RECORD_SAMPLE)
			continue;
		CHECK(perf_reader__record_time(r, h, &ev, &t) == 0);
		CHECK(t > last);
		last = t;
		CHECK(perf_reader__parse_sample_of(r, h, ev, at, &s) == 0);
		CHECK_EQ_U64(s.time, t);
		sum += (long long)s.period;
		n++;
	}
	CHECK_EQ_U64(n, 60000);
	CHECK_EQ_U64((uint64_t)sum, 60000ULL * 59999 / 2);
	if (r) {
		perf_reader__stats(r, &st);
		CHECK_EQ_U64(st.samples, 60000);
		CHECK_EQ_U64(st.sample_parses, 60000);
		CHECK(perf_reader__warning(r, err, sizeof(err)) == 0);
		/* a sample too short for its fields, parsed after later records: its own offset */
		{
			uint64_t bad[4] = { 0 };
			struct perf_event_header *bh = (void *)bad;

			bh->type = PERF_RECORD_SAMPLE;
			bh->size = 24;
			CHECK(perf_reader__parse_sample_of(r, bh, 0, 12344, &s) == -EINVAL);
			CHECK(strstr(perf_reader__error(r), "offset 12344") != NULL);
		}
		perf_reader__close(r);
	}
	close(pfd[0]);
	waitpid(child, &rc, 0);
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
	free(buf);
}

/*
 * A --threads directory: X/data plus headerless data.N streams. Killed, a
 * stream may end inside a record: read up to its last whole one, and said.
 * Finished, such a stream is damage: an error. A data section of size 0 is
 * legitimate there (the streams hold the records).
 */
static void test_directory_streams(void)
{
	char dir[256], data[512], stream[512], err[512], warn[1024];
	uint64_t version = 1, off_id = OFF_ID, sb_ids[] = { SB_ID1, SB_ID2 };
	struct perf_event_attr off, sb;
	struct perf_writer *w, *sw;
	struct perf_reader *r;
	size_t ssize, cut, samples, rec;
	char *sbuf;
	int fd, sfd, i, finished;

	snprintf(dir, sizeof(dir), "%s", tmp_path("dir.data"));
	mkdir(dir, 0700);
	snprintf(data, sizeof(data), "%s/data", dir);
	snprintf(stream, sizeof(stream), "%s/data.0", dir);
	for (finished = 0; finished < 2; finished++) {
		fd = open(data, O_RDWR | O_CREAT | O_TRUNC, 0600);
		sfd = open(stream, O_RDWR | O_CREAT | O_TRUNC, 0600);
		w = perf_writer__new(fd);
		sw = perf_writer__new_stream(sfd);
		CHECK(w && sw);
		if (!w || !sw)
			return;
		fill_attrs(&off, &sb);
		CHECK(perf_writer__add_event(w, &off, "offcpu-time", &off_id, 1) == 0);
		CHECK(perf_writer__add_event(w, &sb, "dummy:u", sb_ids, 2) == 0);
		CHECK(perf_writer__set_feature(w, FEAT_DIR_FORMAT, &version, 8) == 0);
		CHECK(put_sample(w, 102, 500, 7) == 0);
		CHECK(perf_writer__checkpoint(w) == 0);
		for (i = 0; i < 5; i++)
			CHECK(put_sample(sw, 101, 1000 + (uint64_t)i, 100) == 0);
		CHECK(perf_writer__checkpoint(sw) == 0);
		if (finished) {
			CHECK(perf_writer__finish(sw) == 0);
			CHECK(perf_writer__finish(w) == 0);
		}
		perf_writer__free(w);
		perf_writer__free(sw);
		close(fd);
		close(sfd);

		sbuf = read_all(stream, &ssize);
		CHECK(sbuf != NULL);
		if (!sbuf)
			return;
		rec = ssize / 5;
		for (cut = 0; cut <= ssize; cut++) {
			write_bytes(stream, sbuf, cut);
			r = perf_reader__open(dir, 0, err, sizeof(err));
			CHECK(r != NULL);
			if (!r)
				continue;
			if (finished && cut % rec) {
				CHECK(read_periods(r, &samples) < 0);
				CHECK(strstr(perf_reader__error(r), "data.0") != NULL);
			} else {
				long long want = 7 + 100 * (long long)(cut / rec);
				size_t said;

				CHECK(read_periods(r, &samples) == want);
				said = perf_reader__warning(r, warn, sizeof(warn));
				CHECK(finished ? !said : said > 0);
				if (!finished && cut % rec)
					CHECK(strstr(warn, "cut short") != NULL);
			}
			perf_reader__close(r);
		}
		write_bytes(stream, sbuf, ssize);
		free(sbuf);
	}

	/* a finished directory whose data holds no record at all (perf record --threads) */
	{
		struct perf_file_header h;
		struct featbuf b = { 0 };
		struct perf_file_section ids = { 104, 8 }, index[2];
		uint64_t desc_at;

		memset(&h, 0, sizeof(h));
		memcpy(&h.magic, "PERFILE2", 8);
		h.size = 104;
		h.attr_size = 128 + 16;
		h.attrs = (struct perf_file_section){ 112, 144 };
		h.data = (struct perf_file_section){ 256, 0 };
		h.features[0] = 1ULL << FEAT_EVENT_DESC | 1ULL << FEAT_DIR_FORMAT;
		featbuf__bytes(&b, &h, sizeof(h));
		featbuf__u64(&b, OFF_ID);
		featbuf__bytes(&b, &off, 128);
		featbuf__bytes(&b, &ids, sizeof(ids));
		desc_at = b.len + sizeof(index);
		featbuf__u32(&b, 1);
		featbuf__u32(&b, 128);
		featbuf__bytes(&b, &off, 128);
		featbuf__u32(&b, 1);
		featbuf__string(&b, "offcpu-time");
		featbuf__u64(&b, OFF_ID);
		index[0] = (struct perf_file_section){ desc_at, b.len - (desc_at - sizeof(index)) };
		index[1] = (struct perf_file_section){ index[0].offset + index[0].size, 8 };
		featbuf__u64(&b, 1);
		CHECK(!b.err);
		/* the index goes between the attrs and the payloads */
		{
			char *all = malloc(b.len + sizeof(index));

			memcpy(all, b.data, 256);
			memcpy(all + 256, index, sizeof(index));
			memcpy(all + 256 + sizeof(index), b.data + 256, b.len - 256);
			write_bytes(data, all, b.len + sizeof(index));
			free(all);
		}
		featbuf__free(&b);
		r = perf_reader__open(data, 0, err, sizeof(err));
		CHECK(r == NULL && strstr(err, "read the directory"));
		r = perf_reader__open(dir, 0, err, sizeof(err));
		CHECK(r != NULL);
		if (!r) {
			fprintf(stderr, "  %s\n", err);
			return;
		}
		CHECK_STR(perf_reader__event(r, 0)->name, "offcpu-time");
		CHECK(read_periods(r, &samples) == 500);
		CHECK(perf_reader__warning(r, warn, sizeof(warn)) == 0);
		perf_reader__close(r);
	}
}

const struct unit_test perfdata_tests[] = {
	{ "perfdata: checkpoint layout read back", test_checkpoint_layout },
	{ "perfdata: a finished file cut at every length", test_truncated_every_length },
	{ "perfdata: directory streams cut short, an empty data section", test_directory_streams },
	{ "perfdata: a pipe-mode stream cut at every length", test_pipe_cut_every_length },
	{ "perfdata: a long pipe-mode stream through a pipe, read as it comes",
	  test_pipe_streamed },
	{ "perfdata: writer read back field by field", test_roundtrip },
	{ "perfdata: file header layout", test_header_layout },
	{ "perfdata: truncated and corrupt files", test_truncated_and_corrupt },
	{ "perfdata: sample encoding limits", test_sample_encode_limits },
	{ "perfdata: perf string encoding", test_string_encoding },
	{ 0 },
};
