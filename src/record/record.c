// SPDX-License-Identifier: GPL-2.0
/*
 * offcpu record: choose targets, load the collector, and stream everything
 * into perf.data in time order: side-band, on-CPU samples and long blocks as
 * they happen, the summed short blocks when the recording ends.
 */
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "record.h"
#include "record_int.h"
#include "buildids.h"
#include "collector.h"
#include "options.h"
#include "output.h"
#include "rings.h"
#include "sideband.h"
#include "summary.h"
#include "synth.h"
#include "target.h"
#include "../perfdata/queue.h"
#include "../perfdata/writer.h"
#include "../perfdata/sample.h"
#include "../util/util.h"
#include "../util/intset.h"
#include <bpf/btf.h>
#include <bpf/libbpf.h>

static int setup_targets(struct record *r, struct collector_opts *co)
{
	struct record_opts *o = &r->o;
	char msg[512];
	int err = targets__init(&r->tg, o, msg, sizeof(msg));

	if (err) {
		pr_err("%s", msg);
		return err;
	}
	co->state_mask = o->state_mask;
	co->user_stacks = o->stacks & STACKS_USER;
	co->kernel_stacks = o->stacks & STACKS_KERNEL;
	co->verify_stacks = o->verify_stacks;
	co->wakers = o->wakers;
	co->wait_objects = o->wait_objects;
	co->iter_waits = true; /* cheap: once per thread waiting at the start or the end */
	co->record_cgroup = o->all_cgroups;
	co->follow_forks = r->tg.follow && !o->system_wide;
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
	co->cgroup_fd = r->tg.cgroup_fd;
	co->cgroup_id = r->tg.cgroup_id;
	co->cgroup_level = r->tg.cgroup_level;
	return 0;
}

/* --max-stacks pins kernel memory: at most a quarter of the machine's. */
static int check_stack_memory(const struct record_opts *o)
{
	uint64_t need = record_opts__stack_map_bytes(o);
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	uint64_t total = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
	char a[32], b[32];

	if (!total || need <= total / 4)
		return 0;
	fmt_size(need, a, sizeof(a));
	fmt_size(total, b, sizeof(b));
	pr_err("--max-stacks %u would pin %s of kernel memory, more than a quarter of this "
	       "machine's %s: give a smaller one", o->max_entries, a, b);
	return -EINVAL;
}

/*
 * With unwind tables: load the running targets' tables now, before they
 * block, and serve the BPF program's requests from a thread (a workload's
 * at its exec, every other process when it first blocks).
 */
/* A process's mappings were loaded: its V8, if any, looked at before its first JavaScript block. */
static void on_load(void *arg, int tgid)
{
	v8__process(arg, (uint32_t)tgid);
}

static int start_unwinder(struct record *r)
{
	struct collector_unwind_maps m;
	char msg[256];
	size_t i;
	int err;

	if (!collector__unwind_maps(r->coll, &m))
		return 0;
	r->unw = unwinder__new(&m, r->o.verify_stacks, &stop_signal, msg, sizeof(msg));
	if (!r->unw) {
		pr_err("%s", msg);
		return -ENOMEM;
	}
	r->tables = true;
	unwinder__on_jit(r->unw, perfmap__process_cb, r->perfmap);
	if (r->v8)
		unwinder__on_load(r->unw, on_load, r->v8);
	for (i = 0; i < r->o.nr_pids; i++) {
		err = unwinder__add_process(r->unw, r->o.pids[i]);
		if (err && err != -ESRCH)
			pr_warn("cannot load the unwind tables of process %d: %s", r->o.pids[i],
				strerror(-err));
	}
	for (i = 0; i < r->o.nr_tids; i++) {
		int tgid = tid_to_tgid(r->o.tids[i]);

		if (tgid > 0)
			unwinder__add_process(r->unw, tgid);
	}
	err = unwinder__start(r->unw);
	if (err)
		pr_err("cannot start the unwind table loader: %s", strerror(-err));
	return err;
}

