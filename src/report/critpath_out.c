// SPDX-License-Identifier: GPL-2.0
/*
 * The critical path's outputs (critpath.h): the text table, the path as
 * rows of the profile (which folded, SVG and pprof draw), and what the
 * recording could not tell, with how to record it. Names are other users':
 * printed escaped (fput_escaped), as the other outputs do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "critpath.h"
#include "../util/hashmap.h"
#include "../util/util.h"

#define MAX_LINES 60 /* lines of the table; --folded has them all */
#define NONE UINT32_MAX

const char *critpath__kind_name(enum cp_kind k, uint32_t state, bool frame, char *buf, size_t cap)
{
	const char *st = profile__state_name(state), *text;

	switch (k) {
	case CP_RUN: text = "running"; break;
	case CP_RUN_UNSAMPLED: text = frame ? "running, not sampled" : "running (no sample)"; break;
	case CP_RUNQ: text = "runqueue"; break;
	case CP_PREEMPTED: text = "preempted"; break;
	case CP_IRQ: text = st; break;
	case CP_OPEN: snprintf(buf, cap, frame ? "[%s, not woken by the end]" : "%s, not woken by the end", st); return buf;
	case CP_NO_WAKER: snprintf(buf, cap, frame ? "[%s, waker not recorded]" : "%s, waker not recorded", st); return buf;
	case CP_SUMMED: text = "unknown: summed"; break;
	case CP_NOT_RECORDED: text = "unknown: not recorded"; break;
	case CP_DEPTH: text = "unknown: not followed"; break;
	default: text = "?"; break;
	}
	snprintf(buf, cap, frame ? "[%s]" : "%s", text);
	return buf;
}

/* A line of the table: the entries of one thread, state and own function, summed. */
struct line {
	uint32_t kind, pid, tid, comm, who, state, own;
	uint64_t ns;
};

static int cmp_line(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	return (x->ns < y->ns) - (x->ns > y->ns);
}

/* The entries by thread, state and the function of its own each waits or runs in. */
static struct line *table_lines(const struct profile *p, const struct cp_entry *e, size_t ne,
				size_t *nr)
{
	struct hashmap idx = { 0 };
	struct line *l = NULL;
	size_t n = 0, cap = 0, i;

	for (i = 0; i < ne; i++) {
		struct line key = { e[i].kind, e[i].pid, e[i].tid, e[i].comm, e[i].who, e[i].state,
				    e[i].stack < p->nr_stacks ? profile__own_frame(p, e[i].stack) :
								NONE, 0 };
		int created;
		uint64_t *v = hashmap__upsert(&idx, &key, offsetof(struct line, ns), &created);

		if (!v || (created && grow_array((void **)&l, &cap, n + 1, sizeof(*l)))) {
			free(l);
			hashmap__free(&idx);
			return NULL;
		}
		if (created) {
			l[n] = key;
			*v = n++;
		}
		l[*v].ns += e[i].ns;
	}
	hashmap__free(&idx);
	if (n)
		qsort(l, n, sizeof(*l), cmp_line);
	*nr = n;
	return l ? l : calloc(1, sizeof(*l));
}

/* "comm/tid", or for an interrupt "[timer] for comm/tid", escaped, padded to @width. */
static void put_who(FILE *f, const struct profile *p, const struct line *e, size_t width)
{
	char *who = str_escape_dup(strtab__get(&p->str, e->who));
	char *comm = str_escape_dup(strtab__get(&p->str, e->comm));
	char buf[160];

	if (e->kind == CP_IRQ)
		snprintf(buf, sizeof(buf), "%s for %s/%u", who ? who : "?", comm ? comm : "?", e->tid);
	else if (e->tid)
		snprintf(buf, sizeof(buf), "%s/%u", comm ? comm : "?", e->tid);
	else
		snprintf(buf, sizeof(buf), "%s", who ? who : "?");
	fprintf(f, "%-*s", (int)width, buf);
	free(who);
	free(comm);
}

