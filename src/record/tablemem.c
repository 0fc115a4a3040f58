// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "tablemem.h"
#include "../util/hashmap.h"
#include "../util/util.h"

/* what the files of one user other than root may hold of the rows and rules */
#define OWNER_SHARE(n) ((n) / 4)

struct tobj {
	struct unwind_table seg; /* the object's segments only (no rows) */
	uint32_t first, nr; /* its slice of the rows */
	uint32_t refs; /* processes whose mappings name it */
	uint32_t gen;
	uint32_t uid;
	uint64_t unused_since; /* when the last process let it go */
	bool live;
};

struct extent {
	uint32_t start, len;
};

struct tablemem {
	struct collector_unwind_maps m;
	struct unwind_rules rs;
	size_t rules_published;
	struct tobj *obj; /* by id; [0] unused */
	uint32_t next_id; /* ids never given yet start here */
	uint32_t *free_ids; /* taken back, oldest first */
	size_t nr_free_ids, head_free_ids;
	struct extent *ext; /* free rows, sorted by start, coalesced */
	size_t nr_ext, cap_ext;
	struct hashmap owner_rows, owner_rules; /* uid -> rows, rules */
	int sync_fd; /* a map of maps: updating it waits for every running BPF program */
	int inner_fd;
	size_t cache_entries; /* the per-CPU rule cache, emptied after a grace period */
	uint32_t cache_value_size;
	bool can_reclaim; /* a grace period can be waited for, and the cache emptied */
	struct tablemem_stats st;
};

static int make_sync(struct tablemem *tm);

struct tablemem *tablemem__new(const struct collector_unwind_maps *m)
{
	struct tablemem *tm = calloc(1, sizeof(*tm));

	if (!tm)
		return NULL;
	tm->m = *m;
	tm->sync_fd = tm->inner_fd = -1;
	tm->next_id = 1;
	tm->obj = calloc(m->nr_objs ? m->nr_objs : 1, sizeof(*tm->obj));
	tm->free_ids = calloc(m->nr_objs ? m->nr_objs : 1, sizeof(*tm->free_ids));
	tm->ext = malloc(sizeof(*tm->ext));
	if (!tm->obj || !tm->free_ids || !tm->ext || unwind_rules__init(&tm->rs)) {
		tablemem__free(tm);
		return NULL;
	}
	tm->cap_ext = 1;
	tm->ext[0] = (struct extent){ 0, m->nr_rows };
	tm->nr_ext = m->nr_rows ? 1 : 0;
	tm->st.rows_cap = m->nr_rows;
	tm->st.bytes = (uint64_t)m->nr_rows * sizeof(struct offcpu_unw_row) +
		       (uint64_t)m->nr_rules * sizeof(struct offcpu_unw_rule) +
		       (uint64_t)m->nr_objs * sizeof(struct offcpu_unw_obj);
	if (m->cache_fd >= 0) {
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info);

		if (!bpf_obj_get_info_by_fd(m->cache_fd, &info, &len)) {
			tm->cache_entries = info.max_entries;
			tm->cache_value_size = info.value_size;
		}
	}
	tm->can_reclaim = m->cache_fd >= 0 && tm->cache_entries && !make_sync(tm);
	if (!tm->can_reclaim)
		pr_info("unwind tables are not taken back in this recording (no map of maps, or "
			"no rule cache)");
	return tm;
}

void tablemem__free(struct tablemem *tm)
{
	size_t i;

	if (!tm)
		return;
	for (i = 0; tm->obj && i < tm->m.nr_objs; i++)
		unwind_table__free(&tm->obj[i].seg);
	if (tm->sync_fd >= 0)
		close(tm->sync_fd);
	if (tm->inner_fd >= 0)
		close(tm->inner_fd);
	unwind_rules__free(&tm->rs);
	hashmap__free(&tm->owner_rows);
	hashmap__free(&tm->owner_rules);
	free(tm->obj);
	free(tm->free_ids);
	free(tm->ext);
	free(tm);
}

