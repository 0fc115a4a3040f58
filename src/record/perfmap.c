// SPDX-License-Identifier: GPL-2.0
/* JIT frames named from the processes' /tmp/perf-PID.map (perfmap.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "perfmap.h"
#include "pmtmp.h"
#include "synth.h"
#include "../offcpu.h"
#include "../perfdata/format.h"
#include "../perfdata/queue.h"
#include "../perfdata/sample.h"
#include "../util/hashmap.h"
#include "../util/objread.h"
#include "../util/pmtext.h"
#include "../util/ranges.h"
#include "../util/u64set.h"
#include "../util/util.h"
#include "../util/worker.h"

/* messages name paths: one too long for its buffer is cut, on purpose */
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#define PROC_MEM_MAX (PERFMAP_MEM_MAX / 4) /* what one process's map may hold */

/* An entry of a map; its range is in the process's rangeset (a later one wins). */
struct pm_entry {
	uint64_t start;
	uint32_t size;
	uint32_t name; /* offset in the process's names */
	uint32_t written; /* 1 + the file it has a record in; 0: none */
	uint32_t pad;
	uint64_t written_at; /* that record's time */
};

enum { PM_NEW, PM_OPEN, PM_NONE, PM_REFUSED };

struct pm_proc {
	uint32_t tgid;
	bool used, queued, gone;
	bool jit; /* it runs JIT code: its unnamed frames are kept for a map read later */
	bool last; /* its last look, after its exit, is asked for */
	uint8_t state;
	int fd; /* -1: none (yet) */
	/* its /tmp, kept while it lives, to read its map after it exits (a
	 * JVM writes it at its exit): -1 none; its mount, its user, its pid there */
	int tmp_fd;
	uint64_t tmp_mnt;
	uint32_t uid;
	int nspid;
	struct u64set unresolved; /* frames no entry named yet (jit only) */
	uint64_t off; /* bytes read (whole lines): the reader's */
	uint64_t looked_ns; /* the last look asked for */
	uint64_t gone_ns; /* its exit */
	uint64_t asked, done; /* looks asked for, and done: tickets */
	struct pm_entry *e; /* in the file's order */
	size_t nr, cap;
	struct rangeset ranges; /* value: the entry */
	char *names;
	size_t names_len, names_cap;
	uint64_t bytes; /* the memory charged for it */
};

struct pending {
	uint32_t slot, tgid, entry;
};

struct perfmap {
	pthread_mutex_t lock;
	pthread_cond_t work, served;
	pthread_t thread;
	bool running;
	volatile int stop;
	struct hashmap procs; /* tgid -> 1 + slot */
	struct pm_proc *p; /* slots; a freed one is reused */
	size_t nr, cap, live;
	uint32_t *free_slots;
	size_t nr_free, cap_free;
	uint32_t *queue; /* slots the reader is asked to look at */
	size_t q_head, q_len, q_cap;
	uint64_t busy_since; /* when the reader's look began, 0 between looks */
	size_t gone; /* exited processes not freed yet */
	size_t tmp_open; /* kept /tmp descriptors */
	struct pending *late; /* entries that frames named after they were written */
	size_t nr_late, cap_late;
	struct perfmap_stats st;
};


/* noted by this thread's last perfmap__name_frames() calls, for its flush */
static __thread struct pending pend[2 * OFFCPU_MAX_STACK_DEPTH];
static __thread size_t nr_pend;

static void *run(void *arg);

struct perfmap *perfmap__new(void)
{
	struct perfmap *pm = calloc(1, sizeof(*pm));
	int err;

	if (!pm)
		return NULL;
	pthread_mutex_init(&pm->lock, NULL);
	pthread_cond_init(&pm->work, NULL);
	pthread_cond_init(&pm->served, NULL);
	err = worker__start(&pm->thread, run, pm);
	if (err) {
		perfmap__free(pm);
		errno = -err;
		return NULL;
	}
	pm->running = true;
	return pm;
}

static void tmp_close(struct perfmap *pm, struct pm_proc *p)
{
	if (p->tmp_fd < 0)
		return;
	close(p->tmp_fd);
	p->tmp_fd = -1;
	pm->tmp_open--;
}

static void proc_release(struct perfmap *pm, struct pm_proc *p)
{
	if (p->fd >= 0)
		close(p->fd);
	tmp_close(pm, p);
	u64set__free(&p->unresolved);
	rangeset__free(&p->ranges);
	free(p->e);
	free(p->names);
	pm->st.bytes -= p->bytes;
	memset(p, 0, sizeof(*p));
	p->fd = p->tmp_fd = -1;
}

