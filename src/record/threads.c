// SPDX-License-Identifier: GPL-2.0
/* --threads: writer threads, each with a share of the CPUs' buffers, into NAME/data.N. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "record_int.h"
#include "sideband.h"
#include "summary.h"
#include "synth.h"
#include "../perfdata/sample.h"
#include "../util/util.h"

struct writer_thread {
	struct record *r;
	int idx, nr_threads;
	pthread_t th;
	struct perf_writer *w;
	struct perf_queue batch;
	struct sink sink; /* into this thread's batch */
	struct intset yes, no; /* processes known to be followed, or not */
	int err;
	bool started, joined;
};

/* Does the collector follow @pid? Asked once per process, the answer kept. */
static bool thread_follows(void *arg, int pid)
{
	struct writer_thread *t = arg;
	bool yes;

	if (intset__has(&t->yes, pid))
		return true;
	if (intset__has(&t->no, pid))
		return false;
	yes = collector__follows(t->r->coll, pid);
	intset__add(yes ? &t->yes : &t->no, pid);
	return yes;
}

int thread_round(struct writer_thread *t)
{
	struct record *r = t->r;
	size_t i;
	long n = 0;

	perf_queue__clear(&t->batch);
	for (i = t->idx; i < perf_rings__nr_fds(r->sb) && n >= 0; i += t->nr_threads)
		n = perf_rings__read_one(r->sb, i, push_sideband, &t->sink);
	for (i = t->idx; r->oncpu && i < perf_rings__nr_fds(r->oncpu) && n >= 0; i += t->nr_threads)
		n = perf_rings__read_one(r->oncpu, i, push_oncpu, &t->sink);
	if (n >= 0 && t->idx == 0)
		n = collector__consume(r->coll, push_stream, &t->sink);
	if (n < 0)
		return (int)n;
	return round__write(r, &(struct round){ .w = t->w, .batch = &t->batch, .shared = true,
						.follows = thread_follows, .arg = t,
						.stream = 1 + t->idx });
}

static void *thread_main(void *arg)
{
	struct writer_thread *t = arg;
	struct record *r = t->r;
	struct pollfd pfds[1024];
	size_t nfd = 0, i;

	for (i = t->idx; i < perf_rings__nr_fds(r->sb) && nfd < 1023; i += t->nr_threads)
		pfds[nfd++] = (struct pollfd){ perf_rings__fd(r->sb, i), POLLIN, 0 };
	for (i = t->idx; r->oncpu && i < perf_rings__nr_fds(r->oncpu) && nfd < 1023;
	     i += t->nr_threads)
		pfds[nfd++] = (struct pollfd){ perf_rings__fd(r->oncpu, i), POLLIN, 0 };
	if (t->idx == 0)
		pfds[nfd++] = (struct pollfd){ collector__events_fd(r->coll), POLLIN, 0 };
	while (!t->err && !__atomic_load_n(&r->threads_stop, __ATOMIC_ACQUIRE)) {
		poll(pfds, nfd, 100);
		__atomic_store_n(&t->err, thread_round(t), __ATOMIC_RELEASE);
	}
	if (!t->err) /* what arrived before the collector was detached */
		t->err = thread_round(t);
	return NULL;
}

int threads_error(struct record *r)
{
	int i, err;

	for (i = 0; r->wt && i < r->o.threads; i++)
		if (r->wt[i].started && (err = __atomic_load_n(&r->wt[i].err, __ATOMIC_ACQUIRE)))
			return err;
	return 0;
}

int start_threads(struct record *r)
{
	int n = r->o.threads > 0 ? r->o.threads : (int)perf_rings__nr_fds(r->sb), i, fd;

	if (n > (int)perf_rings__nr_fds(r->sb))
		n = (int)perf_rings__nr_fds(r->sb);
	r->o.threads = n;
	r->wt = calloc((size_t)n, sizeof(*r->wt));
	if (!r->wt)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct writer_thread *t = &r->wt[i];

		t->r = r;
		t->idx = i;
		t->nr_threads = n;
		t->sink = (struct sink){ r, &t->batch, true };
		fd = output__open_stream(&r->out, i);
		if (fd < 0)
			return fd;
		t->w = perf_writer__new_stream(fd);
		if (!t->w) {
			close(fd);
			return -ENOMEM;
		}
		{
			sigset_t all, old;
			int e;

			/* signals go to the main thread: one taken by a writer would not
			 * interrupt the main thread's waits (the command's hold, poll) */
			sigfillset(&all);
			pthread_sigmask(SIG_BLOCK, &all, &old);
			e = pthread_create(&t->th, NULL, thread_main, t);
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			if (e) {
				perf_writer__free(t->w);
				t->w = NULL;
				close(fd);
				return -EAGAIN;
			}
		}
		t->started = true;
	}
	return 0;
}

/* Stop the writers once the collector is detached; fold their time ranges in. */
int stop_threads(struct record *r)
{
	int i, err = 0;

	if (!r->wt)
		return 0;
	__atomic_store_n(&r->threads_stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < r->o.threads; i++) {
		struct writer_thread *t = &r->wt[i];
		uint64_t first, last;

		if (!t->started)
			continue;
		pthread_join(t->th, NULL);
		t->joined = true;
		err = err ?: t->err;
		err = err ?: perf_writer__finish(t->w);
		perf_writer__time_range(t->w, &first, &last);
		if (last) {
			perf_writer__note_time(r->w, first);
			perf_writer__note_time(r->w, last);
		}
	}
	return err;
}

void free_threads(struct record *r)
{
	int i;

	if (!r->wt)
		return;
	__atomic_store_n(&r->threads_stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < r->o.threads; i++) {
		if (r->wt[i].started && !r->wt[i].joined)
			pthread_join(r->wt[i].th, NULL);
		perf_queue__free(&r->wt[i].batch);
		intset__free(&r->wt[i].yes);
		intset__free(&r->wt[i].no);
		perf_writer__free(r->wt[i].w);
	}
	free(r->wt);
	r->wt = NULL;
}
