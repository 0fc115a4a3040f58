// SPDX-License-Identifier: GPL-2.0
/* The wait objects of the BPF program's wait map, cached by key (waitstore.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>
#include <bpf/bpf.h>
#include "waitstore.h"
#include "../perfdata/waits.h"
#include "../util/hashmap.h"
#include "../util/util.h"

struct cached_wait {
	uint64_t key;
	bool in_map; /* the map may hold it: read from it, or used since the last prune */
	struct offcpu_wait w;
};

struct waitstore {
	int fd;
	struct hashmap idx; /* key -> index into objs */
	struct cached_wait *objs;
	size_t nr, cap;
	size_t *used; /* read or used since the last prune */
	size_t nr_used, cap_used;
	struct waitstore_stats st;
};

struct waitstore *waitstore__new(int map_fd)
{
	struct waitstore *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->fd = map_fd;
	return w;
}

void waitstore__free(struct waitstore *w)
{
	if (!w)
		return;
	hashmap__free(&w->idx);
	free(w->objs);
	free(w->used);
	free(w);
}

static void mark_used(struct waitstore *w, size_t i)
{
	if (w->objs[i].in_map ||
	    grow_array((void **)&w->used, &w->cap_used, w->nr_used + 1, sizeof(*w->used)))
		return; /* not pruned: it stays in the map, nothing is lost */
	w->used[w->nr_used++] = i;
	w->objs[i].in_map = true;
}

/*
 * Whether the page of @addr in process @pid is in memory, from its pagemap
 * (bit 63: present): reading a page that is not would make the kernel fetch
 * it from swap, or wait for the userfaultfd handler the process chose.
 */
static bool page_present(uint32_t pid, uint64_t addr)
{
	char path[64];
	uint64_t ent = 0;
	long pg = sysconf(_SC_PAGESIZE);
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%u/pagemap", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = pread(fd, &ent, sizeof(ent), (off_t)(addr / (uint64_t)pg * sizeof(ent)));
	close(fd);
	return n == sizeof(ent) && (ent >> 63);
}

/* An iterator's futex object: the 24 bytes at its address, read from its process now. */
static void read_words(struct waitstore *w, struct offcpu_wait *o)
{
	long pg = sysconf(_SC_PAGESIZE);
	struct iovec local = { o->words, sizeof(o->words) };
	struct iovec remote = { (void *)(uintptr_t)o->addr, sizeof(o->words) };

	if (o->kind != OFFCPU_WAIT_FUTEX || !o->addr || (o->flags & OFFCPU_WAIT_WORDS) ||
	    !(o->flags & (OFFCPU_WAIT_AT_START | OFFCPU_WAIT_AT_END)))
		return;
	/* both pages if the words cross into the next */
	if (page_present(o->tgid, o->addr) &&
	    ((o->addr + sizeof(o->words) - 1) / (uint64_t)pg == o->addr / (uint64_t)pg ||
	     page_present(o->tgid, o->addr + sizeof(o->words) - 1)) &&
	    process_vm_readv((pid_t)o->tgid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(o->words)) {
		o->flags |= OFFCPU_WAIT_WORDS | OFFCPU_WAIT_WORDS_LATE;
		w->st.late_read++;
		return;
	}
	memset(o->words, 0, sizeof(o->words));
	w->st.late_unread++;
}

/* Cache the object @o under @key (its words read first if an iterator's): its index, or -1. */
static long add(struct waitstore *w, uint64_t key, const struct offcpu_wait *o)
{
	uint64_t *v;
	int created;

	if (grow_array((void **)&w->objs, &w->cap, w->nr + 1, sizeof(*w->objs)))
		return -1;
	v = hashmap__upsert(&w->idx, &key, sizeof(key), &created);
	if (!v)
		return -1;
	if (!created)
		return (long)*v;
	*v = w->nr;
	w->objs[w->nr] = (struct cached_wait){ .key = key, .w = *o };
	read_words(w, &w->objs[w->nr].w);
	w->st.objects++;
	return (long)w->nr++;
}

const struct offcpu_wait *waitstore__get(struct waitstore *w, uint64_t key)
{
	struct offcpu_wait o;
	uint64_t *v;
	long i;

	if (!w || !key)
		return NULL;
	v = hashmap__find(&w->idx, &key, sizeof(key));
	if (v) {
		i = (long)*v;
	} else {
		if (w->fd < 0 || bpf_map_lookup_elem(w->fd, &key, &o)) {
			w->st.unknown++;
			return NULL;
		}
		i = add(w, key, &o);
		if (i < 0)
			return NULL;
	}
	/* read or used again: the program may have stored it again since a prune */
	mark_used(w, (size_t)i);
	return &w->objs[i].w;
}

long waitstore__read_new(struct waitstore *w)
{
	uint64_t key, *prev = NULL, *keys = NULL;
	size_t nr = 0, cap = 0, i;
	struct offcpu_wait o;
	long n = 0;

	if (!w || w->fd < 0)
		return 0;
	while (bpf_map_get_next_key(w->fd, prev, &key) == 0) {
		if (grow_array((void **)&keys, &cap, nr + 1, sizeof(*keys))) {
			free(keys);
			return -ENOMEM;
		}
		keys[nr] = key;
		prev = &keys[nr++];
	}
	for (i = 0; i < nr; i++) {
		if (hashmap__find(&w->idx, &keys[i], sizeof(keys[i])) ||
		    bpf_map_lookup_elem(w->fd, &keys[i], &o))
			continue;
		if (add(w, keys[i], &o) < 0) {
			free(keys);
			return -ENOMEM;
		}
		mark_used(w, w->nr - 1);
		n++;
	}
	free(keys);
	return n;
}

void waitstore__prune(struct waitstore *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->nr_used; i++) {
		bpf_map_delete_elem(w->fd, &w->objs[w->used[i]].key);
		w->objs[w->used[i]].in_map = false;
	}
	w->nr_used = 0;
}

void waitstore__summary(const struct waitstore *w, const uint64_t *cnt, bool every_block, FILE *f)
{
	if (!w || w->fd < 0 || (!every_block && !w->st.objects))
		return;
	fprintf(f, "offcpu: wait objects: %llu distinct; of %llu blocks looked at, %llu in a system call "
		   "described (%s)\n",
		(unsigned long long)w->st.objects, (unsigned long long)cnt[OFFCPU_WAIT_CNT_SEEN],
		(unsigned long long)cnt[OFFCPU_WAIT_CNT_FOUND],
		every_block ? "--wait-objects: every block" :
			      "the blocks under way at the start and the end");
	if (cnt[OFFCPU_WAIT_CNT_FULL])
		fprintf(f, "offcpu: WARNING: %llu blocks kept without their wait object: the wait map "
			   "was full (raise --max-stacks)\n",
			(unsigned long long)cnt[OFFCPU_WAIT_CNT_FULL]);
	if (cnt[OFFCPU_WAIT_CNT_FAULT] || w->st.late_unread)
		fprintf(f, "offcpu: %llu futex words not read (their page was not in memory): no owner "
			   "for those waits\n",
			(unsigned long long)(cnt[OFFCPU_WAIT_CNT_FAULT] + w->st.late_unread));
	if (w->st.unknown)
		fprintf(f, "offcpu: %llu blocks named a wait object the map no longer held: written "
			   "without it\n", (unsigned long long)w->st.unknown);
}

void waitstore__stats(const struct waitstore *w, struct waitstore_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (w)
		*st = w->st;
}
