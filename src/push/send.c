// SPDX-License-Identifier: GPL-2.0
/*
 * push's requests, from the encoder to the backend (push_int.h): a bounded
 * queue in memory, the spool while the backend does not take them, the
 * sender thread with its backoff, and what is said of every drop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/random.h>
#include "push_int.h"
#include "otlp.h"
#include "../util/util.h"

void push_window(uint64_t start, uint64_t end, char *out, size_t cap)
{
	time_t a = (time_t)(start / 1000000000ULL), b = (time_t)(end / 1000000000ULL);
	struct tm ta, tb;
	char sa[16], sb[16];

	localtime_r(&a, &ta);
	localtime_r(&b, &tb);
	strftime(sa, sizeof(sa), "%H:%M:%S", &ta);
	strftime(sb, sizeof(sb), "%H:%M:%S", &tb);
	snprintf(out, cap, "%s-%s", sa, sb);
}

void push_say_drop(struct push *p, const struct payload *pl, const char *why)
{
	char w[40];

	p->st.dropped++;
	/* one line for an interval and a reason, however many requests it had */
	if (p->said_start == pl->start && p->said_why == why)
		return;
	p->said_start = pl->start;
	p->said_why = why;
	push_window(pl->start, pl->end, w, sizeof(w));
	pr_warn("push: dropped the profiles of %s (%u %s): %s [%llu requests dropped so far]", w,
		pl->profiles, p->o->by == PUSH_BY_PROCESS ? "processes" : "cgroups", why,
		(unsigned long long)p->st.dropped);
}

static void spool_dropped(void *arg, const struct payload *what, const char *why)
{
	push_say_drop(arg, what, why);
}

int push_spool(struct push *p, const struct payload *pl)
{
	int err = spool__put(p->spool, pl, spool_dropped, p);

	if (!err) {
		p->st.spooled++;
		return 0;
	}
	push_say_drop(p, pl, err == -EFBIG ? "larger than --push-spool-size" :
			     "it could not be written to the spool");
	if (err != -EFBIG)
		pr_warn("push: cannot write to %s: %s", p->o->spool_dir, strerror(-err));
	return err;
}

/* The oldest request of the queue, taken out. Locked. */
static struct payload *pop(struct push *p)
{
	struct payload *pl = p->head;

	if (!pl)
		return NULL;
	p->head = pl->next;
	if (!p->head)
		p->tail = NULL;
	p->q_count--;
	p->q_bytes -= pl->len;
	pl->next = NULL;
	return pl;
}

/* Within bounds: the oldest intervals' requests go first, each said. Locked. */
static void bound_queue(struct push *p)
{
	while (p->head && p->head != p->tail &&
	       (p->tail->seq - p->head->seq >= PUSH_QUEUE_INTERVALS || p->q_bytes > PUSH_QUEUE_BYTES)) {
		struct payload *old = pop(p);

		push_say_drop(p, old, p->failing ? "the backend did not take the ones before it "
						   "(no --push-spool)" :
						   "the queue was full");
		payload__free(old);
	}
}

/*
 * In memory, pl->seq is the interval's number (for the queue's bound); the
 * spool gives it its own once written there.
 */
void push_enqueue(struct push *p, struct payload *pl, uint64_t interval)
{
	pthread_mutex_lock(&p->lock);
	p->st.requests++;
	if (p->spool && ((p->failing && !p->final) ||
			 (p->head && interval - p->head->seq >= PUSH_QUEUE_INTERVALS) ||
			 p->q_bytes + pl->len > PUSH_QUEUE_BYTES)) {
		push_spool(p, pl);
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		payload__free(pl);
		return;
	}
	pl->seq = interval;
	pl->next = NULL;
	if (p->tail)
		p->tail->next = pl;
	else
		p->head = pl;
	p->tail = pl;
	p->q_count++;
	p->q_bytes += pl->len;
	bound_queue(p);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void push_flush_queue(struct push *p)
{
	struct payload *pl;

	while ((pl = pop(p))) {
		if (!p->spool || push_spool(p, pl) == 0) {
			if (!p->spool)
				push_say_drop(p, pl, "not sent when the recording ended (no --push-spool)");
		}
		payload__free(pl);
	}
}

/* The wait before the next try: doubling from 1 s to the interval (at most 30 s), ±20%. */
static void back_off(struct push *p, uint64_t retry_after)
{
	uint64_t cap = p->o->interval_ns < 30000000000ULL ? p->o->interval_ns : 30000000000ULL;
	uint32_t r = 0;

	p->backoff_ns = p->backoff_ns ? p->backoff_ns * 2 : 1000000000ULL;
	if (p->backoff_ns > cap)
		p->backoff_ns = cap;
	if (retry_after > p->backoff_ns)
		p->backoff_ns = retry_after < 300000000000ULL ? retry_after : 300000000000ULL;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = 0;
	p->backoff_until = now_ns() + p->backoff_ns * 8 / 10 + (p->backoff_ns * 4 / 10) * (r % 1000) / 1000;
}

static void wait_until(struct push *p, uint64_t until)
{
	struct timespec ts;
	uint64_t now = now_ns(), d = until > now ? until - now : 0;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(d / 1000000000ULL);
	ts.tv_nsec += (long)(d % 1000000000ULL);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&p->cond, &p->lock, &ts);
}

