// SPDX-License-Identifier: GPL-2.0
/* Named frames in every file, and their symbols for perf (named.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include "named.h"
#include "../offcpu.h"
#include "../perfdata/format.h"
#include "../perfdata/sample.h"
#include "../util/elfsyms.h"
#include "../util/hashmap.h"
#include "../util/ranges.h"
#include "../util/util.h"

/* A named record kept: its range of its process, and where the current file has it. */
struct nrec {
	uint8_t *rec; /* the MMAP2 record as it was written first (its trailer's time is changed) */
	uint32_t size;
	uint32_t sym; /* 1 + its symbol in the current file's symbol file; 0: none yet */
	uint64_t start, len;
	uint64_t file; /* the file its marks are of */
	uint64_t streams; /* of that file, the streams that hold it (bit per stream) */
};

struct nproc {
	uint32_t pid;
	bool used, gone;
	uint64_t gone_ns;
	struct nrec *recs; /* by the value of its range */
	size_t nr, cap;
	struct rangeset ranges;
	uint64_t bytes;
};

struct named {
	pthread_mutex_t lock;
	struct hashmap procs; /* pid -> 1 + index in proc */
	struct nproc *proc;
	size_t nr_proc, cap_proc, gone;
	uint64_t file; /* files begun */
	uint64_t bytes;
	struct named_stats st;
	/* the current file's symbols for perf */
	char *syms_path; /* NULL: none */
	uint8_t bid[ELFSYMS_BUILD_ID];
	struct elfsym *syms;
	size_t nr_syms, cap_syms;
	char *str; /* their names, NUL-ended, after a first NUL */
	size_t str_len, str_cap;
	uint64_t text; /* the text's size so far */
};

struct named *named__new(void)
{
	struct named *nm = calloc(1, sizeof(*nm));

	if (nm)
		pthread_mutex_init(&nm->lock, NULL);
	return nm;
}

static void proc_free(struct named *nm, struct nproc *p)
{
	size_t i;

	for (i = 0; i < p->nr; i++)
		free(p->recs[i].rec);
	free(p->recs);
	rangeset__free(&p->ranges);
	nm->bytes -= p->bytes;
	memset(p, 0, sizeof(*p));
}

static void syms_clear(struct named *nm)
{
	free(nm->syms_path);
	nm->syms_path = NULL;
	nm->nr_syms = 0;
	nm->str_len = 0;
	nm->text = 0;
}

void named__free(struct named *nm)
{
	size_t i;

	if (!nm)
		return;
	for (i = 0; i < nm->nr_proc; i++)
		if (nm->proc[i].used)
			proc_free(nm, &nm->proc[i]);
	free(nm->proc);
	hashmap__free(&nm->procs);
	syms_clear(nm);
	free(nm->syms);
	free(nm->str);
	pthread_mutex_destroy(&nm->lock);
	free(nm);
}

bool named__is_named(const struct perf_event_header *h)
{
	const char *fn;

	if (h->type != PERF_RECORD_MMAP2)
		return false;
	fn = perf_record__name(h, sizeof(struct perf_record_mmap2));
	return fn && (!strncmp(fn, OFFCPU_NAMED_PY, strlen(OFFCPU_NAMED_PY)) ||
		      !strncmp(fn, OFFCPU_NAMED_JS, strlen(OFFCPU_NAMED_JS)) ||
		      !strncmp(fn, OFFCPU_NAMED_JIT, strlen(OFFCPU_NAMED_JIT)));
}

/* Free the records of processes that exited NAMED_GONE_MS ago (under the lock). */
static void collect(struct named *nm)
{
	uint64_t now = now_ns();
	size_t i;

	for (i = 0; i < nm->nr_proc && nm->gone; i++) {
		struct nproc *p = &nm->proc[i];

		if (!p->used || !p->gone || now - p->gone_ns < NAMED_GONE_MS * 1000000ULL)
			continue;
		hashmap__remove(&nm->procs, &p->pid, sizeof(p->pid));
		proc_free(nm, p);
		nm->gone--;
	}
}

