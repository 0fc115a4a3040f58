// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <bpf/libbpf.h>
#include "userstacks.h"
#include "../offcpu.h"
#include "../unwind/oracle.h"
#include "../util/hashmap.h"
#include "../util/procmaps.h"
#include "../util/util.h"
#include "../util/worker.h"

/* unwinds quiet this long: what the oracle holds is given back */
#define IDLE_NS (2000 * 1000000ULL)
/* bytes of a sleeping thread's stack read from sp: deeper than the BPF copy */
#define START_COPY (32 << 10)
/* frames kept in all: a recording of many short processes stops keeping more */
#define MAX_FRAMES (1u << 20)

struct ustack {
	uint32_t kind, tgid, tid, id;
	uint64_t began;
	uint32_t state, n;
	uint64_t *ips;
};

struct ukey {
	uint32_t kind, tid, id, pad;
};

struct userstacks {
	pthread_mutex_t lock; /* what was kept, the stats, the requests; never held while reading */
	pthread_cond_t served_cond;
	pthread_t thread;
	bool running;
	bool abandoned; /* the reader was left behind: it keeps everything */
	volatile int stop;
	int efd; /* eventfd: a request to read the buffer now */
	int epfd; /* the ring buffer's and efd */
	uint64_t asked, serving, served; /* requests: made, taken by a pass, answered */
	uint64_t busy_since; /* when the reader's pass began, 0 between passes */
	struct ring_buffer *rb; /* read by the reader thread alone */
	struct unwind_oracle *oracle;
	struct ustack *v;
	size_t nr, cap;
	size_t frames;
	struct hashmap index; /* struct ukey -> index into v */
	uint32_t *starts; /* indices of the threads blocked at the start, in order */
	size_t nr_starts, cap_starts;
	struct userstacks_stats st;
	struct { uint64_t start, end; bool anon; } *maps; /* of process maps_tgid (mapping_end()) */
	size_t nr_maps, cap_maps;
	uint32_t maps_tgid;
	/* the Python frames of a thread blocked at the start (python.c) */
	int (*py_fn)(void *arg, uint32_t tgid, uint64_t fsbase, uint64_t *out, int max);
	void *py_arg;
	uint8_t buf[START_COPY];
};

static int on_snap(void *ctx, void *data, size_t size);

void userstacks__set_python(struct userstacks *us,
			    int (*fn)(void *arg, uint32_t tgid, uint64_t fsbase, uint64_t *out, int max),
			    void *arg)
{
	us->py_fn = fn;
	us->py_arg = arg;
}

struct userstacks *userstacks__new(int fd)
{
	struct userstacks *us = calloc(1, sizeof(*us));

	if (!us)
		return NULL;
	pthread_mutex_init(&us->lock, NULL);
	pthread_cond_init(&us->served_cond, NULL);
	us->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	us->epfd = epoll_create1(EPOLL_CLOEXEC);
	us->oracle = unwind_oracle__new();
	us->rb = us->oracle && us->efd >= 0 && us->epfd >= 0 ?
		 ring_buffer__new(fd, on_snap, us, NULL) : NULL;
	if (us->rb) {
		struct epoll_event ev = { .events = EPOLLIN };

		if (epoll_ctl(us->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(us->rb), &ev) ||
		    epoll_ctl(us->epfd, EPOLL_CTL_ADD, us->efd, &ev)) {
			ring_buffer__free(us->rb);
			us->rb = NULL;
		}
	}
	if (!us->rb) {
		int e = errno ? errno : ENOMEM;

		userstacks__free(us);
		errno = e;
		return NULL;
	}
	return us;
}

/* Keep @n frames as the stack of (@kind, @tid, @id). Under the lock. */
static struct ustack *keep(struct userstacks *us, const struct offcpu_snap *sn, const uint64_t *ips,
			   int n)
{
	struct ukey k = { sn->kind, sn->tid, sn->id, 0 };
	struct ustack *u;
	uint64_t *v;
	int created;

	if (us->frames + (size_t)n > MAX_FRAMES) {
		us->st.kept_full++;
		return NULL;
	}
	v = hashmap__upsert(&us->index, &k, sizeof(k), &created);
	if (!v)
		return NULL;
	if (created) {
		if (grow_array((void **)&us->v, &us->cap, us->nr + 1, sizeof(*us->v)))
			return NULL;
		*v = us->nr++;
		memset(&us->v[*v], 0, sizeof(us->v[*v]));
	}
	u = &us->v[*v];
	free(u->ips);
	u->ips = NULL;
	u->n = 0;
	if (n > 0) {
		u->ips = malloc((size_t)n * sizeof(*ips));
		if (!u->ips)
			return NULL;
		memcpy(u->ips, ips, (size_t)n * sizeof(*ips));
		u->n = (uint32_t)n;
		us->frames += (size_t)n;
	}
	u->kind = sn->kind;
	u->tgid = sn->tgid;
	u->tid = sn->tid;
	u->id = sn->id;
	u->began = sn->began;
	u->state = sn->state;
	return u;
}

