// SPDX-License-Identifier: GPL-2.0
/* A file's life: begin (events, what already runs), end (summed blocks, losses, build ids), rotation; the summary. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "record_int.h"
#include "sideband.h"
#include "summary.h"
#include "synth.h"
#include "../perfdata/sample.h"
#include "../util/kallsyms.h"
#include "../util/util.h"

/* A record into the current file, its mappings noted for the build ids. */
int write_record(struct record *r, const struct perf_event_header *h)
{
	int err = maptab__observe(r->maps, h);

	/* (the samples written here are offcpu-before's, of offcpu-time's type) */
	err = err ?: named__before(r->named, h, h->type == PERF_RECORD_SAMPLE ? r->ev.sample_type : 0,
				   0, 0, write_to_writer, r->w);
	err = err ?: perf_writer__write(r->w, h);
	return err ?: named__after(r->named, h, 0, write_to_writer, r->w);
}

/*
 * Drain every source, then write in time order as one perf round; with
 * @sums, the blocks summed in the kernel too, stamped now. They are taken
 * first: once the summed map is switched, every block that ended before now
 * has been streamed or summed, so the streamed ones read next are all that
 * can be older, and the round is in order. Then the stacks read are pruned
 * from the kernel's maps.
 */
static int flush(struct record *r, bool sums)
{
	struct sink k = { r, &r->batch, false };
	struct summed_sink ss = { &k, now_ns() };
	struct round rd = { .w = r->w, .batch = &r->batch, .finish = true, .split = split_file };
	long n = 0;
	int err;

	perf_queue__clear(&r->batch);
	if (sums)
		n = collector__drain(r->coll, push_summed, &ss);
	if (n >= 0)
		n = perf_rings__read(r->sb, push_sideband, &k);
	if (n >= 0 && r->oncpu)
		n = perf_rings__read(r->oncpu, push_oncpu, &k);
	if (n >= 0)
		n = collector__consume(r->coll, push_stream, &k);
	/* JIT code named by a map read after the samples that hit it */
	if (n >= 0)
		n = perfmap__flush_late(r->perfmap, &r->batch, r->ev.sideband_id, r->files, now_ns(),
					SRC_OFFCPU);
	if (n < 0)
		return (int)n;
	err = round__write(r, &rd);
	if (!err && sums) {
		stackstore__prune(r->stacks);
		waitstore__prune(r->waits);
		r->st.flushes++;
	}
	return err;
}

long flush_round_open_end(struct record *r, uint64_t end)
{
	struct sink k = { r, &r->batch, false };
	struct summed_sink ss = { &k, now_ns(), false };
	struct round rd = { .w = r->w, .batch = &r->batch, .finish = true, .split = split_file };
	long n, opened;
	int err;

	perf_queue__clear(&r->batch);
	n = collector__drain(r->coll, push_summed, &ss);
	/* the iterator adds to the map the drain just switched to, empty since
	 * the programs are detached: the next drain takes those blocks alone */
	opened = n < 0 ? n : collector__open_blocks(r->coll, OFFCPU_OPEN_END, end);
	if (opened < 0)
		return opened;
	/* what they wait on, read while they still wait */
	waitstore__read_new(r->waits);
	ss.time = end;
	ss.open_end = true;
	n = collector__drain(r->coll, push_summed, &ss);
	if (n >= 0)
		n = perf_rings__read(r->sb, push_sideband, &k);
	if (n >= 0 && r->oncpu)
		n = perf_rings__read(r->oncpu, push_oncpu, &k);
	if (n >= 0)
		n = collector__consume(r->coll, push_stream, &k);
	if (n < 0)
		return n;
	err = round__write(r, &rd);
	if (err)
		return err;
	stackstore__prune(r->stacks);
	waitstore__prune(r->waits);
	r->st.flushes++;
	return opened;
}

int flush_round(struct record *r)
{
	return flush(r, false);
}

int flush_round_sums(struct record *r)
{
	return flush(r, true);
}

static int emit_synth(const struct perf_event_header *h, void *arg)
{
	return write_record(arg, h);
}

