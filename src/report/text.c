// SPDX-License-Identifier: GPL-2.0
/*
 * Default text output: first, when the file has them, the threads that were
 * already waiting when the recording began, longest wait first, each with
 * the function of its own it waits in; then per event, the top entries
 * grouped by the sort keys (the symbol and binary are those of the innermost
 * frame, where the thread blocked or ran), then, when symbols are among the
 * keys, the call paths that lead to the top entries. Every name in it (commands, threads,
 * binaries, symbols, source files, wakers, event names) is another user's
 * choice and is printed escaped (fput_escaped): no raw control character
 * reaches the terminal, and a column is padded by the width it shows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "profile.h"
#include "waitobj.h"
#include "../util/util.h"

#define MAX_PATHS 3
#define MAX_BEFORES 20 /* threads waiting since before the recording shown; --json has all */

struct entry {
	uint32_t event, comm, pid, tid, dso, sym, state, waker, chain, wait;
	uint32_t runtime; /* the runtime frame's name; UINT32_MAX: none */
	uint32_t pad;
	uint64_t value;
	uint32_t first_row; /* rows of one entry are chained through next[] */
};

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	return (x->value < y->value) - (x->value > y->value);
}

static uint32_t leaf(const struct profile *p, uint32_t stack)
{
	uint32_t nr;
	const uint32_t *f = profile__stack_frames(p, stack, &nr);

	return nr ? f[nr - 1] : UINT32_MAX;
}

static void print_value(FILE *f, const struct profile *p, uint32_t ev, uint64_t v, uint64_t total)
{
	double pct = total ? 100.0 * (double)v / (double)total : 0;

	if (p->events[ev].offcpu)
		fprintf(f, "%12.3f %7.2f%%", (double)v / 1e6, pct);
	else
		fprintf(f, "%12llu %7.2f%%", (unsigned long long)v, pct);
}

struct path {
	uint32_t stack;
	uint64_t value;
};

static int cmp_path(const void *a, const void *b)
{
	const struct path *x = a, *y = b;

	return (x->value < y->value) - (x->value > y->value);
}

/*
 * "  name (comm, binary):" above an entry's call paths: the command and the
 * binary its rows share, each left out when they differ (the sort keys
 * did not group by it: --sort sym gathers every command's frames of a
 * function), so that no header shows an empty or made-up one.
 */
static void print_path_header(FILE *f, const struct profile *p, const struct entry *e,
			      const uint32_t *next)
{
	uint32_t r, comm = UINT32_MAX, dso = UINT32_MAX, lf;
	bool one_comm = true, one_dso = true, first = true;

	for (r = e->first_row; r != UINT32_MAX; r = next[r]) {
		uint32_t rc = p->rows[r].comm, rd;

		lf = leaf(p, p->rows[r].stack);
		rd = lf == UINT32_MAX ? UINT32_MAX : p->frames[lf].dso;
		if (first) {
			comm = rc;
			dso = rd;
			first = false;
			continue;
		}
		one_comm &= rc == comm;
		one_dso &= rd == dso;
	}
	fprintf(f, "\n  ");
	fput_escaped(f, profile__frame_name(p, leaf(p, e->first_row == UINT32_MAX ? 0 :
						     p->rows[e->first_row].stack)), 0);
	if (first || (!one_comm && !one_dso)) {
		fprintf(f, ":\n");
		return;
	}
	fprintf(f, " (");
	if (one_comm) {
		fput_escaped(f, strtab__get(&p->str, comm), 0);
		if (one_dso)
			fprintf(f, ", ");
	}
	if (one_dso)
		fput_escaped(f, dso == UINT32_MAX || dso >= p->nr_dsos ? "[unknown]" :
				strtab__get(&p->str, p->dsos[dso].short_name), 0);
	fprintf(f, "):\n");
}

