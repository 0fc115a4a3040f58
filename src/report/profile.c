// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "profile.h"
#include "../perfdata/wakers.h"
#include "../util/util.h"

/* Grow @*arr (of @size-byte items) to hold at least @need items. */
static int grow(void **arr, uint64_t *cap, uint64_t need, size_t size)
{
	uint64_t c = *cap ? *cap : 64;
	void *n;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	n = realloc(*arr, c * size);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = c;
	return 0;
}

#define GROW32(arr, cap, need)                                                             \
	({                                                                                 \
		uint64_t _c = (cap);                                                       \
		int _e = grow((void **)&(arr), &_c, (need), sizeof(*(arr)));               \
		(cap) = (uint32_t)_c;                                                      \
		_e;                                                                        \
	})

uint32_t strtab__add(struct strtab *t, const char *s)
{
	size_t len = strlen(s);
	int created;
	uint64_t *v = hashmap__upsert(&t->idx, s, len, &created);

	if (!v)
		return UINT32_MAX;
	if (created) {
		char *copy = strdup(s);

		if (!copy || GROW32(t->strs, t->cap, t->nr + 1)) {
			free(copy);
			return UINT32_MAX;
		}
		t->strs[t->nr] = copy;
		*v = t->nr++;
	}
	return (uint32_t)*v;
}

int profile__init(struct profile *p, uint32_t nr_events)
{
	memset(p, 0, sizeof(*p));
	if (strtab__add(&p->str, "") != 0)
		return -ENOMEM;
	p->events = calloc(nr_events ? nr_events : 1, sizeof(*p->events));
	if (!p->events)
		return -ENOMEM;
	p->nr_events = nr_events;
	return 0;
}

void profile__free(struct profile *p)
{
	uint32_t i;

	for (i = 0; i < p->str.nr; i++)
		free(p->str.strs[i]);
	free(p->str.strs);
	hashmap__free(&p->str.idx);
	free(p->events);
	free(p->dsos);
	hashmap__free(&p->dso_idx);
	free(p->frames);
	hashmap__free(&p->frame_idx);
	free(p->stack_frames);
	free(p->stacks);
	hashmap__free(&p->stack_idx);
	free(p->rows);
	hashmap__free(&p->row_idx);
	memset(p, 0, sizeof(*p));
}

uint32_t profile__dso(struct profile *p, const char *path, const uint8_t *build_id,
		      size_t build_id_len, bool kernel)
{
	struct {
		uint32_t name;
		uint8_t len;
		uint8_t id[20];
	} key = { 0 };
	const char *base;
	int created;
	uint64_t *v;

	key.name = strtab__add(&p->str, path);
	if (key.name == UINT32_MAX)
		return UINT32_MAX;
	if (build_id_len > 20)
		build_id_len = 20;
	key.len = (uint8_t)build_id_len;
	if (build_id_len)
		memcpy(key.id, build_id, build_id_len);
	v = hashmap__upsert(&p->dso_idx, &key, sizeof(key), &created);
	if (!v)
		return UINT32_MAX;
	if (created) {
		struct profile_dso *d;

		if (GROW32(p->dsos, p->cap_dsos, p->nr_dsos + 1))
			return UINT32_MAX;
		d = &p->dsos[p->nr_dsos];
		memset(d, 0, sizeof(*d));
		d->name = key.name;
		base = strrchr(path, '/');
		d->short_name = strtab__add(&p->str, base && base[1] ? base + 1 : path);
		memcpy(d->build_id, key.id, 20);
		d->build_id_len = key.len;
		d->kernel = kernel;
		*v = p->nr_dsos++;
	}
	return (uint32_t)*v;
}

uint32_t profile__frame(struct profile *p, const struct profile_frame *f)
{
	struct {
		uint32_t sym, dso, file, line;
		uint8_t kernel, inlined, pad[6];
	} key = { f->sym, f->dso, f->file, f->line, f->kernel, f->inlined, { 0 } };
	int created;
	uint64_t *v = hashmap__upsert(&p->frame_idx, &key, sizeof(key), &created);

	if (!v)
		return UINT32_MAX;
	if (created) {
		if (GROW32(p->frames, p->cap_frames, p->nr_frames + 1))
			return UINT32_MAX;
		p->frames[p->nr_frames] = *f;
		*v = p->nr_frames++;
	}
	return (uint32_t)*v;
}