/*
 * The workload, held: at its exec (the program and its dynamic loader
 * mapped), then once the loader mapped its libraries, before they ran.
 */
static void load_held(void *arg, int pid)
{
	struct record *r = arg;
	int err = unwinder__add_process(r->unw, pid);

	if (err)
		pr_warn("cannot load the unwind tables of the command: %s", strerror(-err));
	python__detect(r->py, pid);
}

static int finish(struct record *r)
{
	uint64_t wcnt[OFFCPU_WAIT_CNT_NR];
	long n;
	int err;

	collector__detach(r->coll);
	/* blocks still under way end now: each a sample of its own ending then, in
	 * one file (what they wait on read while they still wait); summed, and
	 * drained with the rest, when writers or snapshots share the file */
	if (!r->end_ns)
		r->end_ns = now_ns();
	if (!r->o.overwrite && !r->wt) {
		n = flush_round_open_end(r, r->end_ns);
	} else {
		n = collector__open_blocks(r->coll, OFFCPU_OPEN_END, r->end_ns);
		waitstore__read_new(r->waits);
	}
	if (n < 0)
		pr_warn("cannot count the blocks under way at the end: %s", strerror((int)-n));
	unwinder__stop(r->unw);
	err = stop_threads(r);
	if (err)
		return err;
	err = r->o.overwrite ? snapshot(r) : end_file(r);
	if (err)
		return err;
	if (!r->o.quiet) {
		struct perfmap_stats pst;

		print_summary(r, output_size(r));
		python__summary(r->py, stderr);
		v8__summary(r->v8, stderr);
		if (collector__wait_counters(r->coll, wcnt) == 0)
			waitstore__summary(r->waits, wcnt, r->o.wait_objects, stderr);
		perfmap__stats(r->perfmap, &pst);
		summary__print_perfmap(stderr, &pst);
	}
	/* the last interval sent (or spooled) within a short deadline */
	if (r->push)
		push__stop(r->push);
	return 0;
}

/* What recording needs of this machine: root or the capabilities, BTF. 0, or the exit status. */
static int check_machine(const struct record_opts *o)
{
	if (check_stack_memory(o))
		return 2;
	if (!have_capabilities()) {
		pr_err("recording needs root, or the CAP_BPF and CAP_PERFMON capabilities");
		return 1;
	}
	if (o->btf_path ? access(o->btf_path, R_OK) : access("/sys/kernel/btf/vmlinux", R_OK)) {
		pr_err("kernel BTF not found at %s: offcpu needs a kernel built with "
		       "CONFIG_DEBUG_INFO_BTF=y (5.11 or newer), or --btf FILE",
		       o->btf_path ? o->btf_path : "/sys/kernel/btf/vmlinux");
		return 1;
	}
	if (o->btf_path) {
		libbpf_print_fn_t prev = libbpf_set_print(NULL); /* the error below says it */
		struct btf *btf = btf__parse(o->btf_path, NULL);
		int e = errno;

		libbpf_set_print(prev);
		errno = e;
		if (!btf) {
			pr_err("cannot read BTF from %s: %s", o->btf_path,
			       errno == EINVAL || errno > 4000 ? "not a BTF file or an ELF file with "
			       "a .BTF section" : strerror(errno));
			return 1;
		}
		btf__free(btf);
	}
	return 0;
}