/* Give rows back: into the sorted free list, merged with their neighbours. */
static int free_rows(struct tablemem *tm, uint32_t start, uint32_t len)
{
	size_t i = 0;

	if (!len)
		return 0;
	while (i < tm->nr_ext && tm->ext[i].start < start)
		i++;
	if (i && tm->ext[i - 1].start + tm->ext[i - 1].len == start) {
		tm->ext[i - 1].len += len;
		if (i < tm->nr_ext && start + len == tm->ext[i].start) {
			tm->ext[i - 1].len += tm->ext[i].len;
			memmove(&tm->ext[i], &tm->ext[i + 1], (tm->nr_ext - i - 1) * sizeof(*tm->ext));
			tm->nr_ext--;
		}
		return 0;
	}
	if (i < tm->nr_ext && start + len == tm->ext[i].start) {
		tm->ext[i].start = start;
		tm->ext[i].len += len;
		return 0;
	}
	if (grow_array((void **)&tm->ext, &tm->cap_ext, tm->nr_ext + 1, sizeof(*tm->ext)))
		return -ENOMEM;
	memmove(&tm->ext[i + 1], &tm->ext[i], (tm->nr_ext - i) * sizeof(*tm->ext));
	tm->ext[i] = (struct extent){ start, len };
	tm->nr_ext++;
	return 0;
}

/* The first free extent that holds @len rows, or SIZE_MAX. */
static size_t fit(const struct tablemem *tm, uint32_t len)
{
	size_t i;

	for (i = 0; i < tm->nr_ext; i++)
		if (tm->ext[i].len >= len)
			return i;
	return SIZE_MAX;
}

/*
 * Wait until no run of the BPF program that started before can still read
 * what was unlinked: an update of a map of maps returns only after an RCU
 * grace period, for this reason (the kernel's maybe_wait_bpf_programs()).
 */
static int make_sync(struct tablemem *tm)
{
	LIBBPF_OPTS(bpf_map_create_opts, o);

	tm->inner_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "offcpu_sync_in", 4, 4, 1, NULL);
	if (tm->inner_fd < 0)
		return -errno;
	o.inner_map_fd = tm->inner_fd;
	tm->sync_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "offcpu_sync", 4, 4, 1, &o);
	return tm->sync_fd < 0 ? -errno : 0;
}

static int grace_period(struct tablemem *tm)
{
	uint32_t key = 0;
	int fd = tm->inner_fd;

	if (bpf_map_update_elem(tm->sync_fd, &key, &fd, BPF_ANY))
		return -errno;
	tm->st.grace_periods++;
	return 0;
}

/* Empty the per-CPU rule cache: it knows rules by object id, and ids are reused. */
static int flush_cache(struct tablemem *tm)
{
	int ncpu = libbpf_num_possible_cpus(), err = 0;
	size_t n = tm->cache_entries, vsz;
	uint32_t *keys;
	void *vals;
	__u32 count;

	if (!n || tm->m.cache_fd < 0)
		return 0;
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	vsz = (size_t)ncpu * ((tm->cache_value_size + 7) & ~7U);
	keys = malloc(n * sizeof(*keys));
	vals = calloc(n, vsz);
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		keys[i] = (uint32_t)i;
	count = (__u32)n;
	if (bpf_map_update_batch(tm->m.cache_fd, keys, vals, &count, NULL)) {
		/* no batch operations: one key at a time */
		for (size_t i = 0; i < n && !err; i++)
			if (bpf_map_update_elem(tm->m.cache_fd, &keys[i], vals, BPF_ANY))
				err = -errno;
	}
	free(keys);
	free(vals);
	return err;
}

static bool ids_left(const struct tablemem *tm)
{
	return tm->head_free_ids < tm->nr_free_ids || tm->next_id < tm->m.nr_objs;
}

static uint32_t take_id(struct tablemem *tm)
{
	if (tm->head_free_ids < tm->nr_free_ids)
		return tm->free_ids[tm->head_free_ids++ % tm->m.nr_objs];
	return tm->next_id++;
}

/* Unlink object @id: no process holds it; its rows and id come back after a grace period. */
static void unlink_obj(struct tablemem *tm, uint32_t id)
{
	struct tobj *o = &tm->obj[id];

	tm->m.objs[id] = (struct offcpu_unw_obj){ 0, 0 };
	o->live = false;
	tm->st.objects--;
	tm->st.reclaimed++;
	tm->st.reclaimed_rows += o->nr;
	tm->st.rows -= o->nr;
	if (o->uid) {
		uint64_t *v = hashmap__find(&tm->owner_rows, &o->uid, sizeof(o->uid));

		if (v)
			*v -= o->nr;
	}
	unwind_table__free(&o->seg);
}

