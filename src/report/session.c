// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "session.h"
#include "../perfdata/queue.h"
#include "../perfdata/reader.h"
#include "../util/util.h"

#define MAX_FRAMES 512 /* resolved frames per sample, inlined ones included */
#define MAX_INLINE 8

struct map {
	uint64_t start, end, pgoff;
	struct sym_dso *sd;
	uint32_t dso;
};

struct mapset {
	struct map *maps;
	size_t nr, cap;
	uint64_t gen;
};

struct session {
	const struct session_opts *o;
	struct profile *p;
	struct perf_reader *r;
	struct symbolizer *sym;
	struct hashmap comm_of; /* tid -> strtab index */
	struct hashmap mapset_of; /* pid -> index into mapsets */
	struct mapset *mapsets;
	size_t nr_mapsets;
	uint64_t gen;
	struct hashmap build_ids; /* path -> index into bids */
	uint8_t (*bids)[21]; /* [0] = length */
	size_t nr_bids;
	struct hashmap chain_row; /* raw chain key -> row */
	struct hashmap addr_frames; /* (sym_dso, offset) -> packed (first << 8 | n) */
	uint32_t *cached;
	size_t nr_cached, cap_cached;
	uint64_t *key;
	size_t key_cap;
	uint32_t frames[MAX_FRAMES];
	uint32_t unknown;
	struct perf_queue queue; /* records waiting for their round to end */
	uint64_t round_max, prev_round_max;
};

static uint32_t comm_for(struct session *s, uint32_t pid, uint32_t tid)
{
	uint64_t *v = hashmap__find(&s->comm_of, &tid, sizeof(tid));
	char buf[24];

	if (!v)
		v = hashmap__find(&s->comm_of, &pid, sizeof(pid));
	if (v)
		return (uint32_t)*v;
	snprintf(buf, sizeof(buf), ":%u", tid);
	return strtab__add(&s->p->str, buf);
}

static int set_comm(struct session *s, uint32_t tid, uint32_t comm)
{
	int created;
	uint64_t *v = hashmap__upsert(&s->comm_of, &tid, sizeof(tid), &created);

	if (!v || comm == UINT32_MAX)
		return -ENOMEM;
	*v = comm;
	return 0;
}

static struct mapset *mapset_of(struct session *s, uint32_t pid, bool create)
{
	int created;
	uint64_t *v;

	if (!create) {
		v = hashmap__find(&s->mapset_of, &pid, sizeof(pid));
		return v ? &s->mapsets[*v] : NULL;
	}
	v = hashmap__upsert(&s->mapset_of, &pid, sizeof(pid), &created);
	if (!v)
		return NULL;
	if (created) {
		struct mapset *n = realloc(s->mapsets, (s->nr_mapsets + 1) * sizeof(*n));

		if (!n)
			return NULL;
		s->mapsets = n;
		memset(&n[s->nr_mapsets], 0, sizeof(*n));
		n[s->nr_mapsets].gen = ++s->gen;
		*v = s->nr_mapsets++;
	}
	return &s->mapsets[*v];
}

