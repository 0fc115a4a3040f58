// SPDX-License-Identifier: GPL-2.0
/*
 * Folded stacks, one line per distinct stack: "comm;outer;...;inner VALUE",
 * VALUE in microseconds for off-CPU events (what flamegraph.pl
 * --countname=us and BCC's offcputime -f use) and in samples otherwise.
 * Kernel frames carry flamegraph.pl's "_[k]" suffix, inlined ones "_[i]".
 * With --states each line starts with its wait's state ("[S];comm;..."); with
 * --wakers a wait woken by a recorded wakeup goes on with "--", the waker's
 * frames innermost first, its name and chain (BCC offwaketime's layout):
 * profile__row_frames.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "profile.h"
#include "../util/util.h"

/*
 * Lines are kept as sequences of text ids, not as text: each frame's and
 * command's folded text is made once (escaped, suffixed), and a line is the
 * ids of its parts; two lines are the same when their ids are, since the
 * texts are distinct and hold no ';'. The text is only made as it is
 * written: memory grows with the distinct lines' depth, not their text.
 */
struct texts {
	struct hashmap idx; /* text -> id */
	char **s;
	size_t nr, cap;
	uint32_t *of_frame; /* frame -> text id + 1; 0: not made yet */
	uint32_t *of_str; /* strtab index (a command) -> text id + 1 */
};

struct line {
	const uint32_t *ids; /* the line's hashmap key */
	uint32_t nr;
	uint64_t value;
};

/*
 * A name as folded output has it: escaped as on a terminal (str_escape: no
 * control character, newline or stray byte reaches the output) and with its
 * ';' made ':', the one character that would split it into two frames;
 * then @suffix. Returns its text id, or UINT32_MAX when out of memory.
 */
static uint32_t text_id(struct texts *t, const char *name, const char *suffix)
{
	size_t n = str_escape(NULL, 0, name), k = strlen(suffix);
	char *buf = malloc(n + k + 1), *q;
	uint64_t *v;
	int created;

	if (!buf)
		return UINT32_MAX;
	str_escape(buf, n + 1, name);
	for (q = buf; *q; q++)
		if (*q == ';')
			*q = ':';
	memcpy(buf + n, suffix, k + 1);
	v = hashmap__upsert(&t->idx, buf, n + k, &created);
	if (!v || (created && grow_array((void **)&t->s, &t->cap, t->nr + 1, sizeof(*t->s)))) {
		free(buf);
		return UINT32_MAX;
	}
	if (!created) {
		free(buf);
		return (uint32_t)*v;
	}
	t->s[t->nr] = buf;
	*v = t->nr++;
	return (uint32_t)*v;
}

/*
 * The folded text of frame @f, as outputs that share the flame graph's
 * naming use it; with show_srcline "NAME (FILE:LINE)", or "NAME (FILE)"
 * without a line, where its source file is known.
 */
static uint32_t frame_text(const struct profile *p, struct texts *t, uint32_t f)
{
	const char *name = profile__frame_name(p, f);
	char *where = NULL;
	uint32_t id;

	if (f < p->nr_frames && t->of_frame[f])
		return t->of_frame[f] - 1;
	if (p->show_srcline && f < p->nr_frames && p->frames[f].file) {
		const struct profile_frame *pf = &p->frames[f];
		const char *file = strtab__get(&p->str, pf->file);

		if ((pf->line ? asprintf(&where, "%s (%s:%u)", name, file, pf->line) :
				asprintf(&where, "%s (%s)", name, file)) < 0)
			return UINT32_MAX;
		name = where;
	}
	id = text_id(t, name,
		     f >= p->nr_frames ? "" : p->frames[f].kernel ? "_[k]" :
		     p->frames[f].inlined ? "_[i]" : "");
	free(where);
	if (f < p->nr_frames && id != UINT32_MAX)
		t->of_frame[f] = id + 1;
	return id;
}

static uint32_t comm_text(const struct profile *p, struct texts *t, uint32_t comm)
{
	uint32_t id;

	if (comm < p->str.nr && t->of_str[comm])
		return t->of_str[comm] - 1;
	id = text_id(t, strtab__get(&p->str, comm), "");
	if (comm < p->str.nr && id != UINT32_MAX)
		t->of_str[comm] = id + 1;
	return id;
}

