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

struct line {
	char *text;
	uint64_t value;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/*
 * Append @s; a name (@clean) escaped as on a terminal (str_escape: no
 * control character, newline or stray byte reaches the output) and with its
 * ';' made ':', the one character that would split it into two frames.
 */
static void put(char **buf, size_t *len, size_t *cap, const char *s, bool clean)
{
	size_t n = clean ? str_escape(NULL, 0, s) : strlen(s);

	if (*len + n + 8 > *cap) {
		size_t c = (*cap + n + 8) * 2;
		char *nb = realloc(*buf, c);

		if (!nb)
			return;
		*buf = nb;
		*cap = c;
	}
	if (clean) {
		char *q;

		str_escape(*buf + *len, n + 1, s);
		for (q = *buf + *len; *q; q++)
			if (*q == ';')
				*q = ':';
	} else {
		memcpy(*buf + *len, s, n + 1);
	}
	*len += n;
}

/* The folded name of frame @f, as outputs that share the flame graph's naming use it. */
static void frame_text(const struct profile *p, uint32_t f, char **buf, size_t *len, size_t *cap)
{
	put(buf, len, cap, profile__frame_name(p, f), true);
	if (p->frames[f].kernel)
		put(buf, len, cap, "_[k]", false);
	else if (p->frames[f].inlined)
		put(buf, len, cap, "_[i]", false);
}

int folded__write(const struct profile *p, int event, FILE *f)
{
	struct hashmap idx = { 0 };
	struct line *lines = NULL;
	size_t n = 0, cap = 0, i, len, bcap = 0;
	uint32_t *frames = NULL, fcap = 0;
	char *buf = NULL;
	bool off = p->events[event].offcpu;
	int err = 0;

	for (i = 0; i < p->nr_rows; i++) {
		const struct profile_row *r = &p->rows[i];
		uint32_t k, comm_at;
		uint64_t *v;
		int created, nr;

		if (r->event != (uint32_t)event || profile__row_empty(r))
			continue;
		nr = profile__row_frames(p, r, &frames, &fcap, &comm_at);
		if (nr < 0) {
			err = nr;
			goto out;
		}
		len = 0;
		for (k = 0; k <= (uint32_t)nr; k++) {
			if (k)
				put(&buf, &len, &bcap, ";", false);
			if (k == comm_at)
				put(&buf, &len, &bcap, strtab__get(&p->str, r->comm), true);
			else
				frame_text(p, frames[k < comm_at ? k : k - 1], &buf, &len, &bcap);
		}
		if (!buf) {
			err = -ENOMEM;
			goto out;
		}
		v = hashmap__upsert(&idx, buf, len, &created);
		if (!v) {
			err = -ENOMEM;
			goto out;
		}
		if (created) {
			if (grow_array((void **)&lines, &cap, n + 1, sizeof(*lines))) {
				err = -ENOMEM;
				goto out;
			}
			lines[n].text = strdup(buf);
			lines[n].value = 0;
			if (!lines[n].text) {
				err = -ENOMEM;
				goto out;
			}
			*v = n++;
		}
		lines[*v].value += off ? r->period : r->count;
	}
	if (n)
		qsort(lines, n, sizeof(*lines), cmp_line);
	for (i = 0; i < n; i++) {
		uint64_t v = off ? (lines[i].value + 500) / 1000 : lines[i].value;

		if (v)
			fprintf(f, "%s %llu\n", lines[i].text, (unsigned long long)v);
	}
out:
	for (i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
	free(frames);
	free(buf);
	hashmap__free(&idx);
	return err;
}