int critpath__text(const struct critpath *c, double min_percent, FILE *f)
{
	const struct profile *p = critpath__profile(c);
	size_t ne, nr, nl = 0, i, shown = 0;
	const struct cp_entry *e = critpath__entries(c, &ne);
	const struct cp_root *r = critpath__roots(c, &nr);
	uint64_t waited = 0, charged = 0, waits = 0, rest = 0;
	unsigned rest_n = 0;
	struct line *l;
	char st[64];

	for (i = 0; i < nr; i++) {
		waited += r[i].waited;
		charged += r[i].charged;
		waits += r[i].waits;
	}
	fprintf(f, "# critical path of %zu root thread%s: %.3f ms waited in %llu wait%s, %.3f ms "
		   "charged%s\n", nr, nr == 1 ? "" : "s", waited / 1e6, (unsigned long long)waits,
		waits == 1 ? "" : "s", charged / 1e6,
		charged == waited ? " (every instant once)" : " (NOT CONSERVED: a bug)");
	for (i = 0; i < nr; i++) {
		fputs("# root ", f);
		fput_escaped(f, strtab__get(&p->str, r[i].comm), 0);
		fprintf(f, "/%u/%u: waited %.3f ms in %llu wait%s, charged %.3f ms%s\n", r[i].pid,
			r[i].tid, r[i].waited / 1e6, (unsigned long long)r[i].waits,
			r[i].waits == 1 ? "" : "s", r[i].charged / 1e6,
			r[i].charged == r[i].waited ? "" : " NOT CONSERVED");
	}
	if (!nr) {
		fputs("# no wait of the roots in the window\n", f);
		return ferror(f) ? -EIO : 0;
	}
	l = table_lines(p, e, ne, &nl);
	if (!l)
		return -ENOMEM;
	fprintf(f, "#\n# %11s %8s  %-34s %-26s %s\n", "ms", "%", "thread on the path", "state",
		"function (its own innermost)");
	for (i = 0; i < nl; i++) {
		double pct = waited ? 100.0 * (double)l[i].ns / (double)waited : 0;

		if (pct < min_percent || shown >= MAX_LINES) {
			rest += l[i].ns;
			rest_n++;
			continue;
		}
		fprintf(f, "%13.3f %7.2f%%  ", l[i].ns / 1e6, pct);
		put_who(f, p, &l[i], 34);
		fprintf(f, " %-26s ", critpath__kind_name(l[i].kind, l[i].state, false, st, sizeof(st)));
		fput_escaped(f, l[i].own == NONE ? "-" : profile__frame_name(p, l[i].own), 0);
		fputc('\n', f);
		shown++;
	}
	if (rest_n)
		fprintf(f, "%13.3f %7.2f%%  (%u more lines: --folded has them all)\n", rest / 1e6,
			waited ? 100.0 * (double)rest / (double)waited : 0, rest_n);
	free(l);
	return ferror(f) ? -EIO : 0;
}

int critpath__rows(struct critpath *c)
{
	struct profile *p = critpath__profile(c);
	size_t ne, i;
	const struct cp_entry *e = critpath__entries(c, &ne);
	uint32_t ev = p->nr_events, *fr = NULL, cap = 0;
	char st[64];
	int err = 0;

	if (profile__events(p, ev + 1))
		return -ENOMEM;
	p->events[ev].name = strtab__add(&p->str, "critical-path");
	p->events[ev].offcpu = true;
	if (p->events[ev].name == NONE)
		return -ENOMEM;
	for (i = 0; i < ne && !err; i++) {
		struct report_sample s = { .event = ev, .role = SAMPLE_WAIT, .flags = SAMPLE_ROWS,
					   .period = e[i].ns, .pid = e[i].pid, .tid = e[i].tid,
					   .comm = e[i].root_comm, .exe = NONE, .waker_stack = NONE };
		uint32_t n = 0, nr = 0, k;
		const uint32_t *sf = NULL;

		if (e[i].stack < p->nr_stacks)
			profile__stack_frames(p, e[i].stack, &nr);
		if (nr + 2 > cap) {
			uint32_t *nf = realloc(fr, (nr + 2) * sizeof(*fr));

			if (!nf) {
				err = -ENOMEM;
				break;
			}
			fr = nf;
			cap = nr + 2;
		}
		fr[n++] = profile__label(p, strtab__get(&p->str, e[i].who));
		fr[n++] = profile__label(p, critpath__kind_name(e[i].kind, e[i].state, true, st,
								sizeof(st)));
		/* the stack may move when frames are added: read it again */
		if (e[i].stack < p->nr_stacks)
			sf = profile__stack_frames(p, e[i].stack, &nr);
		for (k = 0; k < nr; k++)
			fr[n++] = sf[k];
		if (fr[0] == NONE || fr[1] == NONE) {
			err = -ENOMEM;
			break;
		}
		s.stack = profile__stack(p, fr, n);
		if (s.stack == NONE) {
			err = -ENOMEM;
			break;
		}
		err = profile__add_sample(p, &s);
	}
	free(fr);
	return err ? err : (int)ev;
}

