// SPDX-License-Identifier: GPL-2.0
/*
 * offcpu record: choose targets, load the collector, and stream everything
 * into perf.data in time order: side-band, on-CPU samples and long blocks as
 * they happen, the summed short blocks when the recording ends.
 */
#include <argp.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "record.h"
#include "buildids.h"
#include "collector.h"
#include "output.h"
#include "rings.h"
#include "sideband.h"
#include "synth.h"
#include "target.h"
#include "../perfdata/queue.h"
#include "../perfdata/writer.h"
#include "../perfdata/sample.h"
#include "../util/util.h"
#include "../util/intset.h"

#define CGROUP2_SUPER_MAGIC 0x63677270
#define DEFAULT_FREQ 4000
#define ONCPU_EVENT_NAME "cpu-clock"

enum { STACKS_USER = 1, STACKS_KERNEL = 2 };

/* Where a batched record came from. */
enum { SRC_SIDEBAND, SRC_ONCPU, SRC_OFFCPU };

struct record_opts {
	const char *output;
	bool pipe_output;
	int switch_signal; /* --switch-output=signal */
	uint64_t switch_bytes; /* --switch-output=SIZE */
	uint64_t switch_ns; /* --switch-output=TIME */
	size_t switch_max_files;
	bool overwrite; /* flight recorder */
	int threads; /* --threads: directory output written by this many threads */
	bool thresh_given;
	int *pids, *tids, *cpus;
	size_t nr_pids, nr_tids, nr_cpus;
	bool system_wide;
	const char *cgroup;
	bool all_cgroups;
	uint64_t duration_ns;
	uint32_t state_mask;
	uint32_t max_entries;
	size_t mmap_pages;
	uint64_t thresh_ns;
	int stacks;
	uint64_t freq; /* on-CPU sampling; 0: off */
	uint64_t buffer_bytes;
	enum offcpu_transport transport;
	const char *btf_path;
	bool force_raw_tp;
	bool verify_stacks;
	bool quiet;
	char **argv; /* workload */
	int argc;
};

struct stats {
	uint64_t summed_samples, streamed_samples, oncpu_samples;
	uint64_t offcpu_ns;
	uint64_t sideband_lost, oncpu_lost;
	struct intset threads;
};

struct record {
	struct record_opts o;
	struct collector *coll;
	struct perf_rings *sb, *oncpu;
	struct perf_rings *bpf_out; /* --overwrite: where BPF writes blocks */
	struct perf_event_attr bpf_out_attr;
	uint64_t snap_last; /* newest time already in a snapshot */
	struct writer_thread *wt; /* --threads */
	pthread_mutex_t lock; /* maps and stats, shared by writer threads */
	volatile int threads_stop;
	struct perf_writer *w;
	struct maptab *maps;
	struct workload wl;
	bool have_workload, workload_started;
	struct output out;
	uint64_t file_start_ns;
	uint64_t lost_reported; /* lost samples already written to earlier files */
	size_t files;
	struct intset tracked; /* processes whose side-band and samples are kept */
	struct intset tids; /* -t: threads whose on-CPU samples are kept */
	bool filter; /* keep only what concerns tracked processes */
	bool follow;
	uint64_t offcpu_id, sideband_id;
	uint64_t sample_type; /* of offcpu-time */
	struct perf_event_attr oncpu_attr;
	struct perf_queue batch;
	struct stats st;
};

static volatile sig_atomic_t stop_signal, switch_requested;

static void on_signal(int sig)
{
	if (sig == SIGUSR2)
		switch_requested = 1;
	else
		stop_signal = sig;
}

/* options */

enum {
	OPT_ALL_CGROUPS = 1000,
	OPT_STATE,
	OPT_MAX_STACKS,
	OPT_BTF,
	OPT_RAW_TP,
	OPT_THRESH,
	OPT_STACKS,
	OPT_BUFFER,
	OPT_TRANSPORT,
	OPT_SWITCH_OUTPUT,
	OPT_SWITCH_MAX_FILES,
	OPT_OVERWRITE,
	OPT_THREADS,
	OPT_VERIFY_STACKS,
};

static const struct argp_option record_options[] = {
	{ 0, 0, 0, 0, "Targets (a command after --, or -p, -t, -a, -C, -G):", 1 },
	{ "pid", 'p', "PID[,PID...]", 0, "Record these processes (all their threads) until they exit", 1 },
	{ "tid", 't', "TID[,TID...]", 0, "Record these threads only", 1 },
	{ "all-cpus", 'a', 0, 0, "Record every process on the system", 1 },
	{ "cpu", 'C', "CPU-LIST", 0, "Only blocks that begin on these CPUs, e.g. 0,2-3", 1 },
	{ "cgroup", 'G', "CGROUP", 0, "Only tasks in this cgroup v2 (path below the cgroup2 mount, or absolute)", 1 },
	{ 0, 0, 0, 0, "What to record:", 2 },
	{ "off-cpu-thresh", OPT_THRESH, "MS", 0, "Blocks of at least MS milliseconds are written at once as their own sample, with their real time; shorter ones are summed in the kernel and written at the end (default 500; 0 writes every block)", 2 },
	{ "stacks", OPT_STACKS, "user|kernel|both", 0, "Which call chains to record (default user)", 2 },
	{ "state", OPT_STATE, "STATES", 0, "Task states to record: S (sleep), D (disk/uninterruptible), R (preempted), T (stopped), I (idle); default S,D", 2 },
	{ "freq", 'F', "HZ", 0, "Also sample the targets on-CPU HZ times a second (event cpu-clock)", 2 },
	{ "event", 'e', "EVENT", 0, "cpu-clock: also sample on-CPU (at -F or 4000 Hz); offcpu-time: the default", 2 },
	{ "all-cgroups", OPT_ALL_CGROUPS, 0, 0, "Record each sample's cgroup (perf report --sort cgroup)", 2 },
	{ 0, 0, 0, 0, "Output:", 3 },
	{ "output", 'o', "FILE", 0, "Write to FILE (default offcpu.data; an existing one is kept as FILE.old); - writes perf's pipe format to stdout", 3 },
	{ "duration", 'd', "SECONDS", 0, "Stop after this long (also 500ms, 2m)", 3 },
	{ "switch-output", OPT_SWITCH_OUTPUT, "signal|SIZE|TIME", 0, "Write a series of files NAME.YYYYMMDDHHMMSScc: a new one on SIGUSR2 (signal), when one reaches SIZE (e.g. 100M), or every TIME (e.g. 30s); a last one at exit", 3 },
	{ "switch-max-files", OPT_SWITCH_MAX_FILES, "N", 0, "With --switch-output, keep only the newest N files", 3 },
	{ "threads", OPT_THREADS, "N", OPTION_ARG_OPTIONAL, "Write perf's directory format: -o NAME makes directory NAME with NAME/data and NAME/data.0..N-1, each written by its own thread from its share of the CPUs' buffers (default N: one per CPU)", 3 },
	{ "overwrite", OPT_OVERWRITE, 0, 0, "Flight recorder: keep only the newest blocks and side-band in overwritable kernel buffers (-m sizes them), read nothing until SIGUSR2 writes them to NAME.YYYYMMDDHHMMSScc; a last file at exit. Implies --switch-output=signal and --off-cpu-thresh 0", 3 },
	{ "quiet", 'q', 0, 0, "No start line and no summary", 3 },
	{ 0, 0, 0, 0, "Buffers:", 4 },
	{ "max-stacks", OPT_MAX_STACKS, "N", 0, "Size of the in-kernel stack and summary maps (default 16384)", 4 },
	{ "mmap-pages", 'm', "PAGES", 0, "Side-band and on-CPU buffer per CPU, in pages, a power of two (default 128)", 4 },
	{ "buffer-size", OPT_BUFFER, "SIZE", 0, "Buffer for blocks streamed at once, e.g. 512K, 8M (default 4M; a power of two)", 4 },
	{ "transport", OPT_TRANSPORT, "ringbuf|perfbuf", 0, "How streamed blocks reach offcpu (default ringbuf, see bench/)", 4 },
	{ 0, 0, 0, 0, "Environment:", 5 },
	{ "btf", OPT_BTF, "FILE", 0, "Kernel BTF to use instead of /sys/kernel/btf/vmlinux", 5 },
	{ "raw-tp", OPT_RAW_TP, 0, 0, "Attach with raw_tp instead of tp_btf (the automatic fallback; user stacks only)", 5 },
	{ "verify-stacks", OPT_VERIFY_STACKS, 0, 0, "Also walk every user and kernel stack with the kernel's own helpers and report any difference from offcpu's walks (slower; a self-check)", 5 },
	{ "verbose", 'v', 0, 0, "More messages (twice: debug, libbpf's log)", 5 },
	{ 0 },
};

