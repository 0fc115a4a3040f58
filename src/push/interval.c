// SPDX-License-Identifier: GPL-2.0
/* One interval's off-CPU time, grouped for push (interval.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "interval.h"
#include "../report/session.h"
#include "../util/util.h"

#define GROW(arr, cap, need)                                                               \
	({                                                                                 \
		size_t c_ = (cap);                                                         \
		int e_ = grow_array((void **)&(arr), &c_, (need), sizeof(*(arr)));         \
		if (!e_)                                                                   \
			(cap) = (__typeof__(cap))c_;                                       \
		e_;                                                                        \
	})

struct row_key {
	uint32_t group, pid, tid, comm, exe, stack, state, waker, chain, waker_fn;
};

static uint32_t group_of(struct interval *iv, const struct report_sample *s)
{
	uint64_t key = iv->by == PUSH_BY_PROCESS ? s->pid : s->cgroup;
	struct ivl_group *g;
	int created;
	uint64_t *v = hashmap__upsert(&iv->group_idx, &key, sizeof(key), &created);

	if (!v)
		return UINT32_MAX;
	if (!created)
		return (uint32_t)*v;
	if (GROW(iv->groups, iv->cap_groups, iv->nr_groups + 1)) {
		hashmap__remove(&iv->group_idx, &key, sizeof(key));
		return UINT32_MAX;
	}
	g = &iv->groups[iv->nr_groups];
	memset(g, 0, sizeof(*g));
	g->pid = iv->by == PUSH_BY_PROCESS ? s->pid : 0;
	g->exe = UINT32_MAX;
	*v = iv->nr_groups;
	return iv->nr_groups++;
}

static int add_obs(struct interval *iv, const struct report_sample *s, uint32_t row)
{
	if (!(s->flags & SAMPLE_TIME) || !s->time)
		iv->obs_cut = true; /* no time of its own: none for any */
	if (iv->obs_cut)
		return 0;
	if (iv->nr_obs == IVL_MAX_OBS) {
		iv->obs_cut = true;
		free(iv->obs);
		iv->obs = NULL;
		iv->nr_obs = iv->cap_obs = 0;
		return 0;
	}
	if (GROW(iv->obs, iv->cap_obs, iv->nr_obs + 1))
		return -ENOMEM;
	iv->obs[iv->nr_obs++] = (struct ivl_obs){ s->time, s->period, row };
	return 0;
}

static int on_sample(struct sample_consumer *c, const struct report_sample *s)
{
	struct interval *iv = consumer_of(c, struct interval, c);
	struct row_key k = { 0 };
	struct ivl_group *g;
	struct ivl_row *r;
	uint64_t *v;
	int created;

	if (iv->cancel && *iv->cancel)
		return -ECANCELED;
	if (s->role != SAMPLE_WAIT || !(s->flags & SAMPLE_ROWS) || !s->period)
		return 0;
	k.group = group_of(iv, s);
	if (k.group == UINT32_MAX)
		return -ENOMEM;
	g = &iv->groups[k.group];
	if (s->cgroup)
		g->cgroup = s->cgroup;
	if (s->exe != UINT32_MAX)
		g->exe = s->exe;
	if (!g->main_comm && (s->tid == s->pid || !g->comm)) {
		g->comm = s->comm;
		g->main_comm = s->tid == s->pid;
	}
	g->ns += s->period;
	k.pid = s->pid;
	k.tid = s->tid;
	k.comm = s->comm;
	k.exe = s->exe;
	k.stack = s->stack;
	k.state = s->state;
	k.waker = s->waker;
	k.chain = s->waker ? s->chain : 0;
	k.waker_fn = s->waker && s->waker_stack != UINT32_MAX ?
			     profile__own_frame(&iv->p, s->waker_stack) : UINT32_MAX;
	/* the wakeup's own kernel frames (an interrupt's) name no function of the waker's */
	if (k.waker_fn != UINT32_MAX && iv->p.frames[k.waker_fn].kernel)
		k.waker_fn = UINT32_MAX;
	v = hashmap__upsert(&iv->row_idx, &k, sizeof(k), &created);
	if (!v)
		return -ENOMEM;
	if (created) {
		if (GROW(iv->rows, iv->cap_rows, iv->nr_rows + 1)) {
			hashmap__remove(&iv->row_idx, &k, sizeof(k));
			return -ENOMEM;
		}
		r = &iv->rows[iv->nr_rows];
		memset(r, 0, sizeof(*r));
		r->group = k.group;
		r->pid = k.pid;
		r->tid = k.tid;
		r->comm = k.comm;
		r->exe = k.exe;
		r->stack = k.stack;
		r->state = k.state;
		r->waker = k.waker;
		r->chain = k.chain;
		r->waker_fn = k.waker_fn;
		*v = iv->nr_rows++;
	}
	r = &iv->rows[*v];
	r->ns += s->period;
	r->count++;
	iv->samples++;
	return add_obs(iv, s, (uint32_t)*v);
}

