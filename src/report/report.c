// SPDX-License-Identifier: GPL-2.0
/*
 * offcpu report: read perf.data (offcpu's or perf's, file, pipe or directory
 * format) and show where the time went: a text table with call paths,
 * folded stacks, pprof, an SVG flame graph, JSON or a Perfetto trace.
 */
#include <argp.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "report.h"
#include "writeout.h"
#include "../offcpu.h"
#include "profile.h"
#include "resolve.h"
#include "perfetto.h"
#include "timeline.h"
#include "locks.h"
#include "critpath.h"
#include "unnamed.h"
#include "session.h"
#include "../util/outfile.h"
#include "../util/util.h"

enum {
	OPT_FOLDED = 256,
	OPT_PPROF,
	OPT_SVG,
	OPT_JSON,
	OPT_PID,
	OPT_TID,
	OPT_COMM,
	OPT_TIME,
	OPT_LINES,
	OPT_KALLSYMS,
	OPT_NO_DEMANGLE,
	OPT_TOP,
	OPT_WAKERS,
	OPT_STATES,
	OPT_NO_BEFORE,
	OPT_DEBUG_DIR,
	OPT_PERFETTO,
	OPT_TIMELINE,
	OPT_SRCLINE,
	OPT_LOCKS,
	OPT_FAIL_ON_DEADLOCK,
	OPT_CRITICAL_PATH,
};

struct report_opts {
	struct session_opts s;
	struct text_opts t;
	bool folded, json, states, wakers, srcline, critical_path, sorted;
	bool locks, fail_on_deadlock; /* --locks, --fail-on-deadlock (locks.h) */
	const char *pprof, *svg, *perfetto, *timeline;
	char *comm_buf;
};