/*
 * A stack libdw did not unwind to its outermost frame (the copy ended, a pc
 * in no module) ends with a mark, as the BPF walk's do: never taken for
 * complete. @ips has room for one more.
 */
static int end_mark(uint64_t *ips, int n, bool complete)
{
	if (n > 0 && !complete) {
		ips[n] = OFFCPU_UNW_MARK_OF(OFFCPU_UNW_READ_FAULT, n & 0x7f);
		n++;
	}
	return n;
}

/*
 * The end of the mapping of process @tgid that holds @addr, or 0; *@anon
 * whether it maps no file. The mappings of the last process asked are kept:
 * the threads blocked at the start come process by process, a thousand of
 * them from one at times.
 */
static uint64_t mapping_end(struct userstacks *us, uint32_t tgid, uint64_t addr, bool *anon)
{
	char path[64], line[4096 + 128];
	size_t i;
	FILE *f;

	if (tgid != us->maps_tgid) {
		us->nr_maps = 0;
		us->maps_tgid = tgid;
		snprintf(path, sizeof(path), "/proc/%u/maps", tgid);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f)) {
			struct maps_line ml;

			if (maps_line__parse(line, &ml) || grow_array((void **)&us->maps, &us->cap_maps,
								      us->nr_maps + 1, sizeof(*us->maps)))
				continue;
			us->maps[us->nr_maps].start = ml.start;
			us->maps[us->nr_maps].anon = !ml.ino && (!ml.name[0] || ml.name[0] == '[');
			us->maps[us->nr_maps++].end = ml.end;
		}
		if (f)
			fclose(f);
	}
	for (i = 0; i < us->nr_maps; i++)
		if (addr >= us->maps[i].start && addr < us->maps[i].end) {
			*anon = us->maps[i].anon;
			return us->maps[i].end;
		}
	return 0;
}

/* How often thread @tid has switched (voluntarily or not), or UINT64_MAX. */
static uint64_t switches_of(uint32_t tgid, uint32_t tid)
{
	unsigned long long v = 0, nv = 0;
	char path[96], line[256];
	int got = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/status", tgid, tid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		got += sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1;
		got += sscanf(line, "nonvoluntary_ctxt_switches: %llu", &nv) == 1;
	}
	if (f)
		fclose(f);
	return got == 2 ? (uint64_t)(v + nv) : UINT64_MAX;
}

/*
 * A thread blocked at the start: its stack read now, and kept only if it has
 * not switched since it was seen blocked (else the copy is of another moment).
 * Read only where no file is mapped: a page of a file is read from its file
 * system, and a user's (FUSE) may never answer, and not even SIGKILL ends that
 * wait. (What a thread of theirs maps there between this look and the read is
 * not seen: a race the attacker must win on every try, left in doc/limits.md.)
 */
static void on_start(struct userstacks *us, const struct offcpu_snap *sn)
{
	uint64_t ips[OFFCPU_MAX_STACK_DEPTH + OFFCPU_PY_FRAMES], sp = sn->regs[7], end, t0 = now_ns(),
		 first = 0;
	bool complete = false, anon = false;
	struct iovec local = { us->buf, 0 }, remote = { (void *)(uintptr_t)sp, 0 };
	char comm[16] = "";
	struct ustack *u;
	ssize_t got = -1;
	int n = 0, ran = 0, in_file = 0;

	if (sn->began) {
		char path[96];
		FILE *f;

		pthread_mutex_lock(&us->lock);
		first = !us->st.first_began || sn->began < us->st.first_began;
		pthread_mutex_unlock(&us->lock);
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", sn->tgid, sn->tid);
		f = first ? fopen(path, "re") : NULL;
		if (f && fgets(comm, sizeof(comm), f) && strlen(comm) && comm[strlen(comm) - 1] == '\n')
			comm[strlen(comm) - 1] = 0;
		if (f)
			fclose(f);
	}
	end = mapping_end(us, sn->tgid, sp, &anon);
	in_file = end > sp && !anon;
	if (end > sp && anon) {
		local.iov_len = remote.iov_len = end - sp < sizeof(us->buf) ? end - sp : sizeof(us->buf);
		got = process_vm_readv((pid_t)sn->tgid, &local, 1, &remote, 1, 0);
	}
	if (got > 0 && switches_of(sn->tgid, sn->tid) != sn->switches) {
		ran = 1;
		got = -1;
	}
	if (got > 0)
		n = unwind_oracle__unwind_regs(us->oracle, (int)sn->tgid, (int)sn->tid, (const uint64_t *)sn->regs,
					       sn->regs[16], us->buf, (size_t)got, ips,
					       OFFCPU_MAX_STACK_DEPTH - 1, &complete);
	n = end_mark(ips, n, complete);
	/* its Python frames after them, of the same moment: dropped if it ran meanwhile */
	if (n > 0 && us->py_fn) {
		int np = us->py_fn(us->py_arg, sn->tgid, sn->fsbase, ips + n, OFFCPU_PY_FRAMES);

		if (np > 0 && switches_of(sn->tgid, sn->tid) == sn->switches)
			n += np;
	}
	pthread_mutex_lock(&us->lock);
	us->st.start++;
	us->st.start_began += sn->began != 0;
	us->st.start_ran += ran;
	us->st.start_in_file += in_file;
	if (sn->began && (!us->st.first_began || sn->began < us->st.first_began)) {
		us->st.first_began = sn->began;
		us->st.first_tid = sn->tid;
		memcpy(us->st.first_comm, comm, sizeof(comm));
	}
	if (n > 0)
		us->st.start_unwound++;
	us->st.short_walks += n > 0 && !complete;
	/* kept without frames too: when it began is still known */
	u = keep(us, sn, ips, n > 0 ? n : 0);
	us->st.start_ns += now_ns() - t0;
	if (u && !grow_array((void **)&us->starts, &us->cap_starts, us->nr_starts + 1,
			     sizeof(*us->starts)))
		us->starts[us->nr_starts++] = (uint32_t)(u - us->v);
	pthread_mutex_unlock(&us->lock);
}