/* The sources other than the BPF program: side-band, ids, on-CPU sampling, flight buffers. */
static int open_sources(struct record *r, struct collector_opts *co)
{
	char msg[640];
	const uint64_t *ids;
	int err;

	r->out.base = r->o.output;
	r->out.to_stdout = r->o.pipe_output;
	r->out.rotate = r->o.switch_signal || r->o.switch_bytes || r->o.switch_ns;
	r->out.max_files = r->o.switch_max_files;
	r->out.dir = r->o.threads != 0;
	if (r->o.push.url) {
		/* each interval's file into push's private directory, handed over once complete */
		r->push = push__start(&r->o.push, r->o.quiet);
		if (!r->push)
			return -EINVAL;
		r->out.base = push__output_base(r->push);
		r->out.hand_off = true;
	}
	pthread_mutex_init(&r->lock, NULL);
	/* the state of each wait rides in the weight (perfdata/wakers.h) */
	r->ev.sample_type = OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_WEIGHT |
			    (r->o.all_cgroups ? PERF_SAMPLE_CGROUP : 0) |
			    /* --wait-objects: the object's address, for perf script -F addr */
			    (r->o.wait_objects ? PERF_SAMPLE_ADDR : 0);
	r->maps = maptab__new();
	if (!r->maps)
		return -ENOMEM;
	err = setup_targets(r, co);
	if (err)
		return err;
	r->sb = sideband__open(r->o.mmap_pages, r->o.all_cgroups, r->o.overwrite, msg, sizeof(msg));
	if (!r->sb) {
		err = -errno;
		pr_err("%s", msg);
		return err;
	}
	perf_rings__ids(r->sb, &ids);
	r->ev.sideband_id = ids[0];
	err = sideband__private_id(&r->ev.offcpu_id);
	if (!err && r->o.wakers)
		err = sideband__private_id(&r->ev.waker_id);
	if (!err)
		err = sideband__private_id(&r->ev.wait_id);
	/* offcpu-before, if the stacks of threads blocked at the start are finished */
	if (!err && r->o.unwind == UNWIND_TABLES && (r->o.stacks & STACKS_USER))
		err = sideband__private_id(&r->ev.before_id);
	if (err) {
		pr_err("failed to open a BPF output event: %s", strerror(-err));
		return err;
	}
	if (r->o.freq && (err = open_oncpu(r, r->tg.cgroup_fd)))
		return err;
	if (r->o.overwrite) {
		co->transport = OFFCPU_TRANSPORT_PERFBUF;
		return open_bpf_output(r, co);
	}
	return 0;
}

/* The BPF program loaded, the stacks finished in user space, the tables, attached. */
static int load(struct record *r, struct collector_opts *co)
{
	struct stackstore_maps sm;
	char msg[640];
	int err;

	co->unwind_tables = r->o.unwind == UNWIND_TABLES && (r->o.stacks & STACKS_USER);
	co->unwind_rows = (uint32_t)(r->o.unwind_mem / sizeof(struct offcpu_unw_row));
	/* bench: OFFCPU_LATE_STACKS=0 leaves every stack to the BPF walk */
	co->user_space_stacks = co->unwind_tables && !test_hook_is(test_hook("LATE_STACKS"), "0");
	co->python_frames = r->o.python;
	co->js_frames = r->o.js;
	run_signals_hold(true);
	r->coll = collector__open(co, msg, sizeof(msg));
	run_signals_hold(false);
	if (!r->coll) {
		err = -errno;
		pr_err("%s", msg);
		return err;
	}
	r->py = python__new(r->coll);
	if (!r->py && errno)
		pr_warn("no Python frames: %s", strerror(errno));
	r->v8 = v8__new(r->coll);
	if (!r->v8 && errno)
		pr_warn("no JavaScript frames: %s", strerror(errno));
	r->perfmap = perfmap__new();
	r->named = named__new();
	collector__store_maps(r->coll, &sm);
	r->stacks = stackstore__new(&sm);
	if (!r->stacks) {
		pr_err("out of memory");
		return -ENOMEM;
	}
	r->waits = waitstore__new(collector__waits_fd(r->coll));
	if (!r->waits) {
		pr_err("out of memory");
		return -ENOMEM;
	}
	if (collector__snaps_fd(r->coll) >= 0) {
		r->us = userstacks__new(collector__snaps_fd(r->coll));
		if (r->us && r->py) /* threads blocked at the start: their Python frames too */
			userstacks__set_python(r->us, python__thread_frames, r->py);
		if (!r->us || userstacks__start(r->us)) {
			pr_warn("cannot finish stacks in user space (%s): threads blocked at the start "
				"keep unknown user stacks", strerror(errno ? errno : ENOMEM));
			userstacks__free(r->us);
			r->us = NULL;
		}
	}
	/* the running targets' unwind tables before the first block */
	err = start_unwinder(r);
	if (!err && (err = collector__attach(r->coll, msg, sizeof(msg))))
		pr_err("%s", msg);
	/* when the blocks under way at the start began: the clocks compared until then */
	if (!err && r->us)
		collector__calibrate(r->coll, true);
	return err;
}