/* perf report shows LOST_SAMPLES as "Total Lost Samples" of the event. */
int write_lost_samples(struct record *r, uint64_t lost, uint64_t time)
{
	char buf[64] = { 0 };
	struct perf_sample id = { .id = r->ev.offcpu_id, .time = time };
	struct perf_record_lost_samples ls = {
		.header.type = PERF_RECORD_LOST_SAMPLES,
		.header.size = (uint16_t)(sizeof(ls) + perf_sample_id__size(r->ev.sample_type)),
		.lost = lost,
	};

	memcpy(buf, &ls, sizeof(ls));
	perf_sample_id__encode(r->ev.sample_type, &id, buf + sizeof(ls));
	return perf_writer__write(r->w, (const void *)buf);
}

int synthesize(struct record *r)
{
	struct synth s = {
		.sample_type = SIDEBAND_SAMPLE_TYPE,
		.id = r->ev.sideband_id,
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
			/* gone from /proc (it may have exited as this file began, its last
			 * blocks still to be written here): what the records said of it */
			if (err == -ESRCH)
				err = maptab__synth(r->maps, &s, pid);
			if (err == -ESRCH)
				err = 0;
			/* a process offcpu may not read (another user namespace's): its
			 * blocks are recorded, its frames cannot be named */
			if (err == -EACCES) {
				if (r->files == 0)
					pr_warn("cannot read the mappings of process %d (permission "
						"denied): its user frames will not be named", pid);
				err = 0;
			}
		}
	}
	if (!err && r->o.all_cgroups && cgroup2_mount(root, sizeof(root)) == 0)
		err = synth__cgroups(&s, root);
	return err;
}

/* The names the frames just spliced need, into the file before the sample of @time. */
static int write_names(struct record *r, uint64_t time)
{
	struct perf_queue q = { 0 };
	int err = python__flush(r->py, r, &q, r->files, time, SRC_SIDEBAND);
	size_t i;

	perf_queue__sort(&q);
	for (i = 0; !err && i < q.nr; i++) {
		int kind;

		err = write_record(r, perf_queue__get(&q, i, &kind));
	}
	perf_queue__free(&q);
	return err;
}

int write_before_samples(struct record *r)
{
	uint64_t chain[OFFCPU_MAX_STACK_DEPTH + 2];
	char buf[sizeof(chain) + 256];
	uint32_t tgid, tid, state;
	size_t i;
	int err = 0;

	if (!r->us || !r->w || !r->ev.before_id)
		return 0;
	for (i = 0; !err && userstacks__start_thread(r->us, i, &tgid, &tid); i++) {
		const uint64_t *ips = NULL;
		uint64_t began = 0;
		size_t n = userstacks__start_stack(r->us, tid, &ips, &began, &state), k;
		struct perf_sample s = {
			.id = r->ev.before_id,
			.pid = tgid,
			.tid = tid,
			.time = r->start_ns,
			.period = began && began < r->start_ns ? r->start_ns - began : 0,
			.weight = (uint64_t)state + 1,
			.ips = chain,
		};
		struct perf_event_header *h = (void *)buf;
		int size;

		/* the command's own threads began with the recording: nothing before it */
		if (r->have_workload && (began >= r->workload_start_ns ||
					 (!began && tgid == (uint32_t)r->wl.pid)))
			continue;
		if (n) {
			/* its Python frames, read from its memory, spliced as the program's are */
			uint32_t np = python__frames(ips, (uint32_t)n);

			n = python__splice(r->py, tgid, ips, (uint32_t)n - np, ips + n - np, np, &ips);
			chain[s.nr_ips++] = PERF_CONTEXT_USER;
			for (k = 0; k < n && k < OFFCPU_MAX_STACK_DEPTH; k++) {
				chain[s.nr_ips++] = ips[k];
				maptab__mark(r->maps, (int)tgid, ips[k]);
			}
			s.ip = ips[0];
		}
		size = perf_sample__encode(r->ev.sample_type, &s, buf, sizeof(buf));
		if (size < 0)
			return size;
		h->misc = PERF_RECORD_MISC_USER;
		err = write_names(r, s.time) ?: write_record(r, h);
		perf_writer__note_time(r->w, s.time);
	}
	return err;
}

int flush_due_sums(struct record *r)
{
	uint64_t now = now_ns();

	if (!r->o.flush_ns || now < r->next_flush_ns)
		return r->wt ? 0 : flush_round(r);
	/* on a fixed schedule from the file's start: a late flush does not
	 * push the next ones later */
	r->next_flush_ns += r->o.flush_ns;
	if (r->next_flush_ns <= now)
		r->next_flush_ns = now + r->o.flush_ns;
	return r->wt ? round__write_sums(r) : flush_round_sums(r);
}

