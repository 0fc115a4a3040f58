// SPDX-License-Identifier: GPL-2.0
/* The stack store (stackstore.h): the BPF maps' stacks, chains and wakeups, cached by key. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "stackstore.h"
#include "../util/util.h"
#include "../util/hashmap.h"

/*
 * A cached stack: frames innermost first. in_map: the BPF map may hold it
 * (read from it, or used since it was last pruned from it).
 */
struct cached_stack {
	uint32_t nr;
	uint8_t kind; /* 0 user, 1 kernel */
	bool in_map;
	uint64_t id;
	uint64_t ips[];
};

/* Who woke a block, read from the wakeup map. in_map: the map may hold it
 * (read from it, or used since it was last pruned from it). */
struct cached_wakeup {
	uint64_t id;
	bool in_map;
	struct offcpu_wakeup w;
};

struct stackstore {
	struct stackstore_maps maps;
	struct hashmap stack_idx; /* (kind, id) -> index into stacks */
	struct cached_stack **stacks;
	size_t nr_stacks, cap_stacks;
	/* stacks used since the last prune: taken out of the BPF maps then */
	size_t *used;
	size_t nr_used, cap_used;
	uint64_t pruned; /* stack map entries deleted */
	struct hashmap chain_idx; /* --wakers: chain key -> index into chains */
	struct offcpu_chain *chains;
	size_t nr_chains, cap_chains;
	struct hashmap wakeup_idx; /* --wakers: wakeup key -> index into wakeups */
	struct cached_wakeup *wakeups;
	size_t nr_wakeups, cap_wakeups;
	size_t *wused; /* wakeups read or used since the last prune */
	size_t nr_wused, cap_wused;
	uint64_t unknown_wakeups; /* keys naming a waker the map did not hold */
};

struct stackstore *stackstore__new(const struct stackstore_maps *m)
{
	struct stackstore *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->maps = *m;
	return s;
}

void stackstore__free(struct stackstore *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nr_stacks; i++)
		free(s->stacks[i]);
	free(s->stacks);
	free(s->used);
	hashmap__free(&s->stack_idx);
	hashmap__free(&s->chain_idx);
	free(s->chains);
	hashmap__free(&s->wakeup_idx);
	free(s->wakeups);
	free(s->wused);
	free(s);
}

/* Note that stack @idx is in its BPF map until the next prune. */
static void mark_used(struct stackstore *s, size_t idx)
{
	struct cached_stack *cs = s->stacks[idx];

	if (cs->in_map)
		return;
	if (grow_array((void **)&s->used, &s->cap_used, s->nr_used + 1, sizeof(*s->used)))
		return; /* not pruned: it stays in the map, nothing is lost */
	s->used[s->nr_used++] = idx;
	cs->in_map = true;
}

static uint32_t cached(struct stackstore *s, int kind, uint64_t id, int map_fd,
		       const void *key, size_t key_size, const uint64_t **ips)
{
	uint64_t ck[2] = { (uint64_t)kind, id }, *slot, buf[OFFCPU_MAX_STACK_DEPTH];
	struct cached_stack *cs;
	uint32_t nr = 0;
	int created;

	slot = hashmap__upsert(&s->stack_idx, ck, sizeof(ck), &created);
	if (!slot)
		return 0;
	if (!created) {
		/* used again: the program may have stored it again since a prune */
		mark_used(s, *slot);
		cs = s->stacks[*slot];
		*ips = cs->ips;
		return cs->nr;
	}
	if (bpf_map_lookup_elem(map_fd, key, buf) == 0)
		while (nr < OFFCPU_MAX_STACK_DEPTH && buf[nr])
			nr++;
	cs = calloc(1, sizeof(*cs) + nr * sizeof(uint64_t));
	if (!cs)
		return 0;
	cs->nr = nr;
	cs->kind = (uint8_t)kind;
	cs->id = id;
	memcpy(cs->ips, buf, nr * sizeof(uint64_t));
	if (s->nr_stacks == s->cap_stacks) {
		size_t cap = s->cap_stacks ? s->cap_stacks * 2 : 256;
		struct cached_stack **p = realloc(s->stacks, cap * sizeof(*p));

		if (!p) {
			free(cs);
			return 0;
		}
		s->stacks = p;
		s->cap_stacks = cap;
	}
	*slot = s->nr_stacks;
	s->stacks[s->nr_stacks++] = cs;
	mark_used(s, *slot);
	*ips = cs->ips;
	return cs->nr;
}