/* A walk that met code with no table yet: unwound from its copy. */
static void on_defer(struct userstacks *us, const struct offcpu_snap_defer *d)
{
	uint64_t ips[OFFCPU_MAX_STACK_DEPTH], t0 = now_ns();
	size_t len = d->h.copy_len < sizeof(d->stack) ? d->h.copy_len : sizeof(d->stack);
	bool complete = false;
	int n;

	/* a process not loaded yet may have exec'd since libdw last saw it: its
	 * mappings read anew, or a pc where the old program had a module would
	 * be unwound by the wrong tables (a pc in no module known makes libdw
	 * read them again itself: a library loaded since) */
	if (d->h.state == OFFCPU_UNW_NO_PROC)
		unwind_oracle__forget(us->oracle, (int)d->h.tgid);
	n = unwind_oracle__unwind_regs(us->oracle, (int)d->h.tgid, (int)d->h.tid, (const uint64_t *)d->h.regs,
				       d->h.regs[16], d->stack, len, ips, OFFCPU_MAX_STACK_DEPTH - 1,
				       &complete);
	pthread_mutex_lock(&us->lock);
	us->st.deferred++;
	us->st.deferred_ns += now_ns() - t0;
	/* a lone pc is libdw's answer when it knows nothing of the process */
	if (n <= 1) {
		us->st.deferred_failed++;
		pthread_mutex_unlock(&us->lock);
		pr_debug("tid %u: a walk that stopped (reason %u) not finished in user space: %s",
			 d->h.tid, d->h.state, n < 0 ? strerror(-n) : "libdw found no caller");
		return;
	}
	n = end_mark(ips, n, complete);
	if (keep(us, &d->h, ips, n)) {
		us->st.deferred_unwound++;
		us->st.finished[d->h.state & 15]++;
		us->st.short_walks += !complete;
	}
	pthread_mutex_unlock(&us->lock);
	pr_debug("tid %u: a walk that stopped (reason %u) finished in user space: %d frames, %s",
		 d->h.tid, d->h.state, n, complete ? "to the outermost one" : "not to the outermost");
}

/* Called by ring_buffer__consume(), on the reader thread, without the lock. */
static int on_snap(void *ctx, void *data, size_t size)
{
	struct userstacks *us = ctx;
	const struct offcpu_snap *sn = data;

	if (size < sizeof(*sn) || us->stop)
		return 0;
	if (sn->kind == OFFCPU_SNAP_START)
		on_start(us, sn);
	else if (sn->kind == OFFCPU_SNAP_DEFER && size >= sizeof(struct offcpu_snap_defer))
		on_defer(us, data);
	return 0;
}