/* The command, prepared to run (it waits for start()): followed from its exec. */
static int prepare_workload(struct record *r)
{
	int err;

	if (!r->o.argc)
		return 0;
	err = workload__prepare(&r->wl, r->o.argv, r->o.pipe_output);
	if (err) {
		pr_err("cannot start '%s': %s", r->o.argv[0], strerror(-err));
		return err;
	}
	r->have_workload = true;
	targets__track(&r->tg, r->wl.pid);
	if (!r->o.system_wide && (err = collector__add_workload(r->coll, r->wl.pid)))
		pr_err("cannot track process %d: %s", r->wl.pid, strerror(-err));
	return err;
}

/* Say why the run failed (at its start too: a reader of -o - gone before the first round). */
static void say_error(struct record *r, int err)
{
	if (err == -EPIPE)
		pr_err("cannot write to %s: the reader went away",
		       r->o.pipe_output ? "standard output" : r->o.output);
	else if (output__error(&r->out))
		pr_err("%s", output__error(&r->out));
	else
		pr_err("cannot write %s: %s", r->o.pipe_output ? "the recording" : r->o.output,
		       strerror(-err));
}

/*
 * Start: the first file (or none yet, armed), its writers, the command, and
 * the blocks already under way (their stacks read as they sleep).
 */
static int start(struct record *r)
{
	struct timespec ms = { 0, 1000000 };
	long n;
	int err = r->o.overwrite ? 0 : begin_file(r);

	if (!err && r->out.dir)
		err = start_threads(r);
	if (err) {
		say_error(r, err);
		return err;
	}
	if (r->have_workload) {
		r->workload_start_ns = now_ns();
		err = workload__start(&r->wl, r->unw ? load_held : NULL, r, &stop_signal);
		if (err) {
			pr_err("cannot execute '%s': %s", r->o.argv[0], strerror(-err));
			return err;
		}
		r->workload_started = true;
	}
	if (!r->o.quiet && !r->have_workload && !r->o.overwrite)
		fprintf(stderr, "offcpu: recording (%s); Ctrl-C to stop\n",
			collector__attach_kind(r->coll));
	if (collector__fallbacks(r->coll))
		fprintf(stderr, "offcpu: FALLBACK: %s\n", collector__fallbacks(r->coll));
	pr_info("attached with %s", collector__attach_kind(r->coll));
	if (collector__runq_source(r->coll))
		pr_info("run queue waits after wakeups split off from %s",
			collector__runq_source(r->coll));
	/* threads of the targets already blocked: their blocks count from now
	 * (a switch of ours first, at least, for the clocks to be compared) */
	if (r->us)
		nanosleep(&ms, NULL);
	r->start_ns = now_ns();
	n = collector__open_blocks(r->coll, OFFCPU_OPEN_START, r->start_ns);
	if (n < 0)
		pr_warn("cannot find the threads blocked at the start: %s; blocks under way "
			"now are not counted", strerror((int)-n));
	/* what they wait on, read while they still wait */
	waitstore__read_new(r->waits);
	if (!r->us)
		return 0;
	collector__calibrate(r->coll, false);
	/* their stacks read while they still sleep, and how long they have */
	userstacks__drain(r->us);
	if (r->w && !r->o.overwrite && (err = write_before_samples(r)))
		say_error(r, err);
	return err;
}

