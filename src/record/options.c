// SPDX-License-Identifier: GPL-2.0
#include <argp.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "options.h"
#include "../util/util.h"

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
	OPT_UNWIND,
	OPT_UNWIND_MEM,
	OPT_NO_INHERIT,
	OPT_WAKERS,
	OPT_FLUSH,
	OPT_NO_PYTHON,
	OPT_NO_JS,
	OPT_WAIT_OBJECTS,
	OPT_CRITICAL_PATH,
	OPT_PUSH,
	OPT_PUSH_FORMAT,
	OPT_PUSH_INTERVAL,
	OPT_PUSH_BY,
	OPT_PUSH_LABEL,
	OPT_PUSH_TOKEN_FILE,
	OPT_PUSH_SPOOL,
	OPT_PUSH_SPOOL_SIZE,
	OPT_PUSH_TIMEOUT,
};

static const struct argp_option record_options[] = {
	{ 0, 0, 0, 0, "Targets (a command after --, or -p, -t, -a, -C, -G):", 1 },
	{ "pid", 'p', "PID[,PID...]", 0, "Record these processes (all their threads, the processes they forked before, and those they fork from now on) until they exit", 1 },
	{ "tid", 't', "TID[,TID...]", 0, "Record these threads only", 1 },
	{ "all-cpus", 'a', 0, 0, "Record every process on the system", 1 },
	{ "cpu", 'C', "CPU-LIST", 0, "Only blocks that begin on these CPUs, e.g. 0,2-3", 1 },
	{ "cgroup", 'G', "CGROUP", 0, "Only tasks in this cgroup v2 (path below the cgroup2 mount, or absolute)", 1 },
	{ "no-inherit", OPT_NO_INHERIT, 0, 0, "Do not follow the processes the command or -p processes fork, or forked before (their threads are always followed)", 1 },
	{ 0, 0, 0, 0, "What to record:", 2 },
	{ "off-cpu-thresh", OPT_THRESH, "MS", 0, "Blocks of at least MS milliseconds are written at once as their own sample, with their real time; shorter ones are summed in the kernel and written every --flush interval (default 500; 0 writes every block)", 2 },
	{ "flush", OPT_FLUSH, "TIME", 0, "Write the blocks summed in the kernel every TIME, as samples stamped with the end of that interval (default 1s; 0: once per file, at its end)", 2 },
	{ "stacks", OPT_STACKS, "user|kernel|both", 0, "Which call chains to record (default user)", 2 },
	{ "unwind", OPT_UNWIND, "tables|fp", 0, "How user stacks are walked: tables (default) unwinds from each object's .eh_frame, complete through code built without frame pointers (glibc, most distribution binaries), and by frame pointers only where no table is loaded yet, marked so; fp follows frame pointers only, as perf does (cheaper; stops where a frame pointer is missing)", 2 },
	{ "unwind-mem", OPT_UNWIND_MEM, "SIZE", 0, "Kernel memory for unwind tables, shared by all objects (default 32M: 4 million rows, what a parallel build running gcc and clang at once holds; objects no process uses are taken back to make room; those that still do not fit are walked by frame pointers, and the summary says so)", 2 },
	{ "state", OPT_STATE, "STATES", 0, "Task states to record: S (sleep), D (disk/uninterruptible), R (preempted, and the wait for a CPU after each wakeup, split off its block as 'runqueue'), T (stopped), I (idle); default S,D. Each sample keeps its state", 2 },
	{ "wakers", OPT_WAKERS, 0, 0, "Also record who woke each block: the waking thread and its stacks (--stacks), or the interrupt ([timer], [irq], [softirq:NET_RX], ...), and the chain of who woke the waker just before (up to 3 hops), as offcpu-waker samples", 2 },
	{ "wait-objects", OPT_WAIT_OBJECTS, 0, 0, "Also record what each block waits on, as offcpu-wait samples: for a futex (a mutex, condition variable, ...) its address and a glibc mutex's owner; for a file descriptor (read, write, recv, send, accept, poll, select, epoll) what it is: a pipe, a socket with its addresses, a file, an eventfd... (about 100-250 ns more per block; threads waiting at the start or the end of a recording of running processes get theirs without it). offcpu report --locks and --sort object show them", 2 },
	{ "critical-path", OPT_CRITICAL_PATH, 0, 0, "Record what offcpu report --critical-path follows: --wakers --state S,D,R --off-cpu-thresh 0 -F 999 (each block with its times, state and waker; preemptions and run queue waits; on-CPU samples for the running parts); options given explicitly win over these", 2 },
	{ "no-python", OPT_NO_PYTHON, 0, 0, "No Python frames: by default the user stacks of CPython 3.10 to 3.13 processes show each Python function (\"[py] QUALNAME (FILE:LINE)\", LINE the line it is at) inside the interpreter frame that runs it, its name taken while the process lives", 2 },
	{ "no-js", OPT_NO_JS, 0, 0, "No JavaScript frames: by default the user stacks of node processes whose V8 exports its frame layout (its v8dbg_* symbols) show each JavaScript function, interpreted or compiled (\"[js] NAME (SCRIPT)\"), in place of the V8 code that runs it, its name taken while the process lives (needs --unwind=tables)", 2 },
	{ "freq", 'F', "HZ", 0, "Also sample the targets on-CPU HZ times a second (event cpu-clock)", 2 },
	{ "event", 'e', "EVENT", 0, "cpu-clock: also sample on-CPU (at -F or 4000 Hz); offcpu-time: the default", 2 },
	{ "all-cgroups", OPT_ALL_CGROUPS, 0, 0, "Record each sample's cgroup (perf report --sort cgroup)", 2 },
	{ 0, 0, 0, 0, "Output:", 3 },
	{ "output", 'o', "FILE", 0, "Write to FILE (default offcpu.data; an existing one of yours is kept as FILE.old; a symlink or another user's file there is refused); - writes perf's pipe format to stdout, as does a fifo, and the command's own standard output then goes to standard error; a character device (/dev/null) is written in place", 3 },
	{ "duration", 'd', "SECONDS", 0, "Stop after this long (also 500ms, 2m); a command still running then is sent SIGTERM (the summary says so). Blocks still under way at the end are counted up to it", 3 },
	{ "switch-output", OPT_SWITCH_OUTPUT, "signal|SIZE|TIME", 0, "Write a series of files NAME.YYYYMMDDHHMMSScc: a new one on SIGUSR2 (signal), when one reaches SIZE (e.g. 100M), or every TIME (e.g. 30s); a last one at exit. A SIZE below what a file starts with (the processes' mappings) is raised to twice that, said", 3 },
	{ "switch-max-files", OPT_SWITCH_MAX_FILES, "N", 0, "With --switch-output, keep only the newest N files", 3 },
	{ "threads", OPT_THREADS, "N", OPTION_ARG_OPTIONAL, "Write perf's directory format: -o NAME makes directory NAME with NAME/data and NAME/data.0..N-1, each written by its own thread from its share of the CPUs' buffers (default N: one per CPU)", 3 },
	{ "overwrite", OPT_OVERWRITE, 0, 0, "Flight recorder: keep only the newest blocks and side-band in overwritable kernel buffers (-m sizes them), read nothing until SIGUSR2 writes them to NAME.YYYYMMDDHHMMSScc; a last file at exit. Implies --switch-output=signal and --off-cpu-thresh 0", 3 },
	{ "quiet", 'q', 0, 0, "No start line and no summary", 3 },
	{ 0, 0, 0, 0, "Buffers:", 4 },
	{ "max-stacks", OPT_MAX_STACKS, "N", 0, "Distinct stacks the kernel holds between two flushes, distinct contexts summed, and with --wakers distinct wakers (default 16384: about 20 MiB of kernel memory with user stacks, 37 MiB with both, 1.5 MiB more with --wakers; at most a quarter of the machine's memory). Stacks and wakers are taken out of the kernel's maps at every flush, so a long recording never fills them", 4 },
	{ "mmap-pages", 'm', "PAGES", 0, "Side-band and on-CPU buffer per CPU, in pages, a power of two (default 128)", 4 },
	{ "buffer-size", OPT_BUFFER, "SIZE", 0, "Buffer for blocks streamed at once, e.g. 512K, 8M (default 4M; a power of two)", 4 },
	{ "transport", OPT_TRANSPORT, "ringbuf|perfbuf", 0, "How streamed blocks reach offcpu (default ringbuf, see bench/)", 4 },
	{ 0, 0, 0, 0, "Environment:", 5 },
	{ "btf", OPT_BTF, "FILE", 0, "Kernel BTF to use instead of /sys/kernel/btf/vmlinux", 5 },
	{ "raw-tp", OPT_RAW_TP, 0, 0, "Attach with raw_tp instead of tp_btf (the automatic fallback; user stacks only)", 5 },
	{ "verify-stacks", OPT_VERIFY_STACKS, 0, 0, "Self-check (slower): walk every stack also with the kernel's own helpers and count differences from offcpu's frame-pointer and ORC walks; with unwind tables, also unwind each table walk's stack copy with libdw's DWARF unwinder (as perf report does for --call-graph dwarf) and count differences", 5 },
	{ "verbose", 'v', 0, 0, "More messages (twice: debug, libbpf's log)", 5 },
	{ 0, 0, 0, 0, "Push to a profiling backend (doc/push.md):", 6 },
	{ "push", OPT_PUSH, "URL", 0, "Send each --push-interval's off-CPU profile, one for each process, to the profiling backend at URL (http:// or https://), until SIGTERM (or -d), instead of writing a file: OTLP profiles posted to URL/v1development/profiles, or Pyroscope's URL/ingest. With -a, -p or -G; each sample carries its thread, state and waker (with --wakers)", 6 },
	{ "push-format", OPT_PUSH_FORMAT, "otlp|pyroscope", 0, "otlp (default): OTLP profiles over HTTP, protobuf, gzip (an OpenTelemetry collector, Parca); pyroscope: pprof to Pyroscope's ingest API, labels in the application name", 6 },
	{ "push-interval", OPT_PUSH_INTERVAL, "TIME", 0, "How long each profile covers (default 60s; 1s to 1h)", 6 },
	{ "push-by", OPT_PUSH_BY, "process|cgroup", 0, "One profile for each process (default), or for each cgroup", 6 },
	{ "push-label", OPT_PUSH_LABEL, "KEY=VALUE", 0, "A label on every profile, besides host, service and container (repeatable)", 6 },
	{ "push-token-file", OPT_PUSH_TOKEN_FILE, "FILE", 0, "Send the token in FILE as Authorization: Bearer (root's file, not writable by others; read again for each request)", 6 },
	{ "push-spool", OPT_PUSH_SPOOL, "DIR", 0, "Keep the profiles the backend did not take in DIR (made 0700 if missing) and send them once it answers again, also after a restart; without it they wait in memory (a few intervals) and are dropped, each drop said", 6 },
	{ "push-spool-size", OPT_PUSH_SPOOL_SIZE, "SIZE", 0, "At most this much in --push-spool (default 256M): the oldest profiles are dropped first, each drop said", 6 },
	{ "push-timeout", OPT_PUSH_TIMEOUT, "TIME", 0, "The longest one request may take (default 10s); a backend that does not answer in time is tried again later", 6 },
	{ 0 },
};

