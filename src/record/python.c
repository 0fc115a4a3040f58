// SPDX-License-Identifier: GPL-2.0
/* Python frames: the reader thread, the program's events, the names, the summary (python.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "python_int.h"
#include "pylayout.h"
#include "record_int.h"
#include "../util/util.h"
#include "../util/worker.h"

/* Process @tgid's entry; made if new and @make (under the lock). NULL: none, or no memory. */
struct pyproc *proc_get(struct python *py, uint32_t tgid, bool make)
{
	uint64_t *v = hashmap__find(&py->procs, &tgid, sizeof(tgid));
	size_t i;
	int created;

	if (v)
		return &py->proc[*v - 1];
	if (!make)
		return NULL;
	for (i = 0; i < py->nr_proc && py->proc[i].used; i++)
		;
	if (i == py->nr_proc) {
		if (grow_array((void **)&py->proc, &py->cap_proc, py->nr_proc + 1, sizeof(*py->proc)))
			return NULL;
		py->nr_proc++;
	}
	v = hashmap__upsert(&py->procs, &tgid, sizeof(tgid), &created);
	if (!v)
		return NULL;
	py->proc[i] = (struct pyproc){ .tgid = tgid, .used = true };
	*v = i + 1;
	return &py->proc[i];
}

/* Free @pp's names (under the lock). */
void proc_drop_names(struct python *py, struct pyproc *pp)
{
	size_t i;

	for (i = 0; i < pp->cap_names; i++)
		free(pp->names[i].text);
	free(pp->names);
	for (i = 0; i < pp->cap_unames; i++)
		free(pp->unames[i].text);
	free(pp->unames);
	pp->unames = NULL;
	pp->cap_unames = 0;
	hashmap__free(&pp->uids);
	hashmap__free(&pp->stamps);
	pp->names = NULL;
	pp->cap_names = 0;
	py->bytes -= pp->bytes;
	pp->bytes = 0;
}

/* ---- the program's events ---- */

/* @pp used its ids, or its share of the names' memory: cut off, said (under the lock). */
void proc_cut(struct python *py, struct pyproc *pp)
{
	struct offcpu_py_proc p;

	if (pp->cut)
		return;
	pp->cut = true;
	if (!py->cut++)
		py->first_cut = pp->tgid;
	/* the program hands it no more ids */
	if (!bpf_map_lookup_elem(py->procs_fd, &pp->tgid, &p)) {
		p.max_id = 0;
		bpf_map_update_elem(py->procs_fd, &pp->tgid, &p, BPF_EXIST);
	}
}

struct pyname *name_of(struct pyproc *pp, uint32_t id)
{
	if (id >= PY_UID_FIRST)
		return id - PY_UID_FIRST < pp->cap_unames ? &pp->unames[id - PY_UID_FIRST] : NULL;
	return id < pp->cap_names ? &pp->names[id] : NULL;
}

void python_name_text(char *text, size_t size, const char *qualname, const char *filename,
		      int line)
{
	snprintf(text, size, OFFCPU_NAMED_PY "%.*s (%.*s:%d)", OFFCPU_PY_NAME_LEN,
		 qualname[0] ? qualname : "?", OFFCPU_PY_FILE_LEN, filename[0] ? filename : "?",
		 line);
}

/* Keep name @text of @pp's @id, within the memory bounds (under the lock). */
void keep_name(struct python *py, struct pyproc *pp, uint32_t id, const char *text)
{
	bool up = id >= PY_UID_FIRST; /* read from its memory: the names apart */
	struct pyname **names = up ? &pp->unames : &pp->names;
	size_t *capp = up ? &pp->cap_unames : &pp->cap_names;
	uint32_t at = up ? id - PY_UID_FIRST : id;
	size_t len = strlen(text) + 1, cap = *capp;
	uint64_t grow = 0;

	if (at >= cap) {
		cap = cap ? cap : 64;
		while (cap <= at)
			cap *= 2;
		grow = (cap - *capp) * sizeof(**names);
	}
	if (pp->cut || pp->bytes + grow + len > PY_PROC_MEM_MAX ||
	    py->bytes + grow + len > PY_NAMES_MEM_MAX) {
		py->names_dropped++;
		proc_cut(py, pp);
		return;
	}
	if (grow) {
		struct pyname *n = realloc(*names, cap * sizeof(*n));

		if (!n)
			return;
		memset(n + *capp, 0, (cap - *capp) * sizeof(*n));
		*names = n;
		*capp = cap;
	}
	if ((*names)[at].text) {
		len -= strlen((*names)[at].text) + 1;
		free((*names)[at].text);
	}
	(*names)[at] = (struct pyname){ .text = strdup(text) };
	pp->bytes += grow + len;
	py->bytes += grow + len;
	if (py->bytes > py->bytes_peak)
		py->bytes_peak = py->bytes;
}

/*
 * Code object @code of @pp named with identity @stamp: one named before at
 * its address with another identity was freed, and this one took its place
 * (counted). Its names' memory bounds what is kept (under the lock).
 */
