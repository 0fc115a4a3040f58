// SPDX-License-Identifier: GPL-2.0
/*
 * A report session (session.h): the records in perf's order, the side-band
 * to threads.c, each sample parsed once, filtered, resolved (resolve.c) and
 * handed to the consumers; an offcpu-wait and an offcpu-waker sample join
 * the offcpu-time sample they follow, which waits for them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "session.h"
#include "befores.h"
#include "resolve.h"
#include "threads.h"
#include "waitobj.h"
#include "../offcpu.h"
#include "../perfdata/queue.h"
#include "../perfdata/wakers.h"
#include "../util/util.h"

/*
 * perf record --off-cpu's samples carry this time, not theirs: it writes
 * them at the end of the recording, and the time sorts them last.
 */
#define PERF_OFFCPU_TIME (~0ULL << 32)

struct session {
	const struct session_opts *o;
	struct profile *p;
	struct perf_reader *r;
	struct symbolizer *sym;
	struct threads th;
	struct resolver res;
	struct sample_consumer **c;
	size_t nr_c;
	struct perf_queue queue; /* records waiting for their round to end */
	uint64_t round_max, prev_round_max;
	size_t flush_at; /* the queue entry being handed out */
	/* the last offcpu-time sample, until the next record tells whether a waker follows */
	struct report_sample pending;
	bool has_pending;
	uint64_t span_start, span_end; /* profile.start_time, end_time */
	uint64_t drain_prev, drain_cur; /* the summed samples' last two times (drains) */
	int consumer_err; /* a consumer's error, which ended the session */
};

static int deliver(struct session *s, const struct report_sample *rs)
{
	size_t i;
	int ret;

	for (i = 0; i < s->nr_c; i++)
		if (s->c[i]->sample && (ret = s->c[i]->sample(s->c[i], rs)))
			return s->consumer_err = ret;
	return 0;
}

static int flush_pending(struct session *s)
{
	if (!s->has_pending)
		return 0;
	s->has_pending = false;
	return deliver(s, &s->pending);
}

static int on_task(struct session *s, const struct perf_event_header *h)
{
	struct perf_record_task t;
	struct report_task k;
	size_t i;
	int ret = flush_pending(s);

	if (ret || !perf_record__copy(h, &t, sizeof(t)))
		return ret;
	k = (struct report_task){ h->type == PERF_RECORD_FORK ? TASK_FORK : TASK_EXIT, t.pid,
				  t.tid, t.ppid, t.ptid, t.time };
	for (i = 0; i < s->nr_c; i++)
		if (s->c[i]->task && (ret = s->c[i]->task(s->c[i], &k)))
			return s->consumer_err = ret;
	return 0;
}

/*
 * An offcpu-waker sample: who ended the wait of the offcpu-time sample just
 * before it (same thread, time and period). It is not a sample of its own:
 * it completes that one, which goes out with it.
 */
static int on_waker(struct session *s, const struct perf_event_header *h,
		    const struct perf_reader_event *e, const struct perf_sample *smp)
{
	struct report_sample *w = &s->pending;
	struct offcpu_waker wk;
	int ret;

	if (!s->has_pending || smp->time != w->time || smp->period != w->period || !smp->raw ||
	    waker__parse(smp->raw, smp->raw_size, &wk) || wk.wakee_tid != w->tid) {
		s->p->orphan_wakers++;
	} else if (w->flags & SAMPLE_ROWS) { /* else the filters left its wait out */
		ret = resolver__waker(&s->res, &e->attr, h->misc, smp, &wk, &w->waker, &w->chain,
				      &w->waker_stack);
		if (ret)
			return ret;
		if (wk.kind == OFFCPU_WAKER_TASK) {
			w->waker_pid = smp->pid;
			w->waker_tid = smp->tid;
		}
	}
	return flush_pending(s); /* one waker per wait */
}

/*
 * An offcpu-wait sample: what the wait of the offcpu-time sample just before
 * it waited on (same thread, time and period). It completes that one, which
 * still waits for its waker sample, if any.
 */
static int on_wait(struct session *s, const struct perf_sample *smp)
{
	struct report_sample *w = &s->pending;
	struct offcpu_wait_obj o;

	s->p->wait_samples++;
	if (!s->has_pending || w->wait || smp->time != w->time || smp->period != w->period ||
	    smp->tid != w->tid || !smp->raw || wait__parse(smp->raw, smp->raw_size, &o) ||
	    o.r.tid != w->tid) {
		s->p->orphan_waits++;
		return 0;
	}
	if (!(o.r.flags & (OFFCPU_WAIT_AT_START | OFFCPU_WAIT_AT_END)))
		s->p->wait_samples_switch++;
	if (!(w->flags & SAMPLE_ROWS))
		return 0; /* the filters left its wait out */
	return waitobj__resolve(&s->res, w->pid, w->tid, &o, w);
}