static const char record_doc[] =
	"Record where threads block (off-CPU time) into a perf.data file.\n"
	"\n"
	"At every context switch a BPF program notes when a thread of the targets\n"
	"blocks, in which state and with which stack, and measures the block when the\n"
	"thread runs again. Blocks of at least --off-cpu-thresh are written at once as\n"
	"samples with their real time; shorter ones are summed in the kernel and\n"
	"written every second (--flush). Blocks under way when the recording starts\n"
	"or ends count from the start or up to the end. The file opens in offcpu\n"
	"report, perf report and perf script; the event is named offcpu-time and each\n"
	"sample's period is the blocked time in nanoseconds.\n"
	"\n"
	"User stacks are unwound from each object's .eh_frame tables: complete\n"
	"through code built without frame pointers (glibc, most distribution\n"
	"binaries). Where no table is loaded yet the walk goes on by frame\n"
	"pointers, and a stack that is not complete ends in a frame that says why,\n"
	"e.g. [no unwind table: libfoo.so, frame pointers from there].\n"
	"\n"
	"Why a thread waited: each sample keeps the state it waited in (S, D, and with\n"
	"--state SDR: preempted, and runqueue, the wait for a CPU after its wakeup).\n"
	"--wakers also notes, at each wakeup of a recorded block, who woke it: a\n"
	"thread, with its stacks, or an interrupt ([timer], [irq], [softirq:NET_RX]);\n"
	"and when that thread had itself just been woken, who woke it (a chain).\n"
	"offcpu report --sort waker, --sort state and --wakers --folded show them.\n"
	"--wait-objects also notes what each block waits on: a futex's address (a\n"
	"mutex, with its owner) or what its file descriptor is (a pipe, a socket, a\n"
	"file); offcpu report --locks shows who held what. The threads still waiting\n"
	"at the end of a recording get theirs without it: their deadlocks are found.\n"
	"\n"
	"Examples:\n"
	"  offcpu record -o app.data -- ./app --flag    record a command until it exits\n"
	"  offcpu record -p 1234 -d 10                  attach to a process for 10 s\n"
	"  offcpu record -a -d 5 --stacks both          the whole system, with kernel stacks\n"
	"  offcpu record -F 999 -- ./app                off-CPU and on-CPU in one file\n"
	"  offcpu record -o - -- ./app | perf script -i -\n"
	"  offcpu record --unwind=fp -- ./app           frame pointers only (cheaper)\n"
	"  offcpu record --wakers --state SDR -- ./app  who woke each wait; preemption and run queue\n"
	"  offcpu record --wait-objects -- ./app        what each wait waited on (report --locks)\n"
	"  offcpu record --critical-path -- ./app       for offcpu report --critical-path\n"
	"  perf report -i app.data --stdio              read it with perf\n"
	"\n"
	"Needs root, or CAP_BPF and CAP_PERFMON, and a kernel with BTF: 5.15 or newer "
	"(tested on Debian 12's 6.1 and 6.12). Where a kernel refuses a piece of the "
	"program, only that piece falls back to the kernel's helpers, and a FALLBACK: line "
	"says so."
	"\vExit status: 0 when the file is complete, 1 on a runtime error, 2 on a usage error, "
	"128+N when the command was killed by signal N on its own (the file is complete).";

