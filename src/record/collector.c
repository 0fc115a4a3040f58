// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "collector.h"
#include "offcpu.skel.h"
#include "../util/util.h"

struct collector {
	struct offcpu_bpf *skel;
	bool raw_tp;
	uint64_t distinct_stacks;
};

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && log_verbosity < 2)
		return 0;
	if (level == LIBBPF_INFO && log_verbosity < 1)
		return 0;
	/* libbpf's warnings (verifier log included) only matter with -v: the
	 * caller reports the failure in one line. */
	if (level == LIBBPF_WARN && log_verbosity < 1)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static struct offcpu_bpf *open_skel(const struct collector_opts *o, bool raw_tp)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = o->btf_path);
	struct offcpu_bpf *skel;
	int ncpus = libbpf_num_possible_cpus();

	skel = offcpu_bpf__open_opts(&oo);
	if (!skel)
		return NULL;
	skel->rodata->filter_tgid = o->filter_tgid || o->nr_tgids > 0;
	skel->rodata->filter_tid = o->nr_tids > 0;
	skel->rodata->filter_cpu = o->nr_cpus > 0;
	skel->rodata->filter_cgroup = o->cgroup_fd >= 0;
	skel->rodata->follow_forks = o->follow_forks;
	skel->rodata->record_cgroup = o->record_cgroup;
	skel->rodata->user_stacks = o->user_stacks;
	skel->rodata->state_mask = o->state_mask;
	if (o->max_entries) {
		bpf_map__set_max_entries(skel->maps.summed, o->max_entries);
		bpf_map__set_max_entries(skel->maps.stacks, o->max_entries);
	}
	if (ncpus > 0)
		bpf_map__set_max_entries(skel->maps.cpu_filter, (uint32_t)ncpus);
	bpf_program__set_autoload(skel->progs.on_switch, !raw_tp);
	bpf_program__set_autoload(skel->progs.on_fork, !raw_tp);
	bpf_program__set_autoload(skel->progs.on_switch_raw, raw_tp);
	bpf_program__set_autoload(skel->progs.on_fork_raw, raw_tp);
	if (!o->follow_forks) {
		bpf_program__set_autoload(skel->progs.on_fork, false);
		bpf_program__set_autoload(skel->progs.on_fork_raw, false);
	}
	/* the unused per-task store of the other path costs nothing but a map */
	return skel;
}

static int fill_filters(struct collector *c, const struct collector_opts *o)
{
	uint8_t one = 1;
	size_t i;

	for (i = 0; i < o->nr_tgids; i++)
		if (bpf_map__update_elem(c->skel->maps.tgid_filter, &o->tgids[i], 4, &one, 1, BPF_ANY))
			return -errno;
	for (i = 0; i < o->nr_tids; i++)
		if (bpf_map__update_elem(c->skel->maps.tid_filter, &o->tids[i], 4, &one, 1, BPF_ANY))
			return -errno;
	for (i = 0; i < o->nr_cpus; i++) {
		uint32_t cpu = (uint32_t)o->cpus[i];

		if (bpf_map__update_elem(c->skel->maps.cpu_filter, &cpu, 4, &one, 1, BPF_ANY))
			return -errno;
	}
	if (o->cgroup_fd >= 0) {
		uint32_t zero = 0, fd = (uint32_t)o->cgroup_fd;

		if (bpf_map__update_elem(c->skel->maps.cgroup_filter, &zero, 4, &fd, 4, BPF_ANY))
			return -errno;
	}
	return 0;
}

struct collector *collector__open(const struct collector_opts *o)
{
	struct collector *c = calloc(1, sizeof(*c));
	int err;

