// SPDX-License-Identifier: GPL-2.0
/*
 * The hang view (locks.h): every thread still waiting when the recording
 * ended (its block under way then, which the end iterator gave a wait
 * object of its own: OFFCPU_WAIT_AT_END), with its state, since when, where
 * and on what, and whom it waits for: a mutex's owner, a socket's peer;
 * followed from thread to thread as a chain. A chain that comes back to a
 * thread is a deadlock: printed once, as one line that begins "deadlock:",
 * with each thread, its stack and the object it waits on; and the threads
 * whose chain runs into it after it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "locks.h"
#include "waitobj.h"
#include "../util/util.h"

#define MAX_LISTED 30 /* threads listed beyond those in chains that matter */
#define MAX_HOPS 16

struct hthread {
	const struct lk_wait *w;
	uint64_t began; /* when its wait began (before the recording: the offcpu-before's) */
	uint32_t next; /* the thread it waits for (index), UINT32_MAX none */
	uint32_t cycle; /* 1 + the deadlock it is in; 0 none */
	uint32_t into; /* 1 + the deadlock its chain runs into; 0 none */
	uint32_t mark; /* the walk that last visited it */
};

struct hang {
	const struct locks *l;
	const struct profile *p;
	struct hthread *t;
	size_t nr;
	uint32_t cycles;
	int idw; /* width of the comm/tid column */
};

/* The columns "comm/tid" takes (put_thread()). */
static int put_width(const struct hang *h, const struct lk_wait *w)
{
	char id[16];

	return (int)str_escape(NULL, 0, strtab__get(&h->p->str, w->comm)) +
	       snprintf(id, sizeof(id), "/%u", w->tid);
}

static int cmp_began(const void *a, const void *b)
{
	const struct hthread *x = a, *y = b;

	if (x->began != y->began)
		return x->began < y->began ? -1 : 1;
	return (x->w->tid > y->w->tid) - (x->w->tid < y->w->tid);
}

static uint32_t find(const struct hang *h, uint32_t tid)
{
	size_t i;

	for (i = 0; i < h->nr; i++)
		if (h->t[i].w->tid == tid)
			return (uint32_t)i;
	return UINT32_MAX;
}

/* The threads waiting at the end, one each (its last sample with the end's object), oldest first. */
static int collect(struct hang *h)
{
	const struct locks *l = h->l;
	size_t i, k;

	h->t = calloc(l->nr ? l->nr : 1, sizeof(*h->t));
	if (!h->t)
		return -ENOMEM;
	for (i = 0; i < l->nr; i++) {
		const struct lk_wait *w = &l->w[i];
		uint32_t at;

		if (!w->wait || !(w->flags & OFFCPU_WAIT_AT_END))
			continue;
		at = find(h, w->tid);
		if (at == UINT32_MAX)
			at = (uint32_t)h->nr++;
		h->t[at] = (struct hthread){ .w = w, .began = w->start, .next = UINT32_MAX };
		/* a wait under way since before the recording: since when it really began */
		for (k = 0; k < h->p->nr_befores; k++) {
			const struct profile_before *b = &h->p->befores[k];

			if (b->tid == w->tid && b->pid == w->pid && b->start == w->start)
				h->t[at].began = b->before && b->before < b->start ? b->start - b->before :
										  b->start;
		}
	}
	qsort(h->t, h->nr, sizeof(*h->t), cmp_began);
	for (i = 0; i < h->nr; i++)
		h->idw = put_width(h, h->t[i].w) > h->idw ? put_width(h, h->t[i].w) : h->idw;
	return 0;
}

/* Whom each waits for: its object's owner, or the thread at a socket's other end. */
static void link(struct hang *h)
{
	size_t i, k;

	for (i = 0; i < h->nr; i++) {
		const struct lk_wait *w = h->t[i].w;

		if (w->owner) {
			h->t[i].next = find(h, w->owner);
			continue;
		}
		for (k = 0; k < h->nr; k++)
			if (k != i && waitobj__peers(h->p, w->wait, h->t[k].w->wait)) {
				h->t[i].next = (uint32_t)k;
				break;
			}
	}
}