/*
 * Whether the thread of @smp passes --pid, --tid and --comm: 1 yes, 0 no,
 * -ENOMEM; its command in *@comm once --pid and --tid let it through.
 */
static int wanted_thread(struct session *s, const struct perf_sample *smp, uint32_t *comm)
{
	const struct session_opts *o = s->o;
	size_t i;

	if (o->nr_pids && !int_list_has(o->pids, o->nr_pids, smp->pid))
		return 0;
	if (o->nr_tids && !int_list_has(o->tids, o->nr_tids, smp->tid))
		return 0;
	*comm = threads__comm(&s->th, smp->pid, smp->tid);
	if (*comm == UINT32_MAX)
		return -ENOMEM;
	if (o->nr_comms) {
		const char *c = strtab__get(&s->p->str, *comm);

		for (i = 0; i < o->nr_comms && strcmp(o->comms[i], c); i++)
			;
		if (i == o->nr_comms)
			return 0;
	}
	return 1;
}

/* A user stack that is only the mark of one taken before offcpu ran (not read by the recorder). */
static bool before_mark(const struct perf_sample *smp)
{
	uint64_t ip;

	if (smp->nr_ips < 2 || smp->ips[smp->nr_ips - 2] != (uint64_t)PERF_CONTEXT_USER)
		return false;
	ip = smp->ips[smp->nr_ips - 1];
	return OFFCPU_UNW_IS_MARK(ip) && OFFCPU_UNW_MARK_REASON(ip) == OFFCPU_UNW_BEFORE_START;
}

/*
 * The recording's span, from every sample whatever the filters: it began
 * at offcpu-before's time (offcpu record writes them at its start), and no
 * later than any block began (a block under way at the start is counted
 * from the start) or any sample was taken; it ended at its last sample
 * (offcpu's last drain of summed blocks). The first and last samples alone
 * miss the first drain interval: off-CPU time is written when it ends.
 */
static void note_span(struct session *s, const struct report_sample *rs)
{
	uint64_t start = rs->time;

	if (!(rs->flags & SAMPLE_TIME) || !rs->time || rs->time >= PERF_OFFCPU_TIME)
		return;
	if (rs->role == SAMPLE_WAIT && rs->period < rs->time)
		start = rs->time - rs->period;
	if (!s->span_start || start < s->span_start)
		s->span_start = start;
	if (rs->time > s->span_end)
		s->span_end = rs->time;
}