void perfmap__free(struct perfmap *pm)
{
	size_t i;

	if (!pm)
		return;
	if (pm->running) {
		pthread_mutex_lock(&pm->lock);
		pm->stop = 1;
		pthread_cond_broadcast(&pm->work);
		pthread_mutex_unlock(&pm->lock);
		if (!worker__join_within(pm->thread, PERFMAP_STOP_MS, "the perf map reader"))
			return; /* it keeps what it uses, until the process exits */
	}
	for (i = 0; i < pm->nr; i++)
		if (pm->p[i].used)
			proc_release(pm, &pm->p[i]);
	free(pm->p);
	free(pm->late);
	free(pm->free_slots);
	free(pm->queue);
	hashmap__free(&pm->procs);
	pthread_cond_destroy(&pm->work);
	pthread_cond_destroy(&pm->served);
	pthread_mutex_destroy(&pm->lock);
	free(pm);
}

static uint64_t proc_bytes(const struct pm_proc *p)
{
	return p->cap * sizeof(*p->e) + p->names_cap + rangeset__bytes(&p->ranges) +
	       u64set__bytes(&p->unresolved);
}

/*
 * Add @b's entries to @p (under the lock), as many as its share and the
 * total allow; false when a bound cut it.
 */
/* A capacity after pmtext__grow() made room for @need in @cap. */
static size_t grown(size_t cap, size_t need)
{
	return need <= cap ? cap : need > cap + cap / 4 ? need : cap + cap / 4;
}

/* What @p holds at most once @n more entries with @names bytes of names are added. */
static uint64_t bytes_after(const struct pm_proc *p, size_t n, size_t names)
{
	size_t r = rangeset__len(&p->ranges) + n;

	/* the rangeset's arrays double as they grow: twice what it holds, at most */
	return grown(p->cap, p->nr + n) * sizeof(*p->e) +
	       grown(p->names_cap, p->names_len + names) +
	       ((uint64_t)r * 2 + 16) * (sizeof(struct range) + sizeof(struct range_run)) +
	       (uint64_t)r * sizeof(uint32_t);
}

static bool append(struct perfmap *pm, struct pm_proc *p, struct pmtext *b)
{
	uint64_t before = p->bytes, room_all, room_proc, need;
	size_t n = b->nr, i, names;

	if (!n)
		return true;
	/* what fits: entries come in the file's order, a prefix of them is kept */
	room_all = PERFMAP_MEM_MAX > pm->st.bytes ? PERFMAP_MEM_MAX - pm->st.bytes : 0;
	room_proc = PROC_MEM_MAX > p->bytes ? PROC_MEM_MAX - p->bytes : 0;
	for (;;) {
		names = n == b->nr ? b->names_len : b->e[n].name;
		need = bytes_after(p, n, names) - p->bytes;
		if ((need <= room_all && need <= room_proc) || !n)
			break;
		n = n / 2;
	}
	if (n < b->nr)
		pm->st.over += b->nr - n;
	if (!n || pmtext__grow((void **)&p->e, &p->cap, p->nr + n, sizeof(*p->e)) ||
	    pmtext__grow((void **)&p->names, &p->names_cap, p->names_len + names, 1))
		return false;
	memcpy(p->names + p->names_len, b->names, names);
	for (i = 0; i < n; i++) {
		p->e[p->nr] = (struct pm_entry){ .start = b->e[i].start, .size = b->e[i].size,
						 .name = b->e[i].name + (uint32_t)p->names_len };
		if (rangeset__add(&p->ranges, b->e[i].start, b->e[i].size, (uint32_t)p->nr))
			break;
		p->nr++;
	}
	p->names_len += names;
	pm->st.entries += i;
	p->bytes = proc_bytes(p);
	pm->st.bytes += p->bytes - before;
	if (pm->st.bytes > pm->st.bytes_peak)
		pm->st.bytes_peak = pm->st.bytes;
	return n == b->nr && i == n;
}

/* Forget what @p read (its map was written anew): its memory given back. */
static void proc_reset(struct perfmap *pm, struct pm_proc *p)
{
	rangeset__free(&p->ranges);
	p->nr = p->names_len = 0;
	p->off = 0;
	pm->st.bytes -= p->bytes;
	p->bytes = proc_bytes(p);
	pm->st.bytes += p->bytes;
}

