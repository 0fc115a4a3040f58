// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <bpf/btf.h>
#include "collector.h"
#include "korc.h"
#include "loader.h"
#include "stackstore.h"
#include "offcpu.skel.h"
#include "../util/util.h"

struct collector {
	struct loaded ld; /* the program, as loaded, and what fell back */
	struct collector_unwind_maps unw; /* with tables: the arrays mapped here */
	void *unw_p[3];
	size_t unw_len[3];
	struct ring_buffer *rb;
	struct perf_buffer *pb;
	int (*event_fn)(const struct offcpu_event *e, void *arg);
	void *event_arg;
	int event_err;
	int summed_cur; /* the summed map the program adds to: 0 summed_a, 1 summed_b */
	/* drain one entry at a time: no batch operations (or OFFCPU_DRAIN_BATCH=0, bench) */
	bool drain_each;
	uint64_t drain_ns, drained; /* time spent taking entries out of the maps, entries taken */
};

static int fill_filters(struct collector *c, const struct collector_opts *o)
{
	uint8_t one = OFFCPU_FILTER_ACTIVE;
	size_t i;

	for (i = 0; i < o->nr_tgids; i++)
		if (bpf_map__update_elem(c->ld.skel->maps.tgid_filter, &o->tgids[i], 4, &one, 1, BPF_ANY))
			return -errno;
	for (i = 0; i < o->nr_tids; i++)
		if (bpf_map__update_elem(c->ld.skel->maps.tid_filter, &o->tids[i], 4, &one, 1, BPF_ANY))
			return -errno;
	for (i = 0; i < o->nr_cpus; i++) {
		uint32_t cpu = (uint32_t)o->cpus[i];

		if (bpf_map__update_elem(c->ld.skel->maps.cpu_filter, &cpu, 4, &one, 1, BPF_ANY))
			return -errno;
	}
	if (o->cgroup_fd >= 0) {
		uint32_t zero = 0, fd = (uint32_t)o->cgroup_fd;

		if (bpf_map__update_elem(c->ld.skel->maps.cgroup_filter, &zero, 4, &fd, 4, BPF_ANY))
			return -errno;
	}
	return 0;
}

static int on_ringbuf(void *ctx, void *data, size_t size)
{
	struct collector *c = ctx;

	if (size < sizeof(struct offcpu_event))
		return 0;
	c->event_err = c->event_fn(data, c->event_arg);
	return c->event_err;
}

static void on_perfbuf(void *ctx, int cpu, void *data, __u32 size)
{
	struct collector *c = ctx;

	if (c->event_err || size < sizeof(struct offcpu_event))
		return;
	c->event_err = c->event_fn(data, c->event_arg);
}

static int open_output(struct collector *c, const struct collector_opts *o)
{
	if (o->output_fds) {
		/* the caller owns the events (overwritable rings): just point BPF at them */
		size_t i;

		for (i = 0; i < o->nr_output_fds; i++) {
			uint32_t cpu = (uint32_t)o->output_cpus[i], fd = (uint32_t)o->output_fds[i];

			if (bpf_map__update_elem(c->ld.skel->maps.perf_events, &cpu, 4, &fd, 4, BPF_ANY))
				return -errno;
		}
		return 0;
	}
	if (o->transport == OFFCPU_TRANSPORT_RINGBUF) {
		c->rb = ring_buffer__new(bpf_map__fd(c->ld.skel->maps.events), on_ringbuf, c, NULL);
		return c->rb ? 0 : -errno;
	}
	c->pb = perf_buffer__new(bpf_map__fd(c->ld.skel->maps.perf_events),
				 (size_t)(o->buffer_bytes / (uint64_t)sysconf(_SC_PAGESIZE)),
				 on_perfbuf, NULL, c, NULL); /* a full buffer fails the BPF side's output: counted there */
	return c->pb ? 0 : -errno;
}

/*
 * Map the unwind rules and objects into this process: user space fills them
 * in place. The rows, the bulk (32 MiB by default), are mapped a slice at a
 * time as an object is written (tablemem.c): mapped whole, every page of
 * them would count as this process's resident memory from the start.
 */
