// SPDX-License-Identifier: GPL-2.0
/*
 * What the waits waited on, and who held it (locks.h): the consumer, the
 * holders, and the --locks table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "locks.h"
#include "waitobj.h"
#include "../util/util.h"

static int on_sample(struct sample_consumer *c, const struct report_sample *s)
{
	struct locks *l = consumer_of(c, struct locks, c);
	struct lk_wait *w;
	bool at_end = s->wait && (s->wait_flags & OFFCPU_WAIT_AT_END);

	if (s->role != SAMPLE_WAIT || !(s->flags & SAMPLE_ROWS) || !(s->flags & SAMPLE_TIME) ||
	    s->state == OFFCPU_STATE_RUNQ + 1)
		return 0;
	if (!l->all && !at_end)
		return 0;
	if (grow_array((void **)&l->w, &l->cap, l->nr + 1, sizeof(*l->w)))
		return -ENOMEM;
	w = &l->w[l->nr++];
	*w = (struct lk_wait){
		.wait = s->wait, .pid = s->pid, .tid = s->tid, .comm = s->comm, .stack = s->stack,
		.state = s->state, .owner = s->wait_owner, .owner_comm = s->wait_owner_comm,
		.owner_hint = s->wait_owner_hint, .waker_tid = s->waker_tid, .waker = s->waker,
		.waker_stack = s->waker_stack, .flags = s->wait_flags, .period = s->period,
		.end = s->time,
	};
	if (at_end && s->wait_end >= s->period) {
		w->end = s->wait_end;
		w->start = s->wait_end - s->period;
		w->exact = true;
	} else if (s->flags & SAMPLE_SUMMED) {
		/* summed: somewhere in its interval */
		w->start = s->interval_start && s->interval_start < s->time ? s->interval_start :
		           s->time > s->period ? s->time - s->period : 0;
	} else {
		w->start = s->time > s->period ? s->time - s->period : 0;
		w->exact = true;
	}
	if (s->wait && s->wait <= l->p->nr_waits &&
	    l->p->waits[s->wait - 1].kind != WAIT_KIND_NONE)
		l->waits_ns += s->period;
	return 0;
}

void locks__init(struct locks *l, struct profile *p, bool all)
{
	memset(l, 0, sizeof(*l));
	l->c.sample = on_sample;
	l->p = p;
	l->all = all;
}

void locks__free(struct locks *l)
{
	free(l->w);
	memset(l, 0, sizeof(*l));
}

static uint64_t overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	uint64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? hi - lo : 0;
}

/*
 * The waits kept, indexed for the table: by thread (then start) and by
 * object, so that each object's rows and each owner's own waits are a range,
 * not a pass over every sample of the file.
 */
struct lk_ix {
	const struct locks *l;
	uint32_t *by_tid, *by_wait;
	uint32_t *sock_l, *sock_r; /* socket objects (1 + index) by local, by remote port */
	size_t nsock;
};