static int on_sample(struct session *s, const struct perf_event_header *h, size_t ev,
		     uint64_t offset)
{
	const struct session_opts *o = s->o;
	struct report_sample rs = { .event = (uint32_t)ev, .role = SAMPLE_OTHER,
				    .comm = UINT32_MAX, .stack = UINT32_MAX, .exe = UINT32_MAX,
				    .waker_stack = UINT32_MAX };
	const struct perf_reader_event *e;
	struct perf_sample smp;
	bool rows, listed;
	int ret;

	if (perf_reader__parse_sample_of(s->r, h, ev, offset, &smp))
		return -EINVAL;
	e = perf_reader__event(s->r, ev);
	if (!strcmp(e->name, OFFCPU_WAKER_EVENT_NAME))
		return on_waker(s, h, e, &smp);
	if (!strcmp(e->name, OFFCPU_WAIT_EVENT_NAME))
		return on_wait(s, &smp);
	ret = flush_pending(s);
	if (ret)
		return ret;
	if (ev >= s->p->nr_events && profile__events(s->p, (uint32_t)ev + 1))
		return -ENOMEM;
	if (!strcmp(e->name, OFFCPU_EVENT_NAME))
		rs.role = SAMPLE_WAIT;
	else if (!strcmp(e->name, OFFCPU_BEFORE_EVENT_NAME))
		rs.role = SAMPLE_BEFORE;
	rs.flags = (e->attr.sample_type & PERF_SAMPLE_TIME) ? SAMPLE_TIME : 0;
	rs.time = smp.time;
	rs.period = smp.period;
	rs.pid = smp.pid;
	rs.tid = smp.tid;
	rs.cpu = (e->attr.sample_type & PERF_SAMPLE_CPU) ? smp.cpu : UINT32_MAX;
	if (e->attr.sample_type & PERF_SAMPLE_CGROUP)
		rs.cgroup = smp.cgroup;
	if (rs.role != SAMPLE_OTHER && (e->attr.sample_type & PERF_SAMPLE_WEIGHT) &&
	    smp.weight <= OFFCPU_STATES_ALL)
		rs.state = (uint32_t)smp.weight;
	if (rs.role == SAMPLE_WAIT && before_mark(&smp))
		rs.flags |= SAMPLE_MARK;
	if (rs.role == SAMPLE_WAIT && (e->attr.sample_type & PERF_SAMPLE_CPU) &&
	    (smp.cpu_res & OFFCPU_CPU_RES_SUMMED) && (rs.flags & SAMPLE_TIME)) {
		rs.flags |= SAMPLE_SUMMED;
		/* an interval began where the drain before ended */
		if (rs.time != s->drain_cur) {
			s->drain_prev = s->drain_cur;
			s->drain_cur = rs.time;
		}
		rs.interval_start = s->drain_prev < rs.time ? s->drain_prev : 0;
	}
	if (rs.role == SAMPLE_WAIT && (e->attr.sample_type & PERF_SAMPLE_CPU) &&
	    (smp.cpu_res & OFFCPU_CPU_RES_OPEN_END) && !(rs.flags & SAMPLE_SUMMED))
		rs.flags |= SAMPLE_OPEN_END;
	note_span(s, &rs);
	/* offcpu-before's time is before the recording's: in the rows only when --event chose it */
	rows = (o->event ? !strcmp(o->event, e->name) : rs.role != SAMPLE_BEFORE) &&
	       (!o->time_filter || ((rs.flags & SAMPLE_TIME) && smp.time >= o->time_start &&
				    smp.time < o->time_end));
	/* the wait is measured over the whole recording, whatever --time says */
	listed = rs.role == SAMPLE_BEFORE && (rs.flags & SAMPLE_TIME) &&
		 (!o->event || !strcmp(o->event, e->name) || !strcmp(o->event, OFFCPU_EVENT_NAME));
	if (rows || listed) {
		ret = wanted_thread(s, &smp, &rs.comm);
		if (ret < 0)
			return ret;
		if (ret)
			rs.flags |= (rows ? SAMPLE_ROWS : 0) | (listed ? SAMPLE_LISTED : 0);
	}
	if (rs.flags & (SAMPLE_ROWS | SAMPLE_LISTED)) {
		/* a wait before the recording: its chain as the recorder took it */
		if (rs.role == SAMPLE_BEFORE)
			ret = resolver__chain(&s->res, h->misc, &smp,
					      (e->attr.sample_type & PERF_SAMPLE_CALLCHAIN) != 0,
					      &rs.stack);
		else
			ret = resolver__stack(&s->res, &e->attr, h->misc, &smp, &rs.stack);
		if (ret)
			return ret;
		rs.exe = threads__exe(&s->th, smp.pid);
	}
	if (rs.role != SAMPLE_WAIT)
		return deliver(s, &rs);
	/* its waker sample, if any, comes next */
	s->pending = rs;
	s->has_pending = true;
	return 0;
}

/* A CGROUP record: its id's path, to the consumers that ask for it. */
static int on_cgroup(struct session *s, const struct perf_event_header *h)
{
	struct perf_record_cgroup cg;
	const char *path = perf_record__name(h, sizeof(cg));
	size_t i;
	int ret;

	if (!path || !perf_record__copy(h, &cg, sizeof(cg)))
		return 0;
	for (i = 0; i < s->nr_c; i++)
		if (s->c[i]->cgroup && (ret = s->c[i]->cgroup(s->c[i], cg.id, path)))
			return s->consumer_err = ret;
	return 0;
}

static int on_record(struct session *s, const struct perf_event_header *h, size_t ev,
		     uint64_t offset)
{
	struct perf_record_lost l;
	struct perf_record_lost_samples ls;
	int ret;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		return on_sample(s, h, ev, offset);
	case PERF_RECORD_FORK:
		/* the wait before it goes out before anything changes */
		ret = flush_pending(s);
		ret = ret ?: threads__record(&s->th, h);
		return ret ?: on_task(s, h);
	case PERF_RECORD_EXIT:
		return on_task(s, h);
	case PERF_RECORD_LOST:
		if (perf_record__copy(h, &l, sizeof(l)))
			s->p->lost_records += l.lost;
		return 0;
	case PERF_RECORD_LOST_SAMPLES:
		if (perf_record__copy(h, &ls, sizeof(ls)))
			s->p->lost_samples += ls.lost;
		return 0;
	case PERF_RECORD_CGROUP:
		ret = on_cgroup(s, h);
		return ret ?: threads__record(&s->th, h);
	}
	return threads__record(&s->th, h);
}