static int map_unwind(struct collector *c)
{
	struct bpf_map *maps[3] = { c->ld.skel->maps.unw_rows, c->ld.skel->maps.unw_rules,
				    c->ld.skel->maps.unw_objs };
	void **p = c->unw_p;
	int i;

	for (i = 1; i < 3; i++) {
		/* an array's elements are 8-byte aligned: these are 8, 16, 8 bytes */
		size_t pg = (size_t)sysconf(_SC_PAGESIZE);

		c->unw_len[i] = ((size_t)bpf_map__value_size(maps[i]) * bpf_map__max_entries(maps[i]) +
				 pg - 1) / pg * pg;
		p[i] = mmap(NULL, c->unw_len[i], PROT_READ | PROT_WRITE, MAP_SHARED,
			    bpf_map__fd(maps[i]), 0);
		if (p[i] == MAP_FAILED) {
			p[i] = NULL;
			c->unw_len[i] = 0;
			return -errno;
		}
	}
	c->unw = (struct collector_unwind_maps){
		.rows_fd = bpf_map__fd(maps[0]), .rules = p[1], .objs = p[2],
		.nr_rows = bpf_map__max_entries(maps[0]),
		.nr_rules = bpf_map__max_entries(maps[1]),
		.nr_objs = bpf_map__max_entries(maps[2]),
		.procs_fd = bpf_map__fd(c->ld.skel->maps.unw_procs),
		.req_fd = bpf_map__fd(c->ld.skel->maps.unw_req),
		.wake_fd = bpf_map__fd(c->ld.skel->maps.unw_wake),
		.verify_fd = bpf_map__fd(c->ld.skel->maps.unw_verify),
		.cache_fd = bpf_map__fd(c->ld.skel->maps.unw_cache),
	};
	return 0;
}

int collector__attach(struct collector *c, char *msg, size_t len)
{
	int err = offcpu_bpf__attach(c->ld.skel);

	if (err)
		snprintf(msg, len, "failed to attach sched_switch: %s", strerror(-err));
	return err;
}

bool collector__unwind_maps(struct collector *c, struct collector_unwind_maps *m)
{
	if (!c->ld.tables || !c->unw.rules)
		return false;
	*m = c->unw;
	return true;
}

struct collector *collector__open(const struct collector_opts *o, char *msg, size_t len)
{
	struct collector *c = calloc(1, sizeof(*c));
	int err;

	if (!c) {
		snprintf(msg, len, "out of memory");
		return NULL;
	}
	c->ld.raw_tp = o->force_raw_tp;
	err = loader__load(&c->ld, o, msg, len);
	if (err)
		goto fail;
	err = c->ld.tables ? map_unwind(c) : 0;
	if (err) {
		snprintf(msg, len, "cannot map the unwind table arrays: %s", strerror(-err));
		goto fail;
	}
	err = fill_filters(c, o);
	if (err) {
		snprintf(msg, len, "failed to fill BPF filter maps: %s", strerror(-err));
		goto fail;
	}
	err = open_output(c, o);
	if (err) {
		snprintf(msg, len, "failed to set up the BPF output buffer: %s", strerror(-err));
		goto fail;
	}
	c->drain_each = test_hook_is(test_hook("DRAIN_BATCH"), "0");
	return c;
fail:
	collector__free(c);
	errno = -err;
	return NULL;
}

int collector__add_workload(struct collector *c, int tgid)
{
	uint8_t at_exec = OFFCPU_FILTER_AT_EXEC;

	if (bpf_map__update_elem(c->ld.skel->maps.tgid_filter, &tgid, 4, &at_exec, 1, BPF_ANY))
		return -errno;
	return 0;
}

bool collector__follows(struct collector *c, int tgid)
{
	uint8_t v = 0;

	return bpf_map__lookup_elem(c->ld.skel->maps.tgid_filter, &tgid, 4, &v, 1, 0) == 0 &&
	       v == OFFCPU_FILTER_ACTIVE;
}

const char *collector__attach_kind(const struct collector *c)
{
	return c->ld.raw_tp ? "raw_tp" : "tp_btf";
}

const char *collector__runq_source(const struct collector *c)
{
	if (!c->ld.skel->rodata->runq_split)
		return NULL;
	return c->ld.skel->rodata->runq_queued ? "the scheduler's enqueue times (sched_info)" :
					      "a sched_waking program's stamps";
}

const char *collector__fallbacks(const struct collector *c)
{
	return c->ld.fallbacks[0] ? c->ld.fallbacks : NULL;
}

void collector__detach(struct collector *c)
{
	if (c && c->ld.skel)
		offcpu_bpf__detach(c->ld.skel);
}

int collector__python_fd(const struct collector *c, const char *map)
{
	return c && c->ld.skel && c->ld.skel->rodata->python_frames ?
		       bpf_object__find_map_fd_by_name(c->ld.skel->obj, map) : -1;
}

int collector__js_fd(const struct collector *c, const char *map)
{
	return c && c->ld.skel && c->ld.skel->rodata->js_frames ?
		       bpf_object__find_map_fd_by_name(c->ld.skel->obj, map) : -1;
}

int collector__waits_fd(const struct collector *c)
{
	return c->ld.skel && !c->ld.raw_tp &&
			       (c->ld.skel->rodata->record_waits || c->ld.skel->rodata->iter_waits) ?
		       bpf_map__fd(c->ld.skel->maps.waits) :
		       -1;
}