/*
 * Lines in the order strcmp() puts their text in, without making it: the
 * text of @a is its parts joined by ';'. Parts with the same id are the
 * same text; at the first that differ, the texts decide, a part that ends
 * first going on with ';' (or ending the line).
 */
static int cmp_line(const void *pa, const void *pb, void *arg)
{
	const struct line *a = pa, *b = pb;
	const struct texts *t = arg;
	uint32_t i;

	for (i = 0; i < a->nr && i < b->nr; i++) {
		const unsigned char *x, *y;
		int cx, cy;

		if (a->ids[i] == b->ids[i])
			continue;
		x = (const unsigned char *)t->s[a->ids[i]];
		y = (const unsigned char *)t->s[b->ids[i]];
		while (*x && *x == *y)
			x++, y++;
		cx = *x ? *x : i + 1 < a->nr ? ';' : 0;
		cy = *y ? *y : i + 1 < b->nr ? ';' : 0;
		return cx < cy ? -1 : cx > cy;
	}
	return (a->nr > b->nr) - (a->nr < b->nr);
}

int folded__write(const struct profile *p, int event, FILE *f)
{
	struct hashmap idx = { 0 };
	struct texts t = { 0 };
	struct line *lines = NULL;
	size_t n = 0, cap = 0, i, k, ncap = 0;
	uint32_t *frames = NULL, fcap = 0, *ids = NULL;
	bool off = p->events[event].offcpu;
	int err = 0;

	t.of_frame = calloc(p->nr_frames + 1, sizeof(*t.of_frame));
	t.of_str = calloc(p->str.nr + 1, sizeof(*t.of_str));
	if (!t.of_frame || !t.of_str) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->nr_rows; i++) {
		const struct profile_row *r = &p->rows[i];
		uint32_t comm_at;
		uint64_t *v;
		int created, nr;

		if (r->event != (uint32_t)event || profile__row_empty(r))
			continue;
		nr = profile__row_frames(p, r, &frames, &fcap, &comm_at);
		if (nr < 0 || grow_array((void **)&ids, &ncap, (size_t)nr + 1, sizeof(*ids))) {
			err = nr < 0 ? nr : -ENOMEM;
			goto out;
		}
		for (k = 0; k <= (size_t)nr; k++) {
			ids[k] = k == comm_at ? comm_text(p, &t, r->comm) :
				 frame_text(p, &t, frames[k < comm_at ? k : k - 1]);
			if (ids[k] == UINT32_MAX) {
				err = -ENOMEM;
				goto out;
			}
		}
		v = hashmap__upsert(&idx, ids, ((size_t)nr + 1) * sizeof(*ids), &created);
		if (!v) {
			err = -ENOMEM;
			goto out;
		}
		if (created) {
			if (grow_array((void **)&lines, &cap, n + 1, sizeof(*lines))) {
				err = -ENOMEM;
				goto out;
			}
			lines[n].nr = (uint32_t)nr + 1;
			lines[n].value = 0;
			*v = n++;
		}
		lines[*v].value += off ? r->period : r->count;
	}
	/* each line's ids are its key in the map: kept once */
	for (i = 0; i < idx.cap; i++)
		if (idx.slots[i].hash)
			lines[idx.slots[i].value].ids = idx.slots[i].key;
	if (n)
		qsort_r(lines, n, sizeof(*lines), cmp_line, &t);
	for (i = 0; i < n; i++) {
		uint64_t v = off ? (lines[i].value + 500) / 1000 : lines[i].value;

		if (!v)
			continue;
		for (k = 0; k < lines[i].nr; k++) {
			if (k)
				fputc(';', f);
			fputs(t.s[lines[i].ids[k]], f);
		}
		fprintf(f, " %llu\n", (unsigned long long)v);
	}
out:
	for (i = 0; i < t.nr; i++)
		free(t.s[i]);
	free(t.s);
	hashmap__free(&t.idx);
	free(t.of_frame);
	free(t.of_str);
	free(lines);
	free(frames);
	free(ids);
	hashmap__free(&idx);
	return err;
}
