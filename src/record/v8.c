// SPDX-License-Identifier: GPL-2.0
/* JavaScript frames of node (V8): the processes, the names, the records (v8.h). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "v8.h"
#include "v8layout.h"
#include "collector.h"
#include "synth.h"
#include "../offcpu.h"
#include "../perfdata/format.h"
#include "../perfdata/queue.h"
#include "../perfdata/sample.h"
#include "../util/hashmap.h"
#include "../util/objread.h"
#include "../util/procmaps.h"
#include "../util/util.h"

#define V8_PROC_MEM_MAX (V8_NAMES_MEM_MAX / 4)
#define V8_TEXT_MAX (2 * (OFFCPU_V8_NAME_LEN + OFFCPU_V8_FILE_LEN) + 16)

/* What an object holds of V8's layout. */
struct v8obj {
	int state; /* 0: no v8dbg_* symbols; 1: a layout; -1: one the program cannot use */
	struct offcpu_v8_proc layout;
	char why[160]; /* state -1: what it lacks */
};

struct v8name {
	uint32_t written; /* 1 + the file it was last written to; 0: never */
	uint32_t pad;
	uint64_t written_at;
	char *text; /* "[js] NAME (SCRIPT)"; NULL: not received yet */
};

struct v8proc {
	uint32_t tgid;
	bool used, gone, cut;
	struct v8name *names; /* by id */
	size_t cap_names;
	uint32_t next_id; /* the last id it was seen with: ids go on from it (an exec) */
	uint64_t bytes, gone_ns;
};

struct v8 {
	int procs_fd, counters_fd;
	int wake_fd; /* an eventfd: a process to look at (v8__process()) */
	struct ring_buffer *rb;
	pthread_t thread;
	bool started;
	volatile int stop;
	pthread_mutex_t lock; /* the ring buffer, procs, objs, counts */
	struct hashmap procs; /* tgid -> 1 + index in proc */
	struct v8proc *proc;
	size_t nr_proc, cap_proc;
	struct hashmap objs; /* (dev, inode) -> 1 + index in obj; 0: could not be kept */
	struct v8obj *obj;
	size_t nr_obj, cap_obj;
	uint32_t *asked;
	size_t nr_asked, cap_asked;
	uint64_t bytes, bytes_peak, names_dropped, cut, freed, found, without;
	uint32_t first_cut, first_without;
	char without_why[160];
	size_t gone;
};

/*
 * The V8 layout of the object mapped by maps line @m of @tgid, read once
 * per (device, inode) (the file is another user's: objread.h), into *@vo;
 * false when it could not be kept (*@again when it may be later).
 */
static bool v8obj_of(struct v8 *v, uint32_t tgid, const struct maps_line *m, struct v8obj *vo,
		     bool *again)
{
	uint64_t key[2] = { ((uint64_t)m->maj << 32) | m->min, m->ino }, *p;
	struct elfobj o;
	char path[96], err[128];
	bool ok;
	int created, e;

	pthread_mutex_lock(&v->lock);
	p = hashmap__find(&v->objs, key, sizeof(key));
	ok = p && *p;
	if (ok)
		*vo = v->obj[*p - 1];
	pthread_mutex_unlock(&v->lock);
	if (p)
		return ok;
	snprintf(path, sizeof(path), "/proc/%u/map_files/%lx-%lx", tgid, (unsigned long)m->start,
		 (unsigned long)m->end);
	memset(vo, 0, sizeof(*vo));
	e = elfobj__open(&o, path, err, sizeof(err));
	if (!e) {
		vo->state = v8layout__read(&o, &vo->layout, vo->why, sizeof(vo->why));
		elfobj__close(&o);
	} else if (e == -EAGAIN || e == -EWOULDBLOCK) {
		*again = true;
		return false;
	}
	ok = false;
	pthread_mutex_lock(&v->lock);
	p = hashmap__upsert(&v->objs, key, sizeof(key), &created);
	if (p && created) {
		if (!grow_array((void **)&v->obj, &v->cap_obj, v->nr_obj + 1, sizeof(*v->obj))) {
			v->obj[v->nr_obj] = *vo;
			*p = ++v->nr_obj;
			ok = true;
		}
	} else if (p && *p) {
		*vo = v->obj[*p - 1];
		ok = true;
	}
	pthread_mutex_unlock(&v->lock);
	return ok;
}

