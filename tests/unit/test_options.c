// SPDX-License-Identifier: GPL-2.0
/* offcpu record's option values and how they combine. No root needed. */
#include <errno.h>
#include <stdlib.h>
#include "unit.h"
#include "record/options.h"
#include "record/target.h"
#include "util/util.h"
#include "perfdata/format.h"

static int cpus[] = { 0, 1, 7 };
static int pids[] = { 42 };
static char *cmd[] = { "true", NULL };

static int check(struct record_opts *o, int ncpu, bool tty, const char *want)
{
	char msg[256] = "";
	int err = record_opts__validate(o, ncpu, tty, msg, sizeof(msg));

	if (want && (!err || !strstr(msg, want))) {
		fprintf(stderr, "  expected \"%s\", got %d \"%s\"\n", want, err, msg);
		return -1;
	}
	if (!want && err) {
		fprintf(stderr, "  expected success, got \"%s\"\n", msg);
		return -1;
	}
	return 0;
}

static void test_validate(void)
{
	struct record_opts o;

	record_opts__defaults(&o);
	CHECK(check(&o, 2, false, "no target") == 0);
	o.argv = cmd;
	o.argc = 1;
	CHECK(check(&o, 2, false, NULL) == 0);
	o.pids = pids;
	o.nr_pids = 1;
	CHECK(check(&o, 2, false, "a command cannot be combined with -p") == 0);
	o.argc = 0;
	o.tids = pids;
	o.nr_tids = 1;
	CHECK(check(&o, 2, false, "-p and -t cannot be combined") == 0);
	o.nr_tids = 0;
	o.system_wide = true;
	CHECK(check(&o, 2, false, "-a cannot be combined") == 0);
	o.nr_pids = 0;
	o.cpus = cpus;
	o.nr_cpus = 3;
	CHECK(check(&o, 2, false, "invalid cpu 7 in -C: this machine has cpus 0 to 1") == 0);
	CHECK(check(&o, 8, false, NULL) == 0);
	o.nr_cpus = 0;
	o.stacks = STACKS_USER | STACKS_KERNEL;
	o.force_raw_tp = true;
	CHECK(check(&o, 2, false, "--raw-tp records user stacks only") == 0);
	o.stacks = STACKS_USER;
	o.wait_objects = true;
	CHECK(check(&o, 2, false, "--raw-tp reads no wait objects: --wait-objects needs tp_btf") == 0);
	o.wait_objects = false;
	o.force_raw_tp = false;
	o.switch_max_files = 3;
	CHECK(check(&o, 2, false, "--switch-max-files needs --switch-output") == 0);
	o.switch_ns = 1000000000;
	CHECK(check(&o, 2, false, NULL) == 0);
	o.threads = 2;
	CHECK(check(&o, 2, false, "--threads cannot be combined") == 0);
	o.threads = 0;
	o.overwrite = true;
	CHECK(check(&o, 2, false, "--overwrite writes on SIGUSR2 only") == 0);
	o.switch_ns = 0;
	o.switch_max_files = 0;
	o.switch_signal = 1;
	o.thresh_ns = 500000000;
	CHECK(check(&o, 2, false, NULL) == 0);
	CHECK_EQ_U64(o.thresh_ns, 0); /* the flight recorder keeps every block */
	o.overwrite = false;
	o.switch_signal = 0;
	o.pipe_output = true;
	CHECK(check(&o, 2, true, "-o - writes binary data") == 0);
	CHECK(check(&o, 2, false, NULL) == 0);
	o.switch_bytes = 1 << 20;
	CHECK(check(&o, 2, false, "--switch-output writes files") == 0);
}

static void test_values(void)
{
	uint32_t m;
	uint64_t v;

	CHECK(parse_states("S,D", &m) == 0 && m == OFFCPU_DEFAULT_STATES);
	CHECK(parse_states("r", &m) == 0 && m == OFFCPU_STATE_MASK(0));
	CHECK(parse_states("all", &m) == 0 && m == (1u << OFFCPU_STATE_NR) - 1);
	CHECK(parse_states("X", &m) == -EINVAL);
	CHECK(parse_states(",", &m) == -EINVAL);
	CHECK(parse_size("512K", &v) == 0 && v == 512 * 1024);
	CHECK(parse_size("8MB", &v) == 0 && v == 8 << 20);
	CHECK(parse_size("4096", &v) == 0 && v == 4096);
	CHECK(parse_size("2T", &v) == -EINVAL);
	CHECK(parse_size("-1K", &v) == -EINVAL);
	CHECK(parse_size("2048G", &v) == -EINVAL);
}