/* What became of a request: counted, said, kept or dropped. Locked. */
static void settle(struct push *p, struct payload *pl, bool from_spool, enum http_result res,
		   const char *why, uint64_t retry_after)
{
	size_t n;
	uint64_t b;

	switch (res) {
	case HTTP_SENT:
		if (p->o->format == PUSH_OTLP) {
			size_t n;
			const uint8_t *a = http__answer(p->http, &n);
			int64_t rej;
			char msg[256], w[40];

			/* taken, but not all of it: said, and counted as dropped */
			if (!otlp__partial_success(a, n, &rej, msg, sizeof(msg))) {
				push_window(pl->start, pl->end, w, sizeof(w));
				pr_warn("push: the backend took the profiles of %s but rejected %lld of "
					"them%s%s", w, (long long)rej, msg[0] ? ": " : "", msg);
				p->st.rejected_profiles += rej > 0 ? (uint64_t)rej : 0;
			}
		}
		p->st.sent++;
		p->st.profiles_sent += pl->profiles;
		p->st.bytes_sent += pl->len;
		if (from_spool) {
			p->st.sent_spooled++;
			spool__done(p->spool, pl->seq, true);
		}
		if (p->failing) {
			n = 0;
			if (p->spool)
				spool__usage(p->spool, &n, &b);
			pr_warn("push: the backend takes requests again%s%zu%s", n ? ": " : "",
				n, n ? " in the spool to send" : "");
		}
		p->failing = false;
		p->backoff_ns = 0;
		payload__free(pl);
		return;
	case HTTP_REJECTED:
		p->st.rejected++;
		if (from_spool)
			spool__done(p->spool, pl->seq, true);
		p->failing = false;
		p->backoff_ns = 0;
		{
			char msg[700];

			snprintf(msg, sizeof(msg), "the backend refused them (%s)", why);
			/* the reason's text differs each time: said for each interval */
			p->said_why = NULL;
			push_say_drop(p, pl, msg);
			p->said_why = NULL;
		}
		payload__free(pl);
		return;
	case HTTP_RETRY:
		p->st.failures++;
		if (!p->failing)
			pr_warn("push: the backend did not take a request (%s): %s", why,
				p->spool ? "the profiles go to --push-spool until it does" :
					   "the profiles wait in memory (no --push-spool)");
		p->failing = true;
		back_off(p, retry_after);
		if (p->final)
			p->gave_up = true;
		if (from_spool) {
			spool__done(p->spool, pl->seq, false);
			payload__free(pl);
			return;
		}
		if (p->final || p->spool) { /* no second try at the end */
			if (p->spool)
				push_spool(p, pl);
			else
				push_say_drop(p, pl, "not sent when the recording ended (no --push-spool)");
			payload__free(pl);
			return;
		}
		/* back at the head, to be tried first */
		pl->next = p->head;
		p->head = pl;
		if (!p->tail)
			p->tail = pl;
		p->q_count++;
		p->q_bytes += pl->len;
		bound_queue(p);
		return;
	}
}

void *push_sender(void *arg)
{
	struct push *p = arg;

	push_thread_yields();
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct payload *pl = NULL;
		bool from_spool = false, can_send;
		uint64_t now = now_ns(), retry_after;
		enum http_result res;
		char why[640];
		struct http_req rq;

		/*
		 * At the end: what is queued, then what the spool holds, one try
		 * each, until the deadline or the first failure (the rest stays in
		 * the spool, or is dropped without one).
		 */
		if (p->final && (now >= p->deadline || p->gave_up))
			break;
		can_send = !p->failing || now >= p->backoff_until || p->final;
		if (can_send && p->head) {
			pl = pop(p);
		} else if (can_send && p->spool && (!p->final || p->encoder_done)) {
			pthread_mutex_unlock(&p->lock);
			pl = spool__take(p->spool, spool_dropped, p);
			pthread_mutex_lock(&p->lock);
			from_spool = pl != NULL;
		}
		if (!pl) {
			if (p->final && p->encoder_done && !p->head)
				break;
			if (p->final)
				wait_until(p, p->deadline); /* the encoder's last interval */
			else if (p->failing)
				wait_until(p, p->backoff_until);
			else
				wait_until(p, now + 1000000000ULL); /* the spool may have filled */
			continue;
		}
		pthread_mutex_unlock(&p->lock);
		rq = (struct http_req){ pl->query, p->content_type, p->content_encoding, p->header,
					pl->body, pl->len };
		res = http__post(p->http, &rq, why, sizeof(why), &retry_after);
		pthread_mutex_lock(&p->lock);
		settle(p, pl, from_spool, res, why, retry_after);
	}
	push_flush_queue(p);
	p->sender_done = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}