/* Process @tgid's entry; made if new and @make (under the lock). */
static struct v8proc *proc_get(struct v8 *v, uint32_t tgid, bool make)
{
	uint64_t *p = hashmap__find(&v->procs, &tgid, sizeof(tgid));
	size_t i;
	int created;

	if (p)
		return &v->proc[*p - 1];
	if (!make)
		return NULL;
	for (i = 0; i < v->nr_proc && v->proc[i].used; i++)
		;
	if (i == v->nr_proc) {
		if (grow_array((void **)&v->proc, &v->cap_proc, v->nr_proc + 1, sizeof(*v->proc)))
			return NULL;
		v->nr_proc++;
	}
	p = hashmap__upsert(&v->procs, &tgid, sizeof(tgid), &created);
	if (!p)
		return NULL;
	v->proc[i] = (struct v8proc){ .tgid = tgid, .used = true };
	*p = i + 1;
	return &v->proc[i];
}

static void proc_drop_names(struct v8 *v, struct v8proc *vp)
{
	size_t i;

	for (i = 0; i < vp->cap_names; i++)
		free(vp->names[i].text);
	free(vp->names);
	vp->names = NULL;
	vp->cap_names = 0;
	v->bytes -= vp->bytes;
	vp->bytes = 0;
}

/* Look at process @tgid and tell the program what its V8 is. */
static void detect(struct v8 *v, uint32_t tgid)
{
	struct offcpu_v8_proc p = { .state = OFFCPU_V8_NONE };
	char path[64], line[4096 + 256];
	struct v8obj bad = { 0 };
	bool again = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", tgid);
	f = fopen(path, "re");
	if (!f)
		goto tell;
	while (fgets(line, sizeof(line), f)) {
		struct v8obj vo;
		struct maps_line m;

		if (maps_line__parse(line, &m) || m.perms[2] != 'x' || m.name[0] != '/' || !m.ino)
			continue;
		if (!v8obj_of(v, tgid, &m, &vo, &again))
			continue;
		if (vo.state == 1) {
			p = vo.layout;
			break;
		}
		if (vo.state < 0)
			bad = vo;
	}
	fclose(f);
	if (p.state == OFFCPU_V8_ON) {
		struct v8proc *e;

		pthread_mutex_lock(&v->lock);
		e = proc_get(v, tgid, true);
		if (e && e->gone) {
			/* its pid taken by a new process */
			proc_drop_names(v, e);
			*e = (struct v8proc){ .tgid = tgid, .used = true };
			v->gone--;
		}
		if (e) {
			p.next_id = e->next_id;
			p.max_id = e->cut ? 0 : OFFCPU_V8_IDS_MAX;
		}
		v->found++;
		pthread_mutex_unlock(&v->lock);
		pr_debug("v8: process %u: its JavaScript frames are named", tgid);
	} else if (bad.state < 0) {
		pthread_mutex_lock(&v->lock);
		if (!v->without++) {
			v->first_without = tgid;
			snprintf(v->without_why, sizeof(v->without_why), "%s", bad.why);
		}
		pthread_mutex_unlock(&v->lock);
		pr_info("process %u runs V8, whose JavaScript frames offcpu does not name: %s", tgid,
			bad.why);
	} else if (again) {
		bpf_map_delete_elem(v->procs_fd, &tgid); /* asked again at its next block */
		return;
	}
tell:
	bpf_map_update_elem(v->procs_fd, &tgid, &p, BPF_ANY);
}

/* ---- the program's events ---- */

/* @vp used its ids, or its share of the memory: cut off (under the lock). */
static void proc_cut(struct v8 *v, struct v8proc *vp)
{
	struct offcpu_v8_proc p;

	if (vp->cut)
		return;
	vp->cut = true;
	if (!v->cut++)
		v->first_cut = vp->tgid;
	if (!bpf_map_lookup_elem(v->procs_fd, &vp->tgid, &p)) {
		p.max_id = 0;
		bpf_map_update_elem(v->procs_fd, &vp->tgid, &p, BPF_EXIST);
	}
}