static int cmp_tid(const void *a, const void *b, void *arg)
{
	const struct lk_wait *w = arg, *x = &w[*(const uint32_t *)a], *y = &w[*(const uint32_t *)b];

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

static int cmp_wait(const void *a, const void *b, void *arg)
{
	const struct lk_wait *w = arg, *x = &w[*(const uint32_t *)a], *y = &w[*(const uint32_t *)b];

	if (x->wait != y->wait)
		return x->wait < y->wait ? -1 : 1;
	return (*(const uint32_t *)a > *(const uint32_t *)b) - (*(const uint32_t *)a < *(const uint32_t *)b);
}

static int cmp_lport(const void *a, const void *b, void *arg)
{
	const struct profile_wait *w = arg;

	return (int)w[*(const uint32_t *)a - 1].lport - (int)w[*(const uint32_t *)b - 1].lport;
}

static int cmp_rport(const void *a, const void *b, void *arg)
{
	const struct profile_wait *w = arg;

	return (int)w[*(const uint32_t *)a - 1].rport - (int)w[*(const uint32_t *)b - 1].rport;
}

static int ix_build(struct lk_ix *x, const struct locks *l)
{
	const struct profile *p = l->p;
	size_t i;

	x->sock_l = malloc((p->nr_waits ? p->nr_waits : 1) * sizeof(*x->sock_l));
	x->sock_r = malloc((p->nr_waits ? p->nr_waits : 1) * sizeof(*x->sock_r));
	if (!x->sock_l || !x->sock_r)
		return -ENOMEM;
	for (i = 0; i < p->nr_waits; i++)
		if (p->waits[i].kind == WAIT_KIND_SOCKET)
			x->sock_l[x->nsock] = x->sock_r[x->nsock] = (uint32_t)i + 1, x->nsock++;
	qsort_r(x->sock_l, x->nsock, sizeof(*x->sock_l), cmp_lport, p->waits);
	qsort_r(x->sock_r, x->nsock, sizeof(*x->sock_r), cmp_rport, p->waits);

	x->l = l;
	x->by_tid = malloc((l->nr ? l->nr : 1) * sizeof(*x->by_tid));
	x->by_wait = malloc((l->nr ? l->nr : 1) * sizeof(*x->by_wait));
	if (!x->by_tid || !x->by_wait || l->nr > UINT32_MAX)
		return -ENOMEM;
	for (i = 0; i < l->nr; i++)
		x->by_tid[i] = x->by_wait[i] = (uint32_t)i;
	qsort_r(x->by_tid, l->nr, sizeof(*x->by_tid), cmp_tid, l->w);
	qsort_r(x->by_wait, l->nr, sizeof(*x->by_wait), cmp_wait, l->w);
	return 0;
}

static void ix_free(struct lk_ix *x)
{
	free(x->by_tid);
	free(x->by_wait);
	free(x->sock_l);
	free(x->sock_r);
}

/* The sockets whose @remote (else local) port is @port: [*lo, return) of sock_r or sock_l. */
static size_t sock_range(const struct lk_ix *x, bool remote, uint16_t port, size_t *lo)
{
	const struct profile_wait *w = x->l->p->waits;
	const uint32_t *a = remote ? x->sock_r : x->sock_l;
	size_t l = 0, h = x->nsock, m;

#define PORT(i) (remote ? w[a[i] - 1].rport : w[a[i] - 1].lport)
	while (l < h) {
		m = l + (h - l) / 2;
		if (PORT(m) < port)
			l = m + 1;
		else
			h = m;
	}
	*lo = l;
	for (h = l; h < x->nsock && PORT(h) == port; h++)
		;
#undef PORT
	return h;
}

/* The range [*lo, return) of @idx whose waits have @key in @field (tid or wait). */
static size_t ix_range(const struct lk_ix *x, const uint32_t *idx, bool tid, uint32_t key, size_t *lo)
{
	size_t a = 0, b = x->l->nr, m;

#define KEY(i) (tid ? x->l->w[idx[i]].tid : x->l->w[idx[i]].wait)
	while (a < b) {
		m = a + (b - a) / 2;
		if (KEY(m) < key)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	for (b = a; b < x->l->nr && KEY(b) == key; b++)
		;
#undef KEY
	return b;
}

/* The stack of @tid's own wait that overlaps [start, end] the most; UINT32_MAX: none. */
static uint32_t stack_during(const struct lk_ix *x, uint32_t tid, uint64_t start, uint64_t end)
{
	uint64_t best = 0, o;
	uint32_t stack = UINT32_MAX;
	size_t i, hi = ix_range(x, x->by_tid, true, tid, &i);

	for (; i < hi; i++) {
		const struct lk_wait *e = &x->l->w[x->by_tid[i]];

		if (e->stack == UINT32_MAX)
			continue;
		o = overlap(start, end, e->start, e->end);
		if (!e->exact && o > e->period)
			o = e->period; /* a summed sample: at most its own time in the window */
		if (o > best) {
			best = o;
			stack = e->stack;
		}
	}
	return stack;
}

/*
 * The holder of waits on object @wait by @owner (or, @owner 0, the thread at
 * its other end: a waiter on a peer object, or the one whose wakeups ended
 * the waits): the stack that tells where it was (UINT32_MAX: none), and the
 * thread when @owner is 0 (*@who 0: none seen).
 */
static uint32_t holder(const struct lk_ix *x, uint32_t wait, uint32_t owner, uint64_t start,
		       uint64_t end, uint32_t *who, uint32_t *who_comm)
{
	const struct locks *l = x->l;
	uint64_t best = 0;
	uint32_t stack = UINT32_MAX, tid = owner, comm = 0, wstack = UINT32_MAX, s, o;
	size_t i, hi;

	/* candidates: this object (its waiters' wakers), and the sockets whose
	 * ports meet its own (their waiters) */
	size_t c, clo, chi = 0, pass;
	const struct profile_wait *pw = &l->p->waits[wait - 1];

	for (pass = 0; !owner && pass < 3; pass++) {
		if (pass == 0) {
			clo = 0;
			chi = 1;
		} else if (pw->kind != WAIT_KIND_SOCKET) {
			break;
		} else {
			chi = sock_range(x, pass == 1, pass == 1 ? pw->lport : pw->rport, &clo);
		}
		for (c = clo; c < chi; c++) {
			bool peer = pass > 0;

			o = peer ? (pass == 1 ? x->sock_r[c] : x->sock_l[c]) : wait;
			if (peer && !waitobj__peers(l->p, wait, o))
				continue;
			for (hi = ix_range(x, x->by_wait, false, o, &i); i < hi; i++) {
				const struct lk_wait *e = &l->w[x->by_wait[i]];

				if (e->period <= best ||
				    (!peer && (!e->waker_tid || e->waker_tid == e->tid)))
					continue;
				best = e->period;
				tid = peer ? e->tid : e->waker_tid;
				comm = peer ? e->comm : e->waker;
				wstack = peer ? e->stack : e->waker_stack;
			}
		}
	}
	*who = tid;
	*who_comm = comm;
	if (!tid)
		return UINT32_MAX;
	/* what it did meanwhile: its own wait then */
	s = stack_during(x, tid, start, end);
	if (s != UINT32_MAX)
		return s;
	if (wstack != UINT32_MAX)
		return wstack;
	/* where it let go: its wakeup of a waiter on this object */
	for (hi = ix_range(x, x->by_wait, false, wait, &i), best = 0; i < hi; i++) {
		const struct lk_wait *e = &l->w[x->by_wait[i]];

		if (e->waker_tid == tid && e->waker_stack != UINT32_MAX && e->period > best) {
			best = e->period;
			stack = e->waker_stack;
		}
	}
	return stack;
}

/* "fn <- caller <- its caller" from a stack's own frame outward, into @buf. */
static const char *where_text(const struct profile *p, uint32_t stack, char *buf, size_t cap)
{
	uint32_t own = profile__own_frame(p, stack), nr, i, n = 0;
	const uint32_t *fr;
	size_t len = 0;

	buf[0] = 0;
	if (own == UINT32_MAX)
		return buf;
	fr = profile__stack_frames(p, stack, &nr);
	for (i = nr; i-- > 0 && fr[i] != own;)
		;
	for (i++; i-- > 0 && n < 3 && len + 1 < cap; n++) {
		if (p->frames[fr[i]].label)
			break;
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", n ? " <- " : "",
					profile__frame_name(p, fr[i]));
	}
	return buf;
}

struct lk_obj {
	uint32_t wait;
	uint64_t ns;
	uint32_t samples;
};

static int cmp_obj(const void *a, const void *b)
{
	const struct lk_obj *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	return (x->wait > y->wait) - (x->wait < y->wait);
}

struct lk_waiter {
	uint32_t tid, comm;
	uint64_t ns;
};

static int cmp_waiter(const void *a, const void *b)
{
	const struct lk_waiter *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Its waiters, most time first: "a/1 401.9 ms, b/2 400.2 ms". */
static void print_waiters(const struct lk_ix *x, uint32_t wait, FILE *f)
{
	const struct locks *l = x->l;
	struct lk_waiter t[8];
	size_t n = 0, i, k, more = 0, hi = ix_range(x, x->by_wait, false, wait, &i);

	for (; i < hi; i++) {
		const struct lk_wait *e = &l->w[x->by_wait[i]];

		for (k = 0; k < n && t[k].tid != e->tid; k++)
			;
		if (k == n) {
			if (n == ARRAY_SIZE(t)) {
				more++;
				continue;
			}
			t[n++] = (struct lk_waiter){ e->tid, e->comm, 0 };
		}
		t[k].ns += e->period;
	}
	qsort(t, n, sizeof(*t), cmp_waiter);
	fprintf(f, "      waiters:");
	for (i = 0; i < n; i++) {
		fprintf(f, "%s ", i ? "," : "");
		fput_escaped(f, strtab__get(&l->p->str, t[i].comm), 0);
		fprintf(f, "/%u %.1f ms", t[i].tid, (double)t[i].ns / 1e6);
	}
	if (more)
		fprintf(f, " and %zu more", more);
	fputc('\n', f);
}

/* Who held it: each owner seen, with the time waited on it and where it was. */
static void print_holders(const struct lk_ix *x, uint32_t wait, FILE *f)
{
	const struct locks *l = x->l;
	const struct profile_wait *pw = &l->p->waits[wait - 1];
	bool peer = pw->kind == WAIT_KIND_PIPE || pw->kind == WAIT_KIND_SOCKET ||
		    pw->kind == WAIT_KIND_CONDVAR || pw->kind >= WAIT_KIND_FILE;
	uint32_t owners[4], shown = 0, hint = 0, k, who, comm, st;
	uint64_t lo = UINT64_MAX, hi = 0;
	char where[512];
	size_t j, i, end = ix_range(x, x->by_wait, false, wait, &j), first = j;

	for (; j < end; j++) {
		const struct lk_wait *e = &l->w[x->by_wait[j]];

		lo = e->start < lo ? e->start : lo;
		hi = e->end > hi ? e->end : hi;
		if (!e->owner) {
			hint = hint ?: e->owner_hint;
			continue;
		}
		for (k = 0; k < shown && owners[k] != e->owner; k++)
			;
		if (k < shown)
			continue;
		if (shown == ARRAY_SIZE(owners))
			break;
		owners[shown++] = e->owner;
		st = UINT32_MAX;
		/* over the waits it held it for */
		for (i = first; i < end && st == UINT32_MAX; i++)
			if (l->w[x->by_wait[i]].owner == e->owner)
				st = holder(x, wait, e->owner, l->w[x->by_wait[i]].start,
					    l->w[x->by_wait[i]].end, &who, &comm);
		fprintf(f, "      held by: ");
		fput_escaped(f, strtab__get(&l->p->str, e->owner_comm), 0);
		fprintf(f, "/%u", e->owner);
		if (st != UINT32_MAX) {
			fprintf(f, " in ");
			fput_escaped(f, where_text(l->p, st, where, sizeof(where)), 0);
		}
		fputc('\n', f);
	}
	if (shown)
		return;
	if (hint && !peer)
		fprintf(f, "      held by: unknown (its memory names thread %u, no thread of the "
			   "process in the recording)\n", hint);
	if (!peer || !hi)
		return;
	st = holder(x, wait, 0, lo, hi, &who, &comm);
	if (!who) {
		fprintf(f, "      %s: not seen (--wakers records who woke the waits)\n",
			pw->kind == WAIT_KIND_CONDVAR ? "signalled by" : "peer");
		return;
	}
	fprintf(f, "      %s: ", pw->kind == WAIT_KIND_CONDVAR ? "signalled by" : "peer");
	fput_escaped(f, strtab__get(&l->p->str, comm), 0);
	fprintf(f, "/%u", who);
	if (st != UINT32_MAX) {
		fprintf(f, " in ");
		fput_escaped(f, where_text(l->p, st, where, sizeof(where)), 0);
	}
	fputc('\n', f);
}

int locks__write(const struct locks *l, FILE *f)
{
	const struct profile *p = l->p;
	struct lk_obj *o = calloc(p->nr_waits ? p->nr_waits : 1, sizeof(*o));
	struct lk_ix x = { 0 };
	uint32_t i, n = 0;
	size_t j;

	if (!o || ix_build(&x, l)) {
		free(o);
		ix_free(&x);
		return -ENOMEM;
	}
	for (i = 0; i < p->nr_waits; i++)
		o[i].wait = i + 1;
	for (j = 0; j < l->nr; j++)
		if (l->w[j].wait) {
			o[l->w[j].wait - 1].ns += l->w[j].period;
			o[l->w[j].wait - 1].samples++;
		}
	qsort(o, p->nr_waits, sizeof(*o), cmp_obj);
	for (i = 0; i < p->nr_waits; i++)
		n += o[i].samples && p->waits[o[i].wait - 1].kind != WAIT_KIND_NONE;
	fprintf(f, "# wait objects, most waited on first: %u, %.3f ms of waits\n", n,
		(double)l->waits_ns / 1e6);
	if (p->wait_samples_switch == 0)
		fprintf(f, "# (only the waits under way at the recording's start and end have "
			   "their objects: record with --wait-objects for all)\n");
	fprintf(f, "# %12s %8s  %-10s %s\n", "ms", "samples", "kind", "object");
	for (i = 0; i < p->nr_waits; i++) {
		const struct profile_wait *w = &p->waits[o[i].wait - 1];

		if (!o[i].samples || w->kind == WAIT_KIND_NONE)
			continue;
		fprintf(f, "  %12.3f %8u  %-10s ", (double)o[i].ns / 1e6, o[i].samples,
			waitobj__kind_name(w->kind));
		fput_escaped(f, strtab__get(&p->str, w->name), 0);
		if (w->addr)
			fprintf(f, " at 0x%llx", (unsigned long long)w->addr);
		if (w->addr && w->pid)
			fprintf(f, " in process %u", w->pid);
		fputc('\n', f);
		print_waiters(&x, o[i].wait, f);
		print_holders(&x, o[i].wait, f);
	}
	free(o);
	ix_free(&x);
	return 0;
}
