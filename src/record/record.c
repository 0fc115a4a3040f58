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

volatile sig_atomic_t stop_signal, switch_requested;

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM };
static bool switch_on_usr2;

static void on_signal(int sig)
{
	if (sig == SIGUSR2 && switch_on_usr2)
		switch_requested = 1;
	else
		stop_signal = sig;
}

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

int wait_ms(uint64_t deadline, int max)
{
	uint64_t now;

	if (!deadline)
		return max;
	now = now_ns();
	if (now >= deadline)
		return -1;
	if ((deadline - now) / 1000000 < (uint64_t)max)
		return (int)((deadline - now) / 1000000) + 1;
	return max;
}

uint64_t record_deadline(const struct record *r)
{
	return r->o.duration_ns ? r->start_ns + r->o.duration_ns : 0;
}

void record_ended(struct record *r)
{
	uint64_t deadline = record_deadline(r);

	r->end_ns = now_ns();
	if (deadline && r->end_ns > deadline)
		r->end_ns = deadline;
}

bool targets_gone(struct record *r, struct pollfd *pfds, size_t first_pidfd)
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

static int main_loop(struct record *r)
{
	/* with writer threads, the buffers are theirs: this loop only waits */
	size_t nsb = r->wt ? 0 : perf_rings__nr_fds(r->sb);
	size_t non = r->oncpu && !r->wt ? perf_rings__nr_fds(r->oncpu) : 0;
	size_t npid = r->have_workload ? 1 : r->o.nr_pids, nfd = nsb + non + 1 + npid, i;
	struct pollfd *pfds = calloc(nfd, sizeof(*pfds));
	uint64_t deadline = record_deadline(r);
	/* tests: read the buffers late, so that a small one surely overflows */
	const char *slow = getenv("OFFCPU_FAULT_SLOW_READ_MS");
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
		int timeout = wait_ms(deadline, 100);

		if (timeout < 0)
			break;
		/* wake for the next flush, so that its stamp is the interval's end */
		if (r->o.flush_ns && timeout > 0) {
			int f = wait_ms(r->next_flush_ns, timeout);

			timeout = f < 0 ? 0 : f;
		}
		if (poll(pfds, nfd, timeout) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (slow)
			usleep((useconds_t)atoi(slow) * 1000);
		err = flush_due_sums(r);
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
	record_ended(r);
	if (!r->have_workload)
		for (i = 0; i < npid; i++)
			if (pfds[nsb + non + 1 + i].fd >= 0)
				close(pfds[nsb + non + 1 + i].fd);
	free(pfds);
	return err;
}

/*
 * With unwind tables: load the running targets' tables now, before they
 * block, and serve the BPF program's requests from a thread (a workload's
 * at its exec, every other process when it first blocks).
 */
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
}