static int flush_one(const struct perf_event_header *h, uint64_t time, int kind, void *arg)
{
	struct session *s = arg;
	/* perf_queue__flush_until() hands the sorted entries out in order, from the first */
	const struct perf_queue_ref *ref = &s->queue.refs[s->flush_at++];

	if ((const char *)h != s->queue.buf + ref->off)
		return -EFAULT;
	return on_record(s, h, (size_t)kind, ref->aux[0]);
}

static int flush_until(struct session *s, uint64_t limit)
{
	s->flush_at = 0;
	return perf_queue__flush_until(&s->queue, limit, flush_one, s);
}

/*
 * perf's ordering: records between two FINISHED_ROUNDs are sorted by time,
 * and at the end of a round everything up to the previous round's newest
 * time is processed; the rest at the end of the file. Only a record's time
 * (and a sample's event) is read here: a sample is parsed once, when its
 * turn comes; its offset goes with it, for the errors.
 */
static int session__add(struct session *s, const struct perf_event_header *h)
{
	uint64_t t;
	size_t ev;
	int err;

	if (h->type == PERF_RECORD_COMPRESSED) {
		pr_err("%s: a COMPRESSED record (perf record -z) at offset %llu: compressed files "
		       "are not supported; record without -z", s->o->input,
		       (unsigned long long)perf_reader__offset(s->r));
		return -ENOTSUP;
	}
	if (h->type == PERF_RECORD_FINISHED_ROUND) {
		err = flush_until(s, s->prev_round_max);
		s->prev_round_max = s->round_max;
		return err;
	}
	if (perf_reader__record_time(s->r, h, &ev, &t))
		return -EINVAL;
	if (t > s->round_max)
		s->round_max = t;
	err = perf_queue__push(&s->queue, h, t, (int)ev);
	if (!err)
		perf_queue__set_aux(&s->queue, perf_reader__offset(s->r), 0);
	return err;
}

static void progress(struct session *s, bool done)
{
	uint64_t pos, total;

	perf_reader__progress(s->r, &pos, &total);
	if (done) {
		fprintf(stderr, "\r%60s\r", "");
		return;
	}
	fprintf(stderr, "\rreading ");
	fput_escaped(stderr, s->o->input, 0);
	if (total)
		fprintf(stderr, ": %3d%%", (int)(100.0 * (double)pos / (double)total));
	else /* a stream: its length is not known */
		fprintf(stderr, ": %llu MiB", (unsigned long long)(pos >> 20));
}

/* CLOCK_DATA (perf record -k): u32 version, u32 clockid, u64 wall-clock ns, u64 clockid ns. */
static void read_clock(struct session *s)
{
	size_t size;
	const uint8_t *f = perf_reader__feature(s->r, FEAT_CLOCK_DATA, &size);
	uint32_t version, clockid;

	if (!f || size < 24)
		return;
	memcpy(&version, f, 4);
	memcpy(&clockid, f + 4, 4);
	/* samples are on CLOCK_MONOTONIC (offcpu's, and perf's with -k mono): another clock's
	 * reference says nothing of them */
	if (version < 1 || clockid != CLOCK_MONOTONIC)
		return;
	memcpy(&s->p->clock_wall_ns, f + 8, 8);
	memcpy(&s->p->clock_mono_ns, f + 16, 8);
	s->p->has_clock = s->p->clock_wall_ns != 0;
}

/* What the file says of its events, whether or not a sample passed the filters. */
static int describe_events(struct session *s)
{
	struct profile *p = s->p;
	size_t i, n = perf_reader__nr_events(s->r);

	if (profile__events(p, (uint32_t)n))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct perf_reader_event *e = perf_reader__event(s->r, i);

		p->events[i].name = strtab__add(&p->str, e->name);
		if (p->events[i].name == UINT32_MAX)
			return -ENOMEM;
		/* offcpu-before's periods are blocked time too: ms when --event chooses it */
		p->events[i].offcpu = !strcmp(e->name, OFFCPU_EVENT_NAME) ||
				      !strcmp(e->name, OFFCPU_BEFORE_EVENT_NAME);
		if (!strcmp(e->name, OFFCPU_BEFORE_EVENT_NAME))
			p->has_before = true;
		if (!strcmp(e->name, OFFCPU_EVENT_NAME) &&
		    (e->attr.sample_type & PERF_SAMPLE_WEIGHT))
			p->has_states = true;
		if (!strcmp(e->name, OFFCPU_WAKER_EVENT_NAME))
			p->has_wakers = true;
		if (!strcmp(e->name, OFFCPU_WAIT_EVENT_NAME))
			p->has_waits = true;
	}
	return 0;
}