/* The reader: every pass reads what the buffer holds, then answers the requests it took. */
static void *run(void *arg)
{
	struct userstacks *us = arg;
	uint64_t ticket, last = 0;

	while (!us->stop) {
		struct epoll_event ev;
		int n;

		/* the ring and the requests wake it: the timeout only looks for
		 * the end of a burst of unwinds */
		epoll_wait(us->epfd, &ev, 1, last ? 200 : 1000);
		eventfd_read(us->efd, &(eventfd_t){ 0 });
		pthread_mutex_lock(&us->lock);
		ticket = us->serving = us->asked;
		us->busy_since = now_ns();
		pthread_mutex_unlock(&us->lock);
		us->maps_tgid = 0; /* mappings read anew, once a pass */
		n = ring_buffer__consume(us->rb);
		pthread_mutex_lock(&us->lock);
		us->served = ticket;
		us->busy_since = 0;
		pthread_cond_broadcast(&us->served_cond);
		pthread_mutex_unlock(&us->lock);
		/* quiet for IDLE_NS after unwinds: the processes and object images
		 * they read (up to hundreds of MiB in a build) go back */
		if (n > 0)
			last = now_ns();
		else if (last && now_ns() - last > IDLE_NS) {
			last = 0;
			unwind_oracle__release(us->oracle);
			malloc_trim(0);
		}
	}
	return NULL;
}

/*
 * Ask the reader for a pass and wait for it, @ms at most, and not at all
 * while a pass of the reader has lasted longer than that already (it is
 * stuck, or slow on something another user controls). Under the lock.
 */
static void ask_and_wait(struct userstacks *us, unsigned ms)
{
	struct timespec until;
	uint64_t ticket;

	if (!us->running || (us->busy_since && now_ns() - us->busy_since > ms * 1000000ULL)) {
		us->st.busy++;
		return;
	}
	ticket = ++us->asked;
	eventfd_write(us->efd, 1);
	until = worker__deadline(ms);
	while (us->served < ticket)
		if (pthread_cond_timedwait(&us->served_cond, &us->lock, &until)) {
			us->st.busy++;
			break;
		}
}

int userstacks__drain(struct userstacks *us)
{
	pthread_mutex_lock(&us->lock);
	ask_and_wait(us, USERSTACKS_DRAIN_MS);
	pthread_mutex_unlock(&us->lock);
	return 0;
}

int userstacks__start(struct userstacks *us)
{
	int err = worker__start(&us->thread, run, us);

	if (!err)
		us->running = true;
	return err;
}

size_t userstacks__start_stack(struct userstacks *us, uint32_t tid, const uint64_t **ips,
			       uint64_t *began, uint32_t *state)
{
	struct ukey k = { OFFCPU_SNAP_START, tid, 0, 0 };
	uint64_t *v;
	size_t n = 0;

	pthread_mutex_lock(&us->lock);
	v = hashmap__find(&us->index, &k, sizeof(k));
	if (v) {
		*ips = us->v[*v].ips;
		n = us->v[*v].n;
		if (began)
			*began = us->v[*v].began;
		if (state)
			*state = us->v[*v].state;
	}
	pthread_mutex_unlock(&us->lock);
	return n;
}

int userstacks__start_thread(struct userstacks *us, size_t i, uint32_t *tgid, uint32_t *tid)
{
	int ok = 0;

	pthread_mutex_lock(&us->lock);
	if (i < us->nr_starts) {
		*tgid = us->v[us->starts[i]].tgid;
		*tid = us->v[us->starts[i]].tid;
		ok = 1;
	}
	pthread_mutex_unlock(&us->lock);
	return ok;
}

size_t userstacks__deferred(struct userstacks *us, uint32_t tid, uint32_t id,
			    const uint64_t **ips)
{
	struct ukey k = { OFFCPU_SNAP_DEFER, tid, id, 0 };
	uint64_t *v;
	size_t n = 0;

	pthread_mutex_lock(&us->lock);
	/* the walk may still wait in the buffer: the reader is asked for it */
	v = hashmap__find(&us->index, &k, sizeof(k));
	if (!v) {
		ask_and_wait(us, USERSTACKS_DEFER_MS);
		v = hashmap__find(&us->index, &k, sizeof(k));
	}
	if (v) {
		*ips = us->v[*v].ips;
		n = us->v[*v].n;
	}
	pthread_mutex_unlock(&us->lock);
	return n;
}

void userstacks__stats(struct userstacks *us, struct userstacks_stats *st)
{
	pthread_mutex_lock(&us->lock);
	*st = us->st;
	pthread_mutex_unlock(&us->lock);
}

void userstacks__free(struct userstacks *us)
{
	size_t i;

	if (!us)
		return;
	if (us->running) {
		us->stop = 1;
		eventfd_write(us->efd, 1);
		if (!worker__join_within(us->thread, USERSTACKS_STOP_MS,
					 "the reader of stacks finished in user space"))
			return; /* it keeps what it uses, until the process exits */
	}
	ring_buffer__free(us->rb);
	unwind_oracle__free(us->oracle);
	for (i = 0; i < us->nr; i++)
		free(us->v[i].ips);
	free(us->v);
	free(us->starts);
	free(us->maps);
	hashmap__free(&us->index);
	if (us->efd >= 0)
		close(us->efd);
	if (us->epfd >= 0)
		close(us->epfd);
	pthread_cond_destroy(&us->served_cond);
	pthread_mutex_destroy(&us->lock);
	free(us);
}