static int finish(struct record *r)
{
	long n;
	int err;

	collector__detach(r->coll);
	/* blocks still under way end now: summed, and drained with the rest */
	n = collector__open_blocks(r->coll, OFFCPU_OPEN_END, r->end_ns ?: now_ns());
	if (n < 0)
		pr_warn("cannot count the blocks under way at the end: %s", strerror((int)-n));
	unwinder__stop(r->unw);
	err = stop_threads(r);
	if (err)
		return err;
	err = r->o.overwrite ? snapshot(r) : end_file(r);
	if (err)
		return err;
	if (!r->o.quiet)
		print_summary(r, output_size(r));
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct record r = { .out.fd = -1, .tg.cgroup_fd = -1, .self = (int)getpid() };
	struct collector_opts co = { 0 };
	struct sigaction sa = { 0 };
	int err, workload_signal = 0;
	char msg[640];

	if (record_opts__parse(&r.o, argc, argv))
		return 2;

	if (check_stack_memory(&r.o))
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
	if (r.o.btf_path) {
		libbpf_print_fn_t prev = libbpf_set_print(NULL); /* the error below says it */
		struct btf *btf = btf__parse(r.o.btf_path, NULL);
		int e = errno;

		libbpf_set_print(prev);
		errno = e;
		if (!btf) {
			pr_err("cannot read BTF from %s: %s", r.o.btf_path,
			       errno == EINVAL || errno > 4000 ? "not a BTF file or an ELF file with "
			       "a .BTF section" : strerror(errno));
			return 1;
		}
		btf__free(btf);
	}

	/*
	 * Every signal that would end offcpu by default ends the recording with a
	 * complete file instead: a dropped ssh session (SIGHUP), kill, timeout(1).
	 * SIGUSR2 switches files with --switch-output and stops otherwise.
	 */
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++) {
		struct sigaction old;

		/* a hang-up ignored from the start (nohup) stays ignored */
		if (stop_signals[i] == SIGHUP && !sigaction(SIGHUP, NULL, &old) &&
		    old.sa_handler == SIG_IGN)
			continue;
		sigaction(stop_signals[i], &sa, NULL);
	}
	switch_on_usr2 = r.o.switch_signal;
	signal(SIGPIPE, SIG_IGN);
	r.out.base = r.o.output;
	r.out.to_stdout = r.o.pipe_output;
	r.out.rotate = r.o.switch_signal || r.o.switch_bytes || r.o.switch_ns;
	r.out.max_files = r.o.switch_max_files;
	r.out.dir = r.o.threads != 0;
	pthread_mutex_init(&r.lock, NULL);

	/* the state of each wait rides in the weight (perfdata/wakers.h) */
	r.ev.sample_type = OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_WEIGHT |
			   (r.o.all_cgroups ? PERF_SAMPLE_CGROUP : 0);
	r.maps = maptab__new();
	if (!r.maps) {
		err = -ENOMEM;
		goto out;
	}
	err = setup_targets(&r, &co);
	if (err)
		goto out;
	r.sb = sideband__open(r.o.mmap_pages, r.o.all_cgroups, r.o.overwrite, msg, sizeof(msg));
	if (!r.sb) {
		err = -errno;
		pr_err("%s", msg);
		goto out;
	}
	{
		const uint64_t *ids;

		perf_rings__ids(r.sb, &ids);
		r.ev.sideband_id = ids[0];
	}
	err = sideband__private_id(&r.ev.offcpu_id);
	if (!err && r.o.wakers)
		err = sideband__private_id(&r.ev.waker_id);
	/* offcpu-before, if the stacks of threads blocked at the start are finished */
	if (!err && r.o.unwind == UNWIND_TABLES && (r.o.stacks & STACKS_USER))
		err = sideband__private_id(&r.ev.before_id);
	if (err) {
		pr_err("failed to open a BPF output event: %s", strerror(-err));
		goto out;
	}
	if (r.o.freq) {
		err = open_oncpu(&r, r.tg.cgroup_fd);
		if (err)
			goto out;
	}
	if (r.o.overwrite) {
		co.transport = OFFCPU_TRANSPORT_PERFBUF;
		err = open_bpf_output(&r, &co);
		if (err)
			goto out;
	}
	co.unwind_tables = r.o.unwind == UNWIND_TABLES && (r.o.stacks & STACKS_USER);
	co.unwind_rows = (uint32_t)(r.o.unwind_mem / sizeof(struct offcpu_unw_row));
	/* bench: OFFCPU_LATE_STACKS=0 leaves every stack to the BPF walk */
	co.user_space_stacks = co.unwind_tables && !(getenv("OFFCPU_LATE_STACKS") &&
						      !strcmp(getenv("OFFCPU_LATE_STACKS"), "0"));
	r.coll = collector__open(&co, msg, sizeof(msg));
	if (!r.coll) {
		err = -errno;
		pr_err("%s", msg);
		goto out;
	}
	if (collector__snaps_fd(r.coll) >= 0) {
		r.us = userstacks__new(collector__snaps_fd(r.coll));
		if (!r.us || userstacks__start(r.us)) {
			pr_warn("cannot finish stacks in user space (%s): threads blocked at the start "
				"keep unknown user stacks", strerror(errno ? errno : ENOMEM));
			userstacks__free(r.us);
			r.us = NULL;
		}
	}
	/* the running targets' unwind tables before the first block */
	err = start_unwinder(&r);
	if (!err && (err = collector__attach(r.coll, msg, sizeof(msg))))
		pr_err("%s", msg);
	if (err)
		goto out;
	/* when the blocks under way at the start began: the clocks compared until then */
	if (r.us)
		collector__calibrate(r.coll, true);
	if (r.o.argc) {
		err = workload__prepare(&r.wl, r.o.argv, r.o.pipe_output);
		if (err) {
			pr_err("cannot start '%s': %s", r.o.argv[0], strerror(-err));
			goto out;
		}
		r.have_workload = true;
		targets__track(&r.tg, r.wl.pid);
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
		if (output__error(&r.out))
			pr_err("%s", output__error(&r.out));
		else
			pr_err("cannot write %s: %s", r.o.output, strerror(-err));
		goto out;
	}
	if (r.have_workload) {
		r.workload_start_ns = now_ns();
		err = workload__start(&r.wl, r.unw ? load_held : NULL, &r, &stop_signal);
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
	if (collector__runq_source(r.coll))
		pr_info("run queue waits after wakeups split off from %s", collector__runq_source(r.coll));
	/* threads of the targets already blocked: their blocks count from now */
	if (r.us) {
		/* a switch of ours, at least, for the clocks to be compared */
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
	}
	r.start_ns = now_ns();
	{
		long n = collector__open_blocks(r.coll, OFFCPU_OPEN_START, r.start_ns);

		if (n < 0)
			pr_warn("cannot find the threads blocked at the start: %s; blocks under way "
				"now are not counted", strerror((int)-n));
	}
	if (r.us) {
		collector__calibrate(r.coll, false);
		/* their stacks read while they still sleep, and how long they have */
		userstacks__drain(r.us);
		if (r.w && !r.o.overwrite) {
			err = write_before_samples(&r);
			if (err) {
				pr_err("cannot write %s: %s", r.o.output, strerror(-err));
				goto out;
			}
		}
	}

	err = r.o.overwrite ? armed_loop(&r) : main_loop(&r);
	if (!err)
		err = finish(&r);
	if (err == -EPIPE)
		pr_err("cannot write to %s: the reader went away",
		       r.o.pipe_output ? "standard output" : r.o.output);
	else if (err && output__error(&r.out))
		pr_err("%s", output__error(&r.out));
	else if (err)
		pr_err("cannot write %s: %s", r.o.pipe_output ? "the recording" : r.o.output,
		       strerror(-err));
out:
	if (r.have_workload && !workload__reap(&r.wl)) {
		/* stopped by -d, a signal or an error while the command still runs */
		workload__kill(&r.wl, SIGTERM);
		if (r.workload_started && r.wl.signal_sent && !r.o.quiet)
			fprintf(stderr, "offcpu: the command (pid %d) was still running: offcpu sent it "
				"%s%s\n", r.wl.pid, r.wl.signal_sent == SIGKILL ? "SIGTERM, then SIGKILL "
				"(it did not exit within 2 s)" : "SIGTERM",
				!stop_signal && !err && r.o.duration_ns ? " at the end of -d" : "");
	} else if (r.have_workload) {
		workload__kill(&r.wl, 0);
		/* a command that died of a signal on its own: said, and offcpu exits
		 * 128 + the signal, as a shell reports it (perf dies of it) */
		if (!err && r.wl.reaped && WIFSIGNALED(r.wl.status) && r.workload_started)
			workload_signal = WTERMSIG(r.wl.status);
	}
	if (workload_signal)
		fprintf(stderr, "offcpu: the command was killed by signal %d (%s)\n",
			workload_signal, strsignal(workload_signal));
	if (r.have_workload && !err && r.wl.reaped && WIFEXITED(r.wl.status) &&
	    WEXITSTATUS(r.wl.status) && !r.o.quiet)
		fprintf(stderr, "offcpu: the command exited with status %d\n",
			WEXITSTATUS(r.wl.status));
	free_threads(&r);
	if (err)
		output__discard(&r.out);
	output__free(&r.out);
	perf_writer__free(r.w);
	unwinder__free(r.unw);
	userstacks__free(r.us);
	collector__free(r.coll);
	perf_rings__free(r.sb);
	perf_rings__free(r.oncpu);
	perf_rings__free(r.bpf_out);
	free((void *)co.output_fds);
	free((void *)co.output_cpus);
	maptab__free(r.maps);
	targets__free(&r.tg);
	intset__free(&r.st.threads);
	perf_queue__free(&r.batch);
	record_opts__free(&r.o);
	return err ? 1 : workload_signal ? 128 + workload_signal : 0;
}