/* Each cycle once (its threads' cycle), then each chain that runs into one (into). */
static void find_cycles(struct hang *h)
{
	uint32_t i, j, hops, mark = 0;

	for (i = 0; i < h->nr; i++) {
		mark++;
		for (j = i, hops = 0; j != UINT32_MAX && hops <= h->nr; j = h->t[j].next, hops++) {
			if (h->t[j].cycle)
				break;
			if (h->t[j].mark == mark) {
				/* back at j: j and the threads after it up to j form a cycle */
				h->cycles++;
				do {
					h->t[j].cycle = h->cycles;
					j = h->t[j].next;
				} while (!h->t[j].cycle);
				break;
			}
			h->t[j].mark = mark;
		}
	}
	for (i = 0; i < h->nr; i++) {
		if (h->t[i].cycle)
			continue;
		for (j = h->t[i].next, hops = 0; j != UINT32_MAX && hops < MAX_HOPS;
		     j = h->t[j].next, hops++)
			if (h->t[j].cycle) {
				h->t[i].into = h->t[j].cycle;
				break;
			}
	}
}

static void put_thread(const struct hang *h, const struct lk_wait *w, FILE *f)
{
	fput_escaped(f, strtab__get(&h->p->str, w->comm), 0);
	fprintf(f, "/%u", w->tid);
}

/* "mutex dl_mutex_b (deadlock), held by dl-bravo/1241" */
static void put_object(const struct hang *h, const struct hthread *t, FILE *f)
{
	const struct lk_wait *w = t->w;
	char buf[600];

	fput_escaped(f, waitobj__text(h->p, w->wait, buf, sizeof(buf)), 0);
	if (w->owner) {
		fprintf(f, ", held by ");
		fput_escaped(f, strtab__get(&h->p->str, w->owner_comm), 0);
		fprintf(f, "/%u", w->owner);
	} else if (w->owner_hint) {
		fprintf(f, ", held by an unknown thread (its memory names %u, no thread of the "
			   "process)", w->owner_hint);
	} else if (t->next != UINT32_MAX) {
		fprintf(f, ", peer ");
		put_thread(h, h->t[t->next].w, f);
	}
}

/* Its stack, innermost first, user frames: "___pthread_mutex_lock <- dl_alpha_locks <- ..." */
static void put_stack(const struct hang *h, uint32_t stack, FILE *f)
{
	const struct profile *p = h->p;
	uint32_t nr, i, n = 0;
	const uint32_t *fr;

	if (stack >= p->nr_stacks) {
		fprintf(f, "[no stack]");
		return;
	}
	fr = profile__stack_frames(p, stack, &nr);
	for (i = nr; i-- > 0 && n < 10;) {
		if (p->frames[fr[i]].kernel)
			continue;
		fprintf(f, "%s", n++ ? " <- " : "");
		fput_escaped(f, profile__frame_name(p, fr[i]), 0);
	}
	if (!n)
		fprintf(f, "[no user frames]");
}

static void put_where(const struct hang *h, uint32_t stack, FILE *f)
{
	uint32_t own = profile__own_frame(h->p, stack);

	fput_escaped(f, own == UINT32_MAX ? "[no stack]" : profile__frame_name(h->p, own), 0);
}

/* The chain from @t's wait on: whom it waits for, and whom they wait for, ... */
static void put_chain(const struct hang *h, const struct hthread *t, FILE *f)
{
	const struct hthread *last = t;
	uint32_t j = t->next, hops = 0;

	put_object(h, t, f);
	if (t->cycle) {
		fprintf(f, " (deadlock %u)", t->cycle);
		return;
	}
	while (j != UINT32_MAX && hops++ < MAX_HOPS) {
		const struct hthread *u = &h->t[j];

		if (u->cycle) {
			fprintf(f, ", in deadlock %u", u->cycle);
			return;
		}
		fprintf(f, ", who waits in ");
		put_where(h, u->w->stack, f);
		fprintf(f, " on ");
		put_object(h, u, f);
		last = u;
		j = u->next;
	}
	if (last->w->owner && last->next == UINT32_MAX)
		fprintf(f, " (not waiting at the end)");
}