static const struct argp_option report_options[] = {
	{ "input", 'i', "FILE", 0, "Read FILE (default offcpu.data; - for stdin; a directory "
				   "written by perf record --threads)", 0 },
	{ "force", 'f', 0, 0, "Read FILE even if another user (not root) owns it, or if a "
			      "directory's data.N streams are missing or duplicated", 0 },
	{ "sort", 's', "KEYS", 0, "Group by these keys: comm, pid, tid, dso, sym, state (the "
				  "state waited in: S, D, preempted, runqueue, T, I), waker (who woke "
				  "the wait, then who had woken the waker: 'writer <- [timer]'; [none] "
				  "when no wakeup was recorded; needs record --wakers), object (what it "
				  "waited on: 'mutex lk_mutex (app)', 'pipe:[1234]', 'socket TCP "
				  "127.0.0.1:5000 -> 127.0.0.1:80'; [none] when not recorded; record "
				  "--wait-objects), runtime (the innermost frame of a runtime's own code, "
				  "nearest the wait: a Python or JavaScript function, a JIT-compiled "
				  "method, a Go function outside Go's runtime; [none] when the stack has "
				  "none) (default comm,dso,sym)", 0 },
	{ "min-percent", 'm', "PCT", 0, "Hide entries below this share of their event", 0 },
	{ "top", OPT_TOP, "N", 0, "Show call paths for the N top entries (default 10)", 0 },
	{ "no-before", OPT_NO_BEFORE, 0, 0, "Leave out the threads waiting since before the "
					    "recording began and those still waiting at its end "
					    "(with what they wait on, whom for, and the deadlocks), "
					    "which the text output lists first (record -p of a "
					    "running process: offcpu-before)", 0 },
	{ 0, 0, 0, 0, "Outputs (the text table when none is given):", 1 },
	{ "folded", OPT_FOLDED, 0, 0, "Folded stacks on stdout: comm;outer;...;inner VALUE "
				      "(us off-CPU, samples otherwise)", 1 },
	{ "pprof", OPT_PPROF, "FILE", 0, "Write a gzipped pprof profile (go tool pprof, Pyroscope, Parca); - for stdout", 1 },
	{ "svg", OPT_SVG, "FILE", 0, "Write an interactive flame graph; - for stdout", 1 },
	{ "json", OPT_JSON, 0, 0, "JSON on stdout, one row per line", 1 },
	{ "perfetto", OPT_PERFETTO, "FILE", 0, "Write a Perfetto trace (ui.perfetto.dev: Open trace "
					       "file; trace_processor): a track per thread, each "
					       "block a slice at its real times with its state, "
					       "stack and waker, an arrow from each waking thread; "
					       "summed short blocks as counters; - for stdout", 1 },
	{ "timeline", OPT_TIMELINE, "FILE", 0, "Write an interactive timeline, one self-contained "
					       "HTML page: a lane per thread, each block at its "
					       "real times coloured by state, arrows from wakers, "
					       "click for stacks, shift-drag for a window's flame "
					       "graph; - for stdout", 1 },
	{ "locks", OPT_LOCKS, 0, 0, "What the waits waited on, one row per object, most waited on "
				    "first, instead of the table: its kind (mutex, condvar, rwlock, "
				    "futex, pipe, socket, file, eventfd, ...), name (a mutex's symbol, "
				    "a pipe's inode, a socket's addresses) and address, the time "
				    "waited, its waiters, and who held it (a mutex's owner, and the "
				    "function it was in) or was at its other end (a pipe's writer, a "
				    "socket's peer); needs record --wait-objects for all waits", 1 },
	{ "fail-on-deadlock", OPT_FAIL_ON_DEADLOCK, 0, 0, "Exit with status 3 when threads still "
							  "waiting at the end of the recording "
							  "wait on each other (a \"deadlock:\" line)",
	  1 },
	{ "wakers", OPT_WAKERS, 0, 0, "Folded, SVG and pprof stacks of waits go on with who woke "
				      "them, in BCC offwaketime's layout, which flamegraph.pl draws "
				      "with the waker on top: comm;wakee outer..inner;--;waker "
				      "inner..outer;waker;its waker... VALUE (us); needs record --wakers", 1 },
	{ "states", OPT_STATES, 0, 0, "Root each folded, SVG and pprof stack of a wait with the "
				      "state it waited in: [S], [D], [preempted], [runqueue], [T], [I] "
				      "([?]: not recorded)", 1 },
	{ "srcline", OPT_SRCLINE, 0, 0, "Folded stacks name each frame whose source is known "
					"NAME (FILE:LINE): Python functions at the line they are "
					"at, JavaScript functions with their script (NAME (SCRIPT)), "
					"and with --lines native ones", 1 },
	{ "critical-path", OPT_CRITICAL_PATH, 0, 0, "What the waits of the threads --tid, --pid or "
						    "--comm name (the roots; --time: a window) were "
						    "really waiting for: each instant charged to one "
						    "thread on the path through their wakers, with its "
						    "state and stack; a table, or --folded, --svg, "
						    "--pprof; record it with offcpu record "
						    "--critical-path", 1 },
	{ 0, 0, 0, 0, "Filters:", 2 },
	{ "event", 'e', "NAME", 0, "Only this event (e.g. offcpu-time, cpu-clock); folded, pprof and "
				   "svg show one event: this, else offcpu-time, else the first", 2 },
	{ "pid", OPT_PID, "PIDS", 0, "Only these processes (1,3-5)", 2 },
	{ "tid", OPT_TID, "TIDS", 0, "Only these threads", 2 },
	{ "comm", OPT_COMM, "NAMES", 0, "Only these commands (comma-separated)", 2 },
	{ "time", OPT_TIME, "START,END", 0, "Only samples in this time range (seconds, as perf "
					    "script prints them; either may be empty)", 2 },
	{ 0, 0, 0, 0, "Symbols:", 3 },
	{ "lines", OPT_LINES, 0, 0, "Source file and line, and inlined functions (libdw)", 3 },
	{ "kallsyms", OPT_KALLSYMS, "FILE", 0, "Kernel symbols from FILE (default /proc/kallsyms)", 3 },
	{ "debug-dir", OPT_DEBUG_DIR, "DIR", 0, "Look for separate debug files under DIR "
						"(DIR/.build-id/xx/yyyy.debug), then under "
						"/usr/lib/debug, then from debuginfod when "
						"DEBUGINFOD_URLS is set", 3 },
	{ "no-demangle", OPT_NO_DEMANGLE, 0, 0, "Show C++ and Rust names as they are in the binary", 3 },
	{ "verbose", 'v', 0, 0, "More messages", 4 },
	{ 0 },
};

