// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "procmaps.h"
#include "util.h"

static struct addrspace *addrspace_of(struct procmaps *pm, uint32_t pid, bool create)
{
	int created;
	uint64_t *v;

	if (!create) {
		v = hashmap__find(&pm->index, &pid, sizeof(pid));
		return v ? &pm->as[*v] : NULL;
	}
	v = hashmap__upsert(&pm->index, &pid, sizeof(pid), &created);
	if (!v)
		return NULL;
	if (created) {
		struct addrspace *n = realloc(pm->as, (pm->nr + 1) * sizeof(*n));

		if (!n)
			return NULL;
		pm->as = n;
		memset(&n[pm->nr], 0, sizeof(*n));
		n[pm->nr].gen = ++pm->gen;
		*v = pm->nr++;
	}
	return &pm->as[*v];
}

static int push(struct addrspace *as, const struct vmap *m)
{
	if (grow_array((void **)&as->maps, &as->cap, as->nr + 1, sizeof(*as->maps)))
		return -ENOMEM;
	as->maps[as->nr++] = *m;
	return 0;
}

static int cmp_start(const void *a, const void *b)
{
	const struct vmap *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

int procmaps__map(struct procmaps *pm, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		  uint32_t obj)
{
	struct vmap m = { start, start + len, pgoff, obj };
	struct addrspace *as;
	size_t i, n;

	if (!len || m.end < start)
		return 0;
	as = addrspace_of(pm, pid, true);
	if (!as)
		return -ENOMEM;
	for (i = 0, n = as->nr; i < n; i++) {
		struct vmap *o = &as->maps[i];

		if (o->end <= m.start || o->start >= m.end)
			continue;
		if (o->end > m.end) { /* the part of the old mapping right of the new one stays */
			struct vmap right = *o;

			right.pgoff += m.end - o->start;
			right.start = m.end;
			if (push(as, &right))
				return -ENOMEM;
			o = &as->maps[i];
		}
		if (o->start < m.start)
			o->end = m.start;
		else
			o->start = o->end = 0; /* dropped below */
	}
	for (i = 0, n = 0; i < as->nr; i++)
		if (as->maps[i].end > as->maps[i].start)
			as->maps[n++] = as->maps[i];
	as->nr = n;
	if (push(as, &m))
		return -ENOMEM;
	qsort(as->maps, as->nr, sizeof(*as->maps), cmp_start);
	as->gen = ++pm->gen;
	return 0;
}

int procmaps__fork(struct procmaps *pm, uint32_t ppid, uint32_t pid)
{
	const struct addrspace *parent = addrspace_of(pm, ppid, false);
	struct addrspace *child;
	size_t i;

	if (pid == ppid || !parent || !parent->nr)
		return 0;
	child = addrspace_of(pm, pid, true);
	if (!child)
		return -ENOMEM;
	parent = addrspace_of(pm, ppid, false); /* the array may have moved */
	if (child->nr)
		return 0;
	for (i = 0; i < parent->nr; i++)
		if (push(child, &parent->maps[i]))
			return -ENOMEM;
	child->gen = ++pm->gen;
	return 0;
}

const struct addrspace *procmaps__get(const struct procmaps *pm, uint32_t pid)
{
	uint64_t *v = hashmap__find(&pm->index, &pid, sizeof(pid));

	return v ? &pm->as[*v] : NULL;
}

const struct vmap *addrspace__find(const struct addrspace *as, uint64_t addr)
{
	size_t i;

	if (!as)
		return NULL;
	i = last_at_or_below(as->maps, as->nr, start, addr);
	if (i == SIZE_MAX || addr >= as->maps[i].end)
		return NULL;
	return &as->maps[i];
}

void procmaps__free(struct procmaps *pm)
{
	size_t i;

	hashmap__free(&pm->index);
	for (i = 0; i < pm->nr; i++)
		free(pm->as[i].maps);
	free(pm->as);
	memset(pm, 0, sizeof(*pm));
}

int maps_line__parse(char *line, struct maps_line *m)
{
	unsigned long long start, end, pgoff, ino;
	int name_at = 0;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, m->perms, &pgoff, &m->maj,
		   &m->min, &ino, &name_at) < 7 || !name_at)
		return -EINVAL;
	line[strcspn(line, "\n")] = 0;
	m->start = start;
	m->end = end;
	m->pgoff = pgoff;
	m->ino = ino;
	m->name = line + name_at;
	return 0;
}