/* The span of the samples, within --time. */
static void set_span(struct session *s)
{
	uint64_t start = s->span_start, end = s->span_end;

	if (s->o->time_filter) {
		if (start < s->o->time_start)
			start = s->o->time_start;
		if (end > s->o->time_end)
			end = s->o->time_end;
	}
	if (end > start) {
		s->p->start_time = start;
		s->p->end_time = end;
	}
}

static void session__free(struct session *s)
{
	resolver__free(&s->res);
	threads__free(&s->th);
	perf_queue__free(&s->queue);
	symbolizer__free(s->sym);
	perf_reader__close(s->r);
}

int session__run(const struct session_opts *o, struct profile *p, struct sample_consumer **c,
		 size_t nr)
{
	struct session s = { .o = o, .p = p, .c = c, .nr_c = nr };
	const struct perf_event_header *h;
	char err[1024];
	const void *feat;
	size_t size, i, n = 0;
	int ret;

	ret = profile__init(p, 0);
	if (ret)
		return ret;
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
	threads__init(&s.th, p, s.sym);
	ret = resolver__init(&s.res, p, s.sym, &s.th);
	if (ret)
		goto out;
	feat = perf_reader__feature(s.r, FEAT_BUILD_ID, &size);
	if (feat)
		threads__build_ids(&s.th, feat, size);
	while ((ret = perf_reader__next(s.r, &h)) > 0) {
		ret = session__add(&s, h);
		if (ret)
			break;
		if (o->progress && !(++n & 0xffff))
			progress(&s, false);
	}
	if (!ret)
		ret = flush_until(&s, UINT64_MAX);
	if (!ret)
		ret = flush_pending(&s);
	/* JIT code named after its samples (a map written at a process's exit) */
	if (!ret)
		ret = jitnames__finish(&s.res.jit, &s.th, p);
	if (o->progress)
		progress(&s, true);
	/* a recording that never finished, or a file cut short: read, and said */
	if (!ret && perf_reader__warning(s.r, err, sizeof(err)))
		pr_warn("%s: %s", o->input, err);
	if (ret == -EINVAL) {
		pr_err("%s: %s", o->input, perf_reader__error(s.r));
		goto out;
	}
	if (ret) {
		/* a consumer's failed write (a trace's) is its own to tell, not the input's */
		if (ret != -ENOTSUP && (ret != s.consumer_err || ret == -ENOMEM))
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
	ret = describe_events(&s);
	if (ret)
		goto out;
	/* a pipe's features come as records: all are known by now */
	read_clock(&s);
	set_span(&s);
	if (p->orphan_wakers)
		pr_warn("%s: %llu waker samples without their wait, ignored (a damaged or "
			"reordered file)", o->input, (unsigned long long)p->orphan_wakers);
	if (p->orphan_waits)
		pr_warn("%s: %llu wait object samples without their wait, ignored (a damaged or "
			"reordered file)", o->input, (unsigned long long)p->orphan_waits);
	if (o->stats)
		perf_reader__stats(s.r, o->stats);
out:
	session__free(&s);
	return ret;
}

int session__load(const struct session_opts *o, struct profile *p)
{
	return session__load_with(o, p, NULL, 0);
}

int session__load_with(const struct session_opts *o, struct profile *p,
		       struct sample_consumer **more, size_t nr_more)
{
	struct profile_sink rows;
	struct befores befores;
	struct sample_consumer *fixed[2] = { &rows.c, &befores.c }, *c[8];
	size_t i;
	int ret;

	if (nr_more > ARRAY_SIZE(c) - ARRAY_SIZE(fixed))
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(fixed); i++)
		c[i] = fixed[i];
	for (i = 0; i < nr_more; i++)
		c[ARRAY_SIZE(fixed) + i] = more[i];
	profile_sink__init(&rows, p);
	befores__init(&befores, p);
	ret = session__run(o, p, c, ARRAY_SIZE(fixed) + nr_more);
	if (!ret)
		befores__finish(&befores);
	befores__free(&befores);
	return ret;
}