static void print_paths(FILE *f, const struct profile *p, const struct entry *e,
			const uint32_t *next, uint64_t total)
{
	struct path *paths = NULL;
	size_t n = 0, i, k;
	uint32_t r;

	for (r = e->first_row; r != UINT32_MAX; r = next[r]) {
		const struct profile_row *row = &p->rows[r];
		uint64_t v = profile__value(p, row->event, row->period, row->count);

		for (i = 0; i < n && paths[i].stack != row->stack; i++)
			;
		if (i == n) {
			struct path *np = realloc(paths, (n + 1) * sizeof(*np));

			if (!np)
				break;
			paths = np;
			paths[n].stack = row->stack;
			paths[n++].value = 0;
		}
		paths[i].value += v;
	}
	if (n)
		qsort(paths, n, sizeof(*paths), cmp_path);
	print_path_header(f, p, e, next);
	for (i = 0; i < n && i < MAX_PATHS; i++) {
		uint32_t nr;
		const uint32_t *ids = profile__stack_frames(p, paths[i].stack, &nr);

		fprintf(f, "    ");
		print_value(f, p, e->event, paths[i].value, total);
		fprintf(f, "\n");
		for (k = nr; k-- > 0;) {
			const struct profile_frame *fr = &p->frames[ids[k]];

			fprintf(f, "            %s", fr->inlined ? "(inlined) " : "");
			fput_escaped(f, profile__frame_name(p, ids[k]), 0);
			fprintf(f, "  (");
			fput_escaped(f, profile__frame_dso(p, ids[k]), 0);
			if (fr->file) {
				fputc(' ', f);
				fput_escaped(f, strtab__get(&p->str, fr->file), 0);
				fprintf(f, ":%u", fr->line);
			}
			fprintf(f, ")\n");
		}
	}
	if (n > MAX_PATHS)
		fprintf(f, "    ... %zu more paths\n", n - MAX_PATHS);
	free(paths);
}

const char *fmt_wait(uint64_t ns, char *buf, size_t cap)
{
	uint64_t s = ns / 1000000000ULL;

	if (ns < 1000000000ULL)
		snprintf(buf, cap, "%.1f ms", (double)ns / 1e6);
	else if (s < 60)
		snprintf(buf, cap, "%.3f s", (double)ns / 1e9);
	else if (s < 3600)
		snprintf(buf, cap, "%u min %04.1f s", (unsigned)(s / 60),
			 (double)(ns - s / 60 * 60 * 1000000000ULL) / 1e9);
	else if (s < 86400)
		snprintf(buf, cap, "%u h %02u min %02u s", (unsigned)(s / 3600),
			 (unsigned)(s / 60 % 60), (unsigned)(s % 60));
	else
		snprintf(buf, cap, "%u d %02u h %02u min", (unsigned)(s / 86400),
			 (unsigned)(s / 3600 % 24), (unsigned)(s / 60 % 60));
	return buf;
}

bool fmt_clock(const struct profile *p, uint64_t mono, bool date, char *buf, size_t cap)
{
	int64_t wall;
	time_t t;
	struct tm tm;

	if (!p->has_clock)
		return false;
	wall = (int64_t)p->clock_wall_ns + ((int64_t)mono - (int64_t)p->clock_mono_ns);
	t = (time_t)(wall / 1000000000LL);
	if (wall < 0 || !localtime_r(&t, &tm))
		return false;
	return strftime(buf, cap, date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm) > 0;
}

bool same_day(const struct profile *p, uint64_t a, uint64_t b)
{
	char da[32], db[32];

	return fmt_clock(p, a, true, da, sizeof(da)) && fmt_clock(p, b, true, db, sizeof(db)) &&
	       !strncmp(da, db, 10);
}

/* "waiting in hang_mutex_alpha for at least 47.213 s (since 14:02:07, 45.2 s before ...)" */
static void print_before(FILE *f, const struct profile *p, const struct profile_before *b)
{
	enum before_bound bound = profile__before_bound(b);
	bool still = b->end == BEFORE_TO_END || b->end == BEFORE_NOT_SEEN;
	char t[64], c[32];
	const char *name = profile__frame_name(p, b->own);

	fprintf(f, "%s in ", still ? "waiting" : "waited");
	if (b->own == UINT32_MAX) {
		fprintf(f, "[no stack]");
	} else {
		fput_escaped(f, name, 0);
		if (!strcmp(name, "[unknown]")) {
			fprintf(f, " in ");
			fput_escaped(f, profile__frame_dso(p, b->own), 0);
		}
	}
	fmt_wait(profile__before_total(b), t, sizeof(t));
	switch (bound) {
	case BOUND_EXACT:
		fprintf(f, " for %s in all", t);
		break;
	case BOUND_AT_LEAST:
		fprintf(f, " for at least %s", t);
		break;
	case BOUND_AT_MOST:
		fprintf(f, " for at most %s in all", t);
		break;
	case BOUND_NONE:
		break;
	}
	if (!b->before) {
		fprintf(f, " (since before the recording");
	} else {
		uint64_t since = b->start - b->before;

		fprintf(f, " (since ");
		if (fmt_clock(p, since, !same_day(p, since, b->start), c, sizeof(c)))
			fprintf(f, "%s, ", c);
		fprintf(f, "%s before the recording", fmt_wait(b->before, t, sizeof(t)));
	}
	fmt_wait(b->during, t, sizeof(t));
	switch (b->end) {
	case BEFORE_TO_END:
		fprintf(f, "; still waiting at its end)");
		break;
	case BEFORE_ENDED:
		fprintf(f, "; it ended %s into the recording)", t);
		break;
	case BEFORE_ENDED_BY:
		fprintf(f, "; it ended within the recording's first %s)", t);
		break;
	default:
		fprintf(f, "; none of it since is in this file)");
		break;
	}
}