static const char record_doc[] =
	"Record where threads block (off-CPU time) into a perf.data file.\n"
	"\n"
	"At every context switch a BPF program notes when a thread of the targets\n"
	"blocks, in which state and with which stack, and measures the block when the\n"
	"thread runs again. Blocks of at least --off-cpu-thresh are written at once as\n"
	"samples with their real time; shorter ones are summed in the kernel and\n"
	"written when the recording ends. The file opens in offcpu report, perf report\n"
	"and perf script; the event is named offcpu-time and each sample's period is\n"
	"the blocked time in nanoseconds.\n"
	"\n"
	"Examples:\n"
	"  offcpu record -o app.data -- ./app --flag    record a command until it exits\n"
	"  offcpu record -p 1234 -d 10                  attach to a process for 10 s\n"
	"  offcpu record -a -d 5 --stacks both          the whole system, with kernel stacks\n"
	"  offcpu record -F 999 -- ./app                off-CPU and on-CPU in one file\n"
	"  offcpu record -o - -- ./app | perf script -i -\n"
	"  perf report -i app.data --stdio              read it with perf\n"
	"\n"
	"Needs root, or CAP_BPF and CAP_PERFMON, and a kernel with BTF (5.15 or newer; 5.11 records user stacks only)."
	"\vExit status: 0 when the file is complete, 1 on a runtime error, 2 on a usage error.";

static int usage_error(struct argp_state *st, const char *fmt, const char *arg)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, arg);
	argp_error(st, "%s", msg); /* prints, then exits with argp_err_exit_status (2) */
	return EINVAL;
}

static int parse_states(const char *s, uint32_t *mask)
{
	static const char letters[OFFCPU_STATE_NR] = { 'R', 'S', 'D', 'T', 'I' };
	uint32_t m = 0;
	int i;

	if (!strcmp(s, "all")) {
		*mask = (1u << OFFCPU_STATE_NR) - 1;
		return 0;
	}
	for (; *s; s++) {
		if (*s == ',')
			continue;
		for (i = 0; i < OFFCPU_STATE_NR; i++)
			if (*s == letters[i] || *s == letters[i] + 32)
				break;
		if (i == OFFCPU_STATE_NR)
			return -EINVAL;
		m |= OFFCPU_STATE_MASK(i);
	}
	if (!m)
		return -EINVAL;
	*mask = m;
	return 0;
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end == 'K' || *end == 'k')
		mult = 1024, end++;
	else if (*end == 'M' || *end == 'm')
		mult = 1024 * 1024, end++;
	else if (*end == 'G' || *end == 'g')
		mult = 1024ULL * 1024 * 1024, end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > (1ULL << 40) / mult)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

static error_t record_parse(int key, char *arg, struct argp_state *st)
{
	struct record_opts *o = st->input;
	uint64_t v;

	switch (key) {
	case 'p':
		if (parse_int_list(arg, &o->pids, &o->nr_pids) || !o->nr_pids || o->pids[0] <= 0)
			return usage_error(st, "invalid pid list '%s'", arg);
		break;
	case 't':
		if (parse_int_list(arg, &o->tids, &o->nr_tids) || !o->nr_tids || o->tids[0] <= 0)
			return usage_error(st, "invalid thread id list '%s'", arg);
		break;
	case 'a':
		o->system_wide = true;
		break;
	case 'C':
		if (parse_int_list(arg, &o->cpus, &o->nr_cpus))
			return usage_error(st, "invalid cpu list '%s'", arg);
		break;
	case 'G':
		o->cgroup = arg;
		break;
	case 'o':
		if (!*arg)
			return usage_error(st, "empty output file name%s", "");
		o->pipe_output = !strcmp(arg, "-");
		o->output = arg;
		break;
	case 'd':
		if (parse_duration_ns(arg, &o->duration_ns) || !o->duration_ns)
			return usage_error(st, "invalid duration '%s' (examples: 10, 1.5s, 500ms)", arg);
		break;
	case OPT_THRESH: {
		double ms;
		char *end;

		ms = strtod(arg, &end);
		if (!*arg || *end || ms < 0 || ms > 1e9)
			return usage_error(st, "invalid --off-cpu-thresh '%s' (milliseconds)", arg);
		o->thresh_ns = (uint64_t)(ms * 1e6 + 0.5);
		o->thresh_given = true;
		break;
	}
	case OPT_STACKS:
		if (!strcmp(arg, "user"))
			o->stacks = STACKS_USER;
		else if (!strcmp(arg, "kernel"))
			o->stacks = STACKS_KERNEL;
		else if (!strcmp(arg, "both"))
			o->stacks = STACKS_USER | STACKS_KERNEL;
		else
			return usage_error(st, "invalid --stacks '%s' (user, kernel or both)", arg);
		break;
	case OPT_STATE:
		if (parse_states(arg, &o->state_mask))
			return usage_error(st, "invalid state list '%s' (letters of S,D,R,T,I)", arg);
		break;
	case 'F':
		if (parse_u64(arg, &v) || v < 1 || v > 100000)
			return usage_error(st, "invalid frequency '%s' (1 to 100000 Hz)", arg);
		o->freq = v;
		break;
	case 'e':
		if (!strcmp(arg, "cpu-clock")) {
			if (!o->freq)
				o->freq = DEFAULT_FREQ;
		} else if (strcmp(arg, "offcpu-time")) {
			return usage_error(st, "unsupported event '%s' (cpu-clock or offcpu-time)", arg);
		}
		break;
	case OPT_ALL_CGROUPS:
		o->all_cgroups = true;
		break;
	case OPT_MAX_STACKS:
		if (parse_u64(arg, &v) || v < 64 || v > (1u << 24))
			return usage_error(st, "invalid --max-stacks '%s' (64 to 16777216)", arg);
		o->max_entries = (uint32_t)v;
		break;
	case 'm':
		if (parse_u64(arg, &v) || v < 1 || v > (1u << 20) || (v & (v - 1)))
			return usage_error(st, "invalid --mmap-pages '%s' (a power of two)", arg);
		o->mmap_pages = (size_t)v;
		break;
	case OPT_BUFFER:
		if (parse_size(arg, &v) || v < 4096 || v > (1ULL << 30) || (v & (v - 1)))
			return usage_error(st, "invalid --buffer-size '%s' (a power of two, 4K to 1G)", arg);
		o->buffer_bytes = v;
		break;
	case OPT_TRANSPORT:
		if (!strcmp(arg, "ringbuf"))
			o->transport = OFFCPU_TRANSPORT_RINGBUF;
		else if (!strcmp(arg, "perfbuf"))
			o->transport = OFFCPU_TRANSPORT_PERFBUF;
		else
			return usage_error(st, "invalid --transport '%s' (ringbuf or perfbuf)", arg);
		break;
	case OPT_SWITCH_OUTPUT: {
		char last = *arg ? arg[strlen(arg) - 1] : 0;

		if (!strcmp(arg, "signal"))
			o->switch_signal = 1;
		else if (strchr("BKMGbkmg", last) && !parse_size(arg, &v) && v >= 4096)
			o->switch_bytes = v;
		else if (strchr("smh", last) && !parse_duration_ns(arg, &v) && v >= 100000000ULL)
			o->switch_ns = v;
		else
			return usage_error(st, "invalid --switch-output '%s' (signal, a size like 100M, or a time like 30s)", arg);
		break;
	}
	case OPT_THREADS:
		if (!arg) {
			o->threads = -1; /* one per cpu */
		} else {
			if (parse_u64(arg, &v) || v < 1 || v > 1024)
				return usage_error(st, "invalid --threads '%s'", arg);
			o->threads = (int)v;
		}
		break;
	case OPT_OVERWRITE:
		o->overwrite = true;
		o->switch_signal = 1;
		break;
	case OPT_SWITCH_MAX_FILES:
		if (parse_u64(arg, &v) || v < 1 || v > 100000)
			return usage_error(st, "invalid --switch-max-files '%s'", arg);
		o->switch_max_files = (size_t)v;
		break;
	case OPT_BTF:
		o->btf_path = arg;
		break;
	case OPT_RAW_TP:
		o->force_raw_tp = true;
		break;
	case OPT_VERIFY_STACKS:
		o->verify_stacks = true;
		break;
	case 'v':
		log_verbosity++;
		break;
	case 'q':
		o->quiet = true;
		break;
	case ARGP_KEY_ARG:
		/* The command and everything after it belong to the workload. */
		o->argv = st->argv + st->next - 1;
		o->argc = st->argc - st->next + 1;
		st->next = st->argc;
		break;
	case ARGP_KEY_END:
		if (o->nr_pids && o->nr_tids)
			return usage_error(st, "-p and -t cannot be combined%s", "");
		if (o->argc && (o->nr_pids || o->nr_tids))
			return usage_error(st, "a command cannot be combined with -p or -t%s", "");
		if (o->system_wide && (o->nr_pids || o->nr_tids))
			return usage_error(st, "-a cannot be combined with -p or -t%s", "");
		if (!o->argc && !o->nr_pids && !o->nr_tids && !o->system_wide && !o->nr_cpus &&
		    !o->cgroup)
			return usage_error(st, "no target: give a command after --, or -p, -t, -a, -C or -G%s", "");
		if (o->force_raw_tp && (o->stacks & STACKS_KERNEL))
			return usage_error(st, "--raw-tp records user stacks only%s", "");
		if (o->switch_max_files && !o->switch_signal && !o->switch_bytes && !o->switch_ns)
			return usage_error(st, "--switch-max-files needs --switch-output%s", "");
		if (o->threads && o->pipe_output)
			return usage_error(st, "--threads writes a directory: it cannot be combined with -o -%s", "");
		if (o->threads && (o->overwrite || o->switch_signal || o->switch_bytes || o->switch_ns))
			return usage_error(st, "--threads cannot be combined with --overwrite or --switch-output%s", "");
		if (o->overwrite && (o->switch_bytes || o->switch_ns))
			return usage_error(st, "--overwrite writes on SIGUSR2 only: not with --switch-output=SIZE or TIME%s", "");
		if (o->overwrite && !o->thresh_given)
			o->thresh_ns = 0; /* every block goes to the buffers, with its time */
		if (o->pipe_output && (o->switch_signal || o->switch_bytes || o->switch_ns))
			return usage_error(st, "--switch-output writes files: it cannot be combined with -o -%s", "");
		if (o->pipe_output && isatty(STDOUT_FILENO))
			return usage_error(st, "-o - writes binary data: pipe it into a reader (e.g. | perf report -i -)%s", "");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* environment checks */

static bool have_capabilities(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &h, d))
		return false;
	/* CAP_PERFMON is 38 and CAP_BPF 39: bits 6 and 7 of the second word. */
	return (d[1].effective & (1u << 6)) && (d[1].effective & (1u << 7));
}

