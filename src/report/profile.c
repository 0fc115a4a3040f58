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
	uint32_t i;

	memset(p, 0, sizeof(*p));
	if (strtab__add(&p->str, "") != 0)
		return -ENOMEM;
	p->events = calloc(nr_events ? nr_events : 1, sizeof(*p->events));
	if (!p->events)
		return -ENOMEM;
	p->nr_events = nr_events;
	/* the labels every output may draw, so that they only read the profile */
	p->sep_frame = profile__label(p, "--");
	if (p->sep_frame == UINT32_MAX)
		return -ENOMEM;
	for (i = 0; i <= OFFCPU_STATES_ALL; i++) {
		char root[32];

		snprintf(root, sizeof(root), "[%s]", profile__state_name(i));
		p->state_frames[i] = profile__label(p, root);
		if (p->state_frames[i] == UINT32_MAX)
			return -ENOMEM;
	}
	return 0;
}

int profile__events(struct profile *p, uint32_t nr)
{
	struct profile_event *e;

	if (nr <= p->nr_events)
		return 0;
	e = realloc(p->events, nr * sizeof(*e));
	if (!e)
		return -ENOMEM;
	memset(e + p->nr_events, 0, (nr - p->nr_events) * sizeof(*e));
	p->events = e;
	p->nr_events = nr;
	return 0;
}

int profile__add_sample(struct profile *p, const struct report_sample *s)
{
	struct profile_row key = { .event = s->event, .pid = s->pid, .tid = s->tid,
				   .comm = s->comm, .stack = s->stack, .wait = s->wait, .state = s->state,
				   .waker = s->waker, .chain = s->chain,
				   .waker_stack = s->waker_stack };
	struct profile_row *r;
	uint32_t row;

	/* a thread waiting since before the recording: not a row (its time is its
	 * offcpu-time samples'), but a sample of its event all the same */
	if (s->role == SAMPLE_BEFORE && (s->flags & SAMPLE_LISTED) && !(s->flags & SAMPLE_ROWS)) {
		if (profile__events(p, s->event + 1))
			return -ENOMEM;
		p->events[s->event].count++;
		return 0;
	}
	if (!(s->flags & SAMPLE_ROWS))
		return 0;
	if (profile__events(p, s->event + 1))
		return -ENOMEM;
	row = profile__row(p, &key);
	if (row == UINT32_MAX)
		return -ENOMEM;
	r = &p->rows[row];
	if (r->exe == UINT32_MAX)
		r->exe = s->exe;
	r->period += s->period;
	r->count++;
	p->events[s->event].period += s->period;
	p->events[s->event].count++;
	return 0;
}

static int sink_sample(struct sample_consumer *c, const struct report_sample *s)
{
	return profile__add_sample(consumer_of(c, struct profile_sink, c)->p, s);
}

