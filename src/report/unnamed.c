// SPDX-License-Identifier: GPL-2.0
/*
 * The warning of offcpu report about user frames left without a symbol: how
 * many, in what share of the time, in which objects, and what would name
 * them (unnamed.h).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "unnamed.h"
#include "profile.h"
#include "resolve.h"
#include "../util/util.h"

struct unnamed_obj {
	uint32_t dso;
	uint64_t value;
};

static int cmp_unnamed(const void *a, const void *b)
{
	const struct unnamed_obj *x = a, *y = b;

	return (x->value < y->value) - (x->value > y->value);
}

/*
 * One line on stderr when user frames stayed without a symbol (named
 * OBJ+0xOFFSET): how many, the share of the off-CPU time (else of the
 * samples) whose stacks hold one, their objects (most time first), and what
 * would name them. Nothing when every frame has a name, or when the output
 * shows no frame (a table without sym among its keys).
 */
void warn_unnamed(const struct profile *p, const struct debuginfo_stats *di)
{
	uint8_t *mark = calloc(p->nr_frames ? p->nr_frames : 1, 1); /* 1 unnamed, 2 and seen */
	struct unnamed_obj *objs = calloc(p->nr_dsos ? p->nr_dsos : 1, sizeof(*objs));
	uint64_t total = 0, with = 0;
	unsigned nframes = 0, shown = 0, nfiles = 0;
	bool offcpu = false, files = false, anon = false, one;
	char list[512] = "", share[32];
	size_t len = 0;
	uint32_t i, k;

	if (!mark || !objs)
		goto out;
	for (i = 0; i < p->nr_frames; i++)
		mark[i] = resolver__unnamed(p, i);
	for (i = 0; i < p->nr_rows; i++)
		offcpu |= p->events[p->rows[i].event].offcpu && !profile__row_empty(&p->rows[i]);
	for (i = 0; i < p->nr_rows; i++) {
		const struct profile_row *r = &p->rows[i];
		uint64_t v = offcpu ? r->period : r->count;
		uint32_t dsos[16], nd = 0, nr, d, j;
		const uint32_t *fr;
		bool any = false;

		if (profile__row_empty(r) || (offcpu && !p->events[r->event].offcpu) ||
		    r->stack >= p->nr_stacks)
			continue;
		total += v;
		fr = profile__stack_frames(p, r->stack, &nr);
		for (k = 0; k < nr; k++) {
			if (fr[k] >= p->nr_frames || !mark[fr[k]])
				continue;
			any = true;
			nframes += mark[fr[k]] == 1;
			mark[fr[k]] = 2;
			d = p->frames[fr[k]].dso;
			for (j = 0; j < nd && dsos[j] != d; j++) /* the row's objects, each once */
				;
			if (j == nd && nd < ARRAY_SIZE(dsos))
				dsos[nd++] = d;
		}
		if (!any)
			continue;
		with += v;
		for (k = 0; k < nd; k++) {
			objs[dsos[k]].dso = dsos[k] + 1;
			objs[dsos[k]].value += v;
		}
	}
	if (!nframes || !total)
		goto out;
	qsort(objs, p->nr_dsos, sizeof(*objs), cmp_unnamed);
	for (k = 0; k < p->nr_dsos && objs[k].dso; k++) {
		const char *path = strtab__get(&p->str, p->dsos[objs[k].dso - 1].name);
		bool file = path[0] == '/' && path[1] != '/';

		nfiles += file;
		anon |= !file;
		if (shown < 4 && len < sizeof(list) - 1) {
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", shown ? ", " : "",
						strtab__get(&p->str, p->dsos[objs[k].dso - 1].short_name));
			shown++;
		}
	}
	if (k > shown && len < sizeof(list) - 1)
		snprintf(list + len, sizeof(list) - len, " and %u more", k - shown);
	if (with * 1000 < total)
		snprintf(share, sizeof(share), "less than 0.1%%");
	else
		snprintf(share, sizeof(share), "%.1f%%", 100.0 * (double)with / (double)total);
	files = nfiles > 0;
	one = nfiles == 1;
	pr_warn("%u frame%s in %s of the %s %s no symbol, in %s: %s%s%s", nframes,
		nframes == 1 ? "" : "s", share, offcpu ? "off-CPU time" : "samples",
		nframes == 1 ? "has" : "have", list,
		!files ? "" :
		!di->enabled ? (one ? "install its -dbgsym package (or put its debug file under "
				      "--debug-dir), or set DEBUGINFOD_URLS to a debuginfod server" :
				      "install their -dbgsym packages (or put their debug files under "
				      "--debug-dir), or set DEBUGINFOD_URLS to a debuginfod server") :
		di->failed ? (one ? "debuginfod failed (said above); install its -dbgsym package" :
				    "debuginfod failed (said above); install their -dbgsym packages") :
			     (one ? "debuginfod (DEBUGINFOD_URLS) has no debug info for it either; "
				    "install its -dbgsym package" :
				    "debuginfod (DEBUGINFOD_URLS) has no debug info for them either; "
				    "install their -dbgsym packages"),
		files && anon ? "; " : "",
		anon ? "code in memory without a file (JIT) is named only by its runtime's perf map" :
		       "");
out:
	free(mark);
	free(objs);
}