/* The least recently used object no process holds, or 0. */
static uint32_t victim(const struct tablemem *tm)
{
	uint32_t id, best = 0;

	for (id = 1; id < tm->next_id; id++) {
		const struct tobj *o = &tm->obj[id];

		if (o->live && !o->refs && (!best || o->unused_since < tm->obj[best].unused_since))
			best = id;
	}
	return best;
}

/*
 * Take back objects no process holds until @rows rows fit in one piece and
 * an id is free. Their rows and ids are reused only after a grace period.
 * Returns 0, or -ENOSPC when even that is not enough.
 */
static int reclaim(struct tablemem *tm, uint32_t rows)
{
	uint32_t taken[64];
	size_t nr = 0, i;
	int e;

	if (!tm->can_reclaim)
		return -ENOSPC;
	while (nr < ARRAY_SIZE(taken) &&
	       (fit(tm, rows) == SIZE_MAX || (!nr && !ids_left(tm)))) {
		uint32_t id = victim(tm);

		if (!id)
			break;
		unlink_obj(tm, id);
		taken[nr++] = id;
		/* free for the search now; written only after the grace period below */
		if (free_rows(tm, tm->obj[id].first, tm->obj[id].nr)) {
			tm->can_reclaim = false; /* the list lost rows: better never reuse */
			break;
		}
	}
	if (!nr)
		return -ENOSPC;
	e = grace_period(tm);
	if (e) {
		/* an update of a map of maps that fails: wait far longer than any run */
		pr_info("cannot wait for the BPF program with a map update (%s): sleeping instead",
			strerror(-e));
		usleep(200000);
	}
	e = flush_cache(tm);
	if (e)
		pr_warn("cannot empty the unwind rule cache (%s): unwind tables are no longer "
			"taken back", strerror(-e));
	if (e)
		tm->can_reclaim = false;
	for (i = 0; i < nr; i++) {
		tm->obj[taken[i]].gen++;
		/* a cache that cannot be emptied may know these ids: never reuse them */
		if (!e)
			tm->free_ids[tm->nr_free_ids++ % tm->m.nr_objs] = taken[i];
	}
	return fit(tm, rows) != SIZE_MAX && ids_left(tm) ? 0 : -ENOSPC;
}

/*
 * An object's rows into the kernel's array at @first, through a mapping of
 * their pages alone, unmapped after: the array is never resident here whole.
 */
static int write_rows(struct tablemem *tm, uint32_t first, const struct unwind_table *t)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), sz = sizeof(struct offcpu_unw_row);
	size_t from = (size_t)first * sz, to = from + t->nr * sz;
	size_t off = from / pg * pg, len = (to + pg - 1) / pg * pg - off;
	struct offcpu_unw_row *row;
	char *base;

	if (!t->nr)
		return 0;
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, tm->m.rows_fd, (off_t)off);
	if (base == MAP_FAILED)
		return -errno;
	row = (struct offcpu_unw_row *)(base + (from - off));
	for (size_t i = 0; i < t->nr; i++)
		row[i] = (struct offcpu_unw_row){ .start = (uint32_t)t->rows[i].start,
						  .rule = t->rows[i].rule };
	munmap(base, len);
	return 0;
}