uint32_t profile__stack(struct profile *p, const uint32_t *frames, uint32_t nr)
{
	int created;
	uint64_t *v = hashmap__upsert(&p->stack_idx, frames, nr * sizeof(*frames), &created);

	if (!v)
		return UINT32_MAX;
	if (created) {
		if (GROW32(p->stacks, p->cap_stacks, p->nr_stacks + 1) ||
		    grow((void **)&p->stack_frames, &p->cap_stack_frames, p->nr_stack_frames + nr + 1,
			 sizeof(uint32_t)))
			return UINT32_MAX;
		p->stacks[p->nr_stacks].nr = nr;
		p->stacks[p->nr_stacks].first = (uint32_t)p->nr_stack_frames;
		if (nr)
			memcpy(p->stack_frames + p->nr_stack_frames, frames, nr * sizeof(*frames));
		p->nr_stack_frames += nr;
		*v = p->nr_stacks++;
	}
	return (uint32_t)*v;
}

uint32_t profile__row(struct profile *p, uint32_t event, uint32_t pid, uint32_t tid,
		      uint32_t comm, uint32_t stack, uint32_t state, uint32_t waker)
{
	uint32_t key[7] = { event, pid, tid, comm, stack, state, waker };
	int created;
	uint64_t *v = hashmap__upsert(&p->row_idx, key, sizeof(key), &created);

	if (!v)
		return UINT32_MAX;
	if (created) {
		struct profile_row *r;

		if (GROW32(p->rows, p->cap_rows, p->nr_rows + 1))
			return UINT32_MAX;
		r = &p->rows[p->nr_rows];
		memset(r, 0, sizeof(*r));
		r->event = event;
		r->pid = pid;
		r->tid = tid;
		r->comm = comm;
		r->stack = stack;
		r->state = state;
		r->waker = waker;
		r->exe = UINT32_MAX;
		*v = p->nr_rows++;
	}
	return (uint32_t)*v;
}

const char *profile__state_name(uint32_t state)
{
	return state ? offcpu_state__name(state - 1) : "?";
}

const char *profile__state_root(uint32_t state)
{
	static const char *const roots[OFFCPU_STATES_ALL] = { "[preempted]", "[S]", "[D]", "[T]",
							       "[I]", "[runqueue]" };

	return state && state <= OFFCPU_STATES_ALL ? roots[state - 1] : "[?]";
}

int profile__pick_event(const struct profile *p, const char *name)
{
	uint32_t i;

	for (i = 0; i < p->nr_events; i++)
		if (name ? !strcmp(strtab__get(&p->str, p->events[i].name), name)
			 : p->events[i].offcpu && p->events[i].count)
			return (int)i;
	if (name) {
		pr_err("no event named '%s' in the file", name);
		return -1;
	}
	for (i = 0; i < p->nr_events; i++)
		if (p->events[i].count)
			return (int)i;
	if (!p->nr_events) {
		pr_err("the file declares no event");
		return -1;
	}
	/* nothing passed the filters: an empty output of the main event */
	pr_warn("no samples to show");
	for (i = 0; i < p->nr_events; i++)
		if (p->events[i].offcpu)
			return (int)i;
	return 0;
}

const char *profile__frame_name(const struct profile *p, uint32_t frame)
{
	if (frame >= p->nr_frames)
		return "[no frames]"; /* a sample whose call chain was empty */
	return strtab__get(&p->str, p->frames[frame].sym);
}

const char *profile__frame_dso(const struct profile *p, uint32_t frame)
{
	uint32_t d;

	if (frame >= p->nr_frames)
		return "[unknown]";
	d = p->frames[frame].dso;

	if (d == UINT32_MAX || d >= p->nr_dsos)
		return "[unknown]";
	return strtab__get(&p->str, p->dsos[d].short_name);
}
