// SPDX-License-Identifier: GPL-2.0
/*
 * The waits under way when the recording began, and what the recording saw
 * of each (befores.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "befores.h"
#include "../util/util.h"

/*
 * A thread waiting when the recording began (its offcpu-before sample), and
 * its offcpu-time samples since, whatever the filters: what became of that
 * wait is told from them once the file is read (befores__finish()).
 * A wait under way at the end is a block of its own ending there
 * (SAMPLE_OPEN_END), or in files of earlier versions summed at the last
 * drain.
 */
struct before_track {
	uint32_t pid, tid;
	uint32_t shown; /* index into profile.befores; UINT32_MAX: the filters left it out */
	uint64_t start; /* the recording's start: the sample's time */
	bool gone; /* its thread id was given to a new thread: later samples are not its */
	bool exited; /* its thread exited during the recording */
	bool mark; /* a sample of it ends in the mark of a stack taken before offcpu ran */
	uint64_t mark_sum; /* their periods */
	uint64_t sum, first, last; /* its offcpu-time samples after the start: periods, times */
	uint32_t waits; /* of them, the ones of a wait, not of a run queue */
	uint64_t group_time, group_sum; /* its samples at one time: a block, its run queue part */
	uint64_t ended; /* when a block streamed as it ended began at the start; 0: none did */
	bool ended_open; /* that block was still under way at the end (SAMPLE_OPEN_END) */
};

/*
 * An offcpu-time sample, before any filter: if its thread was waiting when
 * the recording began, what it tells of that wait. offcpu record writes the
 * block under way at the start like any block, counted from the start: as
 * it ends, at its own time, when it lasts the threshold (then its time less
 * its period, and its run queue part's at the same time, is the start);
 * else summed, at the next drain of the summed map (its call chain, or the
 * mark of a stack it could not read, is its own, so nothing else is summed
 * with it there, but an identical chain of a later block may look the
 * same); and if it lasted to the end, summed, at the last drain.
 */
static void track_wait(struct befores *b, const struct report_sample *s)
{
	struct before_track *t;
	uint64_t *v;

	if (s->time > b->offcpu_last)
		b->offcpu_last = s->time;
	if (!b->nr_tracks)
		return;
	v = hashmap__find(&b->track_idx, &s->tid, sizeof(s->tid));
	if (!v)
		return;
	t = &b->tracks[*v];
	if (t->gone || s->pid != t->pid || s->time <= t->start)
		return;
	t->sum += s->period;
	if (!t->first || s->time < t->first)
		t->first = s->time;
	if (s->time > t->last)
		t->last = s->time;
	if (s->state != OFFCPU_STATE_RUNQ + 1)
		t->waits++;
	if (s->time != t->group_time) {
		t->group_time = s->time;
		t->group_sum = 0;
	}
	t->group_sum += s->period;
	if (!t->ended && t->group_sum <= s->time && s->time - t->group_sum == t->start) {
		t->ended = s->time;
		t->ended_open = (s->flags & SAMPLE_OPEN_END) != 0;
	}
	if (s->flags & SAMPLE_MARK) {
		t->mark = true;
		t->mark_sum += s->period;
	}
}

/*
 * An offcpu-before sample: a thread waiting when the recording began. Kept
 * apart from the rows (it is no time of the recording's), as a before-wait
 * when --pid, --tid, --comm and --event let it through, whatever --time
 * says (the wait is measured over the whole recording).
 */
static int on_before(struct befores *b, const struct report_sample *s)
{
	struct profile_before pb = { .pid = s->pid, .tid = s->tid, .comm = s->comm,
				     .state = s->state, .stack = s->stack, .start = s->time,
				     .before = s->period };
	struct before_track *t;
	int created;
	uint64_t *v;

	if (!(s->flags & SAMPLE_TIME))
		return 0; /* not at the start of anything */
	v = hashmap__upsert(&b->track_idx, &s->tid, sizeof(s->tid), &created);
	if (!v)
		return -ENOMEM;
	if (!created)
		return 0; /* one wait per thread: a second sample is a damaged file's */
	if (grow_array((void **)&b->tracks, &b->cap_tracks, b->nr_tracks + 1, sizeof(*b->tracks)))
		return -ENOMEM;
	*v = b->nr_tracks;
	t = &b->tracks[b->nr_tracks++];
	memset(t, 0, sizeof(*t));
	t->pid = s->pid;
	t->tid = s->tid;
	t->start = s->time;
	t->shown = UINT32_MAX;
	if (!(s->flags & SAMPLE_LISTED))
		return 0;
	pb.own = profile__own_frame(b->p, pb.stack);
	pb.end = BEFORE_NOT_SEEN;
	t->shown = profile__add_before(b->p, &pb);
	return t->shown == UINT32_MAX ? -ENOMEM : 0;
}