/*
 * Take the stacks read since the last prune out of the BPF maps: their
 * frames are cached here for good, and a block that uses one again finds it
 * here, or has the program store it again. The maps then hold only what is
 * new since the last flush, however long the recording.
 */
long stackstore__prune(struct stackstore *s)
{
	long n = 0;
	size_t i;

	for (i = 0; i < s->nr_used; i++) {
		struct cached_stack *cs = s->stacks[s->used[i]];
		int map_fd = cs->kind ? s->maps.kstacks : s->maps.ustacks;

		if (bpf_map_delete_elem(map_fd, &cs->id) == 0)
			n++;
		cs->in_map = false;
	}
	s->nr_used = 0;
	/* wakers too: cached here by their hash, stored again when seen again */
	for (i = 0; i < s->nr_wused; i++) {
		struct cached_wakeup *cw = &s->wakeups[s->wused[i]];

		bpf_map_delete_elem(s->maps.wakeups, &cw->id);
		cw->in_map = false;
	}
	s->nr_wused = 0;
	s->pruned += (uint64_t)n;
	return n;
}

uint32_t stackstore__user(struct stackstore *s, uint64_t key, const uint64_t **ips)
{
	static const uint64_t unknown = OFFCPU_UNW_MARK_OF(OFFCPU_UNW_BEFORE_START, 0);

	if (!key)
		return 0;
	if (key == OFFCPU_STACK_UNKNOWN) {
		*ips = &unknown; /* a mark frame alone: taken before offcpu ran */
		return 1;
	}
	return cached(s, 0, key, s->maps.ustacks, &key, sizeof(key), ips);
}

uint32_t stackstore__kernel(struct stackstore *s, uint64_t key, const uint64_t **ips)
{
	if (!key)
		return 0;
	return cached(s, 1, key, s->maps.kstacks, &key, sizeof(key), ips);
}

const struct offcpu_chain *stackstore__chain(struct stackstore *s, uint64_t key)
{
	struct offcpu_chain ch;
	uint64_t *v;
	int created;

	if (!key)
		return NULL;
	v = hashmap__find(&s->chain_idx, &key, sizeof(key));
	if (v)
		return &s->chains[*v];
	/* chains are few and never deleted: the map keeps them too */
	if (bpf_map_lookup_elem(s->maps.chains, &key, &ch))
		return NULL;
	if (grow_array((void **)&s->chains, &s->cap_chains, s->nr_chains + 1, sizeof(*s->chains)))
		return NULL;
	v = hashmap__upsert(&s->chain_idx, &key, sizeof(key), &created);
	if (!v)
		return NULL;
	*v = s->nr_chains;
	s->chains[s->nr_chains] = ch;
	return &s->chains[s->nr_chains++];
}

const struct offcpu_wakeup *stackstore__wakeup(struct stackstore *s, uint64_t key)
{
	struct cached_wakeup *cw;
	struct offcpu_wakeup w;
	uint64_t *v;
	int created;

	if (!key)
		return NULL;
	v = hashmap__find(&s->wakeup_idx, &key, sizeof(key));
	if (!v) {
		if (bpf_map_lookup_elem(s->maps.wakeups, &key, &w)) {
			s->unknown_wakeups++;
			return NULL;
		}
		if (grow_array((void **)&s->wakeups, &s->cap_wakeups, s->nr_wakeups + 1,
			       sizeof(*s->wakeups)))
			return NULL;
		v = hashmap__upsert(&s->wakeup_idx, &key, sizeof(key), &created);
		if (!v)
			return NULL;
		*v = s->nr_wakeups;
		s->wakeups[s->nr_wakeups++] = (struct cached_wakeup){ .id = key, .w = w };
	}
	cw = &s->wakeups[*v];
	/* read or used again: the program may have stored it again since a prune */
	if (!cw->in_map &&
	    !grow_array((void **)&s->wused, &s->cap_wused, s->nr_wused + 1, sizeof(*s->wused))) {
		s->wused[s->nr_wused++] = *v;
		cw->in_map = true;
	}
	return &cw->w;
}

uint64_t stackstore__unknown_wakeups(const struct stackstore *s)
{
	return s->unknown_wakeups;
}

uint64_t stackstore__pruned(const struct stackstore *s)
{
	return s->pruned;
}