static void keep_name(struct v8 *v, struct v8proc *vp, uint32_t id, const char *text)
{
	size_t len = strlen(text) + 1, cap = vp->cap_names;
	uint64_t grow = 0;

	if (id >= cap) {
		cap = cap ? cap : 64;
		while (cap <= id)
			cap *= 2;
		grow = (cap - vp->cap_names) * sizeof(*vp->names);
	}
	if (vp->cut || vp->bytes + grow + len > V8_PROC_MEM_MAX ||
	    v->bytes + grow + len > V8_NAMES_MEM_MAX) {
		v->names_dropped++;
		proc_cut(v, vp);
		return;
	}
	if (grow) {
		struct v8name *n = realloc(vp->names, cap * sizeof(*n));

		if (!n)
			return;
		memset(n + vp->cap_names, 0, (cap - vp->cap_names) * sizeof(*n));
		vp->names = n;
		vp->cap_names = cap;
	}
	if (vp->names[id].text) {
		len -= strlen(vp->names[id].text) + 1;
		free(vp->names[id].text);
	}
	vp->names[id] = (struct v8name){ .text = strdup(text) };
	vp->bytes += grow + len;
	v->bytes += grow + len;
	if (v->bytes > v->bytes_peak)
		v->bytes_peak = v->bytes;
}

/* @s (at most @n bytes, NUL-ended there) as UTF-8 into @d: V8's one-byte strings are Latin-1. */
static void latin1(char *d, size_t cap, const char *s, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < n && s[i] && o + 3 < cap; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x80) {
			d[o++] = (char)c;
		} else {
			d[o++] = (char)(0xc0 | (c >> 6));
			d[o++] = (char)(0x80 | (c & 0x3f));
		}
	}
	d[o] = 0;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct v8 *v = ctx;
	const struct offcpu_v8_event *e = data;
	char name[2 * OFFCPU_V8_NAME_LEN], file[2 * OFFCPU_V8_FILE_LEN], text[V8_TEXT_MAX];
	struct v8proc *vp;

	if (size < sizeof(*e))
		return 0;
	if (e->kind == OFFCPU_V8_EV_PROC) {
		if (!grow_array((void **)&v->asked, &v->cap_asked, v->nr_asked + 1,
				sizeof(*v->asked)))
			v->asked[v->nr_asked++] = e->tgid;
		return 0;
	}
	vp = proc_get(v, e->tgid, true);
	if (vp && e->kind == OFFCPU_V8_EV_CUT)
		proc_cut(v, vp);
	if (!vp || e->kind != OFFCPU_V8_EV_NAME || !e->id || e->id > OFFCPU_V8_IDS_MAX)
		return 0;
	if (e->id > vp->next_id)
		vp->next_id = e->id;
	latin1(name, sizeof(name), e->name, sizeof(e->name));
	latin1(file, sizeof(file), e->file, sizeof(e->file));
	if (file[0])
		snprintf(text, sizeof(text), OFFCPU_NAMED_JS "%s (%s)", name[0] ? name : "(anonymous)",
			 file);
	else
		snprintf(text, sizeof(text), OFFCPU_NAMED_JS "%s", name[0] ? name : "(anonymous)");
	keep_name(v, vp, e->id, text);
	return 0;
}

/* Free the names of processes that exited V8_GONE_MS ago and more (under the lock). */
static void collect(struct v8 *v)
{
	uint64_t now = now_ns();
	size_t i;

	for (i = 0; i < v->nr_proc && v->gone; i++) {
		struct v8proc *vp = &v->proc[i];

		if (!vp->used || !vp->gone || now - vp->gone_ns < V8_GONE_MS * 1000000ULL)
			continue;
		proc_drop_names(v, vp);
		hashmap__remove(&v->procs, &vp->tgid, sizeof(vp->tgid));
		memset(vp, 0, sizeof(*vp));
		v->gone--;
		v->freed++;
	}
}

void v8__exit(struct v8 *v, uint32_t tgid)
{
	struct v8proc *vp;

	if (!v)
		return;
	pthread_mutex_lock(&v->lock);
	vp = proc_get(v, tgid, false);
	if (vp && !vp->gone) {
		vp->gone = true;
		vp->gone_ns = now_ns();
		v->gone++;
	}
	pthread_mutex_unlock(&v->lock);
}