static int cmp_map(const void *a, const void *b)
{
	const struct map *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

static int mapset__push(struct mapset *ms, const struct map *m)
{
	if (ms->nr == ms->cap) {
		size_t c = ms->cap ? ms->cap * 2 : 16;
		struct map *n = realloc(ms->maps, c * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ms->maps = n;
		ms->cap = c;
	}
	ms->maps[ms->nr++] = *m;
	return 0;
}

/* Insert @m, cutting what it overlaps out of older mappings. */
static int mapset__insert(struct session *s, struct mapset *ms, const struct map *m)
{
	size_t i, n = ms->nr;

	for (i = 0; i < n; i++) {
		struct map *o = &ms->maps[i];

		if (o->end <= m->start || o->start >= m->end)
			continue;
		if (o->end > m->end) {
			struct map right = *o;

			right.pgoff += m->end - o->start;
			right.start = m->end;
			if (mapset__push(ms, &right))
				return -ENOMEM;
			o = &ms->maps[i];
		}
		if (o->start < m->start) {
			o->end = m->start;
		} else {
			o->start = o->end = 0; /* dropped below */
		}
	}
	for (i = 0, n = 0; i < ms->nr; i++)
		if (ms->maps[i].end > ms->maps[i].start)
			ms->maps[n++] = ms->maps[i];
	ms->nr = n;
	if (mapset__push(ms, m))
		return -ENOMEM;
	qsort(ms->maps, ms->nr, sizeof(*ms->maps), cmp_map);
	ms->gen = ++s->gen;
	return 0;
}

static const struct map *mapset__find(const struct mapset *ms, uint64_t addr)
{
	size_t lo = 0, hi = ms ? ms->nr : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ms->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= ms->maps[lo - 1].end)
		return NULL;
	return &ms->maps[lo - 1];
}

static void note_build_id(struct session *s, const char *path, const uint8_t *id, size_t len)
{
	int created;
	uint64_t *v;

	if (!len || len > 20)
		return;
	v = hashmap__upsert(&s->build_ids, path, strlen(path), &created);
	if (!v)
		return;
	if (created) {
		uint8_t (*n)[21] = realloc(s->bids, (s->nr_bids + 1) * sizeof(*n));

		if (!n)
			return;
		s->bids = n;
		*v = s->nr_bids++;
	}
	s->bids[*v][0] = (uint8_t)len;
	memcpy(&s->bids[*v][1], id, len);
}

/* BUILD_ID feature or HEADER_BUILD_ID records: entries with a header and a file name. */
static void parse_build_ids(struct session *s, const uint8_t *p, size_t size)
{
	size_t off = 0;

	while (size - off >= sizeof(struct perf_build_id_entry)) {
		struct perf_build_id_entry e;
		size_t len;
		const char *name;

		memcpy(&e, p + off, sizeof(e));
		if (e.header.size <= sizeof(e) || e.header.size > size - off)
			break;
		name = (const char *)p + off + sizeof(e);
		len = e.header.size - sizeof(e);
		if (memchr(name, 0, len)) {
			size_t idlen = (e.header.misc & PERF_RECORD_MISC_BUILD_ID_SIZE_FLAG) ? e.size : 20;

			if (idlen <= 20)
				note_build_id(s, name, e.build_id, idlen);
		}
		off += e.header.size;
	}
}

static int on_mmap(struct session *s, const struct perf_event_header *h)
{
	const uint8_t *p = (const uint8_t *)h;
	uint32_t pid, prot = PROT_EXEC;
	uint64_t addr, len, pgoff;
	const uint8_t *bid = NULL;
	size_t bid_len = 0, fn_off;
	const char *fn;
	struct map m;
	struct mapset *ms;
	uint64_t *v;

	fn_off = h->type == PERF_RECORD_MMAP2 ? 72 : 40;
	if (h->size <= fn_off)
		return 0;
	memcpy(&pid, p + 8, 4);
	memcpy(&addr, p + 16, 8);
	memcpy(&len, p + 24, 8);
	memcpy(&pgoff, p + 32, 8);
	fn = (const char *)p + fn_off;
	if (!memchr(fn, 0, h->size - fn_off))
		return 0;
	if (h->type == PERF_RECORD_MMAP2) {
		memcpy(&prot, p + 64, 4);
		if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			bid_len = p[40] > 20 ? 20 : p[40];
			bid = p + 44;
		}
		if (prot && !(prot & PROT_EXEC))
			return 0;
	} else if (h->misc & PERF_RECORD_MISC_MMAP_DATA) {
		return 0;
	}
	if (pid == UINT32_MAX || (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
					 PERF_RECORD_MISC_KERNEL)
		return 0; /* kernel and modules: kallsyms resolves those */
	if (!len || addr + len < addr)
		return 0;
	if (!bid_len && (v = hashmap__find(&s->build_ids, fn, strlen(fn)))) {
		bid_len = s->bids[*v][0];
		bid = &s->bids[*v][1];
	}
	m.start = addr;
	m.end = addr + len;
	m.pgoff = pgoff;
	m.sd = symbolizer__dso(s->sym, fn, bid, bid_len);
	m.dso = profile__dso(s->p, fn, bid, bid_len, false);
	if (!m.sd || m.dso == UINT32_MAX)
		return -ENOMEM;
	ms = mapset_of(s, pid, true);
	if (!ms)
		return -ENOMEM;
	return mapset__insert(s, ms, &m);
}

static int on_fork(struct session *s, const struct perf_event_header *h)
{
	const uint8_t *p = (const uint8_t *)h;
	uint32_t pid, ppid, tid, ptid;
	uint64_t *v;

	if (h->size < 24)
		return 0;
	memcpy(&pid, p + 8, 4);
	memcpy(&ppid, p + 12, 4);
	memcpy(&tid, p + 16, 4);
	memcpy(&ptid, p + 20, 4);
	v = hashmap__find(&s->comm_of, &ptid, sizeof(ptid));
	if (v && set_comm(s, tid, (uint32_t)*v))
		return -ENOMEM;
	if (pid != ppid) {
		/* a new process starts with a copy of its parent's mappings */
		struct mapset *parent = mapset_of(s, ppid, false), *child;
		size_t i;

		if (!parent || !parent->nr)
			return 0;
		child = mapset_of(s, pid, true);
		parent = mapset_of(s, ppid, false);
		if (!child || child->nr)
			return child ? 0 : -ENOMEM;
		for (i = 0; i < parent->nr; i++)
			if (mapset__push(child, &parent->maps[i]))
				return -ENOMEM;
		child->gen = ++s->gen;
	}
	return 0;
}

static bool in_list(const int *l, size_t n, uint32_t v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((uint32_t)l[i] == v)
			return true;
	return false;
}

/* Resolve one address to frames (innermost first) into @out; returns how many. */
static int resolve_addr(struct session *s, const struct mapset *ms, uint8_t ctx, uint64_t addr,
			bool ret, uint32_t *out, int max)
{
	struct profile_frame f = { 0 };
	struct sym_frame sf[MAX_INLINE];
	int n, i;

	if (ctx == PERF_RECORD_MISC_KERNEL) {
		const char *mod, *name = symbolizer__kernel(s->sym, addr, &mod);

		f.kernel = true;
		f.dso = profile__dso(s->p, mod, NULL, 0, true);
		f.sym = name ? strtab__add(&s->p->str, name) : s->unknown;
		f.addr = addr;
		out[0] = profile__frame(s->p, &f);
		return out[0] == UINT32_MAX ? -ENOMEM : 1;
	}
	{
		const struct map *m = mapset__find(ms, addr);
		uint64_t off, key[2], *v;
		int created;

		if (!m) {
			f.dso = UINT32_MAX;
			f.sym = s->unknown;
			out[0] = profile__frame(s->p, &f);
			return out[0] == UINT32_MAX ? -ENOMEM : 1;
		}
		off = addr - m->start + m->pgoff;
		key[0] = (uint64_t)(uintptr_t)m->sd ^ ((uint64_t)m->dso << 48);
		key[1] = off | ((uint64_t)ret << 63);
		v = hashmap__upsert(&s->addr_frames, key, sizeof(key), &created);
		if (!v)
			return -ENOMEM;
		if (!created) {
			n = (int)(*v & 0xff);
			if (n > max)
				n = max;
			memcpy(out, s->cached + (*v >> 8), n * sizeof(*out));
			return n;
		}
		n = sym_dso__resolve(s->sym, m->sd, off, ret, sf, MAX_INLINE);
		f.dso = m->dso;
		f.addr = off;
		if (s->p->dsos[m->dso].max_addr < off)
			s->p->dsos[m->dso].max_addr = off;
		if (n == 0) {
			f.sym = s->unknown;
			out[0] = profile__frame(s->p, &f);
			n = 1;
		} else {
			for (i = 0; i < n && i < max; i++) {
				f.sym = strtab__add(&s->p->str, sf[i].name);
				f.file = sf[i].file ? strtab__add(&s->p->str, sf[i].file) : 0;
				f.line = sf[i].line;
				f.inlined = sf[i].inlined;
				out[i] = profile__frame(s->p, &f);
				if (out[i] == UINT32_MAX || f.sym == UINT32_MAX)
					return -ENOMEM;
			}
			n = i;
		}
		if (s->nr_cached + (size_t)n > s->cap_cached) {
			size_t c = s->cap_cached ? s->cap_cached * 2 : 1024;
			uint32_t *nc;

			while (c < s->nr_cached + (size_t)n)
				c *= 2;
			nc = realloc(s->cached, c * sizeof(*nc));
			if (!nc)
				return -ENOMEM;
			s->cached = nc;
			s->cap_cached = c;
		}
		memcpy(s->cached + s->nr_cached, out, n * sizeof(*out));
		*v = ((uint64_t)s->nr_cached << 8) | (uint64_t)n;
		s->nr_cached += (size_t)n;
		return n;
	}
}

/* Symbolize a call chain (innermost first) into a root-first stack. */
static uint32_t make_stack(struct session *s, const struct perf_event_header *h,
			   const struct perf_sample *smp, const struct mapset *ms, bool chain)
{
	uint32_t tmp[MAX_INLINE];
	uint8_t ctx = h->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	size_t nr = 0, i;
	bool first = true;
	uint64_t ip;

	if (ctx != PERF_RECORD_MISC_KERNEL)
		ctx = PERF_RECORD_MISC_USER;
	for (i = 0; i < (chain ? smp->nr_ips : 1); i++) {
		int n, k;

		ip = chain ? smp->ips[i] : smp->ip;
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			if (ip == (uint64_t)PERF_CONTEXT_KERNEL)
				ctx = PERF_RECORD_MISC_KERNEL;
			else if (ip == (uint64_t)PERF_CONTEXT_USER)
				ctx = PERF_RECORD_MISC_USER;
			else
				ctx = 0xff; /* hypervisor, guest: shown as unknown */
			first = true;
			continue;
		}
		if (ctx == 0xff) {
			n = resolve_addr(s, NULL, PERF_RECORD_MISC_USER, ip, false, tmp, MAX_INLINE);
		} else {
			n = resolve_addr(s, ms, ctx, ip, !first, tmp, MAX_INLINE);
		}
		first = false;
		if (n < 0)
			return UINT32_MAX;
		for (k = 0; k < n && nr < MAX_FRAMES; k++)
			s->frames[nr++] = tmp[k];
	}
	/* reverse: root first */
	for (i = 0; i < nr / 2; i++) {
		uint32_t t = s->frames[i];

		s->frames[i] = s->frames[nr - 1 - i];
		s->frames[nr - 1 - i] = t;
	}
	return profile__stack(s->p, s->frames, (uint32_t)nr);
}