void note_stamp(struct python *py, struct pyproc *pp, uint64_t code, uint64_t stamp)
{
	uint64_t *v;
	int created;

	if (pp->cut || pp->bytes + 64 > PY_PROC_MEM_MAX || py->bytes + 64 > PY_NAMES_MEM_MAX)
		return;
	v = hashmap__upsert(&pp->stamps, &code, sizeof(code), &created);
	if (!v)
		return;
	if (created) {
		pp->bytes += 64;
		py->bytes += 64;
	} else if (*v != stamp) {
		py->renamed++;
	}
	*v = stamp;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct python *py = ctx;
	const struct offcpu_py_event *e = data;
	char text[OFFCPU_PY_NAME_LEN + OFFCPU_PY_FILE_LEN + 64];
	struct pyproc *pp;

	if (size < sizeof(*e))
		return 0;
	if (e->kind == OFFCPU_PY_EV_PROC) {
		if (!grow_array((void **)&py->asked, &py->cap_asked, py->nr_asked + 1,
				sizeof(*py->asked)))
			py->asked[py->nr_asked++] = e->tgid;
		return 0;
	}
	pp = proc_get(py, e->tgid, true);
	if (pp && e->kind == OFFCPU_PY_EV_CUT)
		proc_cut(py, pp);
	if (!pp || e->kind != OFFCPU_PY_EV_NAME || !e->id || e->id > OFFCPU_PY_IDS_MAX)
		return 0;
	if (e->id > pp->next_id)
		pp->next_id = e->id;
	note_stamp(py, pp, e->code, e->stamp);
	python_name_text(text, sizeof(text), e->qualname, e->filename,
			 pylayout__line(e->minor, e->linetable,
					e->linetable_len < OFFCPU_PY_LINETABLE ? e->linetable_len :
										 OFFCPU_PY_LINETABLE,
					e->lineno, e->lasti));
	keep_name(py, pp, e->id, text);
	return 0;
}

/* Free the names of processes that exited PY_GONE_MS ago and more (under the lock). */
static void collect(struct python *py)
{
	uint64_t now = now_ns();
	size_t i;

	for (i = 0; i < py->nr_proc && py->gone; i++) {
		struct pyproc *pp = &py->proc[i];

		if (!pp->used || !pp->gone || now - pp->gone_ns < PY_GONE_MS * 1000000ULL)
			continue;
		proc_drop_names(py, pp);
		hashmap__remove(&py->procs, &pp->tgid, sizeof(pp->tgid));
		memset(pp, 0, sizeof(*pp));
		py->gone--;
		py->freed++;
	}
}

/* What the program saw of Python process @tgid that keeps its frames from being read: said. */
static void check_seen(struct python *py, uint32_t tgid)
{
	struct offcpu_py_proc p;

	if (!bpf_map_lookup_elem(py->procs_fd, &tgid, &p) && p.state == OFFCPU_PY_READ &&
	    (p.flags & OFFCPU_PY_F_KEY_BAD))
		python_not_read(py, tgid, PYTHON_KEY, "its thread-state key is past glibc's 32 first slots");
}

void python__exit(struct python *py, uint32_t tgid)
{
	struct pyproc *pp;
	bool known;

	if (!py)
		return;
	pthread_mutex_lock(&py->lock);
	pp = proc_get(py, tgid, false);
	known = pp && !pp->gone;
	if (known) {
		pp->gone = true;
		pp->gone_ns = now_ns();
		py->gone++;
	}
	pthread_mutex_unlock(&py->lock);
	if (known)
		check_seen(py, tgid);
}

static void *run(void *arg)
{
	struct python *py = arg;
	struct pollfd pfd = { .fd = ring_buffer__epoll_fd(py->rb), .events = POLLIN };
	uint32_t asked[64];
	size_t n, i;

	while (!py->stop) {
		if (poll(&pfd, 1, 100) < 0 && errno != EINTR)
			break;
		do {
			pthread_mutex_lock(&py->lock);
			ring_buffer__consume(py->rb);
			collect(py);
			n = py->nr_asked < 64 ? py->nr_asked : 64;
			memcpy(asked, py->asked, n * sizeof(*asked));
			memmove(py->asked, py->asked + n, (py->nr_asked - n) * sizeof(*asked));
			py->nr_asked -= n;
			pthread_mutex_unlock(&py->lock);
			for (i = 0; i < n; i++)
				python_detect(py, asked[i]);
		} while (n && !py->stop);
	}
	return NULL;
}

/* The processes recorded from the start (-p): known before their first block. */
static void py_targets(struct python *py, int filter_fd)
{
	uint32_t key, next, n = 0;
	uint8_t v;
	void *prev = NULL;

	while (filter_fd >= 0 && n < 4096 && !bpf_map_get_next_key(filter_fd, prev, &next)) {
		key = next;
		prev = &key;
		n++;
		if (!bpf_map_lookup_elem(filter_fd, &key, &v) && v == OFFCPU_FILTER_ACTIVE)
			python_detect(py, key);
	}
}