/*
 * The threads waiting when the recording began, longest wait first: what a
 * stuck process looks like. One line each: command, pid/tid, state, and the
 * function of its own it waits in, with how long and since when.
 */
static void print_befores(FILE *f, const struct profile *p)
{
	uint32_t i, n = p->nr_befores < MAX_BEFORES ? p->nr_befores : MAX_BEFORES;
	int idw = 0, stw = 1;
	char c[32], id[32];

	for (i = 0; i < n; i++) {
		const struct profile_before *b = &p->befores[i];
		int w = snprintf(id, sizeof(id), "%u/%u", b->pid, b->tid);
		int sw = (int)strlen(profile__state_name(b->state));

		idw = w > idw ? w : idw;
		stw = sw > stw ? sw : stw;
	}
	fprintf(f, "# threads waiting since before the recording began");
	if (fmt_clock(p, p->befores[0].start, true, c, sizeof(c)))
		fprintf(f, " at %s", c);
	fprintf(f, ", longest first: %u\n", p->nr_befores);
	for (i = 0; i < n; i++) {
		const struct profile_before *b = &p->befores[i];

		fprintf(f, "  ");
		fput_escaped(f, strtab__get(&p->str, b->comm), 16);
		snprintf(id, sizeof(id), "%u/%u", b->pid, b->tid);
		fprintf(f, "  %*s  %-*s  ", idw, id, stw, profile__state_name(b->state));
		print_before(f, p, b);
		fputc('\n', f);
	}
	if (p->nr_befores > n)
		fprintf(f, "  ... and %u more (--pid, --tid, --comm to choose, --json for all)\n",
			p->nr_befores - n);
	fputc('\n', f);
}