int named__begin(struct named *nm, const char *syms_path)
{
	pthread_mutex_lock(&nm->lock);
	nm->file++;
	syms_clear(nm);
	if (syms_path) {
		nm->syms_path = strdup(syms_path);
		/* what tells this symbol file from any other at its path: perf checks it */
		if (getrandom(nm->bid, sizeof(nm->bid), GRND_NONBLOCK) != sizeof(nm->bid)) {
			uint64_t t = now_ns() ^ ((uint64_t)getpid() << 32) ^ nm->file;

			memcpy(nm->bid, &t, sizeof(t));
		}
	}
	collect(nm);
	pthread_mutex_unlock(&nm->lock);
	return syms_path && !nm->syms_path ? -ENOMEM : 0;
}

static struct nproc *proc_of(struct named *nm, uint32_t pid, bool make)
{
	uint64_t *v = hashmap__find(&nm->procs, &pid, sizeof(pid));
	size_t i;
	int created;

	if (v)
		return &nm->proc[*v - 1];
	if (!make)
		return NULL;
	for (i = 0; i < nm->nr_proc && nm->proc[i].used; i++)
		;
	if (i == nm->nr_proc) {
		if (grow_array((void **)&nm->proc, &nm->cap_proc, nm->nr_proc + 1, sizeof(*nm->proc)))
			return NULL;
		nm->nr_proc++;
	}
	v = hashmap__upsert(&nm->procs, &pid, sizeof(pid), &created);
	if (!v)
		return NULL;
	memset(&nm->proc[i], 0, sizeof(nm->proc[i]));
	nm->proc[i].pid = pid;
	nm->proc[i].used = true;
	*v = i + 1;
	return &nm->proc[i];
}

/* Keep named mapping @h (under the lock): its entry, or NULL when not kept. */
static struct nrec *keep(struct named *nm, const struct perf_event_header *h)
{
	struct perf_record_mmap2 m;
	struct nproc *p;
	struct nrec *e;
	uint32_t v;

	if (!perf_record__copy(h, &m, sizeof(m)) || !m.len || m.start + m.len < m.start)
		return NULL;
	/* (one that exited keeps its records NAMED_GONE_MS: its last samples come
	 * after its exit; a new process with its pid names its frames anew, and
	 * a later name of a range wins) */
	p = proc_of(nm, m.pid, true);
	if (!p)
		return NULL;
	/* the same range named again (an exec, a map written anew): the latest wins */
	if (rangeset__find(&p->ranges, m.start, &v) && v < p->nr && p->recs[v].start == m.start &&
	    p->recs[v].len == m.len && p->recs[v].size == h->size &&
	    !memcmp(p->recs[v].rec, h, sizeof(m)) &&
	    !strcmp((const char *)p->recs[v].rec + sizeof(m), (const char *)h + sizeof(m)))
		return &p->recs[v];
	if (nm->bytes + h->size + 64 > NAMED_MEM_MAX ||
	    grow_array((void **)&p->recs, &p->cap, p->nr + 1, sizeof(*p->recs))) {
		nm->st.dropped++;
		return NULL;
	}
	e = &p->recs[p->nr];
	memset(e, 0, sizeof(*e));
	e->rec = malloc(h->size);
	if (!e->rec || rangeset__add(&p->ranges, m.start, m.len, (uint32_t)p->nr)) {
		free(e->rec);
		nm->st.dropped++;
		return NULL;
	}
	memcpy(e->rec, h, h->size);
	e->size = h->size;
	e->start = m.start;
	e->len = m.len;
	p->nr++;
	p->bytes += h->size + 64;
	nm->bytes += h->size + 64;
	nm->st.kept++;
	if (nm->bytes > nm->st.bytes_peak)
		nm->st.bytes_peak = nm->bytes;
	return e;
}

void named__seen(struct named *nm, const struct perf_event_header *h)
{
	if (!nm || !named__is_named(h))
		return;
	pthread_mutex_lock(&nm->lock);
	keep(nm, h);
	pthread_mutex_unlock(&nm->lock);
}