static int on_sample(struct session *s, const struct perf_event_header *h)
{
	const struct session_opts *o = s->o;
	struct perf_sample smp;
	size_t ev, klen, i;
	uint32_t comm, row;
	const struct mapset *ms;
	const struct perf_reader_event *e;
	bool chain;
	uint64_t *v;
	int created;

	if (perf_reader__parse_sample(s->r, h, &smp, &ev))
		return -EINVAL;
	e = perf_reader__event(s->r, ev);
	if (o->event && strcmp(e->name, o->event))
		return 0;
	if (o->nr_pids && !in_list(o->pids, o->nr_pids, smp.pid))
		return 0;
	if (o->nr_tids && !in_list(o->tids, o->nr_tids, smp.tid))
		return 0;
	if (o->time_filter && (!(e->attr.sample_type & PERF_SAMPLE_TIME) ||
			       smp.time < o->time_start || smp.time >= o->time_end))
		return 0;
	comm = comm_for(s, smp.pid, smp.tid);
	if (comm == UINT32_MAX)
		return -ENOMEM;
	if (o->nr_comms) {
		const char *c = strtab__get(&s->p->str, comm);

		for (i = 0; i < o->nr_comms && strcmp(o->comms[i], c); i++)
			;
		if (i == o->nr_comms)
			return 0;
	}
	ms = mapset_of(s, smp.pid, false);
	chain = (e->attr.sample_type & PERF_SAMPLE_CALLCHAIN) && smp.nr_ips;
	klen = 7 + (chain ? smp.nr_ips : 1);
	if (klen > s->key_cap) {
		uint64_t *k = realloc(s->key, klen * 2 * sizeof(*k));

		if (!k)
			return -ENOMEM;
		s->key = k;
		s->key_cap = klen * 2;
	}
	s->key[0] = ev;
	s->key[1] = ((uint64_t)smp.pid << 32) | smp.tid;
	s->key[2] = comm;
	s->key[3] = ms ? ms->gen : 0;
	s->key[4] = h->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	s->key[5] = chain;
	s->key[6] = klen;
	if (chain)
		memcpy(s->key + 7, smp.ips, smp.nr_ips * 8);
	else
		s->key[7] = smp.ip;
	v = hashmap__upsert(&s->chain_row, s->key, klen * 8, &created);
	if (!v)
		return -ENOMEM;
	if (created) {
		uint32_t stack = make_stack(s, h, &smp, ms, chain);

		if (stack == UINT32_MAX)
			return -ENOMEM;
		row = profile__row(s->p, (uint32_t)ev, smp.pid, smp.tid, comm, stack);
		if (row == UINT32_MAX)
			return -ENOMEM;
		*v = row;
	}
	row = (uint32_t)*v;
	s->p->rows[row].period += smp.period;
	s->p->rows[row].count++;
	if (e->attr.sample_type & PERF_SAMPLE_TIME) {
		if (!s->p->first_time || smp.time < s->p->first_time)
			s->p->first_time = smp.time;
		if (smp.time > s->p->last_time)
			s->p->last_time = smp.time;
	}
	return 0;
}