static const char report_doc[] =
	"Show where the time in a perf.data file went.\n"
	"\n"
	"Reads files written by offcpu record or perf record, without root. Off-CPU\n"
	"events (offcpu-time) are shown as blocked time, sampling events as samples\n"
	"and share.\n"
	"\n"
	"Why a thread waited: each off-CPU sample keeps the state it waited in: S\n"
	"(asleep), D (uninterruptible), and with record --state SDR, preempted and\n"
	"runqueue (woken, then waiting for a CPU). With record --wakers it also keeps\n"
	"who woke it: a thread, or an interrupt ([timer], [irq], [softirq:NET_RX]),\n"
	"and who had woken that thread just before. --sort state and --sort waker\n"
	"group the table by them ([none]: no wakeup was recorded):\n"
	"  $ offcpu report -i app.data --sort comm,waker\n"
	"  #           ms        %  comm              waker\n"
	"         600.412   60.04%  app               writer <- [timer]\n"
	"         398.001   39.80%  app               [none]\n"
	"--wakers --folded puts the waker's stack above the wait's, after a \"--\"\n"
	"frame, in microseconds (flamegraph.pl draws the waker on top):\n"
	"  app;main;read;--;write;writer_loop;main;writer;[timer] 600412\n"
	"and --states roots each stack with its state: [S];app;main;read 600412\n"
	"\n"
	"Threads already waiting when the recording began (record -p of a stuck\n"
	"process) come first, longest wait first, each in the function of its own\n"
	"it waits in (its innermost frame outside libc, ld.so and the vDSO), with\n"
	"how long: before the recording (the offcpu-before event) and during it:\n"
	"  hang-alpha  1234/1240  S  waiting in hang_mutex_alpha for at least 47.213 s\n"
	"    (since 14:02:07, 45.213 s before the recording; still waiting at its end)\n"
	"Their time before the recording is in no total, table or flame graph:\n"
	"--event offcpu-before shows it as an event of its own.\n"
	"\n"
	"What the waits waited on (record --wait-objects): --locks lists each object\n"
	"(a mutex by its symbol, a pipe, a socket with its addresses), the time\n"
	"waited, its waiters and who held it, in which function:\n"
	"       802.084        2  mutex      lk_mutex (app) at 0x55a11e26e1e0 in process 22093\n"
	"      waiters: lk-waiter1/22096 400.2 ms, lk-waiter2/22097 401.9 ms\n"
	"      held by: lk-holder/22095 in sleep_ms <- lk_hold_mutex <- holder\n"
	"The threads still waiting when the recording ended (record -p of a hung\n"
	"process; no option needed) come first, each with what it waits on and whom\n"
	"for, followed as a chain; threads that wait on each other are a deadlock:\n"
	"  deadlock: a/12 in f (stack: ...) waits on mutex m1 (app), held by b/13;\n"
	"  b/13 in g (stack: ...) waits on mutex m2 (app), held by a/12\n"
	"(one line); --fail-on-deadlock exits 3 then.\n"
	"\n"
	"Examples:\n"
	"  offcpu report -i app.data\n"
	"  offcpu report -i app.data --sort comm,tid\n"
	"  offcpu report -i app.data --sort comm,state\n"
	"  offcpu report -i app.data --sort waker --comm app\n"
	"  offcpu report -i app.data --wakers --states --svg why.svg\n"
	"  offcpu report -i app.data --wakers --folded | flamegraph.pl > why.svg\n"
	"  offcpu report -i app.data --folded | flamegraph.pl --countname=us > app.svg\n"
	"  offcpu report -i app.data --svg app.svg --pprof app.pb.gz\n"
	"  offcpu report -i app.data --perfetto app.pftrace   # then ui.perfetto.dev\n"
	"  offcpu report -i app.data --timeline app.html      # open it offline\n"
	"  offcpu report -i app.data --locks                  # record --wait-objects\n"
	"  offcpu report -i hung.data --fail-on-deadlock\n"
	"  offcpu report -i app.data --critical-path --comm request";