static int usage_error(struct argp_state *st, const char *fmt, const char *arg)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, arg);
	argp_error(st, "%s", msg); /* prints, then exits with argp_err_exit_status (2) */
	return EINVAL;
}

int parse_states(const char *s, uint32_t *mask)
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

int parse_size(const char *s, uint64_t *out)
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

int parse_record_duration(const char *s, uint64_t *ns)
{
	uint64_t v;

	/* past a year, a limit is a mistake (a unit missed, a wrong number), not a plan */
	if (parse_duration_ns(s, &v) || !v || v > MAX_DURATION_NS)
		return -EINVAL;
	*ns = v;
	return 0;
}

/* The first --push-* option, for the message when --push is missing. */
static void push_option_given(struct record_opts *o, const char *name)
{
	if (!o->push.first_other)
		o->push.first_other = name;
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
		if (!*arg)
			return usage_error(st, "empty cgroup name: give a path below the cgroup2 "
					   "mount (-a records everything)%s", "");
		o->cgroup = arg;
		break;
	case 'o':
		if (!*arg)
			return usage_error(st, "empty output file name%s", "");
		o->pipe_output = !strcmp(arg, "-");
		o->output = arg;
		o->output_given = true;
		break;
	case 'd':
		if (parse_record_duration(arg, &o->duration_ns))
			return usage_error(st, "invalid duration '%s' (more than 0, at most a year; "
					   "examples: 10, 1.5s, 500ms)", arg);
		break;
	case OPT_THRESH: {
		double ms;
		char *end;

		ms = strtod(arg, &end);
		if (!*arg || *end || !isfinite(ms) || ms < 0 || ms > 1e9)
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
		o->state_given = true;
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
	case OPT_NO_INHERIT:
		o->no_inherit = true;
		break;
	case OPT_NO_PYTHON:
		o->python = false;
		break;
	case OPT_NO_JS:
		o->js = false;
		break;
	case OPT_FLUSH:
		if (!strcmp(arg, "0"))
			o->flush_ns = 0;
		else if (parse_duration_ns(arg, &o->flush_ns) || o->flush_ns < 10000000ULL)
			return usage_error(st, "invalid --flush '%s' (a time of 10ms or more, e.g. 1s, "
					   "or 0)", arg);
		break;
	case OPT_MAX_STACKS:
		if (parse_u64(arg, &v) || v < 64 || v > (1u << 24))
			return usage_error(st, "invalid --max-stacks '%s' (64 to 16777216)", arg);
		o->max_entries = (uint32_t)v;
		break;
	case 'm':
		if (parse_u64(arg, &v) || v < 1 || v > (1u << 20) || (v & (v - 1)))
			return usage_error(st, "invalid --mmap-pages '%s' (a power of two from 1 to "
					   "1048576 pages)", arg);
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
	case OPT_UNWIND:
		if (!strcmp(arg, "tables"))
			o->unwind = UNWIND_TABLES;
		else if (!strcmp(arg, "fp"))
			o->unwind = UNWIND_FP;
		else
			return usage_error(st, "invalid --unwind '%s' (tables or fp)", arg);
		break;
	case OPT_UNWIND_MEM:
		if (parse_size(arg, &o->unwind_mem) || o->unwind_mem < (1 << 20) ||
		    o->unwind_mem > (uint64_t)OFFCPU_UNW_MAX_ROWS * sizeof(struct offcpu_unw_row))
			return usage_error(st, "invalid --unwind-mem '%s' (1M to 128M)", arg);
		break;
	case OPT_VERIFY_STACKS:
		o->verify_stacks = true;
		break;
	case OPT_WAKERS:
		o->wakers = true;
		break;
	case OPT_WAIT_OBJECTS:
		o->wait_objects = true;
		break;
	case OPT_CRITICAL_PATH:
		o->critical_path = true;
		break;
	case OPT_PUSH: {
		char msg[256];

		if (push_check_url(arg, msg, sizeof(msg)))
			return usage_error(st, "%s", msg);
		o->push.url = arg;
		break;
	}
	case OPT_PUSH_FORMAT:
		if (!strcmp(arg, "otlp"))
			o->push.format = PUSH_OTLP;
		else if (!strcmp(arg, "pyroscope"))
			o->push.format = PUSH_PYROSCOPE;
		else
			return usage_error(st, "invalid --push-format '%s' (otlp or pyroscope)", arg);
		push_option_given(o, "--push-format");
		break;
	case OPT_PUSH_INTERVAL:
		if (parse_duration_ns(arg, &o->push.interval_ns) ||
		    o->push.interval_ns < PUSH_MIN_INTERVAL_NS || o->push.interval_ns > PUSH_MAX_INTERVAL_NS)
			return usage_error(st, "invalid --push-interval '%s' (1s to 1h, e.g. 60s, 5m)", arg);
		push_option_given(o, "--push-interval");
		break;
	case OPT_PUSH_BY:
		if (!strcmp(arg, "process"))
			o->push.by = PUSH_BY_PROCESS;
		else if (!strcmp(arg, "cgroup"))
			o->push.by = PUSH_BY_CGROUP;
		else
			return usage_error(st, "invalid --push-by '%s' (process or cgroup)", arg);
		push_option_given(o, "--push-by");
		break;
	case OPT_PUSH_LABEL: {
		char msg[256];

		if (push_opts__add_label(&o->push, arg, msg, sizeof(msg)))
			return usage_error(st, "%s", msg);
		push_option_given(o, "--push-label");
		break;
	}
	case OPT_PUSH_TOKEN_FILE:
		if (!*arg)
			return usage_error(st, "empty --push-token-file%s", "");
		o->push.token_file = arg;
		push_option_given(o, "--push-token-file");
		break;
	case OPT_PUSH_SPOOL:
		if (!*arg)
			return usage_error(st, "empty --push-spool%s", "");
		o->push.spool_dir = arg;
		push_option_given(o, "--push-spool");
		break;
	case OPT_PUSH_SPOOL_SIZE:
		if (parse_size(arg, &o->push.spool_bytes) || o->push.spool_bytes < (1 << 20))
			return usage_error(st, "invalid --push-spool-size '%s' (1M to 1T, e.g. 256M)", arg);
		o->push.spool_bytes_given = true;
		push_option_given(o, "--push-spool-size");
		break;
	case OPT_PUSH_TIMEOUT:
		if (parse_duration_ns(arg, &o->push.timeout_ns) || o->push.timeout_ns < 100000000ULL ||
		    o->push.timeout_ns > 600ULL * 1000000000ULL)
			return usage_error(st, "invalid --push-timeout '%s' (100ms to 10m)", arg);
		push_option_given(o, "--push-timeout");
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
	case ARGP_KEY_END: {
		char msg[256];

		if (record_opts__validate(o, libbpf_num_possible_cpus(), isatty(STDOUT_FILENO), msg,
					  sizeof(msg)))
			return usage_error(st, "%s", msg);
		break;
	}
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

void record_opts__defaults(struct record_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->output = "offcpu.data";
	o->state_mask = OFFCPU_DEFAULT_STATES;
	o->mmap_pages = 128;
	o->thresh_ns = 500 * 1000000ULL;
	o->stacks = STACKS_USER;
	o->buffer_bytes = 4 << 20;
	o->transport = OFFCPU_TRANSPORT_RINGBUF;
	o->unwind = UNWIND_TABLES;
	o->unwind_mem = 32 << 20;
	o->flush_ns = 1000000000ULL;
	o->max_entries = 16384;
	o->python = true;
	o->js = true;
	push_opts__defaults(&o->push);
}

uint64_t record_opts__stack_map_bytes(const struct record_opts *o)
{
	/* a preallocated hash element: key, value and about 48 bytes of the map's own */
	uint64_t stack = 8 + OFFCPU_MAX_STACK_DEPTH * 8 + 48;
	uint64_t sum = sizeof(struct offcpu_key) + sizeof(struct offcpu_val) + 48;
	uint64_t wakeup = o->wakers ? 8 + sizeof(struct offcpu_wakeup) + 48 : 0;
	uint64_t wait = o->wait_objects ? 8 + sizeof(struct offcpu_wait) + 48 : 0;
	int maps = !!(o->stacks & STACKS_USER) + !!(o->stacks & STACKS_KERNEL);

	return (uint64_t)o->max_entries * (stack * (uint64_t)maps + 2 * sum + wakeup + wait);
}

int record_opts__parse(struct record_opts *o, int argc, char **argv)
{
	struct argp argp = { record_options, record_parse, "[-- COMMAND [ARGS...]]", record_doc };
	int argi;

	record_opts__defaults(o);
	argp_err_exit_status = 2;
	return argp_parse(&argp, argc, argv, ARGP_IN_ORDER, &argi, o) ? 2 : 0;
}

#define INVALID(...) (snprintf(msg, len, __VA_ARGS__), -EINVAL)

int record_opts__validate(struct record_opts *o, int nr_possible_cpus, bool stdout_tty, char *msg,
			  size_t len)
{
	bool switching = o->switch_signal || o->switch_bytes || o->switch_ns;

	if (o->push.first_other && !o->push.url)
		return INVALID("%s needs --push URL", o->push.first_other);
	if (o->push.url) {
		if (o->argc || o->nr_tids)
			return INVALID("--push profiles running processes: with -a, -p or -G, not a "
				       "command or -t");
		if (!o->system_wide && !o->nr_pids && !o->cgroup)
			return INVALID("--push needs -a, -p or -G");
		if (o->output_given)
			return INVALID("--push writes no file: not with -o");
		if (switching || o->switch_max_files || o->threads || o->overwrite)
			return INVALID("--push cuts its own intervals: not with --switch-output, "
				       "--switch-max-files, --threads or --overwrite");
		if (o->freq)
			return INVALID("--push sends off-CPU profiles only: not with -F or -e cpu-clock");
		if (o->critical_path)
			return INVALID("--critical-path records for a report of one file: not with --push");
		if (o->push.spool_bytes_given && !o->push.spool_dir)
			return INVALID("--push-spool-size needs --push-spool");
	}
	if (o->nr_pids && o->nr_tids)
		return INVALID("-p and -t cannot be combined");
	if (o->nr_cpus && nr_possible_cpus > 0 && o->cpus[o->nr_cpus - 1] >= nr_possible_cpus)
		return INVALID("invalid cpu %d in -C: this machine has cpus 0 to %d",
			       o->cpus[o->nr_cpus - 1], nr_possible_cpus - 1);
	if (o->argc && (o->nr_pids || o->nr_tids))
		return INVALID("a command cannot be combined with -p or -t");
	if (o->system_wide && (o->nr_pids || o->nr_tids))
		return INVALID("-a cannot be combined with -p or -t");
	if (!o->argc && !o->nr_pids && !o->nr_tids && !o->system_wide && !o->nr_cpus && !o->cgroup)
		return INVALID("no target: give a command after --, or -p, -t, -a, -C or -G");
	if (o->force_raw_tp && (o->stacks & STACKS_KERNEL))
		return INVALID("--raw-tp records user stacks only");
	if (o->force_raw_tp && o->wait_objects)
		return INVALID("--raw-tp reads no wait objects: --wait-objects needs tp_btf");
	if (o->switch_max_files && !switching)
		return INVALID("--switch-max-files needs --switch-output");
	if (o->threads && o->pipe_output)
		return INVALID("--threads writes a directory: it cannot be combined with -o -");
	if (o->threads && (o->overwrite || switching))
		return INVALID("--threads cannot be combined with --overwrite or --switch-output");
	if (o->overwrite && (o->switch_bytes || o->switch_ns))
		return INVALID("--overwrite writes on SIGUSR2 only: not with --switch-output=SIZE or "
			       "TIME");
	if (o->overwrite && !o->thresh_given)
		o->thresh_ns = 0; /* every block goes to the buffers, with its time */
	if (o->critical_path) { /* what the walk needs, where not chosen otherwise */
		o->wakers = true;
		if (!o->thresh_given)
			o->thresh_ns = 0;
		if (!o->state_given)
			o->state_mask = OFFCPU_DEFAULT_STATES | OFFCPU_STATE_MASK(OFFCPU_STATE_R);
		if (!o->freq)
			o->freq = CRITICAL_PATH_FREQ;
	}
	if (o->pipe_output && switching)
		return INVALID("--switch-output writes files: it cannot be combined with -o -");
	if (o->pipe_output && stdout_tty)
		return INVALID("-o - writes binary data: pipe it into a reader (e.g. | perf report -i -)");
	if (o->push.url) {
		/* each interval a file of its own, every sample with its cgroup (the service) */
		o->switch_ns = o->push.interval_ns;
		o->all_cgroups = true;
	}
	return 0;
}

void record_opts__free(struct record_opts *o)
{
	free(o->pids);
	free(o->tids);
	free(o->cpus);
	push_opts__free(&o->push);
	o->pids = o->tids = o->cpus = NULL;
	o->nr_pids = o->nr_tids = o->nr_cpus = 0;
}