/* Every counter of the loss table: the BPF program's, then user space's. */
static void all_counters(struct record *r, uint64_t *cnt)
{
	memset(cnt, 0, CNT_ALL * sizeof(*cnt));
	collector__counters(r->coll, cnt);
	cnt[CNT_PROG_MISSES] = collector__prog_misses(r->coll);
	cnt[CNT_SIDEBAND_LOST] = r->st.sideband_lost;
	cnt[CNT_ONCPU_LOST] = r->st.oncpu_lost;
	cnt[CNT_WAKEUP_UNKNOWN] = stackstore__unknown_wakeups(r->stacks);
}

void print_summary(struct record *r, uint64_t file_size)
{
	struct unwinder_stats ust = { 0 };
	struct userstacks_stats lst = { 0 };
	uint64_t cnt[CNT_ALL], drain_ns, drained;
	bool batch;
	struct summary s = {
		.cnt = cnt,
		.offcpu_ns = r->st.offcpu_ns,
		.streamed = r->st.streamed_samples,
		.summed = r->st.summed_samples,
		.distinct_stacks = r->st.stacks.len,
		.distinct_stacks_more = r->st.stacks.full,
		.threads = r->st.threads.len,
		.procs_given = r->have_workload ? 0 : r->tg.given,
		.procs_before = r->tg.descendants,
		.procs_followed = r->tg.tracked.len,
		.oncpu_samples = r->st.oncpu_samples,
		.freq = r->oncpu ? r->o.freq : 0,
		.output = output__last(&r->out),
		.to_stdout = r->out.to_stdout,
		.fifo = r->out.pipe && !r->out.to_stdout,
		.rotate = r->out.rotate,
		.pushed = r->push != NULL,
		.files_written = r->out.written,
		.files_on_disk = output__on_disk(&r->out),
		.files_removed = r->out.removed,
		.files_vanished = r->out.vanished,
		.file_size = file_size,
		.verify_stacks = r->o.verify_stacks,
		.kernel_stacks = r->o.stacks & STACKS_KERNEL,
		.fallbacks = collector__fallbacks(r->coll),
		.max_stacks = r->o.max_entries,
		.map_bytes = record_opts__stack_map_bytes(&r->o),
		.flush_ns = r->o.overwrite ? 0 : r->o.flush_ns,
		.flushes = r->st.flushes,
		.pruned = stackstore__pruned(r->stacks),
		.unwind_ns = r->unw ? r->st.unwind_ns : NULL,
		.unw = r->unw ? &ust : NULL,
		.late = r->us ? &lst : NULL,
		/* a command began with the recording: its threads waited for nothing before */
		.start_ns = r->have_workload ? r->workload_start_ns : r->start_ns,
	};

	if (r->unw)
		unwinder__stats(r->unw, &ust);
	if (r->us)
		userstacks__stats(r->us, &lst);
	all_counters(r, cnt);
	summary__print(stderr, &s);
	collector__drain_stats(r->coll, &drain_ns, &drained, &batch);
	pr_info("summed blocks: %llu taken from the kernel's maps in %.1f ms, %s",
		(unsigned long long)drained, drain_ns / 1e6,
		batch ? "many to a system call" : "one at a time (two system calls each)");
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

/*
 * --switch-output=SIZE below what a file starts with (the attributes and
 * every process's mappings, -a's all of them): each file would be full as
 * it begins, and a new one written at every turn of the loop. The size is
 * raised to twice that, said at each raise.
 */
static void raise_switch_size(struct record *r)
{
	char was[32], base[32], now[32];

	if (!r->o.switch_bytes || r->file_base < r->o.switch_bytes / 2)
		return;
	fmt_size(r->o.switch_bytes, was, sizeof(was));
	fmt_size(r->file_base, base, sizeof(base));
	r->o.switch_bytes = 2 * r->file_base;
	fmt_size(r->o.switch_bytes, now, sizeof(now));
	pr_warn("--switch-output=%s: each file starts with %s (the processes' mappings and the "
		"events): raised to %s, so that a file holds as much of the recording as that",
		was, base, now);
}

/* Start a file: events, host features, what already runs. */
int begin_file(struct record *r)
{
	char names[PATH_MAX];
	int err = output__begin(&r->out);

	if (err)
		return err;
	r->w = r->out.pipe ? perf_writer__new_pipe(r->out.fd) : perf_writer__new(r->out.fd);
	if (!r->w)
		return -errno;
	maptab__clear_marks(r->maps);
	/* its named frames, and where their symbols go for perf */
	err = named__begin(r->named, output__names_path(&r->out, names, sizeof(names)) ? names : NULL);
	err = err ?: declare_events(r);
	if (!err && r->out.dir) {
		uint64_t version = 1;

		err = perf_writer__set_feature(r->w, FEAT_DIR_FORMAT, &version, sizeof(version));
	}
	if (!r->o.overwrite) /* a snapshot synthesizes after its samples */
		err = err ?: synthesize(r);
	/* readable from now on, even if offcpu is killed; a pipe's reader gets
	 * the attrs and side-band now */
	err = err ?: perf_writer__checkpoint(r->w);
	r->file_start_ns = now_ns();
	r->next_flush_ns = r->file_start_ns + r->o.flush_ns;
	r->file_base = perf_writer__data_size(r->w);
	raise_switch_size(r);
	return err;
}

/* named.h: the symbol file of the file ending, into @fd */
static int fill_names(void *arg, int fd)
{
	struct record *r = arg;

	return named__write_syms(r->named, fd);
}

/* the symbol files not written, said once */
static unsigned names_said;

/*
 * End a file: what the buffers hold, the summed blocks (taken out of the map,
 * so the next file starts from zero), the losses since the last file, build
 * ids; then rename it into place.
 */
static int close_file(struct record *r, bool read_sources)
{
	uint64_t cnt[CNT_ALL], lost;
	int err;

	/* overwritable buffers are read by the snapshot, never forward; the
	 * writer threads have drained theirs */
	err = read_sources && !r->o.overwrite && !r->wt ? flush_round_sums(r) : round__write_sums(r);
	/* processes that exited in that round: their maps, read now, name their frames here */
	if (!err && read_sources && !r->o.overwrite && !r->wt &&
	    perfmap__settle(r->perfmap, PERFMAP_SETTLE_MS))
		err = flush_round(r);
	if (err)
		return err;
	all_counters(r, cnt);
	lost = losses__lost_samples(cnt);
	if (lost > r->lost_reported)
		err = write_lost_samples(r, lost - r->lost_reported, now_ns());
	r->lost_reported = lost;
	err = err ?: add_build_ids(r);
	err = err ?: perf_writer__finish(r->w);
	if (!err && named__has_syms(r->named) && output__write_names(&r->out, fill_names, r) &&
	    !names_said++)
		/* the recording is whole without it: offcpu report reads the names in it */
		pr_warn("perf will not name Python and JIT frames: %s", output__error(&r->out));
	err = err ?: output__commit(&r->out);
	if (!err && r->push)
		push__interval(r->push, output__last(&r->out), r->file_start_ns, now_ns());
	if (!err) {
		r->files++;
		if (r->out.rotate && !r->o.quiet && !r->push)
		{
			/* the name of a directory someone moved is theirs */
			fprintf(stderr, "offcpu: wrote ");
			fput_escaped(stderr, output__last(&r->out), 0);
			fputc('\n', stderr);
		}
	}
	perf_writer__free(r->w);
	r->w = NULL;
	return err;
}

/* SIGUSR2's request for the next file (or snapshot): set in a signal handler */
static volatile sig_atomic_t switch_requested;

void file_request_switch(void)
{
	switch_requested = 1;
}

bool file_take_switch_request(void)
{
	bool asked = switch_requested;

	switch_requested = 0;
	return asked;
}

bool switch_due(struct record *r)
{
	if (!r->out.rotate)
		return false;
	if (r->o.switch_signal && switch_requested)
		return true;
	if (r->o.switch_bytes && perf_writer__data_size(r->w) >= r->o.switch_bytes)
		return true;
	return r->o.switch_ns && now_ns() - r->file_start_ns >= r->o.switch_ns;
}

/* Bytes in the last file, or in all files of the last directory. */
uint64_t output_size(struct record *r)
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

int end_file(struct record *r)
{
	return close_file(r, true);
}

/*
 * --switch-output=SIZE in the middle of a round: the file reached the size,
 * the rest of the round goes into the next one. Only what is already written
 * ends this file (with the summed blocks, stamped now: after all of it).
 */
int split_file(struct record *r)
{
	if (!r->o.switch_bytes || r->o.overwrite || r->wt || !r->w ||
	    perf_writer__data_size(r->w) < r->o.switch_bytes ||
	    perf_writer__data_size(r->w) <= r->file_base)
		return 0;
	return close_file(r, false) ?: begin_file(r);
}