static int parse_sort(struct text_opts *o, const char *arg)
{
	static const char *names[] = { "comm", "pid", "tid", "dso", "sym", "state", "waker",
				       "object", "runtime" };
	char *copy = strdup(arg), *tok, *save = NULL;
	int err = 0;
	size_t k;

	if (!copy)
		return -ENOMEM;
	o->nr_keys = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (k = 0; k < SORT_NR && strcmp(tok, names[k]); k++)
			;
		if (k == SORT_NR && !strcmp(tok, "symbol"))
			k = SORT_SYM;
		if (k == SORT_NR) {
			err = -EINVAL;
			break;
		}
		if (o->nr_keys < ARRAY_SIZE(o->keys))
			o->keys[o->nr_keys++] = (int)k;
	}
	free(copy);
	return err ? err : (o->nr_keys ? 0 : -EINVAL);
}

static int parse_time(struct session_opts *s, const char *arg)
{
	const char *comma = strchr(arg, ',');
	char *end;
	double a = 0, b = INFINITY;

	if (!comma)
		return -EINVAL;
	if (comma != arg) {
		a = strtod(arg, &end);
		if (end != comma || a < 0)
			return -EINVAL;
	}
	if (comma[1]) {
		b = strtod(comma + 1, &end);
		if (*end || b < a)
			return -EINVAL;
	}
	s->time_filter = true;
	s->time_start = (uint64_t)(a * 1e9 + 0.5);
	s->time_end = isinf(b) ? UINT64_MAX : (uint64_t)(b * 1e9 + 0.5);
	return 0;
}