void critpath__warn(const struct critpath *c)
{
	const struct profile *p = critpath__profile(c);
	const struct cp_has *h = critpath__has(c);
	const uint64_t *k = critpath__by_kind(c);
	size_t nr, i;
	const struct cp_root *r = critpath__roots(c, &nr);
	uint64_t waited = 0;

	for (i = 0; i < nr; i++)
		waited += r[i].waited;
#define SHARE(ns) (ns) / 1e6, waited ? 100.0 * (double)(ns) / (double)waited : 0.0
	if (h->cut)
		pr_warn("critical path: more than %u blocks: analysed up to %.6f s only; choose a "
			"window with --time", CRITPATH_MAX_BLOCKS, h->cut / 1e9);
	if (!p->has_wakers)
		pr_warn("critical path: the file has no wakers (offcpu-waker), so no wait can be "
			"followed to what ended it: %.3f ms (%.1f%%) charged to the waiting threads "
			"as \"waker not recorded\"; record with offcpu record --wakers (or "
			"--critical-path)", SHARE(k[CP_NO_WAKER]));
	else if (k[CP_NO_WAKER])
		pr_warn("critical path: %.3f ms (%.1f%%) in waits whose waker was not recorded",
			SHARE(k[CP_NO_WAKER]));
	if (h->summed && k[CP_SUMMED])
		pr_warn("critical path: %.3f ms (%.1f%%) unknown in short blocks summed per interval "
			"(below record's --off-cpu-thresh), which have no times of their own; record "
			"with --off-cpu-thresh 0 (or --critical-path) to follow each", SHARE(k[CP_SUMMED]));
	if (!h->ticks && (k[CP_RUN_UNSAMPLED] || k[CP_RUN]))
		pr_warn("critical path: no on-CPU samples in the file: %.3f ms (%.1f%%) of running "
			"is shown with the stack each run ended in (where the thread woke the next, "
			"or blocked); record with -F 999 (or --critical-path) to sample it",
			SHARE(k[CP_RUN_UNSAMPLED]));
	if (!h->runq && h->blocks)
		pr_warn("critical path: no preemption or run queue wait in the file (record --state "
			"S,D,R, or --critical-path): a wait for a CPU after a wakeup is charged to "
			"the waker, a preemption to running");
	if (k[CP_NOT_RECORDED])
		pr_warn("critical path: %.3f ms (%.1f%%) in threads the recording has nothing of "
			"then (not among the targets: record -a, or their processes with -p too; or "
			"before they began)", SHARE(k[CP_NOT_RECORDED]));
	if (k[CP_DEPTH])
		pr_warn("critical path: %.3f ms (%.1f%%) not followed: more than %d hops deep, or "
			"wakers that woke each other at the same time (a damaged file)",
			SHARE(k[CP_DEPTH]), CRITPATH_MAX_DEPTH);
	for (i = 0; i < nr; i++)
		if (r[i].charged != r[i].waited)
			pr_err("critical path: thread %u: %llu ns waited, %llu ns charged: not "
			       "conserved (a bug: please report it)", r[i].tid,
			       (unsigned long long)r[i].waited, (unsigned long long)r[i].charged);
#undef SHARE
}
