// SPDX-License-Identifier: GPL-2.0
/*
 * record --push's life (push.h): its private directory, the recorder's
 * side (files handed over through a pipe), the encoder thread (each file
 * read, deleted, encoded, queued), the end and the summary. The queue and
 * the sender are send.c's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "push_int.h"
#include "interval.h"
#include "otlp.h"
#include "pyroscope.h"
#include "../util/util.h"

const char *push__output_base(const struct push *p)
{
	return p->base;
}

/* An interval of CLOCK_MONOTONIC times as HH:MM:SS-HH:MM:SS, for messages. */
static void mono_window(uint64_t start, uint64_t end, char *out, size_t cap)
{
	struct timespec w, m;
	uint64_t off;

	clock_gettime(CLOCK_REALTIME, &w);
	clock_gettime(CLOCK_MONOTONIC, &m);
	off = ((uint64_t)w.tv_sec * 1000000000ULL + (uint64_t)w.tv_nsec) -
	      ((uint64_t)m.tv_sec * 1000000000ULL + (uint64_t)m.tv_nsec);
	push_window(start + off, end + off, out, cap);
}

void push__interval(struct push *p, const char *path, uint64_t start, uint64_t end)
{
	const char *slash = strrchr(path, '/');
	struct push_msg m = { .start = start, .end = end };
	char win[40];
	ssize_t w = -1;

	atomic_fetch_add(&p->st.intervals, 1);
	snprintf(m.name, sizeof(m.name), "%s", slash ? slash + 1 : path);
	if (atomic_load(&p->pending) < PUSH_MAX_FILES) {
		atomic_fetch_add(&p->pending, 1);
		w = write(p->pipe[1], &m, sizeof(m)); /* O_NONBLOCK; atomic: below PIPE_BUF */
		if (w != sizeof(m))
			atomic_fetch_sub(&p->pending, 1);
	}
	if (w != sizeof(m)) {
		unlink(path);
		atomic_fetch_add(&p->st.intervals_dropped, 1);
		mono_window(start, end, win, sizeof(win));
		pr_warn("push: dropped the interval %s unread: the %d before it are still being "
			"read (a loaded machine, or too short a --push-interval for what it records)",
			win, PUSH_MAX_FILES);
	}
}

struct emit_arg {
	struct push *p;
	const struct interval *iv;
	uint64_t interval;
};

static int emit(struct emit_arg *a, uint8_t *body, size_t len, char *query, uint32_t groups)
{
	struct payload *pl = calloc(1, sizeof(*pl));

	if (!pl) {
		free(body);
		free(query);
		return -ENOMEM;
	}
	pl->start = a->iv->start;
	pl->end = a->iv->end;
	pl->profiles = groups;
	pl->query = query;
	pl->body = body;
	pl->len = len;
	push_enqueue(a->p, pl, a->interval);
	return 0;
}

static int emit_pyroscope(void *arg, char *query, struct pb *body, uint32_t groups)
{
	return emit(arg, body->d, body->len, query, groups);
}

/* The OTLP request of @n groups, split in halves while too large. */
static int otlp_requests(struct emit_arg *a, const uint32_t *g, size_t n)
{
	struct pb raw = { 0 }, gz = { 0 };
	int err = otlp__encode(a->iv, g, n, &a->p->meta, &raw);

	err = err ?: pb_gzip(raw.d, raw.len, &gz);
	free(raw.d);
	if (!err && gz.len > a->p->max_request && n > 1) {
		free(gz.d);
		return otlp_requests(a, g, n / 2) ?: otlp_requests(a, g + n / 2, n - n / 2);
	}
	if (err) {
		free(gz.d);
		return err;
	}
	return emit(a, gz.d, gz.len, NULL, (uint32_t)n);
}

static void encode_interval(struct push *p, const struct push_msg *m, uint64_t seq)
{
	char path[PATH_MAX], win[40];
	struct interval iv;
	struct emit_arg a = { p, &iv, seq };
	int err;

	snprintf(path, sizeof(path), "%s/%s", p->dir, m->name);
	err = interval__read(&iv, path, p->o->by, p->o->format == PUSH_PYROSCOPE, m->start, m->end,
			     &p->cancel);
	unlink(path); /* read or not, it goes */
	if (!err && !iv.nr_groups) {
		pthread_mutex_lock(&p->lock);
		p->st.intervals_empty++;
		pthread_mutex_unlock(&p->lock);
	} else if (!err && p->o->format == PUSH_OTLP) {
		uint32_t *g = malloc(iv.nr_groups * sizeof(*g)), i;

		for (i = 0; g && i < iv.nr_groups; i++)
			g[i] = i;
		err = g ? otlp_requests(&a, g, iv.nr_groups) : -ENOMEM;
		free(g);
	} else if (!err) {
		err = pyroscope__requests(&iv, &p->meta, emit_pyroscope, &a);
	}
	if (iv.obs_cut && iv.nr_obs == 0 && iv.samples > IVL_MAX_OBS)
		pr_info("push: an interval with %llu samples: sent without their times",
			(unsigned long long)iv.samples);
	interval__free(&iv);
	if (err) {
		atomic_fetch_add(&p->st.intervals_dropped, 1);
		mono_window(m->start, m->end, win, sizeof(win));
		pr_warn("push: dropped the interval %s: %s", win,
			err == -ECANCELED ? "not read within 10 s of the end" :
			err == -ENOMEM ? "out of memory" : "its file could not be read");
	}
}