/* @e's symbol in the current file's symbol file (under the lock): 1 + its index, 0: none. */
static uint32_t symbol(struct named *nm, struct nrec *e)
{
	const char *name = (const char *)e->rec + sizeof(struct perf_record_mmap2);
	size_t len = strnlen(name, e->size - sizeof(struct perf_record_mmap2)) + 1;

	if (!nm->syms_path)
		return 0;
	if (e->sym && e->file == nm->file)
		return e->sym;
	if (!nm->str_len && !grow_array((void **)&nm->str, &nm->str_cap, 1, 1))
		nm->str[nm->str_len++] = 0;
	if (!nm->str_len || nm->str_len + len > UINT32_MAX ||
	    grow_array((void **)&nm->str, &nm->str_cap, nm->str_len + len, 1) ||
	    grow_array((void **)&nm->syms, &nm->cap_syms, nm->nr_syms + 1, sizeof(*nm->syms)))
		return 0;
	nm->syms[nm->nr_syms] = (struct elfsym){ .addr = ELFSYMS_TEXT + nm->text, .size = e->len,
						 .name = (uint32_t)nm->str_len };
	memcpy(nm->str + nm->str_len, name, len - 1);
	nm->str[nm->str_len + len - 1] = 0;
	nm->str_len += len;
	/* each symbol at an address of its own, 16-aligned */
	nm->text += (e->len + 15) & ~15ULL;
	e->sym = (uint32_t)++nm->nr_syms;
	e->file = nm->file;
	return e->sym;
}

/*
 * The record that maps @e's range to the symbol file at its symbol, for
 * perf, with @e's trailer (stamped @time when nonzero), into @buf. Returns
 * its size, 0 when there is none.
 */
static size_t sym_record(struct named *nm, struct nrec *e, uint32_t sym, uint64_t time,
			 char *buf, size_t cap)
{
	struct perf_record_mmap2 m;
	size_t flen = strlen(nm->syms_path) + 1, body = sizeof(m) + ((flen + 7) & ~7UL);
	size_t tlen = e->size - sizeof(m), trailer = perf_sample_id__size(SIDEBAND_SAMPLE_TYPE);
	struct perf_sample id = { 0 };

	if (!sym || tlen < trailer || body + trailer > cap || body + trailer > UINT16_MAX)
		return 0;
	memcpy(&m, e->rec, sizeof(m));
	memset(buf, 0, body + trailer);
	m.header.size = (uint16_t)(body + trailer);
	m.header.misc = (uint16_t)(m.header.misc | PERF_RECORD_MISC_MMAP_BUILD_ID);
	m.pgoff = nm->syms[sym - 1].addr;
	memset(&m.build_id_size, 0, 24);
	m.build_id_size = ELFSYMS_BUILD_ID;
	memcpy(m.build_id, nm->bid, ELFSYMS_BUILD_ID);
	memcpy(buf, &m, sizeof(m));
	memcpy(buf + sizeof(m), nm->syms_path, flen);
	perf_sample_id__parse(SIDEBAND_SAMPLE_TYPE, (const void *)e->rec, &id);
	id.time = time;
	perf_sample_id__encode(SIDEBAND_SAMPLE_TYPE, &id, buf + body);
	return body + trailer;
}

/* Write @e into @stream of the current file (unless @itself is false: the
 * caller wrote it), its symbol's record after it, both stamped @time (perf
 * takes the later of two records of a range: never the symbol's first). */
static int put(struct named *nm, struct nrec *e, int stream, uint64_t time, bool itself,
	       int (*write)(void *arg, const struct perf_event_header *h), void *arg)
{
	char buf[4096 + 256];
	uint64_t bit = 1ULL << (stream < NAMED_STREAMS ? stream : NAMED_STREAMS - 1);
	size_t n;
	int err = 0;

	if (e->file != nm->file) {
		e->file = nm->file;
		e->streams = 0;
		e->sym = 0;
	}
	if (itself) {
		struct perf_sample id = { 0 };
		size_t trailer = perf_sample_id__size(SIDEBAND_SAMPLE_TYPE);
		uint8_t *copy;

		if (e->size < sizeof(struct perf_record_mmap2) + trailer)
			return 0;
		copy = malloc(e->size);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, e->rec, e->size);
		perf_sample_id__parse(SIDEBAND_SAMPLE_TYPE, (const void *)copy, &id);
		id.time = time;
		perf_sample_id__encode(SIDEBAND_SAMPLE_TYPE, &id, copy + e->size - trailer);
		err = write(arg, (const void *)copy);
		free(copy);
		nm->st.rewritten++;
	}
	n = err ? 0 : sym_record(nm, e, symbol(nm, e), time, buf, sizeof(buf));
	if (n)
		err = write(arg, (const void *)buf);
	if (!err)
		e->streams |= bit;
	return err;
}