struct python *python__new(struct collector *c)
{
	struct python *py;
	int events_fd;

	errno = 0;
	events_fd = collector__python_fd(c, "py_events");
	if (events_fd < 0) /* loaded without Python frames (--no-python, or a fallback) */
		return NULL;
	py = calloc(1, sizeof(*py));
	if (!py)
		return NULL;
	pthread_mutex_init(&py->lock, NULL);
	py->procs_fd = collector__python_fd(c, "py_procs");
	py->counters_fd = collector__python_fd(c, "py_counters");
	py->rb = ring_buffer__new(events_fd, on_event, py, NULL);
	if (!py->rb || py->procs_fd < 0) {
		errno = errno ?: EINVAL;
		python__free(py);
		return NULL;
	}
	py_targets(py, collector__python_fd(c, "tgid_filter"));
	if ((errno = -worker__start(&py->thread, run, py))) {
		python__free(py);
		return NULL;
	}
	py->started = true;
	return py;
}

void python__free(struct python *py)
{
	size_t i;

	if (!py)
		return;
	if (py->started) {
		py->stop = 1;
		/* stuck on something another user controls: its state goes with the process */
		if (!worker__join_within(py->thread, 1000, "the Python process reader"))
			return;
	}
	ring_buffer__free(py->rb);
	for (i = 0; i < py->nr_proc; i++)
		if (py->proc[i].used)
			proc_drop_names(py, &py->proc[i]);
	hashmap__free(&py->procs);
	free(py->proc);
	hashmap__free(&py->objs);
	free(py->obj);
	intset__free(&py->said);
	free(py->asked);
	pthread_mutex_destroy(&py->lock);
	free(py);
}

/*
 * The processes past their last id, from the program's own entries: the
 * event that tells one is a ring buffer record a flood of names can crowd out
 * (under the lock).
 */
static void find_cut(struct python *py)
{
	uint32_t key, next, n = 0;
	struct offcpu_py_proc p;
	void *prev = NULL;

	while (n++ < 65536 && !bpf_map_get_next_key(py->procs_fd, prev, &next)) {
		struct pyproc *pp;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(py->procs_fd, &key, &p) || p.state != OFFCPU_PY_READ ||
		    p.next_id <= p.max_id)
			continue;
		pp = proc_get(py, key, true);
		if (pp)
			proc_cut(py, pp);
	}
}

void python__stats(struct python *py, struct python_stats *st)
{
	uint64_t *v;
	int ncpus = libbpf_num_possible_cpus(), c;
	uint64_t sum[OFFCPU_PY_CNT_NR] = { 0 };
	uint32_t k;

	memset(st, 0, sizeof(*st));
	if (!py || ncpus <= 0 || py->counters_fd < 0)
		return;
	v = calloc((size_t)ncpus, sizeof(*v));
	if (!v)
		return;
	for (k = 0; k < OFFCPU_PY_CNT_NR; k++) {
		if (bpf_map_lookup_elem(py->counters_fd, &k, v))
			continue;
		for (c = 0; c < ncpus; c++)
			sum[k] += v[c];
	}
	free(v);
	/* the processes still running: what the program saw of them */
	pthread_mutex_lock(&py->lock);
	for (c = 0; c < (int)py->nr_proc; c++) {
		uint32_t tgid = py->proc[c].tgid;

		if (!py->proc[c].used || py->proc[c].gone)
			continue;
		pthread_mutex_unlock(&py->lock);
		check_seen(py, tgid);
		pthread_mutex_lock(&py->lock);
	}
	pthread_mutex_unlock(&py->lock);
	st->walks = sum[OFFCPU_PY_CNT_WALKS];
	st->no_tstate = sum[OFFCPU_PY_CNT_NO_TSTATE];
	st->frames = sum[OFFCPU_PY_CNT_FRAMES];
	st->faults = sum[OFFCPU_PY_CNT_FAULTS];
	st->cut = sum[OFFCPU_PY_CNT_NO_ROOM];
	st->names = sum[OFFCPU_PY_CNT_NAMES];
	st->names_lost = sum[OFFCPU_PY_CNT_NAME_LOST];
	pthread_mutex_lock(&py->lock);
	find_cut(py);
	st->procs = py->found;
	st->names_dropped = py->names_dropped;
	st->procs_cut = py->cut;
	st->first_cut = py->first_cut;
	st->bytes_peak = py->bytes_peak;
	st->procs_freed = py->freed;
	st->renamed = py->renamed;
	st->start_threads = py->start_threads;
	st->start_frames = py->start_frames;
	memcpy(st->not_read, py->not_read, sizeof(st->not_read));
	memcpy(st->first, py->first, sizeof(st->first));
	pthread_mutex_unlock(&py->lock);
}

void python__summary(struct python *py, FILE *f)
{
	struct python_stats st;

	if (!py)
		return;
	python__stats(py, &st);
	summary__print_python(f, &st);
}