static int on_record(struct session *s, const struct perf_event_header *h)
{
	const uint8_t *p = (const uint8_t *)h;
	uint64_t n;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		return on_sample(s, h);
	case PERF_RECORD_COMM:
		if (h->size > 16 && memchr(p + 16, 0, h->size - 16)) {
			uint32_t tid;

			memcpy(&tid, p + 12, 4);
			return set_comm(s, tid, strtab__add(&s->p->str, (const char *)p + 16));
		}
		return 0;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return on_mmap(s, h);
	case PERF_RECORD_FORK:
		return on_fork(s, h);
	case PERF_RECORD_LOST:
		if (h->size >= 24) {
			memcpy(&n, p + 16, 8);
			s->p->lost_records += n;
		}
		return 0;
	case PERF_RECORD_LOST_SAMPLES:
		if (h->size >= 16) {
			memcpy(&n, p + 8, 8);
			s->p->lost_samples += n;
		}
		return 0;
	case PERF_RECORD_HEADER_BUILD_ID:
		parse_build_ids(s, p, h->size);
		return 0;
	}
	return 0;
}

/* The time of a record (0 when it has none); fails like the parse would. */
static int record_time(struct session *s, const struct perf_event_header *h, uint64_t *t)
{
	struct perf_sample smp;
	size_t ev;

	*t = 0;
	if (h->type == PERF_RECORD_SAMPLE) {
		if (perf_reader__parse_sample(s->r, h, &smp, &ev))
			return -EINVAL;
		if (perf_reader__event(s->r, ev)->attr.sample_type & PERF_SAMPLE_TIME)
			*t = smp.time;
		return 0;
	}
	if (h->type >= PERF_RECORD_HEADER_ATTR)
		return 0;
	if (perf_reader__parse_id(s->r, h, &smp))
		return -EINVAL;
	*t = smp.time;
	return 0;
}