/* -d: a limit, never "no limit" by accident (nan once was one) */
static void test_duration(void)
{
	static const char *const bad[] = {
		"nan", "NaN", "-nan", "inf", "infinity", "-inf", "-1", "+1", " 1", "-0", "0",
		"0s", "0.0000000001", "1e-12", "0x10", "0x1p4", "1e400", "1e10", "366d",
		"8761h", "525601m", "1.8e19ns", "", "s", "1 s", "1sec", "1e", ".", "nans",
	};
	uint64_t v;

	CHECK(parse_record_duration("10", &v) == 0 && v == 10000000000ULL);
	CHECK(parse_record_duration("1.5s", &v) == 0 && v == 1500000000ULL);
	CHECK(parse_record_duration("500ms", &v) == 0 && v == 500000000ULL);
	CHECK(parse_record_duration(".5", &v) == 0 && v == 500000000ULL);
	CHECK(parse_record_duration("1e3ms", &v) == 0 && v == 1000000000ULL);
	CHECK(parse_record_duration("1ns", &v) == 0 && v == 1);
	CHECK(parse_record_duration("8760h", &v) == 0 && v == MAX_DURATION_NS);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		v = 42;
		if (parse_record_duration(bad[i], &v) != -EINVAL || v != 42) {
			fprintf(stderr, "  -d '%s' accepted (%llu ns)\n", bad[i],
				(unsigned long long)v);
			CHECK(0);
		}
	}
	/* the shared parser (--flush, --switch-output) refuses the same */
	CHECK(parse_duration_ns("nan", &v) == -EINVAL && parse_duration_ns("inf", &v) == -EINVAL);
	CHECK(parse_duration_ns("0x10", &v) == -EINVAL && parse_duration_ns(" 1", &v) == -EINVAL);
}


static void test_process_filter(void)
{
	struct targets t = { .filter = true, .follow = true, .cgroup_fd = -1 };
	struct perf_record_task fork = { .header = { PERF_RECORD_FORK, 0, sizeof(fork) },
					 .pid = 11, .ppid = 10, .tid = 11, .ptid = 10 };
	struct perf_record_mmap2 mm = { .header = { PERF_RECORD_MMAP2, 0, sizeof(mm) }, .pid = 11 };
	struct perf_record_task other = fork;

	CHECK(targets__track(&t, 10) == 0);
	CHECK(targets__keep_sideband(&t, &mm.header) == false); /* 11 not followed yet */
	CHECK(targets__keep_sideband(&t, &fork.header) == true);
	CHECK(targets__keep_sideband(&t, &mm.header) == true); /* its fork made it followed */
	other.pid = other.tid = 21;
	other.ppid = other.ptid = 20;
	CHECK(targets__keep_sideband(&t, &other.header) == false);
	mm.pid = 21;
	CHECK(targets__keep_sideband(&t, &mm.header) == false);
	CHECK(targets__keep_sample(&t, 11, true) && !targets__keep_sample(&t, 21, false));
	t.filter = false; /* -a: everything */
	CHECK(targets__keep_sideband(&t, &mm.header) && targets__keep_sample(&t, 21, false));
	/* -t: on-CPU samples of those threads only */
	t.filter = true;
	t.only_tids = true;
	CHECK(intset__add(&t.tids, 12) == 1);
	CHECK(targets__keep_sample(&t, 12, true) && !targets__keep_sample(&t, 11, true));
	targets__free(&t);
}

/* --critical-path: what the walk needs, unless given otherwise */
static void test_critical_path(void)
{
	char *argv[] = { "record", "--critical-path", "--", "true", NULL };
	char *argv2[] = { "record", "--critical-path", "--off-cpu-thresh", "5", "--state", "S",
			  "-F", "99", "--", "true", NULL };
	struct record_opts o;

	CHECK(record_opts__parse(&o, 4, argv) == 0);
	CHECK(o.wakers);
	CHECK_EQ_U64(o.thresh_ns, 0);
	CHECK_EQ_U64(o.state_mask, OFFCPU_DEFAULT_STATES | OFFCPU_STATE_MASK(OFFCPU_STATE_R));
	CHECK_EQ_U64(o.freq, 999);
	record_opts__free(&o);
	CHECK(record_opts__parse(&o, 10, argv2) == 0);
	CHECK(o.wakers);
	CHECK_EQ_U64(o.thresh_ns, 5000000);
	CHECK_EQ_U64(o.state_mask, OFFCPU_STATE_MASK(OFFCPU_STATE_S));
	CHECK_EQ_U64(o.freq, 99);
	record_opts__free(&o);
}

const struct unit_test options_tests[] = {
	{ "options: --critical-path and what it implies", test_critical_path },
	{ "options: how they combine", test_validate },
	{ "options: states and sizes", test_values },
	{ "options: -d durations", test_duration },
	{ "targets: one process filter", test_process_filter },
	{ 0 },
};