static int on_sample(struct sample_consumer *c, const struct report_sample *s)
{
	struct befores *b = consumer_of(c, struct befores, c);

	if (s->role == SAMPLE_WAIT && (s->flags & SAMPLE_TIME))
		track_wait(b, s);
	else if (s->role == SAMPLE_BEFORE)
		return on_before(b, s);
	return 0;
}

/* A waiting thread's id given to a new thread: its samples are the new one's. A waiting
 * thread that exits was not waiting at the recording's end. */
static int on_task(struct sample_consumer *c, const struct report_task *k)
{
	struct befores *b = consumer_of(c, struct befores, c);
	struct before_track *t;
	uint64_t *v;

	if (!b->nr_tracks)
		return 0;
	v = hashmap__find(&b->track_idx, &k->tid, sizeof(k->tid));
	if (!v)
		return 0;
	t = &b->tracks[*v];
	if (k->time <= t->start)
		return 0;
	if (k->kind == TASK_FORK)
		t->gone = true;
	else if (k->kind == TASK_EXIT && k->pid == t->pid)
		t->exited = true;
	return 0;
}

void befores__init(struct befores *b, struct profile *p)
{
	memset(b, 0, sizeof(*b));
	b->c.sample = on_sample;
	b->c.task = on_task;
	b->p = p;
}

void befores__free(struct befores *b)
{
	hashmap__free(&b->track_idx);
	free(b->tracks);
	memset(b, 0, sizeof(*b));
}

/*
 * A wait under way at the recording's end was summed at the last drain, its
 * period counted up to the end; the drain comes a few milliseconds later
 * (the programs detached, the tasks walked). The end itself is not in the
 * file: it is the latest start + period of such a wait, trusted when two
 * threads share it (no two waits end at the same nanosecond otherwise) or
 * when it is within this of the drain.
 */
#define BEFORE_END_SLACK_NS 250000000ULL

/* One sample at the last drain, of one wait: what a wait under way all along leaves. */
static bool waited_to_end(const struct befores *b, const struct before_track *t)
{
	return !t->gone && !t->exited && !t->ended && t->waits == 1 && t->first == t->last &&
	       t->last == b->offcpu_last;
}

static int cmp_before(const void *a, const void *b)
{
	const struct profile_before *x = a, *y = b;
	uint64_t tx = profile__before_total(x), ty = profile__before_total(y);

	if (tx != ty)
		return tx < ty ? 1 : -1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/*
 * What became of each wait under way at the start, from its thread's
 * offcpu-time samples (track_wait()): ended when a block streamed at its end
 * began at the start (exact); still waiting at the end when its one sample
 * is the last drain's and it ends where the recording does; ended, with its
 * length, when its sample carries the mark of a stack not read (that wait's
 * alone); else it ended within the first of its thread's samples (a short
 * wait, summed: which sample is its own cannot be told for sure). Then
 * longest wait first.
 */
void befores__finish(struct befores *b)
{
	struct profile *p = b->p;
	uint64_t end = 0;
	uint32_t at_end = 0;
	bool trust;
	size_t i;

	for (i = 0; i < b->nr_tracks; i++) {
		const struct before_track *t = &b->tracks[i];

		if (!waited_to_end(b, t))
			continue;
		if (t->start + t->sum > end) {
			end = t->start + t->sum;
			at_end = 1;
		} else if (t->start + t->sum == end) {
			at_end++;
		}
	}
	trust = end && (at_end >= 2 || b->offcpu_last - end <= BEFORE_END_SLACK_NS);
	for (i = 0; i < b->nr_tracks; i++) {
		const struct before_track *t = &b->tracks[i];
		struct profile_before *pb;

		if (t->shown == UINT32_MAX)
			continue;
		pb = &p->befores[t->shown];
		if (t->ended) {
			/* written whole at the end (offcpu 0.2+): exact either way */
			pb->end = t->ended_open ? BEFORE_TO_END : BEFORE_ENDED;
			pb->during = t->ended - t->start;
		} else if (trust && waited_to_end(b, t) && t->start + t->sum == end) {
			pb->end = BEFORE_TO_END;
			pb->during = t->sum;
		} else if (t->mark) {
			pb->end = BEFORE_ENDED;
			pb->during = t->mark_sum;
		} else if (t->first) {
			pb->end = BEFORE_ENDED_BY;
			pb->during = t->first - t->start;
		} else {
			pb->end = BEFORE_NOT_SEEN;
			pb->during = 0;
		}
	}
	if (p->nr_befores)
		qsort(p->befores, p->nr_befores, sizeof(*p->befores), cmp_before);
}