	if (!c)
		return NULL;
	libbpf_set_print(libbpf_log);
	c->raw_tp = o->force_raw_tp;
	for (;;) {
		c->skel = open_skel(o, c->raw_tp);
		if (!c->skel) {
			err = -errno;
			pr_err("failed to open BPF object: %s", strerror(-err));
			goto fail;
		}
		err = offcpu_bpf__load(c->skel);
		if (!err)
			break;
		offcpu_bpf__destroy(c->skel);
		c->skel = NULL;
		if (c->raw_tp || err == -EPERM) {
			pr_err("failed to load BPF programs: %s%s", strerror(-err),
			       log_verbosity ? "" : " (run with -v for the verifier log)");
			goto fail;
		}
		pr_info("tp_btf/sched_switch did not load (%s); falling back to raw_tp",
			strerror(-err));
		c->raw_tp = true;
	}
	err = fill_filters(c, o);
	if (err) {
		pr_err("failed to fill BPF filter maps: %s", strerror(-err));
		goto fail;
	}
	err = offcpu_bpf__attach(c->skel);
	if (err) {
		pr_err("failed to attach sched_switch: %s", strerror(-err));
		goto fail;
	}
	return c;
fail:
	collector__free(c);
	errno = -err;
	return NULL;
}

int collector__add_tgid(struct collector *c, int tgid)
{
	uint8_t one = 1;

	if (bpf_map__update_elem(c->skel->maps.tgid_filter, &tgid, 4, &one, 1, BPF_ANY))
		return -errno;
	return 0;
}

const char *collector__attach_kind(const struct collector *c)
{
	return c->raw_tp ? "raw_tp" : "tp_btf";
}

void collector__detach(struct collector *c)
{
	if (c && c->skel)
		offcpu_bpf__detach(c->skel);
}

static int cmp_s32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

long collector__drain(struct collector *c, int (*fn)(const struct collector_entry *e, void *arg),
		      void *arg)
{
	struct bpf_map *summed = c->skel->maps.summed, *stacks = c->skel->maps.stacks;
	uint64_t ips[OFFCPU_MAX_STACK_DEPTH];
	struct offcpu_key key, next;
	struct offcpu_val val;
	int32_t *ids = NULL;
	size_t nr_ids = 0, cap = 0, i;
	void *prev = NULL;
	long n = 0;
	int err;

	while (bpf_map__get_next_key(summed, prev, &next, sizeof(next)) == 0) {
		struct collector_entry e = { .key = &next, .val = &val, .user_ips = ips };

		key = next;
		prev = &key;
		if (bpf_map__lookup_elem(summed, &next, sizeof(next), &val, sizeof(val), 0))
			continue; /* deleted under us */
		if (next.user_stack_id >= 0 &&
		    bpf_map__lookup_elem(stacks, &next.user_stack_id, 4, ips, sizeof(ips), 0) == 0) {
			while (e.nr_user_ips < OFFCPU_MAX_STACK_DEPTH && ips[e.nr_user_ips])
				e.nr_user_ips++;
			if (nr_ids == cap) {
				int32_t *p;

				cap = cap ? cap * 2 : 1024;
				p = realloc(ids, cap * sizeof(*ids));
				if (!p) {
					free(ids);
					return -ENOMEM;
				}
				ids = p;
			}
			ids[nr_ids++] = next.user_stack_id;
		}
		err = fn(&e, arg);
		if (err) {
			free(ids);
			return err;
		}
		n++;
	}
	qsort(ids, nr_ids, sizeof(*ids), cmp_s32);
	c->distinct_stacks = 0;
	for (i = 0; i < nr_ids; i++)
		if (i == 0 || ids[i] != ids[i - 1])
			c->distinct_stacks++;
	free(ids);
	return n;
}

uint64_t collector__distinct_stacks(const struct collector *c)
{
	return c->distinct_stacks;
}

int collector__counters(struct collector *c, uint64_t *out)
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
	for (i = 0; i < OFFCPU_CNT_NR; i++) {
		out[i] = 0;
		if (bpf_map__lookup_elem(c->skel->maps.counters, &i, 4, vals,
					 (size_t)ncpus * sizeof(*vals), 0))
			continue;
		for (k = 0; k < ncpus; k++)
			out[i] += vals[k];
	}
	free(vals);
	return 0;
}

uint64_t collector__prog_misses(struct collector *c)
{
	struct bpf_program *progs[] = { c->skel->progs.on_switch, c->skel->progs.on_switch_raw };
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
	if (!c)
		return;
	offcpu_bpf__destroy(c->skel);
	free(c);
}