/* The command, ended if it still runs, and what became of it: the signal that killed it, or 0. */
static int end_workload(struct record *r, int err)
{
	if (!r->have_workload)
		return 0;
	if (!workload__reap(&r->wl)) {
		/* stopped by -d, a signal or an error while the command still runs */
		workload__kill(&r->wl, SIGTERM);
		if (r->workload_started && r->wl.signal_sent && !r->o.quiet)
			fprintf(stderr, "offcpu: the command (pid %d) was still running: offcpu sent it "
				"%s%s\n", r->wl.pid, r->wl.signal_sent == SIGKILL ? "SIGTERM, then "
				"SIGKILL (it did not exit within 2 s)" : "SIGTERM",
				!stop_signal && !err && r->o.duration_ns ? " at the end of -d" : "");
		return 0;
	}
	workload__kill(&r->wl, 0);
	if (!err && r->wl.reaped && WIFEXITED(r->wl.status) && WEXITSTATUS(r->wl.status) &&
	    !r->o.quiet)
		fprintf(stderr, "offcpu: the command exited with status %d\n",
			WEXITSTATUS(r->wl.status));
	/* a command that died of a signal on its own: said, and offcpu exits
	 * 128 + the signal, as a shell reports it (perf dies of it) */
	if (err || !r->wl.reaped || !WIFSIGNALED(r->wl.status) || !r->workload_started)
		return 0;
	fprintf(stderr, "offcpu: the command was killed by signal %d (%s)\n",
		WTERMSIG(r->wl.status), strsignal(WTERMSIG(r->wl.status)));
	return WTERMSIG(r->wl.status);
}

/* Everything the recording opened, in the reverse order; an unfinished file removed. */
static void teardown(struct record *r, struct collector_opts *co, int err)
{
	free_threads(r);
	if (err)
		output__discard(&r->out);
	output__free(&r->out);
	push__free(r->push); /* after the output: the files were in its directory */
	perf_writer__free(r->w);
	unwinder__free(r->unw);
	userstacks__free(r->us);
	stackstore__free(r->stacks);
	waitstore__free(r->waits);
	python__free(r->py);
	v8__free(r->v8);
	perfmap__free(r->perfmap);
	named__free(r->named);
	collector__free(r->coll);
	perf_rings__free(r->sb);
	perf_rings__free(r->oncpu);
	perf_rings__free(r->bpf_out);
	free((void *)co->output_fds);
	free((void *)co->output_cpus);
	maptab__free(r->maps);
	targets__free(&r->tg);
	intset__free(&r->st.threads);
	u64set__free(&r->st.stacks);
	perf_queue__free(&r->batch);
	record_opts__free(&r->o);
}

int cmd_record(int argc, char **argv)
{
	struct record r = { .out.fd = -1, .tg.cgroup_fd = -1, .self = (int)getpid() };
	struct collector_opts co = { 0 };
	int err, sig;

	/*
	 * Large blocks (tables, maps, read buffers) mapped on their own and given
	 * back when freed: glibc would otherwise raise this bound as they are
	 * freed and serve the next ones from its heaps, which keep what the
	 * recording no longer holds (perf maps of exited processes: 136 MiB
	 * resident beyond the 64 MiB they held at most).
	 */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	if (record_opts__parse(&r.o, argc, argv))
		return 2;
	err = check_machine(&r.o);
	if (err)
		return err;
	run_signals(r.o.switch_signal);
	err = open_sources(&r, &co);
	err = err ?: load(&r, &co);
	err = err ?: prepare_workload(&r);
	err = err ?: start(&r);
	if (!err) {
		err = r.o.overwrite ? armed_loop(&r) : main_loop(&r);
		err = err ?: finish(&r);
		if (err)
			say_error(&r, err);
	}
	sig = end_workload(&r, err);
	teardown(&r, &co, err);
	return err ? 1 : sig ? 128 + sig : 0;
}