static void note_refused(struct perfmap *pm, struct pm_proc *p, int err)
{
	p->state = PM_REFUSED;
	if (!pm->st.refused++) {
		pm->st.first_refused = p->tgid;
		pm->st.first_refused_err = err;
	}
	pr_info("perf map of process %u not read: %s", p->tgid,
		err == -EPERM ? "not a regular file of its user" : objread_why(err));
}

/* The entry holding @ip (the latest where entries overlap), or -1. */
static long find(const struct pm_proc *p, uint64_t ip)
{
	uint32_t e;

	return rangeset__find(&p->ranges, ip, &e) ? (long)e : -1;
}

/*
 * Frames of @slot's process that no entry named when their samples were
 * written, named by what its map holds now: their entries are kept for
 * perfmap__flush_late() (under the lock).
 */
static void resolve(struct perfmap *pm, uint32_t slot)
{
	struct pm_proc *p = &pm->p[slot];
	uint64_t a;
	size_t i;
	long e;

	for (i = 0; i < p->unresolved.cap && p->nr; i++) {
		if (!u64set__at(&p->unresolved, i, &a) || (e = find(p, a)) < 0)
			continue;
		u64set__remove(&p->unresolved, a);
		if (p->e[e].pad || grow_array((void **)&pm->late, &pm->cap_late, pm->nr_late + 1,
					      sizeof(*pm->late)))
			continue;
		p->e[e].pad = 1; /* in the late list */
		pm->late[pm->nr_late++] = (struct pending){ slot, p->tgid, (uint32_t)e };
	}
}

/* What opening a map said, for the process's state (under the lock). */
static void opened_as(struct perfmap *pm, struct pm_proc *p, int err)
{
	if (err == -ESRCH) {
		p->state = PM_NONE;
		if (!p->gone) {
			p->gone = true; /* freed after the grace, as an exit */
			p->gone_ns = now_ns();
			pm->gone++;
		}
	} else if (err == -ENOENT || err == -ENOTDIR) {
		p->state = PM_NONE;
	} else {
		note_refused(pm, p, err == -EINVAL ? -EPERM : err);
	}
}

/*
 * Look at slot @slot's map: open it if not yet (its /tmp kept while the
 * process lives), read what it gained, name the frames it did not name
 * before. After the process exited, its last look only (its map read
 * through its kept /tmp: a JVM writes it at its exit). Under the lock, which
 * it drops while it reads.
 */
static void look(struct perfmap *pm, uint32_t slot)
{
	struct pm_proc *p = &pm->p[slot];
	struct pm_tmp t = { .fd = p->tmp_fd, .mnt = p->tmp_mnt, .uid = p->uid, .nspid = p->nspid };
	struct pmtext b = { 0 };
	uint64_t ticket = p->asked, off = p->off;
	uint32_t tgid = p->tgid;
	int fd = p->fd, opened = 0, kept = 0;
	bool last = p->gone && p->last, keep, mine = false, anew = false;
	struct stat st;

	p->queued = false;
	if (p->state == PM_REFUSED || (p->gone && (!last || (fd < 0 && t.fd < 0)))) {
		p->done = ticket;
		if (p->gone)
			tmp_close(pm, p);
		return;
	}
	/* the /tmp of a process that runs JIT code kept, while there is room:
	 * a temporary one otherwise */
	keep = t.fd < 0 && !p->gone && p->jit;
	if (keep && pm->tmp_open >= PERFMAP_DIRS_MAX) {
		keep = false;
		pm->st.dirs_over++;
	}
	if (keep)
		pm->tmp_open++;
	pm->busy_since = now_ns();
	pthread_mutex_unlock(&pm->lock);
	if (t.fd < 0 && !last) {
		kept = pm_tmp__open((int)tgid, &t);
		if (kept)
			t.fd = -1;
		mine = !kept;
	}
	if (fd < 0) {
		opened = t.fd >= 0 ? pm_tmp__map(&t) : kept ? kept : -ENOENT;
		fd = opened;
	}
	if (fd >= 0 && !fstat(fd, &st)) {
		/* written anew (a JVM's map at each jcmd, a pid reused): from the start */
		anew = (uint64_t)st.st_size < off;
		if (anew)
			off = 0;
		if ((uint64_t)st.st_size > off)
			pmtext__read(fd, off, PERFMAP_FILE_MAX, PERFMAP_READ_MAX, &b, &pm->stop);
	}
	if (mine && !keep)
		close(t.fd); /* a temporary one */
	pthread_mutex_lock(&pm->lock);
	p = &pm->p[slot];
	if (keep) {
		if (mine) {
			p->tmp_fd = t.fd;
			p->tmp_mnt = t.mnt;
			p->uid = t.uid;
			p->nspid = t.nspid;
		} else {
			pm->tmp_open--;
		}
	}
	if (opened >= 0 && p->fd < 0 && fd >= 0) {
		p->fd = fd;
		p->state = PM_OPEN;
		pm->st.maps++;
	} else if (opened < 0) {
		opened_as(pm, p, opened);
	}
	if (anew)
		proc_reset(pm, p);
	if (!append(pm, p, &b) || b.over) {
		if (!pm->st.cut++)
			pm->st.first_cut = p->tgid;
		p->state = PM_REFUSED; /* what was read stays */
	}
	p->off = off + b.consumed;
	if (b.nr)
		resolve(pm, slot);
	if (last) {
		/* nothing more will come of it */
		if (b.nr)
			pm->st.at_exit++;
		p->last = false;
		tmp_close(pm, p);
		if (p->fd >= 0)
			close(p->fd);
		p->fd = -1;
	}
	p->done = ticket;
	pm->busy_since = 0;
	pthread_cond_broadcast(&pm->served);
	pmtext__free(&b);
}

