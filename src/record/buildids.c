// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "buildids.h"
#include "../perfdata/writer.h"
#include "../util/util.h"
#include "../util/elf.h"

struct mapping {
	int pid;
	uint64_t start, end;
	size_t file; /* index into files */
	uint64_t seq; /* later mappings win */
};

struct file {
	char *name;
	int marked;
};

struct maptab {
	struct mapping *maps;
	size_t nr_maps, cap_maps;
	struct file *files;
	size_t nr_files, cap_files;
	int (*parents)[2]; /* {child, parent} */
	size_t nr_parents, cap_parents;
	int sorted;
};

struct maptab *maptab__new(void)
{
	return calloc(1, sizeof(struct maptab));
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	void *np;
	size_t ncap;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 256;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

static long file_index(struct maptab *t, const char *name)
{
	size_t i;

	/* Most processes map the same few files: search the newest first. */
	for (i = t->nr_files; i-- > 0;)
		if (!strcmp(t->files[i].name, name))
			return (long)i;
	if (grow((void **)&t->files, &t->cap_files, t->nr_files + 1, sizeof(*t->files)))
		return -ENOMEM;
	t->files[t->nr_files].name = strdup(name);
	if (!t->files[t->nr_files].name)
		return -ENOMEM;
	t->files[t->nr_files].marked = 0;
	return (long)t->nr_files++;
}

int maptab__observe(struct maptab *t, const struct perf_event_header *rec)
{
	const char *r = (const char *)rec;
	const char *name;
	struct mapping *m;
	long f;
	size_t name_off;

	switch (rec->type) {
	case PERF_RECORD_FORK: {
		int pid = *(const int *)(r + 8), ppid = *(const int *)(r + 12);

		if (pid == ppid)
			return 0;
		if (grow((void **)&t->parents, &t->cap_parents, t->nr_parents + 1,
			 sizeof(*t->parents)))
			return -ENOMEM;
		t->parents[t->nr_parents][0] = pid;
		t->parents[t->nr_parents][1] = ppid;
		t->nr_parents++;
		return 0;
	}
	case PERF_RECORD_MMAP:
		name_off = 40;
		break;
	case PERF_RECORD_MMAP2:
		name_off = 72;
		break;
	default:
		return 0;
	}
	if (rec->size <= name_off)
		return 0;
	name = r + name_off;
	if (!memchr(name, 0, rec->size - name_off) || name[0] != '/')
		return 0; /* [vdso], anonymous: no file to read a build id from */
	f = file_index(t, name);
	if (f < 0)
		return (int)f;
	if (grow((void **)&t->maps, &t->cap_maps, t->nr_maps + 1, sizeof(*t->maps)))
		return -ENOMEM;
	m = &t->maps[t->nr_maps];
	m->pid = *(const int *)(r + 8);
	m->start = *(const uint64_t *)(r + 16);
	m->end = m->start + *(const uint64_t *)(r + 24);
	m->file = (size_t)f;
	m->seq = t->nr_maps++;
	t->sorted = 0;
	return 0;
}

static int cmp_map(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

static int find_parent(const struct maptab *t, int pid)
{
	size_t i;

	for (i = t->nr_parents; i-- > 0;)
		if (t->parents[i][0] == pid)
			return t->parents[i][1];
	return -1;
}

static struct mapping *lookup(struct maptab *t, int pid, uint64_t ip)
{
	size_t lo = 0, hi = t->nr_maps;
	struct mapping *best = NULL;

	/* first entry with (pid, start) > (pid, ip) */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		struct mapping *m = &t->maps[mid];

		if (m->pid < pid || (m->pid == pid && m->start <= ip))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Among this pid's mappings that start at or below ip, the newest that
	 * covers it wins: an exec or a re-mmap leaves older overlapping ones. */
	while (lo-- > 0) {
		struct mapping *m = &t->maps[lo];

		if (m->pid != pid)
			break;
		if (ip < m->end && (!best || m->seq > best->seq))
			best = m;
	}
	return best;
}

void maptab__mark(struct maptab *t, int pid, uint64_t ip)
{
	int depth;

	if (!t->sorted) {
		qsort(t->maps, t->nr_maps, sizeof(*t->maps), cmp_map);
		t->sorted = 1;
	}
	for (depth = 0; depth < 8 && pid > 0; depth++) {
		struct mapping *m = lookup(t, pid, ip);

		if (m) {
			t->files[m->file].marked = 1;
			return;
		}
		pid = find_parent(t, pid);
	}
}

void maptab__clear_marks(struct maptab *t)
{
	size_t i;

	for (i = 0; i < t->nr_files; i++)
		t->files[i].marked = 0;
}

int maptab__write_build_ids(struct maptab *t, struct perf_writer *w)
{
	uint8_t id[20];
	size_t i;
	int n = 0, len, err;

	for (i = 0; i < t->nr_files; i++) {
		if (!t->files[i].marked)
			continue;
		len = elf_build_id_path(t->files[i].name, id, sizeof(id));
		if (len <= 0) {
			pr_debug("no build id for %s", t->files[i].name);
			continue;
		}
		err = perf_writer__add_build_id(w, -1, false, id, (size_t)len, t->files[i].name);
		if (err)
			return err;
		n++;
	}
	return n;
}

void maptab__free(struct maptab *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr_files; i++)
		free(t->files[i].name);
	free(t->files);
	free(t->maps);
	free(t->parents);
	free(t);
}