static int parse_comms(struct report_opts *o, const char *arg)
{
	char *p, *save = NULL, *tok;

	free(o->comm_buf);
	free(o->s.comms);
	o->s.comms = NULL;
	o->s.nr_comms = 0;
	o->comm_buf = strdup(arg);
	if (!o->comm_buf)
		return -ENOMEM;
	for (p = o->comm_buf; (tok = strtok_r(p, ",", &save)); p = NULL) {
		char **n = realloc(o->s.comms, (o->s.nr_comms + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		o->s.comms = n;
		n[o->s.nr_comms++] = tok;
	}
	return o->s.nr_comms ? 0 : -EINVAL;
}

static error_t report_parse(int key, char *arg, struct argp_state *st)
{
	struct report_opts *o = st->input;
	char *end;
	int err;

	switch (key) {
	case 'i':
		o->s.input = arg;
		break;
	case 'f':
		o->s.force = true;
		break;
	case 's':
		o->sorted = true;
		err = parse_sort(&o->t, arg);
		if (err)
			argp_error(st, "invalid sort keys '%s' (comm, pid, tid, dso, sym, state, waker, "
				   "object, runtime)", arg);
		break;
	case OPT_WAKERS:
		o->wakers = true;
		break;
	case OPT_LOCKS:
		o->locks = true;
		break;
	case OPT_FAIL_ON_DEADLOCK:
		o->fail_on_deadlock = true;
		break;
	case OPT_STATES:
		o->states = true;
		break;
	case OPT_SRCLINE:
		o->srcline = true;
		break;
	case OPT_NO_BEFORE:
		o->t.no_before = true;
		break;
	case 'e':
		o->s.event = arg;
		break;
	case 'm':
		o->t.min_percent = strtod(arg, &end);
		if (*end || !(o->t.min_percent >= 0 && o->t.min_percent <= 100))
			argp_error(st, "invalid --min-percent '%s'", arg);
		break;
	case OPT_TOP:
		o->t.top = (int)strtol(arg, &end, 10);
		if (*end || o->t.top < 0)
			argp_error(st, "invalid --top '%s'", arg);
		break;
	case OPT_FOLDED:
		o->folded = true;
		break;
	case OPT_JSON:
		o->json = true;
		break;
	case OPT_PPROF:
		o->pprof = arg;
		break;
	case OPT_SVG:
		o->svg = arg;
		break;
	case OPT_PERFETTO:
		o->perfetto = arg;
		break;
	case OPT_TIMELINE:
		o->timeline = arg;
		break;
	case OPT_CRITICAL_PATH:
		o->critical_path = true;
		break;
	case OPT_PID:
		if (parse_int_list(arg, &o->s.pids, &o->s.nr_pids))
			argp_error(st, "invalid --pid '%s'", arg);
		break;
	case OPT_TID:
		if (parse_int_list(arg, &o->s.tids, &o->s.nr_tids))
			argp_error(st, "invalid --tid '%s'", arg);
		break;
	case OPT_COMM:
		if (parse_comms(o, arg))
			argp_error(st, "invalid --comm '%s'", arg);
		break;
	case OPT_TIME:
		if (parse_time(&o->s, arg))
			argp_error(st, "invalid --time '%s' (START,END in seconds)", arg);
		break;
	case OPT_LINES:
		o->s.sym.lines = true;
		break;
	case OPT_KALLSYMS:
		o->s.sym.kallsyms = arg;
		break;
	case OPT_DEBUG_DIR:
		o->s.sym.debug_dir = arg;
		break;
	case OPT_NO_DEMANGLE:
		o->s.sym.demangle = false;
		break;
	case 'v':
		log_verbosity++;
		break;
	case ARGP_KEY_ARG:
		argp_error(st, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (o->srcline && !o->folded)
			argp_error(st, "--srcline names the frames of --folded: give --folded too");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/*
 * --perfetto: the trace is written as the session reads (perfetto.h), so its
 * file is made before the session, through outfile as --svg's, and
 * committed after it; discarded when either fails.
 */
struct trace_out {
	const char *path;
	struct outfile f;
	bool file;
	FILE *fp;
	struct perfetto *t;
};

static int trace_open(struct trace_out *o, const char *path, const struct profile *p)
{
	int err;

	o->path = path;
	if (!strcmp(path, "-")) {
		o->fp = stdout;
	} else {
		err = outfile__open(&o->f, path, OUTFILE_DEVICE, 0644);
		if (err) {
			pr_err("%s", o->f.msg);
			outfile__free(&o->f);
			return err;
		}
		o->file = true;
		o->fp = fdopen(o->f.fd, "w");
		if (!o->fp) {
			err = -errno;
			pr_err("cannot write %s: %s", path, strerror(-err));
			outfile__discard(&o->f);
			outfile__free(&o->f);
			o->file = false;
			return err;
		}
		o->f.fd = -1; /* fclose closes it */
	}
	o->t = perfetto__new(p, o->fp);
	if (!o->t) {
		pr_err("cannot write %s: %s", path, strerror(ENOMEM));
		if (o->file) {
			fclose(o->fp);
			outfile__discard(&o->f);
			outfile__free(&o->f);
			o->file = false;
		}
		return -ENOMEM;
	}
	return 0;
}

/* After the session (@ret its result): the trace finished and committed, or discarded. */
static int trace_close(struct trace_out *o, int ret)
{
	struct perfetto_stats st;
	int err = 0;

	if (!o->t)
		return ret;
	if (ret && perfetto__error(o->t))
		pr_err("cannot write %s: %s", o->path, strerror(-perfetto__error(o->t)));
	if (!ret) {
		err = perfetto__finish(o->t, &st);
		if (err)
			pr_err("cannot write %s: %s", o->path, strerror(-err));
		else
			pr_info("perfetto: %s: %llu threads, %llu slices, %llu wakeup arrows", o->path,
				(unsigned long long)st.threads, (unsigned long long)st.slices,
				(unsigned long long)st.flows);
	}
	perfetto__free(o->t);
	o->t = NULL;
	if (!o->file)
		return ret ?: err;
	errno = 0;
	if (fclose(o->fp) && !ret && !err) {
		err = errno ? -errno : -EIO;
		pr_err("cannot write %s: %s", o->path, strerror(-err));
	}
	if (ret || err) {
		outfile__discard(&o->f);
	} else {
		err = outfile__commit(&o->f);
		if (err)
			pr_err("%s", o->f.msg);
	}
	outfile__free(&o->f);
	return ret ?: err;
}

/* --critical-path: its own session and outputs (critpath.h); the exit status */
static int critical_path(const struct report_opts *o)
{
	struct critpath_report r = { .folded = o->folded, .svg = o->svg, .pprof = o->pprof,
				     .min_percent = o->t.min_percent };
	const char *other = o->json ? "--json" : o->perfetto ? "--perfetto" :
			    o->timeline ? "--timeline" : o->wakers ? "--wakers" :
			    o->states ? "--states" : o->sorted ? "--sort" :
			    o->locks ? "--locks" : o->fail_on_deadlock ? "--fail-on-deadlock" :
			    o->s.event ? "--event" : NULL;

	if (other) {
		pr_err("--critical-path and %s cannot be combined: give %s a report of its own",
		       other, other);
		return 2;
	}
	if (!o->s.nr_pids && !o->s.nr_tids && !o->s.nr_comms) {
		pr_err("--critical-path needs its roots: the threads whose waits it follows "
		       "(--tid, --pid or --comm)");
		return 2;
	}
	if ((!!o->folded + (o->svg && !strcmp(o->svg, "-")) + (o->pprof && !strcmp(o->pprof, "-"))) > 1) {
		pr_err("two outputs would both write to standard output: give --svg and --pprof files");
		return 2;
	}
	return critpath__report(&o->s, &r) ? 1 : 0;
}

int cmd_report(int argc, char **argv)
{
	struct argp argp = { report_options, report_parse, NULL, report_doc };
	struct report_opts o = { 0 };
	struct debuginfo_stats dstats = { 0 };
	struct trace_out trace = { 0 };
	struct sample_consumer *more[3];
	struct timeline *tl = NULL;
	struct locks locks;
	int deadlocks = 0;
	size_t nr_more = 0;
	struct profile p;
	int ret, ev = -1;
	bool sort_states = false, sort_wakers = false, sort_sym = false;
	size_t i;

	o.s.input = "offcpu.data";
	o.s.sym.demangle = true;
	o.t.keys[0] = SORT_COMM;
	o.t.keys[1] = SORT_DSO;
	o.t.keys[2] = SORT_SYM;
	o.t.nr_keys = 3;
	o.t.top = 10;
	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, &o))
		return 2;
	o.s.progress = isatty(2) && log_verbosity >= 0;
	o.s.sym.debuginfod = &dstats;
	if (o.perfetto && !strcmp(o.perfetto, "-") &&
	    (o.folded || o.json || (o.svg && !strcmp(o.svg, "-")) ||
	     (o.pprof && !strcmp(o.pprof, "-")))) {
		pr_err("--perfetto - and another output would both write to standard output: "
		       "give --perfetto a file");
		return 2;
	}
	if (o.timeline && !strcmp(o.timeline, "-") &&
	    (o.folded || o.json || (o.svg && !strcmp(o.svg, "-")) ||
	     (o.pprof && !strcmp(o.pprof, "-")) || (o.perfetto && !strcmp(o.perfetto, "-")))) {
		pr_err("--timeline - and another output would both write to standard output: "
		       "give --timeline a file");
		return 2;
	}
	if (o.critical_path)
		return critical_path(&o);
	if (o.perfetto) {
		/* the profile is initialised by the session; the trace only keeps its address */
		ret = trace_open(&trace, o.perfetto, &p);
		if (ret)
			return 1;
		more[nr_more++] = perfetto__consumer(trace.t);
	}
	if (o.timeline) {
		tl = timeline__new(&p);
		if (!tl) {
			pr_err("cannot write %s: %s", o.timeline, strerror(ENOMEM));
			trace_close(&trace, -ENOMEM);
			return 1;
		}
		more[nr_more++] = timeline__consumer(tl);
	}
	/* what the waits waited on: every wait for --locks, else the hang view's */
	locks__init(&locks, &p, o.locks);
	more[nr_more++] = &locks.c;
	ret = session__load_with(&o.s, &p, more, nr_more);
	for (i = 0; i < o.t.nr_keys; i++) {
		sort_states |= o.t.keys[i] == SORT_STATE;
		sort_wakers |= o.t.keys[i] == SORT_WAKER;
		sort_sym |= o.t.keys[i] == SORT_SYM;
	}
	/* refused, not shown as all "?" or "[none]": the file cannot answer */
	if (!ret && (o.wakers || sort_wakers) && !p.has_wakers) {
		pr_err("%s: %s needs who woke each wait, and this file has no offcpu-waker event: "
		       "record it with offcpu record --wakers", o.s.input,
		       o.wakers ? "--wakers" : "--sort waker");
		ret = -ENOENT;
	}
	if (!ret && (o.states || sort_states) && !p.has_states) {
		pr_err("%s: %s needs the state each thread waited in, and this file has no wait "
		       "states (its offcpu-time samples carry no weight): record it with offcpu 0.2 "
		       "or later; files of perf record or older offcpu versions do not have them",
		       o.s.input, o.states ? "--states" : "--sort state");
		ret = -ENOENT;
	}
	if (!ret && o.locks && !p.wait_samples) {
		pr_err("%s: --locks needs what each wait waited on, and this file has %s: record "
		       "it with offcpu record --wait-objects", o.s.input,
		       p.has_waits ? "no wait objects" : "no offcpu-wait event");
		ret = -ENOENT;
	}
	/* the trace and the timeline are kept only if the whole report can be made */
	ret = trace_close(&trace, ret);
	if (!ret && tl)
		ret = timeline__save(tl, o.timeline, o.s.input);
	timeline__free(tl);
	if (ret)
		goto out;
	p.show_states = o.states;
	p.show_wakers = o.wakers;
	p.show_srcline = o.srcline;
	if (o.folded || o.pprof || o.svg) {
		ev = profile__pick_event(&p, o.s.event);
		if (ev < 0) {
			ret = -ENOENT;
			goto out;
		}
	}
	if (o.folded && (ret = folded__write(&p, ev, stdout)))
		pr_err("cannot write folded stacks: %s", strerror(-ret));
	if (!ret && o.json && (ret = json__write(&p, stdout)))
		pr_err("cannot write json: %s", strerror(-ret));
	if (!ret && o.pprof)
		ret = write_output(&p, ev, o.pprof, o.s.input, false);
	if (!ret && o.svg)
		ret = write_output(&p, ev, o.svg, o.s.input, true);
	if (!ret && !o.folded && !o.json && !o.pprof && !o.svg && !o.perfetto && !o.timeline &&
	    !o.t.no_before && hang__any(&locks)) {
		deadlocks = hang__write(&locks, stdout);
		ret = deadlocks < 0 ? deadlocks : 0;
	} else if (!ret && o.fail_on_deadlock) {
		deadlocks = hang__write(&locks, NULL); /* counted, not shown */
		ret = deadlocks < 0 ? deadlocks : 0;
	}
	if (!ret && o.locks)
		ret = locks__write(&locks, stdout);
	else if (!ret && !o.folded && !o.json && !o.pprof && !o.svg && !o.perfetto &&
		 !o.timeline)
		ret = text__write(&p, &o.t, stdout);
	if (!ret && (fflush(stdout) || ferror(stdout))) {
		pr_err("cannot write the report: %s", strerror(errno));
		ret = -EIO;
	}
	if (!ret && (o.folded || o.json || o.pprof || o.svg || sort_sym))
		warn_unnamed(&p, &dstats);
out:
	locks__free(&locks);
	profile__free(&p);
	free(o.s.pids);
	free(o.s.tids);
	free(o.s.comms);
	free(o.comm_buf);
	if (!ret && o.fail_on_deadlock && deadlocks > 0) {
		pr_warn("%d deadlock%s among the threads waiting at the end", deadlocks,
			deadlocks == 1 ? "" : "s");
		return 3;
	}
	return ret ? 1 : 0;
}