static void *run(void *arg)
{
	struct v8 *v = arg;
	struct pollfd pfd[2] = { { .fd = ring_buffer__epoll_fd(v->rb), .events = POLLIN },
				 { .fd = v->wake_fd, .events = POLLIN } };
	uint32_t asked[64];
	uint64_t ev;
	size_t n, i;

	while (!v->stop) {
		if (poll(pfd, 2, 100) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents & POLLIN)
			(void)!read(v->wake_fd, &ev, sizeof(ev));
		do {
			pthread_mutex_lock(&v->lock);
			ring_buffer__consume(v->rb);
			collect(v);
			n = v->nr_asked < 64 ? v->nr_asked : 64;
			memcpy(asked, v->asked, n * sizeof(*asked));
			memmove(v->asked, v->asked + n, (v->nr_asked - n) * sizeof(*asked));
			v->nr_asked -= n;
			pthread_mutex_unlock(&v->lock);
			for (i = 0; i < n; i++)
				detect(v, asked[i]);
		} while (n && !v->stop);
	}
	return NULL;
}

struct v8 *v8__new(struct collector *c)
{
	struct v8 *v;
	int events_fd;

	errno = 0;
	events_fd = collector__js_fd(c, "v8_events");
	if (events_fd < 0)
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	pthread_mutex_init(&v->lock, NULL);
	v->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (v->wake_fd < 0) {
		v8__free(v);
		return NULL;
	}
	v->procs_fd = collector__js_fd(c, "v8_procs");
	v->counters_fd = collector__js_fd(c, "v8_counters");
	v->rb = ring_buffer__new(events_fd, on_event, v, NULL);
	if (!v->rb || v->procs_fd < 0) {
		errno = errno ?: EINVAL;
		v8__free(v);
		return NULL;
	}
	if ((errno = pthread_create(&v->thread, NULL, run, v))) {
		v8__free(v);
		return NULL;
	}
	v->started = true;
	return v;
}

void v8__free(struct v8 *v)
{
	size_t i;

	if (!v)
		return;
	if (v->started) {
		struct timespec until;

		v->stop = 1;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		if (pthread_timedjoin_np(v->thread, NULL, &until)) {
			pr_warn("the JavaScript process reader did not stop within 1 s (reading a file "
				"that blocks?): left behind");
			pthread_detach(v->thread);
			return;
		}
	}
	ring_buffer__free(v->rb);
	for (i = 0; i < v->nr_proc; i++)
		if (v->proc[i].used)
			proc_drop_names(v, &v->proc[i]);
	hashmap__free(&v->procs);
	free(v->proc);
	hashmap__free(&v->objs);
	free(v->obj);
	free(v->asked);
	if (v->wake_fd > 0)
		close(v->wake_fd);
	pthread_mutex_destroy(&v->lock);
	free(v);
}

void v8__process(struct v8 *v, uint32_t tgid)
{
	struct offcpu_v8_proc p = { .state = OFFCPU_V8_PENDING };
	uint64_t one = 1;

	if (!v || !tgid)
		return;
	/* (what the program asks about: a pending entry, or none yet) */
	if (bpf_map_update_elem(v->procs_fd, &tgid, &p, BPF_NOEXIST))
		return; /* known, or asked already */
	pthread_mutex_lock(&v->lock);
	if (!grow_array((void **)&v->asked, &v->cap_asked, v->nr_asked + 1, sizeof(*v->asked)))
		v->asked[v->nr_asked++] = tgid;
	pthread_mutex_unlock(&v->lock);
	(void)!write(v->wake_fd, &one, sizeof(one));
}

/* ---- the records ---- */

struct need {
	uint32_t tgid, id;
};
static __thread struct need pending[2 * OFFCPU_MAX_STACK_DEPTH];
static __thread size_t nr_pending;

void v8__note(struct v8 *v, uint32_t tgid, const uint64_t *uips, uint32_t nu)
{
	uint32_t i, id;
	size_t k;

	if (!v)
		return;
	for (i = 0; i < nu; i++) {
		if (!OFFCPU_IS_JSFRAME(uips[i]))
			continue;
		id = (uint32_t)((uips[i] - OFFCPU_JSFRAME_LO) / OFFCPU_JSFRAME_SIZE);
		for (k = 0; k < nr_pending; k++)
			if (pending[k].id == id && pending[k].tgid == tgid)
				break;
		if (k == nr_pending && nr_pending < ARRAY_SIZE(pending))
			pending[nr_pending++] = (struct need){ tgid, id };
	}
}