/* Free the processes that exited PERFMAP_GONE_MS ago and more (under the lock). */
static void collect(struct perfmap *pm)
{
	uint64_t now = now_ns();
	size_t i;

	for (i = 0; i < pm->nr && pm->gone; i++) {
		struct pm_proc *p = &pm->p[i];

		if (!p->used || !p->gone || p->queued ||
		    now - p->gone_ns < PERFMAP_GONE_MS * 1000000ULL)
			continue;
		hashmap__remove(&pm->procs, &p->tgid, sizeof(p->tgid));
		proc_release(pm, p);
		pm->gone--;
		pm->live--;
		pm->st.freed++;
		if (!grow_array((void **)&pm->free_slots, &pm->cap_free, pm->nr_free + 1,
				sizeof(*pm->free_slots)))
			pm->free_slots[pm->nr_free++] = (uint32_t)i;
	}
}

static void *run(void *arg)
{
	struct perfmap *pm = arg;

	pthread_mutex_lock(&pm->lock);
	while (!pm->stop) {
		struct timespec until;

		if (pm->q_len) {
			uint32_t slot = pm->queue[pm->q_head++];

			if (pm->q_head == pm->q_len)
				pm->q_head = pm->q_len = 0;
			look(pm, slot);
			continue;
		}
		collect(pm);
		until = worker__deadline(1000);
		pthread_cond_timedwait(&pm->work, &pm->lock, &until);
	}
	pthread_mutex_unlock(&pm->lock);
	return NULL;
}

/* The slot of process @tgid, added if new; -1 over the bound (under the lock). */
static long proc_of(struct perfmap *pm, uint32_t tgid)
{
	uint64_t *v = hashmap__find(&pm->procs, &tgid, sizeof(tgid));
	uint32_t slot;
	int created;

	if (v)
		return (long)*v - 1;
	if (pm->live >= PERFMAP_PROCS_MAX) {
		pm->st.over++; /* (once per sample of such a process) */
		return -1;
	}
	if (pm->nr_free) {
		slot = pm->free_slots[--pm->nr_free];
	} else {
		if (grow_array((void **)&pm->p, &pm->cap, pm->nr + 1, sizeof(*pm->p)))
			return -1;
		slot = (uint32_t)pm->nr++;
	}
	v = hashmap__upsert(&pm->procs, &tgid, sizeof(tgid), &created);
	if (!v) {
		if (grow_array((void **)&pm->free_slots, &pm->cap_free, pm->nr_free + 1,
			       sizeof(*pm->free_slots)) == 0)
			pm->free_slots[pm->nr_free++] = slot;
		return -1;
	}
	pm->p[slot] = (struct pm_proc){ .tgid = tgid, .used = true, .fd = -1, .tmp_fd = -1 };
	pm->live++;
	*v = (uint64_t)slot + 1;
	return slot;
}

/*
 * Ask the reader to look at slot @slot's map (at most every PERFMAP_REFRESH_MS,
 * PERFMAP_RETRY_MS while it has none); with @wait, wait for that look
 * PERFMAP_WAIT_MS at most. Under the lock. Returns whether a look was done.
 */