/* Each of the @n per-CPU counters of @map summed over the CPUs into @out. */
static int sum_counters(struct bpf_map *map, uint32_t n, uint64_t *out)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t *vals;
	uint32_t i;
	int k;

	if (ncpus <= 0)
		return -EINVAL;
	vals = calloc((size_t)ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		out[i] = 0;
		if (bpf_map__lookup_elem(map, &i, 4, vals, (size_t)ncpus * sizeof(*vals), 0))
			continue;
		for (k = 0; k < ncpus; k++)
			out[i] += vals[k];
	}
	free(vals);
	return 0;
}

int collector__wait_counters(struct collector *c, uint64_t *out)
{
	return sum_counters(c->ld.skel->maps.wait_counters, OFFCPU_WAIT_CNT_NR, out);
}

int collector__snaps_fd(const struct collector *c)
{
	return c->ld.skel && !c->ld.raw_tp && c->ld.skel->rodata->snap_start ?
		       bpf_map__fd(c->ld.skel->maps.snaps) : -1;
}

void collector__calibrate(struct collector *c, bool on)
{
	if (c->ld.skel && !c->ld.raw_tp)
		c->ld.skel->bss->calibrate = on;
}

long collector__open_blocks(struct collector *c, enum offcpu_open_mode mode, uint64_t now)
{
	struct bpf_program *prog = c->ld.raw_tp ? c->ld.skel->progs.open_blocks_raw :
					       c->ld.skel->progs.open_blocks;
	struct bpf_link *link;
	char buf[64];
	long n;
	int fd, err = 0;

	c->ld.skel->bss->open_now = now;
	c->ld.skel->bss->open_mode = (uint32_t)mode;
	link = bpf_program__attach_iter(prog, NULL);
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
	} else {
		/* the program prints nothing: reading runs it over every task */
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			;
		if (n < 0)
			err = -errno;
		close(fd);
	}
	bpf_link__destroy(link);
	if (mode == OFFCPU_OPEN_START && c->ld.skel->rodata->record_wakers) {
		uint64_t size = c->ld.skel->bss->thread_size;

		if (size)
			pr_info("kernel stacks are %llu KiB (a task's stack area): a waker on "
				"another stack is an interrupt", (unsigned long long)(size >> 10));
		else
			pr_info("the kernel's stack size is not known (%s): taken as %llu KiB, a "
				"waker beyond it is an interrupt",
				c->ld.stack_guess[0] ? c->ld.stack_guess : "no task had a stack area",
				(unsigned long long)(c->ld.skel->rodata->thread_size_guess >> 10));
	}
	return err;
}

int collector__events_fd(const struct collector *c)
{
	if (c->rb)
		return ring_buffer__epoll_fd(c->rb);
	return c->pb ? perf_buffer__epoll_fd(c->pb) : -1;
}

long collector__consume(struct collector *c, int (*fn)(const struct offcpu_event *e, void *arg),
			void *arg)
{
	long n;

	c->event_fn = fn;
	c->event_arg = arg;
	c->event_err = 0;
	if (!c->rb && !c->pb)
		return 0;
	n = c->rb ? ring_buffer__consume(c->rb) : perf_buffer__consume(c->pb);
	if (c->event_err)
		return c->event_err;
	return n < 0 ? n : (c->rb ? n : 0);
}

/* Entries taken out of a summed map. */
struct taken {
	struct offcpu_key *keys;
	struct offcpu_val *vals;
	size_t nr, cap;
};

/* Room for @more entries after the taken ones. */
static int take_room(struct taken *t, size_t more)
{
	size_t cap = t->cap;

	if (grow_array((void **)&t->keys, &cap, t->nr + more, sizeof(*t->keys)))
		return -ENOMEM;
	cap = t->cap;
	if (grow_array((void **)&t->vals, &cap, t->nr + more, sizeof(*t->vals)))
		return -ENOMEM;
	t->cap = cap;
	return 0;
}

/* Take the entries of the map @fd, two system calls each. Returns 0 or -errno. */
static int take_each(int fd, struct taken *t)
{
	struct offcpu_key *keys = NULL, next, *prev = NULL;
	size_t nr = 0, cap = 0, i;
	int err = 0;

	/* Collect the keys first: deleting while walking would restart the walk. */
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (grow_array((void **)&keys, &cap, nr + 1, sizeof(*keys))) {
			free(keys);
			return -ENOMEM;
		}
		keys[nr] = next;
		prev = &keys[nr++];
	}
	err = take_room(t, nr);
	for (i = 0; i < nr && !err; i++) {
		/* nothing writes this map now: what ends meanwhile is in the other */
		if (bpf_map_lookup_and_delete_elem(fd, &keys[i], &t->vals[t->nr]))
			continue;
		t->keys[t->nr++] = keys[i];
	}
	free(keys);
	return err;
}