uint32_t tablemem__add(struct tablemem *tm, struct unwind_table *t, uint32_t uid, int *why)
{
	uint64_t *rows = NULL, *rules = NULL;
	size_t i, added = 0, e;
	uint32_t id, first;
	struct tobj *o;
	int created, err;

	*why = 0;
	if (!t->nr) {
		*why = -ENODATA; /* nothing to walk by: no table */
		return 0;
	}
	for (i = 0; i < t->nr; i++)
		if (t->rows[i].start > UINT32_MAX) {
			*why = -E2BIG;
			return 0;
		}
	if (t->nr > tm->m.nr_rows) {
		*why = -ENOSPC;
		return 0;
	}
	/* a user's own files (root's are the system's): their share at most */
	if (uid) {
		rows = hashmap__upsert(&tm->owner_rows, &uid, sizeof(uid), &created);
		rules = hashmap__upsert(&tm->owner_rules, &uid, sizeof(uid), &created);
		if (!rows || !rules) {
			*why = -ENOMEM;
			return 0;
		}
		/* (a share used up exactly: no new rule, where 0 would mean no limit) */
		if (*rows + t->nr > OWNER_SHARE(tm->m.nr_rows) ||
		    *rules >= OWNER_SHARE(tm->m.nr_rules))
			goto owner_full;
	}
	if (fit(tm, (uint32_t)t->nr) == SIZE_MAX || !ids_left(tm))
		reclaim(tm, (uint32_t)t->nr);
	e = fit(tm, (uint32_t)t->nr);
	if (e == SIZE_MAX || !ids_left(tm)) {
		*why = e == SIZE_MAX ? -ENOSPC : -EMFILE;
		return 0;
	}
	err = unwind_rules__merge(&tm->rs, t, tm->m.nr_rules,
				  rules ? OWNER_SHARE(tm->m.nr_rules) - *rules : 0, &added);
	if (err == -EDQUOT)
		goto owner_full;
	if (err) {
		if (err == -ENOSPC)
			tm->st.rules_full++;
		*why = err == -ENOSPC ? -ENFILE : err;
		return 0;
	}
	for (; tm->rules_published < tm->rs.nr; tm->rules_published++)
		tm->m.rules[tm->rules_published] = tm->rs.v[tm->rules_published];
	first = tm->ext[e].start;
	err = write_rows(tm, first, t);
	if (err) {
		*why = err;
		return 0;
	}
	id = take_id(tm);
	tm->ext[e].start += (uint32_t)t->nr;
	tm->ext[e].len -= (uint32_t)t->nr;
	if (!tm->ext[e].len) {
		memmove(&tm->ext[e], &tm->ext[e + 1], (tm->nr_ext - e - 1) * sizeof(*tm->ext));
		tm->nr_ext--;
	}
	/* rows before the slice that names them (BPF reads an object only once a
	 * process's mappings name it, a system call after this) */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	tm->m.objs[id] = (struct offcpu_unw_obj){ .first = first, .nr = (uint32_t)t->nr };
	o = &tm->obj[id];
	unwind_table__free(&o->seg);
	o->seg = (struct unwind_table){ .nr_loads = t->nr_loads };
	memcpy(o->seg.loads, t->loads, sizeof(o->seg.loads));
	o->first = first;
	o->nr = (uint32_t)t->nr;
	o->refs = 0;
	o->uid = uid;
	o->unused_since = now_ns();
	o->live = true;
	if (rows) {
		*rows += t->nr;
		*rules += added;
	}
	tm->st.objects++;
	tm->st.rows += t->nr;
	tm->st.rules = tm->rs.nr;
	return id;
owner_full:
	if (!tm->st.owner_full++)
		tm->st.first_owner = uid;
	*why = -EDQUOT;
	return 0;
}

bool tablemem__owner_full(struct tablemem *tm, uint32_t uid)
{
	uint64_t *v = hashmap__find(&tm->owner_rows, &uid, sizeof(uid));

	if (!v || *v < OWNER_SHARE(tm->m.nr_rows))
		return false;
	if (!tm->st.owner_full++)
		tm->st.first_owner = uid;
	return true;
}

uint32_t tablemem__gen(const struct tablemem *tm, uint32_t id)
{
	return id && id < tm->m.nr_objs ? tm->obj[id].gen : 0;
}

bool tablemem__alive(const struct tablemem *tm, uint32_t id, uint32_t gen)
{
	return id && id < tm->m.nr_objs && tm->obj[id].live && tm->obj[id].gen == gen;
}

void tablemem__get(struct tablemem *tm, uint32_t id)
{
	if (id && id < tm->m.nr_objs && tm->obj[id].live)
		tm->obj[id].refs++;
}

void tablemem__put(struct tablemem *tm, uint32_t id)
{
	struct tobj *o;

	if (!id || id >= tm->m.nr_objs)
		return;
	o = &tm->obj[id];
	if (o->live && o->refs && !--o->refs)
		o->unused_since = now_ns();
}

const struct unwind_table *tablemem__segments(const struct tablemem *tm, uint32_t id)
{
	return id && id < tm->m.nr_objs && tm->obj[id].live ? &tm->obj[id].seg : NULL;
}

void tablemem__stats(const struct tablemem *tm, struct tablemem_stats *st)
{
	*st = tm->st;
}