static int on_cgroup(struct sample_consumer *c, uint64_t id, const char *path)
{
	struct interval *iv = consumer_of(c, struct interval, c);
	uint32_t str = strtab__add(&iv->p.str, path);
	int created;
	uint64_t *v;

	if (str == UINT32_MAX)
		return -ENOMEM;
	v = hashmap__upsert(&iv->cgroups, &id, sizeof(id), &created);
	if (!v)
		return -ENOMEM;
	*v = str;
	return 0;
}

/* The observations by row (a counting sort: stable, so in time order within a row). */
static int sort_obs(struct interval *iv)
{
	struct ivl_obs *out;
	uint32_t i, at = 0;
	size_t k;

	for (i = 0; i < iv->nr_rows; i++)
		iv->rows[i].nr_obs = 0;
	if (iv->obs_cut || !iv->nr_obs)
		return 0;
	out = malloc(iv->nr_obs * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (k = 0; k < iv->nr_obs; k++)
		iv->rows[iv->obs[k].row].nr_obs++;
	for (i = 0; i < iv->nr_rows; i++) {
		iv->rows[i].first_obs = at;
		at += iv->rows[i].nr_obs;
		iv->rows[i].nr_obs = 0;
	}
	for (k = 0; k < iv->nr_obs; k++) {
		struct ivl_row *r = &iv->rows[iv->obs[k].row];

		out[r->first_obs + r->nr_obs++] = iv->obs[k];
	}
	free(iv->obs);
	iv->obs = out;
	iv->cap_obs = iv->nr_obs;
	return 0;
}

uint64_t interval__unix(const struct interval *iv, uint64_t mono)
{
	if (!iv->p.has_clock) {
		struct timespec w, m;

		clock_gettime(CLOCK_REALTIME, &w);
		clock_gettime(CLOCK_MONOTONIC, &m);
		return mono + ((uint64_t)w.tv_sec * 1000000000ULL + (uint64_t)w.tv_nsec) -
		       ((uint64_t)m.tv_sec * 1000000000ULL + (uint64_t)m.tv_nsec);
	}
	return iv->p.clock_wall_ns + mono - iv->p.clock_mono_ns;
}

const char *interval__cgroup_path(const struct interval *iv, uint64_t id)
{
	const uint64_t *v = hashmap__find(&iv->cgroups, &id, sizeof(id));

	return v ? strtab__get(&iv->p.str, (uint32_t)*v) : NULL;
}

/*
 * The window: the interval as the recorder cut it, widened to hold every
 * observation (a block read from the buffers just after the file began can
 * have ended just before).
 */
static void set_window(struct interval *iv, uint64_t start, uint64_t end)
{
	size_t k;

	for (k = 0; k < iv->nr_obs; k++) {
		if (iv->obs[k].time < start)
			start = iv->obs[k].time;
		if (iv->obs[k].time >= end)
			end = iv->obs[k].time + 1;
	}
	if (end <= start)
		end = start + 1;
	iv->start = interval__unix(iv, start);
	iv->end = interval__unix(iv, end);
}

int interval__read(struct interval *iv, const char *path, enum push_by by, bool rows,
		   uint64_t start_mono, uint64_t end_mono, const volatile int *cancel)
{
	struct session_opts so = { .input = path, .sym.demangle = true };
	struct profile_sink sink;
	struct sample_consumer *c[2];
	int err;

	memset(iv, 0, sizeof(*iv));
	iv->by = by;
	iv->cancel = cancel;
	iv->c.sample = on_sample;
	iv->c.cgroup = on_cgroup;
	profile_sink__init(&sink, &iv->p);
	c[0] = &iv->c;
	c[1] = &sink.c;
	err = session__run(&so, &iv->p, c, rows ? 2 : 1);
	err = err ?: sort_obs(iv);
	if (!err)
		set_window(iv, start_mono, end_mono);
	return err;
}

void interval__free(struct interval *iv)
{
	profile__free(&iv->p);
	free(iv->groups);
	free(iv->rows);
	free(iv->obs);
	hashmap__free(&iv->group_idx);
	hashmap__free(&iv->row_idx);
	hashmap__free(&iv->cgroups);
	memset(iv, 0, sizeof(*iv));
}