void profile_sink__init(struct profile_sink *k, struct profile *p)
{
	memset(k, 0, sizeof(*k));
	k->c.sample = sink_sample;
	k->p = p;
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
	free(p->befores);
	hashmap__free(&p->wait_idx);
	free(p->waits);
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

struct frame_key {
	uint32_t sym, dso, file, line;
	uint8_t kernel, inlined, label, pad[5];
};

uint32_t profile__frame(struct profile *p, const struct profile_frame *f)
{
	struct frame_key key = { f->sym, f->dso, f->file, f->line, f->kernel, f->inlined, f->label,
				 { 0 } };
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

uint32_t profile__label(struct profile *p, const char *name)
{
	struct profile_frame f = { .dso = UINT32_MAX, .label = true };

	f.sym = strtab__add(&p->str, name);
	return f.sym == UINT32_MAX ? UINT32_MAX : profile__frame(p, &f);
}

uint32_t profile__find_label(const struct profile *p, const char *name, size_t len)
{
	struct frame_key key = { .dso = UINT32_MAX, .label = 1 };
	uint64_t *v = hashmap__find(&p->str.idx, name, len);

	if (!v)
		return UINT32_MAX;
	key.sym = (uint32_t)*v;
	v = hashmap__find(&p->frame_idx, &key, sizeof(key));
	return v ? (uint32_t)*v : UINT32_MAX;
}

uint32_t profile__row(struct profile *p, const struct profile_row *k)
{
	bool woken = k->waker != 0;
	uint32_t key[10] = { k->event, k->pid, k->tid, k->comm, k->stack, k->state, k->waker,
			     woken ? k->chain : 0, woken ? k->waker_stack : UINT32_MAX, k->wait };
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
		r->event = k->event;
		r->pid = k->pid;
		r->tid = k->tid;
		r->comm = k->comm;
		r->stack = k->stack;
		r->state = k->state;
		r->waker = k->waker;
		r->chain = key[7];
		r->waker_stack = key[8];
		r->wait = k->wait;
		r->exe = UINT32_MAX;
		*v = p->nr_rows++;
	}
	return (uint32_t)*v;
}

const char *profile__state_name(uint32_t state)
{
	return state ? offcpu_state__name(state - 1) : "?";
}

const char *profile__waker_text(const struct profile *p, const struct profile_row *r, char *buf,
				size_t cap)
{
	const char *c, *end;
	size_t len;

	if (!r->waker)
		return "[none]";
	len = (size_t)snprintf(buf, cap, "%s", strtab__get(&p->str, r->waker));
	/* the chain is "hop1;hop2": shown as " <- hop1 <- hop2" */
	for (c = strtab__get(&p->str, r->chain); *c && len < cap; c = *end ? end + 1 : end) {
		end = strchrnul(c, ';');
		len += (size_t)snprintf(buf + len, cap - len, " <- %.*s", (int)(end - c), c);
	}
	return buf;
}

/* profile__row_frames into @out, @cap entries: returns how many there are, stored or not */
static uint32_t row_frames(const struct profile *p, const struct profile_row *r, uint32_t *out,
			   uint32_t cap, uint32_t *comm_at)
{
	uint32_t n = 0, nr, i, f;
	const uint32_t *fr;
	const char *c, *end;

/* count every frame, store those that fit */
#define PUT(frame)                                                                         	do {                                                                               		if (n < cap)                                                               			out[n] = (frame);                                                  		n++;                                                                       	} while (0)

	*comm_at = 0;
	if (p->show_states && p->events[r->event].offcpu) {
		PUT(p->state_frames[r->state <= OFFCPU_STATES_ALL ? r->state : 0]);
		*comm_at = 1;
	}
	fr = profile__stack_frames(p, r->stack, &nr);
	for (i = 0; i < nr; i++)
		PUT(fr[i]);
	if (!p->show_wakers || !r->waker)
		return n;
	PUT(p->sep_frame);
	if (r->waker_stack != UINT32_MAX) {
		fr = profile__stack_frames(p, r->waker_stack, &nr);
		for (i = nr; i-- > 0;)
			PUT(fr[i]);
	}
	/* the waker's name and its chain: labels the session interned */
	c = strtab__get(&p->str, r->waker);
	f = profile__find_label(p, c, strlen(c));
	if (f != UINT32_MAX)
		PUT(f);
	for (c = strtab__get(&p->str, r->chain); *c; c = *end ? end + 1 : end) {
		end = strchrnul(c, ';');
		f = profile__find_label(p, c, (size_t)(end - c));
		if (f != UINT32_MAX)
			PUT(f);
	}
#undef PUT
	return n;
}

static bool is_before(const struct profile *p, uint32_t ev)
{
	return !strcmp(strtab__get(&p->str, p->events[ev].name), OFFCPU_BEFORE_EVENT_NAME);
}

int profile__pick_event(const struct profile *p, const char *name)
{
	uint32_t i;

	for (i = 0; i < p->nr_events; i++)
		if (name ? !strcmp(strtab__get(&p->str, p->events[i].name), name)
			 : p->events[i].offcpu && p->events[i].count && !is_before(p, i))
			return (int)i;
	if (name) {
		pr_err("no event named '%s' in the file", name);
		return -1;
	}
	/* (offcpu-before's samples are no rows: its threads are a section of their own) */
	for (i = 0; i < p->nr_events; i++)
		if (p->events[i].count && !is_before(p, i))
			return (int)i;
	if (!p->nr_events) {
		pr_err("the file declares no event");
		return -1;
	}
	/* nothing passed the filters: an empty output of the main event */
	pr_warn("no samples to show");
	for (i = 0; i < p->nr_events; i++)
		if (p->events[i].offcpu && !is_before(p, i))
			return (int)i;
	return 0;
}

/*
 * The binaries every wait goes through, by their names: glibc (and the
 * libraries it merged in 2.34), musl, their dynamic loaders, the vDSO.
 */
static bool system_dso(const char *name)
{
	static const char *const prefixes[] = { "libc.", "libc-", "libpthread.", "libpthread-",
						"librt.", "librt-", "libdl.", "libdl-", "ld-",
						"ld.so", "ld64.so", "[vdso]", "[vsyscall]" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return false;
}

uint32_t profile__own_frame(const struct profile *p, uint32_t stack)
{
	uint32_t nr, i, user = UINT32_MAX, any = UINT32_MAX;
	const uint32_t *fr;

	if (stack >= p->nr_stacks)
		return UINT32_MAX;
	fr = profile__stack_frames(p, stack, &nr);
	for (i = nr; i-- > 0;) {
		const struct profile_frame *f = &p->frames[fr[i]];

		if (f->label)
			continue;
		if (any == UINT32_MAX)
			any = fr[i];
		if (f->kernel)
			continue;
		if (user == UINT32_MAX)
			user = fr[i];
		if (!system_dso(profile__frame_dso(p, fr[i])))
			return fr[i];
	}
	return user != UINT32_MAX ? user : any;
}

uint32_t profile__add_before(struct profile *p, const struct profile_before *b)
{
	if (GROW32(p->befores, p->cap_befores, p->nr_befores + 1))
		return UINT32_MAX;
	p->befores[p->nr_befores] = *b;
	return p->nr_befores++;
}

const char *profile__frame_name(const struct profile *p, uint32_t frame)
{
	if (frame >= p->nr_frames)
		return "[no frames]"; /* a sample whose call chain was empty */
	return strtab__get(&p->str, p->frames[frame].sym);
}

/* Whether frame @f is a runtime's own code (profile__runtime_frame()). */
static bool runtime_frame(const struct profile *p, const struct profile_frame *f)
{
	static const char *const go_rt[] = { "runtime.", "runtime/", "syscall.", "internal/" };
	const char *name, *paren, *dot;
	size_t i;

	if (f->kernel || f->label || f->dso == UINT32_MAX || f->dso >= p->nr_dsos)
		return false;
	switch (p->dsos[f->dso].runtime) {
	case DSO_PYTHON:
	case DSO_JS:
		return true;
	case DSO_JIT:
		/* a method ("void Foo.bar(long)"), not the JIT's stubs ("Interpreter",
		 * "StubRoutines (1)", "Builtin:CEntry...") */
		name = strtab__get(&p->str, f->sym);
		paren = strchr(name, '(');
		dot = strchr(name, '.');
		return (paren && dot && dot < paren) || !strncmp(name, "JS:", 3) ||
		       !strncmp(name, "py::", 4);
	case DSO_GO:
		name = strtab__get(&p->str, f->sym);
		for (i = 0; i < sizeof(go_rt) / sizeof(go_rt[0]); i++)
			if (!strncmp(name, go_rt[i], strlen(go_rt[i])))
				return false;
		return strchr(name, '.') != NULL;
	}
	return false;
}

uint32_t profile__runtime_frame(const struct profile *p, uint32_t stack)
{
	uint32_t nr, i;
	const uint32_t *f = profile__stack_frames(p, stack, &nr);

	for (i = nr; i-- > 0;)
		if (f[i] < p->nr_frames && runtime_frame(p, &p->frames[f[i]]))
			return f[i];
	return UINT32_MAX;
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

int profile__row_frames(const struct profile *p, const struct profile_row *r, uint32_t **buf,
			uint32_t *cap, uint32_t *comm_at)
{
	uint32_t n = row_frames(p, r, *buf, *cap, comm_at);

	if (n > *cap) {
		uint32_t *nb = realloc(*buf, n * sizeof(**buf));

		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = n;
		n = row_frames(p, r, *buf, *cap, comm_at);
	}
	return (int)n;
}