int text__write(const struct profile *p, const struct text_opts *o, FILE *f)
{
	struct hashmap idx = { 0 };
	struct entry *ents = NULL;
	uint32_t *next = NULL, *tail = NULL;
	size_t n = 0, cap = 0, i, k;
	bool have_sym = false;
	uint32_t ev;
	int err = 0;

	next = malloc((p->nr_rows + 1) * sizeof(*next));
	tail = malloc((p->nr_rows + 1) * sizeof(*tail));
	if (!next || !tail) {
		err = -ENOMEM;
		goto out;
	}
	for (k = 0; k < o->nr_keys; k++)
		have_sym |= o->keys[k] == SORT_SYM;
	for (i = 0; i < p->nr_rows; i++) {
		const struct profile_row *r = &p->rows[i];
		struct entry key = { .event = r->event, .dso = UINT32_MAX, .sym = UINT32_MAX,
				     .runtime = UINT32_MAX };
		uint32_t rf;
		uint32_t lf = leaf(p, r->stack);
		uint64_t *v;
		int created;

		if (profile__row_empty(r))
			continue; /* nothing in it */
		for (k = 0; k < o->nr_keys; k++) {
			switch (o->keys[k]) {
			case SORT_COMM: key.comm = r->comm; break;
			case SORT_PID: key.pid = r->pid; break;
			case SORT_TID: key.tid = r->tid; break;
			case SORT_DSO: key.dso = lf == UINT32_MAX ? UINT32_MAX : p->frames[lf].dso; break;
			case SORT_SYM: key.sym = lf == UINT32_MAX ? UINT32_MAX : p->frames[lf].sym; break;
			case SORT_STATE: key.state = r->state; break;
			case SORT_WAKER: key.waker = r->waker, key.chain = r->chain; break;
			case SORT_RUNTIME:
				rf = profile__runtime_frame(p, r->stack);
				key.runtime = rf == UINT32_MAX ? UINT32_MAX : p->frames[rf].sym;
				break;
			case SORT_OBJECT: key.wait = r->wait; break;
			}
		}
		v = hashmap__upsert(&idx, &key, sizeof(key), &created);
		if (!v) {
			err = -ENOMEM;
			goto out;
		}
		if (created) {
			if (grow_array((void **)&ents, &cap, n + 1, sizeof(*ents))) {
				err = -ENOMEM;
				goto out;
			}
			key.first_row = (uint32_t)i;
			ents[n] = key;
			tail[n] = (uint32_t)i;
			*v = n++;
		} else {
			next[tail[*v]] = (uint32_t)i;
			tail[*v] = (uint32_t)i;
		}
		next[i] = UINT32_MAX;
		ents[*v].value += profile__value(p, r->event, r->period, r->count);
	}
	if (n)
		qsort(ents, n, sizeof(*ents), cmp_entry);
	if (p->nr_befores && !o->no_before)
		print_befores(f, p);
	for (ev = 0; ev < p->nr_events; ev++) {
		const struct profile_event *e = &p->events[ev];
		uint64_t total = profile__value(p, ev, e->period, e->count);
		int shown = 0;
		uint32_t r;

		/* an event with samples but no rows (offcpu-before's: its threads are
		 * the section above) has no table */
		for (r = 0; r < p->nr_rows && p->rows[r].event != ev; r++)
			;
		if (!e->count || r == p->nr_rows)
			continue;
		fprintf(f, "# ");
		fput_escaped(f, strtab__get(&p->str, e->name), 0);
		if (e->offcpu)
			fprintf(f, ": %.3f ms off-CPU in %llu samples\n", e->period / 1e6,
				(unsigned long long)e->count);
		else
			fprintf(f, ": %llu samples\n", (unsigned long long)e->count);
		fprintf(f, "# %12s %8s", e->offcpu ? "ms" : "samples", "%");
		for (k = 0; k < o->nr_keys; k++) {
			static const char *names[] = { "comm", "pid", "tid", "dso", "symbol", "state",
						       "waker", "object", "runtime" };

			fprintf(f, o->keys[k] == SORT_PID || o->keys[k] == SORT_TID ? " %8s" :
				   o->keys[k] == SORT_STATE ? "  %-9s" : "  %-16s", names[o->keys[k]]);
		}
		fprintf(f, "\n");
		for (i = 0; i < n; i++) {
			const struct entry *en = &ents[i];
			double pct = total ? 100.0 * (double)en->value / (double)total : 0;

			if (en->event != ev || pct < o->min_percent)
				continue;
			fprintf(f, "  ");
			print_value(f, p, ev, en->value, total);
			for (k = 0; k < o->nr_keys; k++) {
				switch (o->keys[k]) {
				case SORT_COMM:
					fprintf(f, "  ");
					fput_escaped(f, strtab__get(&p->str, en->comm), 16);
					break;
				case SORT_PID:
					fprintf(f, " %8u", en->pid);
					break;
				case SORT_TID:
					fprintf(f, " %8u", en->tid);
					break;
				case SORT_DSO:
					fprintf(f, "  ");
					fput_escaped(f, en->dso == UINT32_MAX ? "[unknown]" :
						     strtab__get(&p->str,
								 p->dsos[en->dso].short_name),
						     16);
					break;
				case SORT_SYM:
					fprintf(f, "  ");
					fput_escaped(f, en->sym == UINT32_MAX ? "[no frames]" :
						     strtab__get(&p->str, en->sym), 0);
					break;
				case SORT_STATE:
					fprintf(f, "  %-9s", profile__state_name(en->state));
					break;
				case SORT_WAKER: {
					struct profile_row w = { .waker = en->waker, .chain = en->chain };
					char buf[256];

					fprintf(f, "  ");
					fput_escaped(f, profile__waker_text(p, &w, buf, sizeof(buf)),
						     16);
					break;
				}
				case SORT_RUNTIME:
					fprintf(f, "  ");
					fput_escaped(f, en->runtime == UINT32_MAX ? "[none]" :
						     strtab__get(&p->str, en->runtime), 0);
					break;
				case SORT_OBJECT: {
					char buf[600];

					fprintf(f, "  ");
					fput_escaped(f, waitobj__text(p, en->wait, buf, sizeof(buf)), 16);
					break;
				}
				}
			}
			fprintf(f, "\n");
		}
		if (have_sym) {
			fprintf(f, "\n# call paths to the top entries (innermost frame first)\n");
			for (i = 0; i < n && shown < o->top; i++) {
				double pct = total ? 100.0 * (double)ents[i].value / (double)total : 0;

				if (ents[i].event != ev || pct < o->min_percent)
					continue;
				print_paths(f, p, &ents[i], next, total);
				shown++;
			}
		}
		fprintf(f, "\n");
	}
	if (p->lost_records || p->lost_samples)
		fprintf(f, "# WARNING: %llu records and %llu samples were lost while recording\n",
		       (unsigned long long)p->lost_records, (unsigned long long)p->lost_samples);
out:
	hashmap__free(&idx);
	free(ents);
	free(next);
	free(tail);
	return err;
}