static void put_listing(const struct hang *h, const struct hthread *t, FILE *f)
{
	const struct lk_wait *w = t->w;
	uint64_t end = w->end;
	char c[32], len[32];

	fprintf(f, "  ");
	put_thread(h, w, f);
	fprintf(f, "%*s  %-2s waiting in ", h->idw - put_width(h, w), "",
		profile__state_name(w->state));
	put_where(h, w->stack, f);
	if (fmt_clock(h->p, t->began, !same_day(h->p, t->began, end), c, sizeof(c)))
		fprintf(f, " since %s (%s): ", c, fmt_wait(end - t->began, len, sizeof(len)));
	else
		fprintf(f, " for %s: ", fmt_wait(end - t->began, len, sizeof(len)));
	put_chain(h, t, f);
	fputc('\n', f);
}

/* deadlock: A in fn (stack) waits on OBJ, held by B; B in fn (stack) waits on OBJ, held by A */
static void put_deadlock(const struct hang *h, uint32_t cycle, FILE *f)
{
	uint32_t first = UINT32_MAX, j, i;

	for (i = 0; i < h->nr && first == UINT32_MAX; i++)
		if (h->t[i].cycle == cycle)
			first = i;
	fprintf(f, "deadlock:");
	j = first;
	do {
		const struct hthread *t = &h->t[j];

		fprintf(f, "%s ", j == first ? "" : ";");
		put_thread(h, t->w, f);
		fprintf(f, " in ");
		put_where(h, t->w->stack, f);
		fprintf(f, " (stack: ");
		put_stack(h, t->w->stack, f);
		fprintf(f, ") waits on ");
		put_object(h, t, f);
		j = t->next;
	} while (j != first && j != UINT32_MAX);
	fputc('\n', f);
	for (i = 0; i < h->nr; i++) {
		const struct hthread *t = &h->t[i];

		if (t->into != cycle)
			continue;
		fprintf(f, "  waiting for it: ");
		put_thread(h, t->w, f);
		fprintf(f, " in ");
		put_where(h, t->w->stack, f);
		fprintf(f, " (stack: ");
		put_stack(h, t->w->stack, f);
		fprintf(f, ") waits on ");
		put_chain(h, t, f);
		fputc('\n', f);
	}
}

bool hang__any(const struct locks *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (l->w[i].wait && (l->w[i].flags & OFFCPU_WAIT_AT_END))
			return true;
	return false;
}

int hang__write(const struct locks *l, FILE *f)
{
	struct hang h = { .l = l, .p = l->p };
	size_t i, listed = 0;
	char c[32];
	int err = collect(&h);

	if (err || !h.nr)
		goto out;
	link(&h);
	find_cycles(&h);
	if (!f)
		goto out;
	fprintf(f, "# threads still waiting when the recording ended");
	if (fmt_clock(h.p, h.t[0].w->end, true, c, sizeof(c)))
		fprintf(f, " at %s", c);
	fprintf(f, ", longest first: %zu\n", h.nr);
	for (i = 0; i < h.nr; i++) {
		/* those in a deadlock or its chains always; others up to a bound */
		if (!h.t[i].cycle && !h.t[i].into && listed >= MAX_LISTED)
			continue;
		listed++;
		put_listing(&h, &h.t[i], f);
	}
	if (listed < h.nr)
		fprintf(f, "  ... and %zu more (--pid, --tid, --comm to choose)\n", h.nr - listed);
	for (i = 1; i <= h.cycles; i++)
		put_deadlock(&h, (uint32_t)i, f);
	fputc('\n', f);
out:
	free(h.t);
	return err ? err : (int)h.cycles;
}