static int cgroup2_mount(char *out, size_t cap)
{
	char line[4096], dev[256], dir[2048], type[64];
	FILE *f = fopen("/proc/self/mounts", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %2047s %63s", dev, dir, type) != 3)
			continue;
		if (!strcmp(type, "cgroup2")) {
			snprintf(out, cap, "%s", dir);
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

static int open_cgroup(const char *arg)
{
	char root[2048], path[PATH_MAX];
	struct statfs sfs;
	int fd;

	if (arg[0] == '/' && statfs(arg, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC) {
		snprintf(path, sizeof(path), "%s", arg);
	} else {
		if (cgroup2_mount(root, sizeof(root))) {
			pr_err("cgroup '%s': no cgroup v2 hierarchy is mounted", arg);
			return -ENOENT;
		}
		snprintf(path, sizeof(path), "%s/%s", root, arg[0] == '/' ? arg + 1 : arg);
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		pr_err("cgroup '%s': cannot open %s: %s", arg, path, strerror(errno));
		return -errno;
	}
	if (fstatfs(fd, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC) {
		pr_err("cgroup '%s': %s is not a cgroup v2 directory", arg, path);
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* filtering, in time order, so that a FORK is seen before its child's records */

static bool keep_sideband(struct record *r, const struct perf_event_header *h)
{
	const char *p = (const char *)h;
	int pid;

	switch (h->type) {
	case PERF_RECORD_LOST:
		r->st.sideband_lost += *(const uint64_t *)(p + 16);
		return true;
	case PERF_RECORD_FORK:
		pid = *(const int *)(p + 8);
		if (r->follow && intset__has(&r->tracked, *(const int *)(p + 12)))
			intset__add(&r->tracked, pid);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_EXIT:
		pid = *(const int *)(p + 8);
		break;
	default:
		return true;
	}
	return !r->filter || intset__has(&r->tracked, pid);
}

static bool keep_oncpu(struct record *r, const struct perf_event_header *h)
{
	struct perf_sample s;
	const char *why;

	if (h->type == PERF_RECORD_LOST) {
		r->st.oncpu_lost += *(const uint64_t *)((const char *)h + 16);
		return true;
	}
	if (h->type != PERF_RECORD_SAMPLE || perf_sample__parse(&r->oncpu_attr, h, &s, &why))
		return h->type != PERF_RECORD_SAMPLE;
	if (r->o.nr_tids)
		return intset__has(&r->tids, (int)s.tid);
	return !r->filter || intset__has(&r->tracked, (int)s.pid);
}

static int write_record(struct record *r, const struct perf_event_header *h)
{
	int err = maptab__observe(r->maps, h);

	return err ? err : perf_writer__write(r->w, h);
}

static int write_record_to(struct record *r, struct perf_writer *w,
			   const struct perf_event_header *h)
{
	int err;

	pthread_mutex_lock(&r->lock);
	err = maptab__observe(r->maps, h);
	pthread_mutex_unlock(&r->lock);
	return err ? err : perf_writer__write(w, h);
}

/* collect: every source pushes into a batch; writer threads have their own */

struct sink {
	struct record *r;
	struct perf_queue *batch;
	bool shared; /* other threads use the stack caches and maps: lock them */
};

static int push_sideband(const struct perf_event_header *h, void *arg)
{
	struct sink *k = arg;
	struct perf_sample s = { 0 };

	perf_sample_id__parse(SIDEBAND_SAMPLE_TYPE, h, &s);
	return perf_queue__push(k->batch, h, s.time, SRC_SIDEBAND);
}

static int push_oncpu(const struct perf_event_header *h, void *arg)
{
	struct sink *k = arg;
	struct perf_sample s = { 0 };
	const char *why;

	if (h->type == PERF_RECORD_SAMPLE)
		perf_sample__parse(&k->r->oncpu_attr, h, &s, &why);
	else
		perf_sample_id__parse(k->r->oncpu_attr.sample_type, h, &s);
	return perf_queue__push(k->batch, h, s.time, SRC_ONCPU);
}

/*
 * Encode one offcpu-time sample: kernel frames after PERF_CONTEXT_KERNEL,
 * user frames after PERF_CONTEXT_USER, the innermost frame as its ip.
 */
static int encode_offcpu(struct record *r, const struct offcpu_key *k, uint64_t time,
			 uint64_t period, uint32_t cpu, char *buf, size_t cap)
{
	uint64_t chain[2 * OFFCPU_MAX_STACK_DEPTH + 2];
	const uint64_t *kips = NULL, *uips = NULL;
	uint32_t nk = collector__kernel_stack(r->coll, k->kern_stack, &kips);
	uint32_t nu = collector__user_stack(r->coll, k->user_stack, &uips);
	struct perf_sample s = {
		.id = r->offcpu_id,
		.pid = k->tgid,
		.tid = k->pid,
		.time = time,
		.cpu = cpu,
		.period = period,
		.cgroup = k->cgroup_id,
		.ips = chain,
	};
	struct perf_event_header *h = (void *)buf;
	uint32_t i;
	int size;

	if (nk) {
		chain[s.nr_ips++] = PERF_CONTEXT_KERNEL;
		memcpy(&chain[s.nr_ips], kips, nk * sizeof(*kips));
		s.nr_ips += nk;
		s.ip = kips[0];
	}
	/* A frame-pointer walk through code without frame pointers (Debian's
	 * libc) can run into data: stop at the first word that cannot be a user
	 * address (above 2^56, the top of 5-level user space, or in page 0). */
	for (i = 0; i < nu; i++)
		if (uips[i] < 4096 || uips[i] >= (1ULL << 56))
			break;
	nu = i;
	if (nu) {
		chain[s.nr_ips++] = PERF_CONTEXT_USER;
		memcpy(&chain[s.nr_ips], uips, nu * sizeof(*uips));
		s.nr_ips += nu;
		if (!nk)
			s.ip = uips[0];
		for (i = 0; i < nu; i++)
			maptab__mark(r->maps, (int)k->tgid, uips[i]);
	}
	size = perf_sample__encode(r->sample_type, &s, buf, cap);
	if (size < 0)
		return size;
	h->misc = nk ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER;
	return size;
}

static int push_stream(const struct offcpu_event *e, void *arg)
{
	struct sink *k = arg;
	char buf[(2 * OFFCPU_MAX_STACK_DEPTH + 16) * 8];
	int size;

	if (k->shared)
		pthread_mutex_lock(&k->r->lock);
	size = encode_offcpu(k->r, &e->key, e->time, e->period, e->cpu, buf, sizeof(buf));
	if (k->shared)
		pthread_mutex_unlock(&k->r->lock);
	if (size < 0)
		return size;
	return perf_queue__push(k->batch, (const void *)buf, e->time, SRC_OFFCPU);
}

/* Count what is written, not what was read: a snapshot skips what it wrote before. */
static void account(struct record *r, const struct perf_event_header *h, int kind)
{
	struct perf_event_attr attr = { .sample_type = r->sample_type };
	struct perf_sample s;
	const char *why;

	if (h->type != PERF_RECORD_SAMPLE)
		return;
	if (kind == SRC_ONCPU) {
		r->st.oncpu_samples++;
		return;
	}
	if (kind != SRC_OFFCPU || perf_sample__parse(&attr, h, &s, &why))
		return;
	r->st.streamed_samples++;
	r->st.offcpu_ns += s.period;
	intset__add(&r->st.threads, (int)s.tid);
}

/* Write one record of a sorted batch unless the filters drop it: 1 written, 0 dropped, -errno. */
static int write_batched(struct record *r, const struct perf_event_header *h, int kind,
			 uint64_t time)
{
	int err;

	if (kind == SRC_SIDEBAND && !keep_sideband(r, h))
		return 0;
	if (kind == SRC_ONCPU && !keep_oncpu(r, h))
		return 0;
	if (h->type == PERF_RECORD_SAMPLE)
		perf_writer__note_time(r->w, time);
	account(r, h, kind);
	err = write_record(r, h);
	return err ? err : 1;
}

/* Drain every source, then write in time order as one perf round. */
static int flush_round(struct record *r)
{
	static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
	size_t i, written = 0;
	long n;
	int err = 0, kind;

	struct sink k = { r, &r->batch, false };

	perf_queue__clear(&r->batch);
	n = perf_rings__read(r->sb, push_sideband, &k);
	if (n >= 0 && r->oncpu)
		n = perf_rings__read(r->oncpu, push_oncpu, &k);
	if (n >= 0)
		n = collector__consume(r->coll, push_stream, &k);
	if (n < 0)
		return (int)n;
	perf_queue__sort(&r->batch);
	for (i = 0; i < r->batch.nr && !err; i++) {
		const struct perf_event_header *h = perf_queue__get(&r->batch, i, &kind);

		err = write_batched(r, h, kind, r->batch.refs[i].time);
		written += err > 0;
		err = err < 0 ? err : 0;
	}
	if (!err && written)
		err = perf_writer__write(r->w, &round);
	if (!err && written && r->o.pipe_output)
		err = perf_writer__flush(r->w);
	return err;
}

static int emit_synth(const struct perf_event_header *h, void *arg)
{
	return write_record(arg, h);
}

/* the end: summed blocks, losses */

struct drain_ctx {
	struct record *r;
	uint64_t time;
};

static int write_summed(const struct offcpu_key *k, const struct offcpu_val *v, void *arg)
{
	struct drain_ctx *d = arg;
	char buf[(2 * OFFCPU_MAX_STACK_DEPTH + 16) * 8];
	int size = encode_offcpu(d->r, k, d->time, v->total_ns, v->last_cpu, buf, sizeof(buf));

	if (size < 0)
		return size;
	perf_writer__note_time(d->r->w, d->time);
	d->r->st.summed_samples++;
	d->r->st.offcpu_ns += v->total_ns;
	intset__add(&d->r->st.threads, (int)k->pid);
	return perf_writer__write(d->r->w, (const void *)buf);
}

/* perf report shows LOST_SAMPLES as "Total Lost Samples" of the event. */
static int write_lost_samples(struct record *r, uint64_t lost, uint64_t time)
{
	char buf[64] = { 0 };
	struct perf_event_header *h = (void *)buf;
	struct perf_sample id = { .id = r->offcpu_id, .time = time };

	*(uint64_t *)(buf + 8) = lost;
	perf_sample_id__encode(r->sample_type, &id, buf + 16);
	h->type = PERF_RECORD_LOST_SAMPLES;
	h->size = (uint16_t)(16 + perf_sample_id__size(r->sample_type));
	return perf_writer__write(r->w, h);
}

static int setup_targets(struct record *r, struct collector_opts *co, int *cgroup_fd)
{
	struct record_opts *o = &r->o;
	size_t i;
	int tgid;

	for (i = 0; i < o->nr_pids; i++) {
		tgid = tid_to_tgid(o->pids[i]);
		if (tgid < 0) {
			pr_err("process %d does not exist", o->pids[i]);
			return -ESRCH;
		}
		if (tgid != o->pids[i])
			pr_warn("%d is a thread of process %d: recording the whole process",
				o->pids[i], tgid);
		o->pids[i] = tgid;
		intset__add(&r->tracked, tgid);
	}
	for (i = 0; i < o->nr_tids; i++) {
		tgid = tid_to_tgid(o->tids[i]);
		if (tgid < 0) {
			pr_err("thread %d does not exist", o->tids[i]);
			return -ESRCH;
		}
		intset__add(&r->tracked, tgid);
		intset__add(&r->tids, o->tids[i]);
	}
	/* -C and -G alone mean "everything on those cpus / in that cgroup" */
	r->filter = !o->system_wide && !o->nr_cpus && !o->cgroup;
	if (o->argc && !o->system_wide)
		r->filter = true;
	r->follow = o->argc > 0;
	co->state_mask = o->state_mask;
	co->user_stacks = o->stacks & STACKS_USER;
	co->kernel_stacks = o->stacks & STACKS_KERNEL;
	co->verify_stacks = o->verify_stacks;
	co->record_cgroup = o->all_cgroups;
	co->follow_forks = r->follow && !o->system_wide;
	co->tgids = o->pids;
	co->nr_tgids = o->nr_pids;
	co->filter_tgid = o->argc > 0 && !o->system_wide;
	co->tids = o->tids;
	co->nr_tids = o->nr_tids;
	co->cpus = o->cpus;
	co->nr_cpus = o->nr_cpus;
	co->max_entries = o->max_entries;
	co->thresh_ns = o->thresh_ns;
	co->transport = o->transport;
	co->buffer_bytes = o->buffer_bytes;
	if (o->transport == OFFCPU_TRANSPORT_PERFBUF) {
		int *cpus;
		size_t n;

		if (online_cpus(&cpus, &n) == 0) {
			uint64_t per = o->buffer_bytes / (n ? n : 1), pg = 4096;

			while (pg * 2 <= per)
				pg *= 2;
			co->buffer_bytes = pg; /* per cpu, a power of two of pages */
			free(cpus);
		}
	}
	co->force_raw_tp = o->force_raw_tp;
	co->btf_path = o->btf_path;
	co->cgroup_fd = -1;
	if (o->cgroup) {
		*cgroup_fd = open_cgroup(o->cgroup);
		if (*cgroup_fd < 0)
			return *cgroup_fd;
		co->cgroup_fd = *cgroup_fd;
	}
	return 0;
}

static int open_oncpu(struct record *r, int cgroup_fd)
{
	struct perf_event_attr *a = &r->oncpu_attr;
	int *cpus = NULL, err;
	size_t nr = 0;

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = r->o.freq;
	a->sample_type = OFFCPU_SAMPLE_TYPE | (r->o.all_cgroups ? PERF_SAMPLE_CGROUP : 0);
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	if (r->o.nr_cpus) {
		cpus = malloc(r->o.nr_cpus * sizeof(*cpus));
		if (!cpus)
			return -ENOMEM;
		memcpy(cpus, r->o.cpus, r->o.nr_cpus * sizeof(*cpus));
		nr = r->o.nr_cpus;
	} else {
		err = online_cpus(&cpus, &nr);
		if (err)
			return err;
	}
	if (r->o.overwrite && cgroup_fd >= 0)
		pr_warn("--overwrite samples on-CPU on every task; -G filters them when written");
	r->oncpu = r->o.overwrite ?
		perf_rings__open_overwrite(a, cpus, nr, r->o.mmap_pages, ONCPU_EVENT_NAME) :
		perf_rings__open(a, cpus, nr, r->o.mmap_pages, cgroup_fd, ONCPU_EVENT_NAME);
	free(cpus);
	return r->oncpu ? 0 : -errno;
}

/* Events first: pipe mode needs them before any record. */
static int declare_events(struct record *r)
{
	struct perf_event_attr attr = { 0 };
	const uint64_t *ids;
	size_t nids;
	int err;

	attr.size = PERFDATA_ATTR_SIZE;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_period = 1;
	attr.sample_type = r->sample_type;
	attr.sample_id_all = 1;
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	if (!(r->o.stacks & STACKS_KERNEL)) {
		attr.exclude_kernel = 1;
		attr.exclude_callchain_kernel = 1;
	}
	if (!(r->o.stacks & STACKS_USER))
		attr.exclude_callchain_user = 1;
	err = perf_writer__add_event(r->w, &attr, OFFCPU_EVENT_NAME, &r->offcpu_id, 1);
	if (!err && r->oncpu) {
		nids = perf_rings__ids(r->oncpu, &ids);
		err = perf_writer__add_event(r->w, perf_rings__attr(r->oncpu), ONCPU_EVENT_NAME,
					     ids, nids);
	}
	if (!err) {
		nids = perf_rings__ids(r->sb, &ids);
		err = perf_writer__add_event(r->w, perf_rings__attr(r->sb), "dummy:u", ids, nids);
	}
	if (!err)
		err = perf_writer__add_host_features(r->w, cmdline_argc, cmdline_argv);
	return err;
}

static int synthesize(struct record *r)
{
	struct synth s = {
		.sample_type = SIDEBAND_SAMPLE_TYPE,
		.id = r->sideband_id,
		.time = 0, /* at or before every sample, as perf does */
		.emit = emit_synth,
		.arg = r,
	};
	char root[2048];
	size_t i;
	int err = 0;

	if ((r->o.stacks & STACKS_KERNEL) || r->oncpu) {
		err = synth__kernel_mmap(&s);
		if (err == -EPERM && r->files == 0)
			pr_warn("kernel addresses are hidden (kptr_restrict): kernel frames will not be named");
		err = 0;
	}
	if (!r->filter) {
		err = synth__all(&s);
	} else {
		/* every process followed so far; a workload only once it runs its command */
		for (i = 0; i < r->tracked.cap && !err; i++) {
			int pid = r->tracked.slots[i];

			if (pid < 0 || (r->have_workload && pid == r->wl.pid && !r->workload_started))
				continue;
			err = synth__process(&s, pid);
		}
	}
	if (!err && r->o.all_cgroups && cgroup2_mount(root, sizeof(root)) == 0)
		err = synth__cgroups(&s, root);
	return err;
}

static bool targets_gone(struct record *r, struct pollfd *pfds, size_t first_pidfd)
{
	size_t i;

	if (r->have_workload)
		return workload__reap(&r->wl);
	if (r->o.nr_pids) {
		for (i = 0; i < r->o.nr_pids; i++) {
			struct pollfd *p = &pfds[first_pidfd + i];

			if (p->fd >= 0 && !(p->revents & POLLIN) && kill(r->o.pids[i], 0) == 0)
				return false;
		}
		return true;
	}
	if (r->o.nr_tids) {
		for (i = 0; i < r->o.nr_tids; i++) {
			int tgid = tid_to_tgid(r->o.tids[i]);

			if (tgid > 0 && thread_alive(tgid, r->o.tids[i]))
				return false;
		}
		return true;
	}
	return false;
}

static void print_summary(struct record *r, const uint64_t *cnt, uint64_t prog_misses,
			  uint64_t file_size)
{
	char size[32];
	uint64_t dropped = cnt[OFFCPU_CNT_DROP_MAP_FULL] + cnt[OFFCPU_CNT_NO_STORAGE] +
			   cnt[OFFCPU_CNT_FILTER_FULL] + cnt[OFFCPU_CNT_STACK_FAIL] +
			   cnt[OFFCPU_CNT_KSTACK_FAIL] + cnt[OFFCPU_CNT_UNPAIRED] + cnt[OFFCPU_CNT_MISSED_OUT] +
			   cnt[OFFCPU_CNT_OUTPUT_FULL] + prog_misses + r->st.sideband_lost +
			   r->st.oncpu_lost;

	fprintf(stderr,
		"offcpu: %llu blocks seen (%.3f s off-CPU in %zu threads), %llu samples written "
		"(%llu streamed, %llu summed), %llu distinct stacks\n",
		(unsigned long long)cnt[OFFCPU_CNT_BLOCKS], r->st.offcpu_ns / 1e9,
		r->st.threads.len,
		(unsigned long long)(r->st.streamed_samples + r->st.summed_samples),
		(unsigned long long)r->st.streamed_samples,
		(unsigned long long)r->st.summed_samples,
		(unsigned long long)collector__distinct_stacks(r->coll));
	if (r->oncpu)
		fprintf(stderr, "offcpu: %llu on-CPU samples (cpu-clock, %llu Hz)\n",
			(unsigned long long)r->st.oncpu_samples, (unsigned long long)r->o.freq);
	if (r->out.pipe)
		fprintf(stderr, "offcpu: wrote the recording to standard output\n");
	else if (r->out.rotate)
		fprintf(stderr, "offcpu: wrote %zu files, the last %s (%s)%s\n", r->files,
			output__last(&r->out), fmt_size(file_size, size, sizeof(size)),
			r->out.removed ? ", older ones removed (--switch-max-files)" : "");
	else
		fprintf(stderr, "offcpu: wrote %s (%s)\n", output__last(&r->out),
			fmt_size(file_size, size, sizeof(size)));
	if (r->o.verify_stacks)
		fprintf(stderr, "offcpu: verified %llu stacks against the kernel's helpers: %llu user "
			"and %llu kernel stacks differed; the helpers walked %llu user and %llu kernel "
			"stacks offcpu's walks left to them\n",
			(unsigned long long)cnt[OFFCPU_CNT_VERIFIED],
			(unsigned long long)cnt[OFFCPU_CNT_VERIFY_USER_BAD],
			(unsigned long long)cnt[OFFCPU_CNT_VERIFY_KERNEL_BAD],
			(unsigned long long)cnt[OFFCPU_CNT_USER_HELPER],
			(unsigned long long)cnt[OFFCPU_CNT_KERNEL_HELPER]);
	if (collector__fallbacks(r->coll))
		fprintf(stderr, "offcpu: FALLBACK: %s\n", collector__fallbacks(r->coll));
	if (cnt[OFFCPU_CNT_RECOVERED])
		fprintf(stderr, "offcpu: %llu blocks recovered: the kernel skipped offcpu's program when "
			"their thread ran again (another BPF program attaching to sched_switch?); their "
			"time comes from the thread's CPU time%s\n",
			(unsigned long long)cnt[OFFCPU_CNT_RECOVERED],
			r->o.stacks & STACKS_KERNEL ? ", their kernel stacks are missing" : "");
	if (!dropped) {
		fprintf(stderr, "offcpu: nothing dropped\n");
		return;
	}
	fprintf(stderr, "offcpu: WARNING: this recording is incomplete:\n");
	if (cnt[OFFCPU_CNT_DROP_MAP_FULL])
		fprintf(stderr, "offcpu:   %llu blocks lost: the summary map was full (raise --max-stacks)\n",
			(unsigned long long)cnt[OFFCPU_CNT_DROP_MAP_FULL]);
	if (cnt[OFFCPU_CNT_OUTPUT_FULL])
		fprintf(stderr, "offcpu:   %llu long blocks not streamed: the output buffer was full; "
			"summed instead, without their time (raise --buffer-size)\n",
			(unsigned long long)cnt[OFFCPU_CNT_OUTPUT_FULL]);
	if (cnt[OFFCPU_CNT_STACK_FAIL])
		fprintf(stderr, "offcpu:   %llu blocks kept without a user stack: the stack walk failed "
			"(stack map full or unreadable stack)\n",
			(unsigned long long)cnt[OFFCPU_CNT_STACK_FAIL]);
	if (cnt[OFFCPU_CNT_KSTACK_FAIL])
		fprintf(stderr, "offcpu:   %llu blocks kept without a kernel stack (stack map full?)\n",
			(unsigned long long)cnt[OFFCPU_CNT_KSTACK_FAIL]);
	if (cnt[OFFCPU_CNT_NO_STORAGE])
		fprintf(stderr, "offcpu:   %llu blocks missed: no per-task storage\n",
			(unsigned long long)cnt[OFFCPU_CNT_NO_STORAGE]);
	if (cnt[OFFCPU_CNT_UNPAIRED])
		fprintf(stderr, "offcpu:   %llu blocks lost: the thread blocked again before its "
			"switch-in was seen\n", (unsigned long long)cnt[OFFCPU_CNT_UNPAIRED]);
	if (cnt[OFFCPU_CNT_MISSED_OUT])
		fprintf(stderr, "offcpu:   %llu blocks lost: the kernel skipped offcpu's program when "
			"their thread blocked (another BPF program attaching to sched_switch?)\n",
			(unsigned long long)cnt[OFFCPU_CNT_MISSED_OUT]);
	if (cnt[OFFCPU_CNT_FAULTS])
		fprintf(stderr, "offcpu:   (test) %llu switch-outs ignored on purpose\n",
			(unsigned long long)cnt[OFFCPU_CNT_FAULTS]);
	if (prog_misses)
		fprintf(stderr, "offcpu:   %llu context switches not seen: the kernel skipped the "
			"BPF program (recursion)\n", (unsigned long long)prog_misses);
	if (cnt[OFFCPU_CNT_FILTER_FULL])
		fprintf(stderr, "offcpu:   %llu child processes not followed: the process filter was full\n",
			(unsigned long long)cnt[OFFCPU_CNT_FILTER_FULL]);
	if (r->st.sideband_lost)
		fprintf(stderr, "offcpu:   %llu side-band records lost: buffers overran (raise -m)\n",
			(unsigned long long)r->st.sideband_lost);
	if (r->st.oncpu_lost)
		fprintf(stderr, "offcpu:   %llu on-CPU samples lost: buffers overran (raise -m)\n",
			(unsigned long long)r->st.oncpu_lost);
}

static int add_build_ids(struct record *r)
{
	uint8_t id[20];
	int n = maptab__write_build_ids(r->maps, r->w);

	if (n < 0)
		return n;
	if ((r->o.stacks & STACKS_KERNEL) || r->oncpu) {
		int len = kernel_build_id(id, sizeof(id));

		if (len > 0)
			return perf_writer__add_build_id(r->w, -1, true, id, (size_t)len,
							 "[kernel.kallsyms]");
	}
	return 0;
}

/* Start a file: events, host features, what already runs. */
static int begin_file(struct record *r)
{
	int err = output__begin(&r->out);

	if (err)
		return err;
	r->w = r->out.pipe ? perf_writer__new_pipe(r->out.fd) : perf_writer__new(r->out.fd);
	if (!r->w)
		return -errno;
	maptab__clear_marks(r->maps);
	err = declare_events(r);
	if (!err && r->out.dir) {
		uint64_t version = 1;

		err = perf_writer__set_feature(r->w, FEAT_DIR_FORMAT, &version, sizeof(version));
	}
	if (!r->o.overwrite) /* a snapshot synthesizes after its samples */
		err = err ?: synthesize(r);
	if (!err && r->out.pipe)
		err = perf_writer__flush(r->w); /* the reader gets attrs and side-band now */
	r->file_start_ns = now_ns();
	return err;
}

/*
 * End a file: what the buffers hold, the summed blocks (taken out of the map,
 * so the next file starts from zero), the losses since the last file, build
 * ids; then rename it into place.
 */
static int end_file(struct record *r)
{
	struct drain_ctx d = { .r = r };
	uint64_t cnt[OFFCPU_CNT_NR] = { 0 }, lost;
	long n;
	int err;

	/* overwritable buffers are read by the snapshot, never forward; the
	 * writer threads have drained theirs */
	err = r->o.overwrite || r->wt ? 0 : flush_round(r);
	if (err)
		return err;
	d.time = now_ns();
	n = collector__drain(r->coll, write_summed, &d);
	if (n < 0)
		return (int)n;
	collector__counters(r->coll, cnt);
	lost = cnt[OFFCPU_CNT_DROP_MAP_FULL] + cnt[OFFCPU_CNT_UNPAIRED] + cnt[OFFCPU_CNT_MISSED_OUT] +
	       cnt[OFFCPU_CNT_OUTPUT_FULL] + cnt[OFFCPU_CNT_NO_STORAGE] +
	       collector__prog_misses(r->coll);
	if (lost > r->lost_reported)
		err = write_lost_samples(r, lost - r->lost_reported, d.time);
	r->lost_reported = lost;
	err = err ?: add_build_ids(r);
	err = err ?: perf_writer__finish(r->w);
	err = err ?: output__commit(&r->out);
	if (!err) {
		r->files++;
		if (r->out.rotate && !r->o.quiet)
			fprintf(stderr, "offcpu: wrote %s\n", output__last(&r->out));
	}
	perf_writer__free(r->w);
	r->w = NULL;
	return err;
}

static bool switch_due(struct record *r)
{
	if (!r->out.rotate)
		return false;
	if (r->o.switch_signal && switch_requested)
		return true;
	if (r->o.switch_bytes && perf_writer__data_size(r->w) >= r->o.switch_bytes)
		return true;
	return r->o.switch_ns && now_ns() - r->file_start_ns >= r->o.switch_ns;
}

static int main_loop(struct record *r)
{
	/* with writer threads, the buffers are theirs: this loop only waits */
	size_t nsb = r->wt ? 0 : perf_rings__nr_fds(r->sb);
	size_t non = r->oncpu && !r->wt ? perf_rings__nr_fds(r->oncpu) : 0;
	size_t npid = r->have_workload ? 1 : r->o.nr_pids, nfd = nsb + non + 1 + npid, i;
	struct pollfd *pfds = calloc(nfd, sizeof(*pfds));
	uint64_t deadline = r->o.duration_ns ? now_ns() + r->o.duration_ns : 0;
	int err = 0;

	if (!pfds)
		return -ENOMEM;
	for (i = 0; i < nfd; i++)
		pfds[i].events = POLLIN;
	for (i = 0; i < nsb; i++)
		pfds[i].fd = perf_rings__fd(r->sb, i);
	for (i = 0; i < non; i++)
		pfds[nsb + i].fd = perf_rings__fd(r->oncpu, i);
	pfds[nsb + non].fd = r->wt ? -1 : collector__events_fd(r->coll);
	for (i = 0; i < npid; i++)
		pfds[nsb + non + 1 + i].fd = r->have_workload ? r->wl.pidfd : pidfd_for(r->o.pids[i]);
	while (!stop_signal) {
		int timeout = 100;

		if (deadline) {
			uint64_t now = now_ns();

			if (now >= deadline)
				break;
			if ((deadline - now) / 1000000 < (uint64_t)timeout)
				timeout = (int)((deadline - now) / 1000000) + 1;
		}
		if (poll(pfds, nfd, timeout) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		err = r->wt ? 0 : flush_round(r);
		if (err)
			break;
		if (targets_gone(r, pfds, nsb + non + 1))
			break;
		if (switch_due(r)) {
			switch_requested = 0;
			err = end_file(r);
			err = err ?: begin_file(r);
			if (err)
				break;
		}
	}
	if (!r->have_workload)
		for (i = 0; i < npid; i++)
			if (pfds[nsb + non + 1 + i].fd >= 0)
				close(pfds[nsb + non + 1 + i].fd);
	free(pfds);
	return err;
}

/* --threads: writer threads, each with a share of the cpus' buffers */

struct writer_thread {
	struct record *r;
	int idx, nr_threads;
	pthread_t th;
	struct perf_writer *w;
	struct perf_queue batch;
	struct sink sink; /* into this thread's batch */
	struct intset yes, no; /* processes known to be followed, or not */
	int err;
	bool started, joined;
};

/*
 * Side-band is kept whole (what a FORK on another thread's cpu made
 * followed is not known here); on-CPU samples are kept for the processes
 * the collector follows, asked once per process.
 */
static bool tkeeps_sample(struct writer_thread *t, const struct perf_event_header *h)
{
	struct record *r = t->r;
	struct perf_sample s;
	const char *why;
	bool yes;

	if (h->type != PERF_RECORD_SAMPLE)
		return true;
	if (perf_sample__parse(&r->oncpu_attr, h, &s, &why))
		return false;
	if (r->o.nr_tids)
		return intset__has(&r->tids, (int)s.tid);
	if (!r->filter)
		return true;
	if (intset__has(&t->yes, (int)s.pid))
		return true;
	if (intset__has(&t->no, (int)s.pid))
		return false;
	yes = collector__follows(r->coll, (int)s.pid);
	intset__add(yes ? &t->yes : &t->no, (int)s.pid);
	return yes;
}

static int thread_round(struct writer_thread *t)
{
	struct record *r = t->r;
	size_t i;
	long n = 0;
	int err = 0, kind;

	perf_queue__clear(&t->batch);
	for (i = t->idx; i < perf_rings__nr_fds(r->sb) && n >= 0; i += t->nr_threads)
		n = perf_rings__read_one(r->sb, i, push_sideband, &t->sink);
	for (i = t->idx; r->oncpu && i < perf_rings__nr_fds(r->oncpu) && n >= 0; i += t->nr_threads)
		n = perf_rings__read_one(r->oncpu, i, push_oncpu, &t->sink);
	if (n >= 0 && t->idx == 0)
		n = collector__consume(r->coll, push_stream, &t->sink);
	if (n < 0)
		return (int)n;
	perf_queue__sort(&t->batch);
	for (i = 0; i < t->batch.nr && !err; i++) {
		const struct perf_event_header *h = perf_queue__get(&t->batch, i, &kind);

		if (kind == SRC_ONCPU && !tkeeps_sample(t, h))
			continue;
		if (h->type == PERF_RECORD_LOST) {
			pthread_mutex_lock(&r->lock);
			if (kind == SRC_SIDEBAND)
				r->st.sideband_lost += *(const uint64_t *)((const char *)h + 16);
			else
				r->st.oncpu_lost += *(const uint64_t *)((const char *)h + 16);
			pthread_mutex_unlock(&r->lock);
		}
		if (h->type == PERF_RECORD_SAMPLE)
			perf_writer__note_time(t->w, t->batch.refs[i].time);
		pthread_mutex_lock(&r->lock);
		account(r, h, kind);
		pthread_mutex_unlock(&r->lock);
		err = write_record_to(r, t->w, h);
	}
	return err;
}

static void *thread_main(void *arg)
{
	struct writer_thread *t = arg;
	struct record *r = t->r;
	struct pollfd pfds[1024];
	size_t nfd = 0, i;

	for (i = t->idx; i < perf_rings__nr_fds(r->sb) && nfd < 1023; i += t->nr_threads)
		pfds[nfd++] = (struct pollfd){ perf_rings__fd(r->sb, i), POLLIN, 0 };
	for (i = t->idx; r->oncpu && i < perf_rings__nr_fds(r->oncpu) && nfd < 1023;
	     i += t->nr_threads)
		pfds[nfd++] = (struct pollfd){ perf_rings__fd(r->oncpu, i), POLLIN, 0 };
	if (t->idx == 0)
		pfds[nfd++] = (struct pollfd){ collector__events_fd(r->coll), POLLIN, 0 };
	while (!t->err && !__atomic_load_n(&r->threads_stop, __ATOMIC_ACQUIRE)) {
		poll(pfds, nfd, 100);
		t->err = thread_round(t);
	}
	if (!t->err) /* what arrived before the collector was detached */
		t->err = thread_round(t);
	return NULL;
}

static int start_threads(struct record *r)
{
	int n = r->o.threads > 0 ? r->o.threads : (int)perf_rings__nr_fds(r->sb), i, fd;

	if (n > (int)perf_rings__nr_fds(r->sb))
		n = (int)perf_rings__nr_fds(r->sb);
	r->o.threads = n;
	r->wt = calloc((size_t)n, sizeof(*r->wt));
	if (!r->wt)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct writer_thread *t = &r->wt[i];

		t->r = r;
		t->idx = i;
		t->nr_threads = n;
		t->sink = (struct sink){ r, &t->batch, true };
		fd = output__open_stream(&r->out, i);
		if (fd < 0)
			return fd;
		t->w = perf_writer__new_stream(fd);
		if (!t->w) {
			close(fd);
			return -ENOMEM;
		}
		if (pthread_create(&t->th, NULL, thread_main, t)) {
			perf_writer__free(t->w);
			t->w = NULL;
			close(fd);
			return -EAGAIN;
		}
		t->started = true;
	}
	return 0;
}

/* Stop the writers once the collector is detached; fold their time ranges in. */
static int stop_threads(struct record *r)
{
	int i, err = 0;

	if (!r->wt)
		return 0;
	__atomic_store_n(&r->threads_stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < r->o.threads; i++) {
		struct writer_thread *t = &r->wt[i];
		uint64_t first, last;

		if (!t->started)
			continue;
		pthread_join(t->th, NULL);
		t->joined = true;
		err = err ?: t->err;
		err = err ?: perf_writer__finish(t->w);
		perf_writer__time_range(t->w, &first, &last);
		if (last) {
			perf_writer__note_time(r->w, first);
			perf_writer__note_time(r->w, last);
		}
	}
	return err;
}

static void free_threads(struct record *r)
{
	int i;

	if (!r->wt)
		return;
	__atomic_store_n(&r->threads_stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < r->o.threads; i++) {
		if (r->wt[i].started && !r->wt[i].joined)
			pthread_join(r->wt[i].th, NULL);
		perf_queue__free(&r->wt[i].batch);
		intset__free(&r->wt[i].yes);
		intset__free(&r->wt[i].no);
		perf_writer__free(r->wt[i].w);
	}
	free(r->wt);
	r->wt = NULL;
}

/* flight recorder */

static int push_bpf_output(const struct perf_event_header *h, void *arg)
{
	struct sink *k = arg;
	struct perf_sample s;
	const char *why;

	if (h->type != PERF_RECORD_SAMPLE || perf_sample__parse(&k->r->bpf_out_attr, h, &s, &why) ||
	    s.raw_size < sizeof(struct offcpu_event))
		return 0;
	return push_stream(s.raw, k);
}

static int open_bpf_output(struct record *r, struct collector_opts *co)
{
	struct perf_event_attr *a = &r->bpf_out_attr;
	int *cpus = NULL, *fds;
	size_t nr = 0, i;
	int err = online_cpus(&cpus, &nr);

	if (err)
		return err;
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_BPF_OUTPUT;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_RAW;
	a->wakeup_events = 1 << 30; /* nobody waits on these */
	r->bpf_out = perf_rings__open_overwrite(a, cpus, nr, r->o.mmap_pages * 4, "BPF output");
	if (!r->bpf_out) {
		free(cpus);
		return -errno;
	}
	fds = malloc(nr * sizeof(*fds));
	if (!fds) {
		free(cpus);
		return -ENOMEM;
	}
	for (i = 0; i < nr; i++)
		fds[i] = perf_rings__fd(r->bpf_out, i);
	co->output_fds = fds;
	co->output_cpus = cpus;
	co->nr_output_fds = nr;
	return 0;
}

/*
 * Write what the overwritable buffers hold and is newer than the last
 * snapshot, then the /proc state that symbolizes it (after the samples, as
 * perf does; timestamped 0, so readers order it first).
 */
static int snapshot(struct record *r)
{
	struct sink k = { r, &r->batch, false };
	uint64_t newest = r->snap_last;
	size_t i;
	long n;
	int err, kind;

	perf_queue__clear(&r->batch);
	n = perf_rings__snapshot(r->sb, push_sideband, &k);
	if (n >= 0 && r->oncpu)
		n = perf_rings__snapshot(r->oncpu, push_oncpu, &k);
	if (n >= 0)
		n = perf_rings__snapshot(r->bpf_out, push_bpf_output, &k);
	if (n < 0)
		return (int)n;
	perf_queue__sort(&r->batch);
	err = begin_file(r);
	for (i = 0; i < r->batch.nr && !err; i++) {
		const struct perf_event_header *h = perf_queue__get(&r->batch, i, &kind);
		uint64_t t = r->batch.refs[i].time;

		if (t <= r->snap_last && t != 0)
			continue; /* already in an earlier snapshot */
		err = write_batched(r, h, kind, t);
		if (err > 0 && t > newest)
			newest = t;
		err = err < 0 ? err : 0;
	}
	err = err ?: synthesize(r);
	err = err ?: end_file(r);
	r->snap_last = newest;
	return err;
}

static int armed_loop(struct record *r)
{
	struct pollfd pfd = { .fd = r->have_workload ? r->wl.pidfd : -1, .events = POLLIN };
	uint64_t deadline = r->o.duration_ns ? now_ns() + r->o.duration_ns : 0;
	int err = 0;

	if (!r->o.quiet)
		fprintf(stderr, "offcpu: flight recorder armed: SIGUSR2 (kill -USR2 %d) writes a "
			"snapshot, Ctrl-C a last one\n", (int)getpid());
	while (!stop_signal) {
		int timeout = 1000; /* reads nothing while armed: only waits */

		if (deadline) {
			uint64_t now = now_ns();

			if (now >= deadline)
				break;
			if ((deadline - now) / 1000000 < (uint64_t)timeout)
				timeout = (int)((deadline - now) / 1000000) + 1;
		}
		if (poll(&pfd, 1, timeout) < 0 && errno != EINTR)
			return -errno;
		if (switch_requested) {
			switch_requested = 0;
			err = snapshot(r);
			if (err)
				return err;
		}
		if (targets_gone(r, &pfd, 0))
			break;
	}
	return 0;
}

/* Bytes in the last file, or in all files of the last directory. */
static uint64_t output_size(struct record *r)
{
	const char *path = output__last(&r->out);
	char p[PATH_MAX];
	struct stat st;
	uint64_t total = 0;
	int i;

	if (r->out.pipe || stat(path, &st))
		return 0;
	if (!S_ISDIR(st.st_mode))
		return (uint64_t)st.st_size;
	snprintf(p, sizeof(p), "%s/data", path);
	if (stat(p, &st) == 0)
		total += (uint64_t)st.st_size;
	for (i = 0; i < r->o.threads; i++) {
		snprintf(p, sizeof(p), "%s/data.%d", path, i);
		if (stat(p, &st) == 0)
			total += (uint64_t)st.st_size;
	}
	return total;
}

static int finish(struct record *r)
{
	uint64_t cnt[OFFCPU_CNT_NR] = { 0 };
	int err;

	collector__detach(r->coll);
	err = stop_threads(r);
	if (err)
		return err;
	err = r->o.overwrite ? snapshot(r) : end_file(r);
	if (err)
		return err;
	collector__counters(r->coll, cnt);
	if (!r->o.quiet)
		print_summary(r, cnt, collector__prog_misses(r->coll), output_size(r));
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct argp argp = { record_options, record_parse, "[-- COMMAND [ARGS...]]", record_doc };
	struct record r = { .out.fd = -1 };
	struct collector_opts co = { 0 };
	struct sigaction sa = { 0 };
	int cgroup_fd = -1, err, argi;

	r.o.output = "offcpu.data";
	r.o.state_mask = OFFCPU_DEFAULT_STATES;
	r.o.mmap_pages = 128;
	r.o.thresh_ns = 500 * 1000000ULL;
	r.o.stacks = STACKS_USER;
	r.o.buffer_bytes = 4 << 20;
	r.o.transport = OFFCPU_TRANSPORT_RINGBUF;
	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, &argi, &r.o))
		return 2;

	if (!have_capabilities()) {
		pr_err("recording needs root, or the CAP_BPF and CAP_PERFMON capabilities");
		return 1;
	}
	if (r.o.btf_path ? access(r.o.btf_path, R_OK) : access("/sys/kernel/btf/vmlinux", R_OK)) {
		pr_err("kernel BTF not found at %s: offcpu needs a kernel built with "
		       "CONFIG_DEBUG_INFO_BTF=y (5.11 or newer), or --btf FILE",
		       r.o.btf_path ? r.o.btf_path : "/sys/kernel/btf/vmlinux");
		return 1;
	}

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (r.o.switch_signal)
		sigaction(SIGUSR2, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	r.out.base = r.o.output;
	r.out.pipe = r.o.pipe_output;
	r.out.rotate = r.o.switch_signal || r.o.switch_bytes || r.o.switch_ns;
	r.out.max_files = r.o.switch_max_files;
	r.out.dir = r.o.threads != 0;
	pthread_mutex_init(&r.lock, NULL);

	r.sample_type = OFFCPU_SAMPLE_TYPE | (r.o.all_cgroups ? PERF_SAMPLE_CGROUP : 0);
	r.maps = maptab__new();
	if (!r.maps) {
		err = -ENOMEM;
		goto out;
	}
	err = setup_targets(&r, &co, &cgroup_fd);
	if (err)
		goto out;
	r.sb = sideband__open(r.o.mmap_pages, r.o.all_cgroups, r.o.overwrite);
	if (!r.sb) {
		err = -errno;
		goto out;
	}
	{
		const uint64_t *ids;

		perf_rings__ids(r.sb, &ids);
		r.sideband_id = ids[0];
	}
	err = sideband__private_id(&r.offcpu_id);
	if (err) {
		pr_err("failed to open a BPF output event: %s", strerror(-err));
		goto out;
	}
	if (r.o.freq) {
		err = open_oncpu(&r, cgroup_fd);
		if (err)
			goto out;
	}
	if (r.o.overwrite) {
		co.transport = OFFCPU_TRANSPORT_PERFBUF;
		err = open_bpf_output(&r, &co);
		if (err) {
			pr_err("failed to open the flight recorder's buffers: %s", strerror(-err));
			goto out;
		}
	}
	r.coll = collector__open(&co);
	if (!r.coll) {
		err = -errno;
		goto out;
	}
	if (r.o.argc) {
		err = workload__prepare(&r.wl, r.o.argv);
		if (err) {
			pr_err("cannot start '%s': %s", r.o.argv[0], strerror(-err));
			goto out;
		}
		r.have_workload = true;
		intset__add(&r.tracked, r.wl.pid);
		if (!r.o.system_wide) {
			err = collector__add_workload(r.coll, r.wl.pid);
			if (err) {
				pr_err("cannot track process %d: %s", r.wl.pid, strerror(-err));
				goto out;
			}
		}
	}
	err = r.o.overwrite ? 0 : begin_file(&r);
	if (!err && r.out.dir)
		err = start_threads(&r);
	if (err) {
		pr_err("cannot write %s: %s", r.o.output, strerror(-err));
		goto out;
	}
	if (r.have_workload) {
		err = workload__start(&r.wl);
		if (err) {
			pr_err("cannot execute '%s': %s", r.o.argv[0], strerror(-err));
			goto out;
		}
		r.workload_started = true;
	}
	if (!r.o.quiet && !r.have_workload && !r.o.overwrite)
		fprintf(stderr, "offcpu: recording (%s); Ctrl-C to stop\n",
			collector__attach_kind(r.coll));
	if (collector__fallbacks(r.coll))
		fprintf(stderr, "offcpu: FALLBACK: %s\n", collector__fallbacks(r.coll));
	pr_info("attached with %s", collector__attach_kind(r.coll));

	err = r.o.overwrite ? armed_loop(&r) : main_loop(&r);
	if (!err)
		err = finish(&r);
	if (err == -EPIPE)
		pr_err("cannot write to standard output: the reader went away");
	else if (err)
		pr_err("cannot write %s: %s", r.o.pipe_output ? "the recording" : r.o.output,
		       strerror(-err));
out:
	if (r.have_workload && !workload__reap(&r.wl)) {
		/* stopped by a signal or an error while the command still runs */
		workload__kill(&r.wl, SIGTERM);
	} else if (r.have_workload) {
		workload__kill(&r.wl, 0);
	}
	if (r.have_workload && !err && r.wl.reaped && WIFEXITED(r.wl.status) &&
	    WEXITSTATUS(r.wl.status) && !r.o.quiet)
		fprintf(stderr, "offcpu: the command exited with status %d\n",
			WEXITSTATUS(r.wl.status));
	free_threads(&r);
	if (err)
		output__discard(&r.out);
	output__free(&r.out);
	perf_writer__free(r.w);
	collector__free(r.coll);
	perf_rings__free(r.sb);
	perf_rings__free(r.oncpu);
	perf_rings__free(r.bpf_out);
	free((void *)co.output_fds);
	free((void *)co.output_cpus);
	maptab__free(r.maps);
	intset__free(&r.tracked);
	intset__free(&r.tids);
	intset__free(&r.st.threads);
	perf_queue__free(&r.batch);
	free(r.o.pids);
	free(r.o.tids);
	free(r.o.cpus);
	if (cgroup_fd >= 0)
		close(cgroup_fd);
	return err ? 1 : 0;
}