int v8__flush(struct v8 *v, struct perf_queue *q, uint64_t sideband_id, size_t gen,
	      uint64_t time, int kind)
{
	struct synth_queue sq = { .q = q, .time = time, .kind = kind };
	const struct synth sy = { .sample_type = SIDEBAND_SAMPLE_TYPE, .id = sideband_id,
				  .time = time, .emit = synth__to_queue, .arg = &sq };
	struct v8name *nm;
	int err = 0;
	size_t i;

	if (!v || !nr_pending)
		return 0;
	pthread_mutex_lock(&v->lock);
	for (i = 0; i < nr_pending && !err; i++) {
		uint32_t id = pending[i].id;
		struct v8proc *vp = proc_get(v, pending[i].tgid, false);

		/* a name sent just before the stack: maybe not read yet */
		if (!vp || id >= vp->cap_names || !vp->names[id].text) {
			ring_buffer__consume(v->rb);
			vp = proc_get(v, pending[i].tgid, false);
		}
		nm = vp && id < vp->cap_names ? &vp->names[id] : NULL;
		if (!nm || !nm->text || (nm->written == gen + 1 && nm->written_at <= time))
			continue;
		nm->written = (uint32_t)gen + 1;
		nm->written_at = time;
		err = synth__named(&sy, (int)vp->tgid, OFFCPU_JSFRAME_OF(id), OFFCPU_JSFRAME_SIZE,
				   nm->text);
	}
	pthread_mutex_unlock(&v->lock);
	nr_pending = 0;
	return err;
}

void v8__stats(struct v8 *v, struct v8_stats *st)
{
	uint64_t sum[OFFCPU_V8_CNT_NR] = { 0 }, *per;
	int ncpus = libbpf_num_possible_cpus(), c;
	uint32_t k;

	memset(st, 0, sizeof(*st));
	if (!v)
		return;
	per = ncpus > 0 && v->counters_fd >= 0 ? calloc((size_t)ncpus, sizeof(*per)) : NULL;
	for (k = 0; per && k < OFFCPU_V8_CNT_NR; k++) {
		if (bpf_map_lookup_elem(v->counters_fd, &k, per))
			continue;
		for (c = 0; c < ncpus; c++)
			sum[k] += per[c];
	}
	free(per);
	st->walks = sum[OFFCPU_V8_CNT_WALKS];
	st->frames = sum[OFFCPU_V8_CNT_FRAMES];
	st->other = sum[OFFCPU_V8_CNT_OTHER];
	st->faults = sum[OFFCPU_V8_CNT_FAULTS];
	st->names = sum[OFFCPU_V8_CNT_NAMES];
	st->names_lost = sum[OFFCPU_V8_CNT_NAME_LOST];
	pthread_mutex_lock(&v->lock);
	st->procs = v->found;
	st->procs_without = v->without;
	st->first_without = v->first_without;
	snprintf(st->without_why, sizeof(st->without_why), "%s", v->without_why);
	st->names_dropped = v->names_dropped;
	st->procs_cut = v->cut;
	st->first_cut = v->first_cut;
	st->procs_freed = v->freed;
	st->bytes_peak = v->bytes_peak;
	pthread_mutex_unlock(&v->lock);
}

void v8__summary(struct v8 *v, FILE *f)
{
	struct v8_stats st;

	if (!v)
		return;
	v8__stats(v, &st);
	if (st.procs || st.walks)
		fprintf_escaped(f, "offcpu: JavaScript frames: %llu stacks in %llu node processes, "
			"%llu frames named, %llu functions named; %llu frames of V8 code that is "
			"no function's (stubs, exits), %llu not read (a read faulted); %llu "
			"functions left unnamed\n",
			(unsigned long long)st.walks, (unsigned long long)st.procs,
			(unsigned long long)st.frames, (unsigned long long)st.names,
			(unsigned long long)st.other, (unsigned long long)st.faults,
			(unsigned long long)st.names_lost);
	if (st.procs_without)
		fprintf_escaped(f, "offcpu: JavaScript frames of %llu processes not named (the first, "
			"pid %u: %s)\n", (unsigned long long)st.procs_without, st.first_without,
			st.without_why);
	if (st.procs_cut)
		fprintf_escaped(f, "offcpu: WARNING: %llu node processes cut off (the first: pid %u): "
			"they named %u functions, or filled their share of the names' memory, and "
			"their later ones stay unnamed; %llu names not kept\n",
			(unsigned long long)st.procs_cut, st.first_cut, OFFCPU_V8_IDS_MAX,
			(unsigned long long)st.names_dropped);
}