/*
 * Take the entries of the map @fd, many to a system call
 * (BPF_MAP_LOOKUP_AND_DELETE_BATCH, hash maps since 5.6). Returns 0, -errno,
 * or -EOPNOTSUPP before taking anything when the kernel has no such call.
 */
static int take_batch(int fd, struct taken *t)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint32_t step = 1024, count;
	uint64_t token = 0; /* a bucket index for hash maps; room for more */
	bool first = true;
	int err;

	for (;;) {
		err = take_room(t, step);
		if (err)
			return err;
		count = step;
		err = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &token, &token,
						      t->keys + t->nr, t->vals + t->nr, &count,
						      &opts) ? -errno : 0;
		if (err == -ENOSPC && !count && step < (1u << 20)) {
			step *= 4; /* one bucket holds more than step: more room */
			continue;
		}
		if (err && err != -ENOENT && first &&
		    (err == -EINVAL || err == -ENOTSUP || err == -EOPNOTSUPP))
			return -EOPNOTSUPP;
		first = false;
		t->nr += count;
		if (err)
			return err == -ENOENT ? 0 : err; /* ENOENT: the last of them */
	}
}

long collector__drain(struct collector *c,
		      int (*fn)(const struct offcpu_key *k, const struct offcpu_val *v, void *arg),
		      void *arg)
{
	struct bpf_map *summed = c->summed_cur ? c->ld.skel->maps.summed_b : c->ld.skel->maps.summed_a;
	struct taken t = { 0 };
	uint64_t t0;
	uint32_t zero = 0;
	size_t i;
	int err = -EOPNOTSUPP, fd;

	/* the program adds to the other map from here on; the update returns
	 * once no run of it can still be adding to this one */
	fd = bpf_map__fd(c->summed_cur ? c->ld.skel->maps.summed_a : c->ld.skel->maps.summed_b);
	if (bpf_map__update_elem(c->ld.skel->maps.summed_sel, &zero, sizeof(zero), &fd, sizeof(fd), 0))
		return -errno;
	c->summed_cur ^= 1;
	fd = bpf_map__fd(summed);
	t0 = now_ns();
	if (!c->drain_each)
		err = take_batch(fd, &t);
	if (err == -EOPNOTSUPP) {
		if (!c->drain_each)
			pr_info("the kernel has no batch map operations: summed blocks are taken "
				"one at a time");
		c->drain_each = true;
		t.nr = 0;
		err = take_each(fd, &t);
	}
	c->drain_ns += now_ns() - t0;
	c->drained += t.nr;
	/* what was taken is handed on even after an error: it is out of the map */
	for (i = 0; i < t.nr; i++) {
		int e = fn(&t.keys[i], &t.vals[i], arg);

		if (e) {
			err = e;
			break;
		}
	}
	free(t.keys);
	free(t.vals);
	return err ? err : (long)t.nr;
}

void collector__drain_stats(const struct collector *c, uint64_t *ns, uint64_t *entries,
			    bool *batch)
{
	*ns = c->drain_ns;
	*entries = c->drained;
	*batch = !c->drain_each;
}

void collector__store_maps(const struct collector *c, struct stackstore_maps *m)
{
	*m = (struct stackstore_maps){
		.ustacks = bpf_map__fd(c->ld.skel->maps.ustacks),
		.kstacks = bpf_map__fd(c->ld.skel->maps.kstacks),
		.chains = bpf_map__fd(c->ld.skel->maps.chains),
		.wakeups = bpf_map__fd(c->ld.skel->maps.wakeups),
	};
}

int collector__counters(struct collector *c, uint64_t *out)
{
	return sum_counters(c->ld.skel->maps.counters, OFFCPU_CNT_NR, out);
}

uint64_t collector__prog_misses(struct collector *c)
{
	struct bpf_program *progs[] = { c->ld.skel->progs.on_switch, c->ld.skel->progs.on_switch_raw };
	uint64_t misses = 0;
	size_t i;

	for (i = 0; i < 2; i++) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(progs[i]);

		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
			misses += info.recursion_misses;
	}
	return misses;
}

void collector__free(struct collector *c)
{
	size_t i;

	if (!c)
		return;
	ring_buffer__free(c->rb);
	perf_buffer__free(c->pb);
	for (i = 0; i < 3; i++)
		if (c->unw_p[i])
			munmap(c->unw_p[i], c->unw_len[i]);
	offcpu_bpf__destroy(c->ld.skel);
	free(c);
}
