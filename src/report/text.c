// SPDX-License-Identifier: GPL-2.0
/*
 * Default text output: per event, the top entries grouped by the sort keys
 * (the symbol and binary are those of the innermost frame, where the thread
 * blocked or ran), then, when symbols are among the keys, the call paths
 * that lead to the top entries. Every name in it (commands, threads,
 * binaries, symbols, source files, wakers, event names) is another user's
 * choice and is printed escaped (fput_escaped): no raw control character
 * reaches the terminal, and a column is padded by the width it shows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "profile.h"
#include "../util/util.h"

#define MAX_PATHS 3

struct entry {
	uint32_t event, comm, pid, tid, dso, sym, state, waker, chain;
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
	fprintf(f, "\n  ");
	fput_escaped(f, profile__frame_name(p, leaf(p, e->first_row == UINT32_MAX ? 0 :
							   p->rows[e->first_row].stack)), 0);
	fprintf(f, " (");
	fput_escaped(f, strtab__get(&p->str, e->comm), 0);
	fprintf(f, ", ");
	fput_escaped(f, e->dso == UINT32_MAX ? "[unknown]" :
			strtab__get(&p->str, p->dsos[e->dso].short_name), 0);
	fprintf(f, "):\n");
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
		struct entry key = { .event = r->event, .dso = UINT32_MAX, .sym = UINT32_MAX };
		uint32_t lf = leaf(p, r->stack);
		uint64_t *v;
		int created;

		if (profile__row_empty(r))
			continue; /* all of its time went to its waker's rows */
		for (k = 0; k < o->nr_keys; k++) {
			switch (o->keys[k]) {
			case SORT_COMM: key.comm = r->comm; break;
			case SORT_PID: key.pid = r->pid; break;
			case SORT_TID: key.tid = r->tid; break;
			case SORT_DSO: key.dso = lf == UINT32_MAX ? UINT32_MAX : p->frames[lf].dso; break;
			case SORT_SYM: key.sym = lf == UINT32_MAX ? UINT32_MAX : p->frames[lf].sym; break;
			case SORT_STATE: key.state = r->state; break;
			case SORT_WAKER: key.waker = r->waker, key.chain = r->chain; break;
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
	for (ev = 0; ev < p->nr_events; ev++) {
		const struct profile_event *e = &p->events[ev];
		uint64_t total = profile__value(p, ev, e->period, e->count);
		int shown = 0;

		if (!e->count)
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
						       "waker" };

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
