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

#define ONCPU_EVENT_NAME "cpu-clock"

/* Where a batched record came from. */
enum { SRC_SIDEBAND, SRC_ONCPU, SRC_OFFCPU };


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
	struct targets tg;
	uint64_t offcpu_id, sideband_id;
	uint64_t sample_type; /* of offcpu-time */
	struct perf_event_attr oncpu_attr;
	struct perf_queue batch;
	struct stats st;
};

static volatile sig_atomic_t stop_signal, switch_requested;

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM };
static bool switch_on_usr2;

static void on_signal(int sig)
{
	if (sig == SIGUSR2 && switch_on_usr2)
		switch_requested = 1;
	else
		stop_signal = sig;
}

/* environment checks */

/* filtering, in time order, so that a FORK is seen before its child's records */

/* The LOST record's count, 0 for any other record. */
static uint64_t lost_count(const struct perf_event_header *h)
{
	struct perf_record_lost l;

	return h->type == PERF_RECORD_LOST && perf_record__copy(h, &l, sizeof(l)) ? l.lost : 0;
}

static bool keep_sideband(struct record *r, const struct perf_event_header *h)
{
	r->st.sideband_lost += lost_count(h);
	return targets__keep_sideband(&r->tg, h);
}

static bool keep_oncpu(struct record *r, const struct perf_event_header *h)
{
	struct perf_sample s;
	const char *why;

	if (h->type == PERF_RECORD_LOST) {
		r->st.oncpu_lost += lost_count(h);
		return true;
	}
	if (h->type != PERF_RECORD_SAMPLE || perf_sample__parse(&r->oncpu_attr, h, &s, &why))
		return h->type != PERF_RECORD_SAMPLE;
	return targets__keep_sample(&r->tg, (int)s.tid, intset__has(&r->tg.tracked, (int)s.pid));
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
	struct perf_sample id = { .id = r->offcpu_id, .time = time };
	struct perf_record_lost_samples ls = {
		.header.type = PERF_RECORD_LOST_SAMPLES,
		.header.size = (uint16_t)(sizeof(ls) + perf_sample_id__size(r->sample_type)),
		.lost = lost,
	};

	memcpy(buf, &ls, sizeof(ls));
	perf_sample_id__encode(r->sample_type, &id, buf + sizeof(ls));
	return perf_writer__write(r->w, (const void *)buf);
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
	if (!r->tg.filter) {
		err = synth__all(&s);
	} else {
		/* every process followed so far; a workload only once it runs its command */
		for (i = 0; i < r->tg.tracked.cap && !err; i++) {
			int pid = r->tg.tracked.slots[i];

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

/* Every counter of the loss table: the BPF program's, then user space's. */
static void all_counters(struct record *r, uint64_t *cnt)
{
	memset(cnt, 0, CNT_ALL * sizeof(*cnt));
	collector__counters(r->coll, cnt);
	cnt[CNT_PROG_MISSES] = collector__prog_misses(r->coll);
	cnt[CNT_SIDEBAND_LOST] = r->st.sideband_lost;
	cnt[CNT_ONCPU_LOST] = r->st.oncpu_lost;
}

static void print_summary(struct record *r, uint64_t file_size)
{
	uint64_t cnt[CNT_ALL];
	struct summary s = {
		.cnt = cnt,
		.offcpu_ns = r->st.offcpu_ns,
		.streamed = r->st.streamed_samples,
		.summed = r->st.summed_samples,
		.distinct_stacks = collector__distinct_stacks(r->coll),
		.threads = r->st.threads.len,
		.oncpu_samples = r->st.oncpu_samples,
		.freq = r->oncpu ? r->o.freq : 0,
		.output = output__last(&r->out),
		.to_stdout = r->out.to_stdout,
		.fifo = r->out.pipe && !r->out.to_stdout,
		.rotate = r->out.rotate,
		.files_written = r->out.written,
		.files_on_disk = output__on_disk(&r->out),
		.files_removed = r->out.removed,
		.files_vanished = r->out.vanished,
		.file_size = file_size,
		.verify_stacks = r->o.verify_stacks,
		.kernel_stacks = r->o.stacks & STACKS_KERNEL,
	};

	all_counters(r, cnt);
	summary__print(stderr, &s);
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
	uint64_t cnt[CNT_ALL], lost;
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
	all_counters(r, cnt);
	lost = losses__lost_samples(cnt);
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
		if (slow)
			usleep((useconds_t)atoi(slow) * 1000);
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
	if (r->tg.filter && !r->tg.only_tids && !intset__has(&t->yes, (int)s.pid) &&
	    !intset__has(&t->no, (int)s.pid)) {
		yes = collector__follows(r->coll, (int)s.pid);
		intset__add(yes ? &t->yes : &t->no, (int)s.pid);
	}
	return targets__keep_sample(&r->tg, (int)s.tid, intset__has(&t->yes, (int)s.pid));
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
				r->st.sideband_lost += lost_count(h);
			else
				r->st.oncpu_lost += lost_count(h);
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
	int err;

	collector__detach(r->coll);
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
	struct record r = { .out.fd = -1, .tg.cgroup_fd = -1 };
	struct collector_opts co = { 0 };
	struct sigaction sa = { 0 };
	int err, workload_signal = 0;

	if (record_opts__parse(&r.o, argc, argv))
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

	r.sample_type = OFFCPU_SAMPLE_TYPE | (r.o.all_cgroups ? PERF_SAMPLE_CGROUP : 0);
	r.maps = maptab__new();
	if (!r.maps) {
		err = -ENOMEM;
		goto out;
	}
	err = setup_targets(&r, &co);
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
		err = open_oncpu(&r, r.tg.cgroup_fd);
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
	pr_info("attached with %s", collector__attach_kind(r.coll));

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
		/* stopped by a signal or an error while the command still runs */
		workload__kill(&r.wl, SIGTERM);
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