/*
 * A push thread yields to the machine's work without starving: SCHED_BATCH,
 * its share of the CPU that of any other thread, but it does not preempt the
 * threads it shares a CPU with when it wakes (a nice 10 thread had 1% of a
 * CPU on a loaded machine, and the last intervals were not read in time).
 */
void push_thread_yields(void)
{
	struct sched_param sp = { 0 };

	sched_setscheduler((pid_t)syscall(SYS_gettid), SCHED_BATCH, &sp);
}

static void *encoder(void *arg)
{
	struct push *p = arg;
	struct push_msg m;
	uint64_t seq = 0;

	push_thread_yields();
	for (;;) {
		ssize_t n = read(p->pipe[0], &m, sizeof(m));

		if (n < 0 && errno == EINTR)
			continue;
		if (n != sizeof(m))
			break; /* the recorder's end closed: no more */
		atomic_fetch_sub(&p->pending, 1);
		encode_interval(p, &m, ++seq);
	}
	pthread_mutex_lock(&p->lock);
	p->encoder_done = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* The private directory of the intervals' files: mkdtemp() in $TMPDIR or /tmp, 0700. */
static int make_dir(struct push *p)
{
	const char *tmp = getenv("TMPDIR");
	char *t = NULL;

	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	if (asprintf(&t, "%s/offcpu-push.XXXXXX", tmp) < 0)
		return -ENOMEM;
	if (!mkdtemp(t)) {
		int err = -errno;

		pr_err("cannot make a directory for the intervals in %s: %s", tmp, strerror(errno));
		free(t);
		return err;
	}
	p->dir = t;
	if (asprintf(&p->base, "%s/interval", t) < 0) {
		p->base = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int start_threads(struct push *p)
{
	int err;

	if (pipe2(p->pipe, O_CLOEXEC))
		return -errno;
	fcntl(p->pipe[1], F_SETFL, O_NONBLOCK);
	err = pthread_create(&p->enc, NULL, encoder, p);
	if (err)
		return -err;
	p->enc_running = true;
	err = pthread_create(&p->snd, NULL, push_sender, p);
	if (err)
		return -err;
	p->snd_running = true;
	return 0;
}

struct push *push__start(const struct push_opts *o, bool quiet)
{
	struct push *p = calloc(1, sizeof(*p));
	char msg[640];
	size_t ours = 0, others = 0;

	if (!p) {
		pr_err("out of memory");
		return NULL;
	}
	p->o = o;
	p->quiet = quiet;
	p->meta.o = o;
	p->pipe[0] = p->pipe[1] = -1;
	p->max_request = PUSH_MAX_REQUEST;
	/* test builds: split an interval's request at a few KiB */
	{
		const char *v = test_hook("TEST_PUSH_MAX_REQUEST");
		unsigned long long n = v ? strtoull(v, NULL, 10) : 0;

		if (n)
			p->max_request = n;
	}
	pthread_mutex_init(&p->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&p->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (gethostname(p->meta.host, sizeof(p->meta.host) - 1))
		snprintf(p->meta.host, sizeof(p->meta.host), "unknown");
	/* the profiles are named from this machine's files only: no debuginfod */
	unsetenv("DEBUGINFOD_URLS");
	p->endpoint = push_endpoint(o->url, o->format);
	if (o->format == PUSH_OTLP) {
		p->content_type = "application/x-protobuf";
		p->content_encoding = "gzip";
		/* the wire format of profiles.proto's Alpha: development version 1 (what a
		 * receiver assumes without it; receivers of a later one refuse it at once) */
		p->header = "OTLP-Profiles-Development-Version: 1";
	} else {
		p->content_type = "application/octet-stream";
	}
	if (!p->endpoint || http__global_init(msg, sizeof(msg)) ||
	    !(p->http = http__new(p->endpoint, o->token_file, o->timeout_ns, msg, sizeof(msg))) ||
	    (o->spool_dir &&
	     !(p->spool = spool__open(o->spool_dir, o->spool_bytes, o->format, msg, sizeof(msg))))) {
		pr_err("%s", p->endpoint ? msg : "out of memory");
		goto fail;
	}
	if (p->spool)
		spool__found(p->spool, &ours, &others);
	if (ours)
		pr_warn("push: %zu requests an earlier run left in %s will be sent", ours,
			o->spool_dir);
	if (others)
		pr_warn("push: %zu requests of another --push-format in %s are left there", others,
			o->spool_dir);
	if (make_dir(p) || start_threads(p))
		goto fail;
	if (!quiet)
		fprintf_escaped(stderr, "offcpu: pushing a profile of each %s every %.0f s to %s "
				"(%s)\n", o->by == PUSH_BY_PROCESS ? "process" : "cgroup",
				o->interval_ns / 1e9, p->endpoint,
				o->format == PUSH_OTLP ? "OTLP" : "Pyroscope");
	return p;
fail:
	push__free(p);
	return NULL;
}

/* Wait for @t until @deadline (CLOCK_MONOTONIC ns); false when it did not end. */
static bool join_until(pthread_t t, uint64_t deadline)
{
	struct timespec ts;
	uint64_t now = now_ns(), d = deadline > now ? deadline - now : 0, rt;

	clock_gettime(CLOCK_REALTIME, &ts);
	rt = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec + d;
	ts.tv_sec = (time_t)(rt / 1000000000ULL);
	ts.tv_nsec = (long)(rt % 1000000000ULL);
	return pthread_timedjoin_np(t, NULL, &ts) == 0;
}

static void summary(struct push *p)
{
	struct push_stats *st = &p->st;
	char size[32];
	size_t n = 0;
	uint64_t b = 0;

	fmt_size(st->bytes_sent, size, sizeof(size));
	fprintf_escaped(stderr, "offcpu: push: %llu intervals to %s: %llu requests sent "
			"(%llu profiles, %s), %llu of them from the spool; %llu intervals without "
			"off-CPU time\n",
			(unsigned long long)atomic_load(&st->intervals), p->endpoint,
			(unsigned long long)st->sent, (unsigned long long)st->profiles_sent, size,
			(unsigned long long)st->sent_spooled,
			(unsigned long long)st->intervals_empty);
	if (p->spool) {
		spool__usage(p->spool, &n, &b);
		fmt_size(b, size, sizeof(size));
		fprintf_escaped(stderr, "offcpu: push: %llu requests went to the spool; %zu wait "
				"there now (%s in %s)\n", (unsigned long long)st->spooled, n, size,
				p->o->spool_dir);
	}
	if (st->failures)
		fprintf_escaped(stderr, "offcpu: push: %llu requests not taken at the first try "
				"(tried again)\n", (unsigned long long)st->failures);
	if (st->rejected_profiles)
		fprintf_escaped(stderr, "offcpu: push: WARNING: the backend took requests but "
				"rejected %llu profiles in them, each said above\n",
				(unsigned long long)st->rejected_profiles);
	if (st->dropped || atomic_load(&st->intervals_dropped))
		fprintf_escaped(stderr, "offcpu: push: WARNING: %llu intervals not read and %llu "
				"requests dropped (%llu of them refused by the backend), each said "
				"above\n",
				(unsigned long long)atomic_load(&st->intervals_dropped),
				(unsigned long long)st->dropped, (unsigned long long)st->rejected);
	else if (!st->rejected_profiles)
		fprintf_escaped(stderr, "offcpu: push: nothing dropped\n");
}

void push__stop(struct push *p)
{
	uint64_t deadline = now_ns() + PUSH_STOP_NS;

	if (p->stopped)
		return;
	p->stopped = true;
	pthread_mutex_lock(&p->lock);
	p->final = true;
	p->deadline = deadline;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (p->http)
		http__deadline(p->http, deadline);
	if (p->pipe[1] >= 0) {
		close(p->pipe[1]); /* no more intervals: the encoder ends after the last */
		p->pipe[1] = -1;
	}
	if (p->enc_running) {
		if (!join_until(p->enc, deadline)) {
			p->cancel = 1; /* its session ends at its next sample */
			if (!join_until(p->enc, deadline + 1000000000ULL)) {
				pr_warn("push: the interval being read at the end was left behind");
				p->left_behind = true;
			}
		}
		p->enc_running = false;
	}
	if (p->snd_running) {
		if (!join_until(p->snd, deadline + 1000000000ULL)) {
			pr_warn("push: the request being sent at the end was left behind");
			p->left_behind = true;
		}
		p->snd_running = false;
	}
	/* what was queued after the sender ended, or while it was stuck */
	pthread_mutex_lock(&p->lock);
	push_flush_queue(p);
	pthread_mutex_unlock(&p->lock);
	if (!p->quiet)
		summary(p);
}

/* Remove what is left in the private directory (only offcpu's files are there), then it. */
static void remove_dir(struct push *p)
{
	int fd = open(p->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	/* our own 0700 directory: no one else can have put anything there */
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	rmdir(p->dir);
}

void push__free(struct push *p)
{
	if (!p)
		return;
	if (!p->stopped && (p->enc_running || p->snd_running)) {
		p->quiet = true;
		push__stop(p);
	}
	if (p->pipe[0] >= 0 && !p->left_behind)
		close(p->pipe[0]);
	if (p->pipe[1] >= 0)
		close(p->pipe[1]);
	if (p->dir && !p->left_behind)
		remove_dir(p);
	if (p->left_behind)
		return; /* a thread may still use what it holds: the process ends anyway */
	http__free(p->http);
	spool__free(p->spool);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->dir);
	free(p->base);
	free(p->endpoint);
	free(p);
}