int named__after(struct named *nm, const struct perf_event_header *h, int stream,
		 int (*write)(void *arg, const struct perf_event_header *h), void *arg)
{
	struct perf_sample id = { 0 };
	struct nrec *e;
	int err = 0;

	if (!nm || !named__is_named(h))
		return 0;
	perf_sample_id__parse(SIDEBAND_SAMPLE_TYPE, h, &id);
	pthread_mutex_lock(&nm->lock);
	e = keep(nm, h);
	if (e)
		err = put(nm, e, stream, id.time, false, write, arg);
	pthread_mutex_unlock(&nm->lock);
	return err;
}

int named__before(struct named *nm, const struct perf_event_header *h, uint64_t sample_type,
		  uint64_t time, int stream,
		  int (*write)(void *arg, const struct perf_event_header *h), void *arg)
{
	struct perf_event_attr attr = { .sample_type = sample_type };
	uint64_t bit = 1ULL << (stream < NAMED_STREAMS ? stream : NAMED_STREAMS - 1);
	struct perf_sample s;
	const char *why;
	struct nproc *p;
	bool user = false;
	uint32_t v;
	size_t i;
	int err = 0;

	if (!nm || !sample_type || h->type != PERF_RECORD_SAMPLE ||
	    !(sample_type & PERF_SAMPLE_CALLCHAIN) || perf_sample__parse(&attr, h, &s, &why))
		return 0;
	if (!time)
		time = s.time;
	pthread_mutex_lock(&nm->lock);
	p = proc_of(nm, s.pid, false);
	for (i = 0; p && i < s.nr_ips && !err; i++) {
		uint64_t ip = s.ips[i];
		struct nrec *e;

		if (ip >= PERF_CONTEXT_MAX) {
			user = ip == PERF_CONTEXT_USER;
			continue;
		}
		if (!user || !rangeset__find(&p->ranges, ip, &v) || v >= p->nr)
			continue;
		e = &p->recs[v];
		if (e->file == nm->file && (e->streams & bit))
			continue;
		err = put(nm, e, stream, time, true, write, arg);
	}
	pthread_mutex_unlock(&nm->lock);
	return err;
}

int named__write_syms(struct named *nm, int fd)
{
	int err = 0;

	pthread_mutex_lock(&nm->lock);
	if (nm->syms_path && nm->nr_syms) {
		err = elfsyms__write(fd, nm->bid, nm->syms, nm->nr_syms, nm->str, nm->str_len,
				     nm->text);
		if (!err) {
			nm->st.symbols += nm->nr_syms;
			nm->st.files++;
		}
	}
	pthread_mutex_unlock(&nm->lock);
	return err;
}

bool named__has_syms(struct named *nm)
{
	bool has;

	pthread_mutex_lock(&nm->lock);
	has = nm->syms_path && nm->nr_syms;
	pthread_mutex_unlock(&nm->lock);
	return has;
}

void named__exit(struct named *nm, uint32_t pid)
{
	struct nproc *p;

	if (!nm)
		return;
	pthread_mutex_lock(&nm->lock);
	p = proc_of(nm, pid, false);
	if (p && !p->gone) {
		p->gone = true;
		p->gone_ns = now_ns();
		nm->gone++;
	}
	pthread_mutex_unlock(&nm->lock);
}

void named__stats(struct named *nm, struct named_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!nm)
		return;
	pthread_mutex_lock(&nm->lock);
	*st = nm->st;
	pthread_mutex_unlock(&nm->lock);
}