static bool ask(struct perfmap *pm, uint32_t slot, bool wait)
{
	struct pm_proc *p = &pm->p[slot];
	uint64_t now = now_ns(), ticket;
	struct timespec until;

	if (p->state == PM_REFUSED || p->gone)
		return false;
	if (p->looked_ns && now - p->looked_ns < (p->state == PM_OPEN ? PERFMAP_REFRESH_MS :
						  PERFMAP_RETRY_MS) * 1000000ULL)
		return false;
	p->looked_ns = now;
	ticket = ++p->asked;
	if (!p->queued) {
		if (grow_array((void **)&pm->queue, &pm->q_cap, pm->q_len + 1, sizeof(*pm->queue)))
			return false;
		pm->queue[pm->q_len++] = slot;
		p->queued = true;
	}
	pthread_cond_signal(&pm->work);
	if (!wait || !pm->running)
		return false;
	/* waited for only when the reader has nothing else to do: a reader busy
	 * with other maps (or stuck) costs the samples their names, never time */
	if (pm->busy_since || pm->q_len - pm->q_head > 1) {
		pm->st.waits_missed++;
		return false;
	}
	pm->st.waits++;
	until = worker__deadline(PERFMAP_WAIT_MS);
	while (pm->p[slot].done < ticket)
		if (pthread_cond_timedwait(&pm->served, &pm->lock, &until)) {
			pm->st.waits_missed++;
			return false;
		}
	return true;
}

void perfmap__process(struct perfmap *pm, int tgid)
{
	long slot;

	if (!pm || tgid <= 0)
		return;
	pthread_mutex_lock(&pm->lock);
	slot = proc_of(pm, (uint32_t)tgid);
	if (slot >= 0) {
		pm->p[slot].jit = true;
		ask(pm, (uint32_t)slot, false);
	}
	pthread_mutex_unlock(&pm->lock);
}

void perfmap__process_cb(void *pm, int tgid)
{
	perfmap__process(pm, tgid);
}

void perfmap__exit(struct perfmap *pm, int tgid)
{
	uint64_t *v;

	if (!pm || tgid <= 0)
		return;
	pthread_mutex_lock(&pm->lock);
	v = hashmap__find(&pm->procs, &(uint32_t){ (uint32_t)tgid }, sizeof(uint32_t));
	if (v && !pm->p[*v - 1].gone) {
		struct pm_proc *p = &pm->p[*v - 1];

		p->gone = true;
		p->gone_ns = now_ns();
		pm->gone++;
		/* its map, as it left it (a JVM writes it at its exit), names its
		 * frames: read once more, through its kept /tmp */
		if ((p->fd >= 0 || p->tmp_fd >= 0) && p->state != PM_REFUSED &&
		    !grow_array((void **)&pm->queue, &pm->q_cap, pm->q_len + 1, sizeof(*pm->queue))) {
			p->last = true;
			p->asked++;
			if (!p->queued) {
				pm->queue[pm->q_len++] = (uint32_t)(*v - 1);
				p->queued = true;
			}
			pthread_cond_signal(&pm->work);
		}
	}
	pthread_mutex_unlock(&pm->lock);
}

void perfmap__name_frames(struct perfmap *pm, uint32_t tgid, const uint64_t *uips, uint32_t nu)
{
	bool asked = false;
	long slot, e;
	size_t k;
	uint32_t i;

	if (!pm || !nu)
		return;
	pthread_mutex_lock(&pm->lock);
	slot = proc_of(pm, tgid);
	for (i = 0; slot >= 0 && i < nu && nr_pend < ARRAY_SIZE(pend); i++) {
		uint64_t ip = uips[i];

		if (ip < 4096 || ip >= (1ULL << 56))
			continue; /* a mark, a deferral, a Python frame */
		/* a caller's frame is its return address: the call is before it */
		e = find(&pm->p[slot], i ? ip - 1 : ip);
		/* perhaps new code: the map may have grown since (one look a sample) */
		if (e < 0 && !asked) {
			asked = true;
			if (ask(pm, (uint32_t)slot, true))
				e = find(&pm->p[slot], i ? ip - 1 : ip);
		}
		if (e < 0) {
			/* a map read later may name it (written at the exit, or by jcmd) */
			struct pm_proc *p = &pm->p[slot];
			size_t before = u64set__bytes(&p->unresolved);

			if (p->jit && p->unresolved.len < PERFMAP_UNRESOLVED_MAX &&
			    pm->st.bytes + 2 * before + 1024 <= PERFMAP_MEM_MAX &&
			    u64set__add(&p->unresolved, i ? ip - 1 : ip) > 0) {
				p->bytes += u64set__bytes(&p->unresolved) - before;
				pm->st.bytes += u64set__bytes(&p->unresolved) - before;
			}
			continue;
		}
		pm->st.frames++;
		for (k = 0; k < nr_pend; k++)
			if (pend[k].slot == slot && pend[k].entry == (uint32_t)e)
				break;
		if (k == nr_pend)
			pend[nr_pend++] = (struct pending){ (uint32_t)slot, tgid, (uint32_t)e };
	}
	pthread_mutex_unlock(&pm->lock);
}