static int flush_one(const struct perf_event_header *h, uint64_t time, int kind, void *arg)
{
	return on_record(arg, h);
}

/*
 * perf's ordering: records between two FINISHED_ROUNDs are sorted by time,
 * and at the end of a round everything up to the previous round's newest
 * time is processed; the rest at the end of the file.
 */
static int session__add(struct session *s, const struct perf_event_header *h)
{
	uint64_t t;
	int err;

	if (h->type == PERF_RECORD_COMPRESSED) {
		pr_err("%s: a COMPRESSED record (perf record -z) at offset %llu: compressed files "
		       "are not supported; record without -z", s->o->input,
		       (unsigned long long)perf_reader__offset(s->r));
		return -ENOTSUP;
	}
	if (h->type == PERF_RECORD_FINISHED_ROUND) {
		err = perf_queue__flush_until(&s->queue, s->prev_round_max, flush_one, s);
		s->prev_round_max = s->round_max;
		return err;
	}
	err = record_time(s, h, &t);
	if (err)
		return err;
	if (t > s->round_max)
		s->round_max = t;
	return perf_queue__push(&s->queue, h, t, 0);
}

static void progress(struct session *s, bool done)
{
	uint64_t pos, total;

	perf_reader__progress(s->r, &pos, &total);
	if (done)
		fprintf(stderr, "\r%60s\r", "");
	else if (total)
		fprintf(stderr, "\rreading %s: %3d%%", s->o->input,
			(int)(100.0 * (double)pos / (double)total));
}

static void session__free(struct session *s)
{
	size_t i;

	hashmap__free(&s->comm_of);
	hashmap__free(&s->mapset_of);
	for (i = 0; i < s->nr_mapsets; i++)
		free(s->mapsets[i].maps);
	free(s->mapsets);
	hashmap__free(&s->build_ids);
	free(s->bids);
	hashmap__free(&s->chain_row);
	hashmap__free(&s->addr_frames);
	free(s->cached);
	free(s->key);
	perf_queue__free(&s->queue);
	symbolizer__free(s->sym);
	perf_reader__close(s->r);
}

int session__load(const struct session_opts *o, struct profile *p)
{
	struct session s = { .o = o, .p = p };
	const struct perf_event_header *h;
	char err[1024];
	const void *feat;
	size_t size, i, nr = 0;
	int ret;

	ret = profile__init(p, 0);
	if (ret)
		return ret;
	s.unknown = strtab__add(&p->str, "[unknown]");
	s.r = perf_reader__open(o->input, o->force ? PERF_READER_FORCE : 0, err, sizeof(err));
	if (!s.r) {
		pr_err("%s", err);
		return -EINVAL;
	}
	s.sym = symbolizer__new(&o->sym);
	if (!s.sym) {
		ret = -ENOMEM;
		goto out;
	}
	feat = perf_reader__feature(s.r, FEAT_BUILD_ID, &size);
	if (feat)
		parse_build_ids(&s, feat, size);
	while ((ret = perf_reader__next(s.r, &h)) > 0) {
		ret = session__add(&s, h);
		if (ret)
			break;
		if (o->progress && !(++nr & 0xffff))
			progress(&s, false);
	}
	if (!ret)
		ret = perf_queue__flush_until(&s.queue, UINT64_MAX, flush_one, &s);
	if (o->progress)
		progress(&s, true);
	if (ret == -EINVAL) {
		pr_err("%s: %s", o->input, perf_reader__error(s.r));
		goto out;
	}
	if (ret) {
		if (ret != -ENOTSUP)
			pr_err("cannot read %s: %s", o->input, strerror(-ret));
		goto out;
	}
	if (o->event) {
		for (i = 0; i < perf_reader__nr_events(s.r); i++)
			if (!strcmp(perf_reader__event(s.r, i)->name, o->event))
				break;
		if (i == perf_reader__nr_events(s.r)) {
			pr_err("%s has no event named '%s'", o->input, o->event);
			ret = -ENOENT;
			goto out;
		}
	}
	p->nr_events = (uint32_t)perf_reader__nr_events(s.r);
	free(p->events);
	p->events = calloc(p->nr_events ? p->nr_events : 1, sizeof(*p->events));
	if (!p->events) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->nr_events; i++) {
		const struct perf_reader_event *e = perf_reader__event(s.r, i);

		p->events[i].name = strtab__add(&p->str, e->name);
		p->events[i].offcpu = !strcmp(e->name, OFFCPU_EVENT_NAME);
	}
	for (i = 0; i < p->nr_rows; i++) {
		p->events[p->rows[i].event].period += p->rows[i].period;
		p->events[p->rows[i].event].count += p->rows[i].count;
	}
	ret = 0;
out:
	session__free(&s);
	return ret;
}