int perfmap__flush(struct perfmap *pm, struct perf_queue *q, uint64_t sideband_id, size_t gen,
		   uint64_t time, int kind)
{
	struct synth_queue sq = { .q = q, .time = time, .kind = kind };
	const struct synth sy = { .sample_type = SIDEBAND_SAMPLE_TYPE, .id = sideband_id,
				  .time = time, .emit = synth__to_queue, .arg = &sq };
	char name[PERFMAP_NAME_LEN];
	int err = 0;
	size_t i;

	if (!pm || !nr_pend)
		return 0;
	pthread_mutex_lock(&pm->lock);
	for (i = 0; i < nr_pend && !err; i++) {
		struct pm_proc *p = pend[i].slot < pm->nr ? &pm->p[pend[i].slot] : NULL;
		struct pm_entry *e;

		/* freed and reused since it was noted: nothing of it */
		if (!p || !p->used || p->tgid != pend[i].tgid || pend[i].entry >= p->nr)
			continue;
		e = &p->e[pend[i].entry];
		if (e->written == gen + 1 && e->written_at <= time)
			continue;
		e->written = (uint32_t)gen + 1;
		e->written_at = time;
		snprintf(name, sizeof(name), "%s%s", OFFCPU_NAMED_JIT, p->names + e->name);
		err = synth__named(&sy, p->tgid, e->start, e->size, name);
		if (!err)
			pm->st.named++;
	}
	pthread_mutex_unlock(&pm->lock);
	nr_pend = 0;
	return err;
}

int perfmap__flush_late(struct perfmap *pm, struct perf_queue *q, uint64_t sideband_id, size_t gen,
			uint64_t time, int kind)
{
	struct synth_queue sq = { .q = q, .time = time, .kind = kind };
	const struct synth sy = { .sample_type = SIDEBAND_SAMPLE_TYPE, .id = sideband_id,
				  .time = time, .emit = synth__to_queue, .arg = &sq };
	char name[PERFMAP_NAME_LEN];
	int err = 0;
	size_t i;

	if (!pm)
		return 0;
	pthread_mutex_lock(&pm->lock);
	for (i = 0; i < pm->nr_late && !err; i++) {
		struct pending *l = &pm->late[i];
		struct pm_proc *p = l->slot < pm->nr ? &pm->p[l->slot] : NULL;
		struct pm_entry *e;

		if (!p || !p->used || p->tgid != l->tgid || l->entry >= p->nr)
			continue;
		e = &p->e[l->entry];
		e->pad = 0;
		if (e->written == gen + 1)
			continue; /* this file has it */
		e->written = (uint32_t)gen + 1;
		e->written_at = time;
		snprintf(name, sizeof(name), "%s%s", OFFCPU_NAMED_JIT, p->names + e->name);
		err = synth__named(&sy, p->tgid, e->start, e->size, name);
		if (!err) {
			pm->st.named++;
			pm->st.late++;
		}
	}
	pm->nr_late = 0;
	pthread_mutex_unlock(&pm->lock);
	return err;
}

size_t perfmap__settle(struct perfmap *pm, unsigned ms)
{
	uint64_t until = now_ns() + (uint64_t)ms * 1000000ULL;
	struct timespec ts = { 0, 5000000 };
	size_t i, last, late;

	if (!pm)
		return 0;
	for (;;) {
		pthread_mutex_lock(&pm->lock);
		for (i = 0, last = 0; i < pm->nr; i++)
			last += pm->p[i].used && pm->p[i].last;
		late = pm->nr_late;
		pthread_mutex_unlock(&pm->lock);
		if (!last || !pm->running || now_ns() >= until)
			return late;
		nanosleep(&ts, NULL);
	}
}

void perfmap__stats(struct perfmap *pm, struct perfmap_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!pm)
		return;
	pthread_mutex_lock(&pm->lock);
	*st = pm->st;
	pthread_mutex_unlock(&pm->lock);
}
