// SPDX-License-Identifier: GPL-2.0
/*
 * report --timeline: the session's blocks, wakeups and ticks per thread as
 * one self-contained HTML page (timeline.h). The samples are kept per lane
 * as they come; at the end the page is written with the profile's names and
 * stacks (only those the lanes use) as data, and an inline script draws it
 * on a canvas.
 *
 * Bounded memory: a lane keeps blocks at least its bin width long as drawn
 * bars, and shorter ones, and its ticks, as per-bin totals (by state). The
 * bin width starts at 1 us and doubles, merging what it passes over, while
 * the lane holds more than TIMELINE_LANE_CAP items or all lanes more than
 * TIMELINE_CAP; at the end it is at least a pixel of the full view.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "blocks.h"
#include "timeline.h"
#include "../util/hashmap.h"
#include "../util/outfile.h"
#include "../util/util.h"

#define FIRST_SHIFT 10 /* 1024 ns */
#define FULL_PX 2000 /* the full view's width in pixels, for what is narrower than one */
#define NR_CLASS 5 /* S, D, preempted, runqueue, other */

struct tl_block {
	uint64_t end, dur;
	uint64_t since; /* BLOCK_BEFORE: when the wait began (0: not known) */
	uint32_t state, stack, waker, chain, wstack, wtid;
	uint32_t flags; /* BLOCK_* */
};

struct tl_bin {
	uint64_t idx; /* start / width */
	uint64_t ns[NR_CLASS]; /* merged blocks' time by state class */
	uint64_t summed; /* summed samples' time, once their own entries were merged */
	uint32_t blocks, ticks;
};

struct tl_sum {
	uint64_t start, end, ns;
	uint32_t stack, state, waker, chain;
};

struct tl_lane {
	uint32_t pid, tid, comm;
	unsigned shift; /* bin width 1 << shift ns */
	struct tl_block *b;
	size_t nb, cb;
	struct tl_bin *g;
	size_t ng, cg;
	struct tl_sum *u;
	size_t nu, cu;
	uint64_t merged, merged_ns; /* blocks merged into bins */
	bool sums_merged;
};

struct timeline {
	struct sample_consumer c;
	const struct profile *p;
	struct hashmap idx; /* pid, tid -> lane */
	struct tl_lane *lanes;
	size_t nr, cap;
	uint64_t items; /* blocks, bins and summed entries of all lanes */
	uint64_t t0, t1; /* the earliest start and the latest end seen */
	uint64_t ticks, summed;
	struct blocks blocks;
	uint64_t scan_at; /* over the cap, the lanes are looked at again from this many items */
	int err;
};

static unsigned state_class(uint32_t state)
{
	switch (state) {
	case OFFCPU_STATE_S + 1: return 0;
	case OFFCPU_STATE_D + 1: return 1;
	case OFFCPU_STATE_R + 1: return 2;
	case OFFCPU_STATE_RUNQ + 1: return 3;
	default: return 4;
	}
}

static size_t lane_items(const struct tl_lane *l)
{
	return l->nb + l->ng + l->nu;
}

/* Add @n to the lane's bins (sorted by idx, as @add is), merging equal bins. */
static int bins_merge(struct timeline *t, struct tl_lane *l, const struct tl_bin *add, size_t n)
{
	struct tl_bin *out;
	size_t i = 0, j = 0, k = 0, cap = l->ng + n;

	if (!n)
		return 0;
	out = malloc((cap ? cap : 1) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	while (i < l->ng || j < n) {
		const struct tl_bin *x;
		unsigned c;

		if (j >= n || (i < l->ng && l->g[i].idx <= add[j].idx))
			x = &l->g[i++];
		else
			x = &add[j++];
		if (k && out[k - 1].idx == x->idx) {
			for (c = 0; c < NR_CLASS; c++)
				out[k - 1].ns[c] += x->ns[c];
			out[k - 1].summed += x->summed;
			out[k - 1].blocks += x->blocks;
			out[k - 1].ticks += x->ticks;
		} else {
			out[k++] = *x;
		}
	}
	t->items -= l->ng;
	t->items += k;
	free(l->g);
	l->g = out;
	l->ng = k;
	l->cg = cap;
	return 0;
}

/* One bin's worth at @at: in place when it is the last bin's, else merged in. */
static int bin_add(struct timeline *t, struct tl_lane *l, const struct tl_bin *b)
{
	struct tl_bin *last = l->ng ? &l->g[l->ng - 1] : NULL;
	unsigned c;

	if (last && last->idx == b->idx) {
		for (c = 0; c < NR_CLASS; c++)
			last->ns[c] += b->ns[c];
		last->summed += b->summed;
		last->blocks += b->blocks;
		last->ticks += b->ticks;
		return 0;
	}
	if (!last || last->idx < b->idx) {
		if (grow_array((void **)&l->g, &l->cg, l->ng + 1, sizeof(*l->g)))
			return -ENOMEM;
		l->g[l->ng++] = *b;
		t->items++;
		return 0;
	}
	return bins_merge(t, l, b, 1);
}

static void block_bin(const struct tl_lane *l, const struct tl_block *b, struct tl_bin *g)
{
	memset(g, 0, sizeof(*g));
	g->idx = (b->end - b->dur / 2) >> l->shift;
	g->ns[state_class(b->state)] = b->dur;
	g->blocks = 1;
}

/* Whether block @b goes into a bin of width 1 << @shift: shorter, and no wait
 * since before the recording or to its end, which is always drawn whole. */
static bool mergeable(const struct tl_block *b, unsigned shift)
{
	return b->dur < (1ull << shift) && !(b->flags & (BLOCK_BEFORE | BLOCK_OPEN_END));
}

/* Double the lane's bin width until @shift: blocks shorter go into bins. */
static int coarsen(struct timeline *t, struct tl_lane *l, unsigned shift)
{
	struct tl_bin *tmp = NULL;
	size_t i, n = 0, keep = 0, k = 0;
	unsigned d;
	int err;

	if (shift <= l->shift)
		return 0;
	d = shift - l->shift;
	l->shift = shift;
	/* the bins at the new width: still sorted, equal neighbours merged */
	for (i = 0; i < l->ng; i++) {
		l->g[i].idx >>= d;
		if (k && l->g[k - 1].idx == l->g[i].idx) {
			unsigned c;

			for (c = 0; c < NR_CLASS; c++)
				l->g[k - 1].ns[c] += l->g[i].ns[c];
			l->g[k - 1].summed += l->g[i].summed;
			l->g[k - 1].blocks += l->g[i].blocks;
			l->g[k - 1].ticks += l->g[i].ticks;
		} else {
			l->g[k++] = l->g[i];
		}
	}
	t->items -= l->ng - k;
	l->ng = k;
	for (i = 0; i < l->nb; i++)
		n += mergeable(&l->b[i], shift);
	if (n) {
		tmp = malloc(n * sizeof(*tmp));
		if (!tmp)
			return -ENOMEM;
		n = 0;
		for (i = 0; i < l->nb; i++) {
			if (mergeable(&l->b[i], shift)) {
				block_bin(l, &l->b[i], &tmp[n++]);
				l->merged++;
				l->merged_ns += l->b[i].dur;
			} else {
				l->b[keep++] = l->b[i];
			}
		}
		/* by their middles, nearly sorted: sort by insertion */
		for (i = 1; i < n; i++) {
			struct tl_bin x = tmp[i];
			size_t j = i;

			while (j && tmp[j - 1].idx > x.idx) {
				tmp[j] = tmp[j - 1];
				j--;
			}
			tmp[j] = x;
		}
		t->items -= l->nb - keep;
		l->nb = keep;
		err = bins_merge(t, l, tmp, n);
		free(tmp);
		if (err)
			return err;
	}
	return 0;
}

/* Summed entries become bins' totals: their stacks are lost, their time kept. */
static int merge_sums(struct timeline *t, struct tl_lane *l)
{
	size_t i;
	int err;

	for (i = 0; i < l->nu; i++) {
		struct tl_bin g = { .idx = l->u[i].end >> l->shift, .summed = l->u[i].ns };

		err = bin_add(t, l, &g);
		if (err)
			return err;
	}
	t->items -= l->nu;
	l->nu = 0;
	l->sums_merged = true;
	return 0;
}

static int shrink(struct timeline *t, struct tl_lane *l, size_t cap)
{
	int err;

	while (lane_items(l) > cap) {
		if (l->nu > cap / 2 || l->shift >= 62) {
			err = merge_sums(t, l);
			if (err)
				return err;
			if (l->shift >= 62)
				break;
			continue;
		}
		err = coarsen(t, l, l->shift + 1);
		if (err)
			return err;
	}
	return 0;
}

static struct tl_lane *lane_of(struct timeline *t, uint32_t pid, uint32_t tid)
{
	uint32_t key[2] = { pid, tid };
	int created;
	uint64_t *v = hashmap__upsert(&t->idx, key, sizeof(key), &created);
	struct tl_lane *l;

	if (!v)
		return NULL;
	if (created) {
		if (grow_array((void **)&t->lanes, &t->cap, t->nr + 1, sizeof(*t->lanes)))
			return NULL;
		l = &t->lanes[t->nr];
		memset(l, 0, sizeof(*l));
		l->pid = pid;
		l->tid = tid;
		l->comm = UINT32_MAX;
		l->shift = FIRST_SHIFT;
		*v = t->nr++;
	}
	return &t->lanes[*v];
}

/* Keep the lanes within their caps, after an item was added to @l. */
static int bound(struct timeline *t, struct tl_lane *l)
{
	int err = 0;

	if (lane_items(l) > TIMELINE_LANE_CAP)
		err = shrink(t, l, TIMELINE_LANE_CAP * 3 / 4);
	/* over the total: the biggest lane shrinks; when every lane is down to
	 * a bin or two (more threads than the cap), look again only after
	 * TIMELINE_CAP / 16 more items, not at every sample */
	while (!err && t->items > TIMELINE_CAP && t->items >= t->scan_at) {
		struct tl_lane *big = &t->lanes[0];
		uint64_t before = t->items;
		size_t i;

		for (i = 1; i < t->nr; i++)
			if (lane_items(&t->lanes[i]) > lane_items(big))
				big = &t->lanes[i];
		err = shrink(t, big, lane_items(big) * 3 / 4);
		if (t->items >= before) {
			t->scan_at = t->items + TIMELINE_CAP / 16;
			break; /* more threads than the cap, each down to a bin or two */
		}
	}
	return err;
}

/* A block from blocks.h: a bar of its lane, or a bin's share when it is narrower than one. */
static int on_block(void *arg, const struct block *k)
{
	struct timeline *t = arg;
	const struct report_sample *s = k->s;
	struct tl_block b = { .end = k->end, .dur = k->end - k->start, .since = k->since,
			      .state = s->state, .stack = s->stack, .waker = s->waker,
			      .chain = s->chain, .wstack = s->waker_stack, .wtid = s->waker_tid,
			      .flags = k->flags };
	struct tl_lane *l = lane_of(t, s->pid, s->tid);
	int err;

	if (!l)
		return -ENOMEM;
	/* a wait since before the recording, or to its end, is drawn whole however short */
	if (mergeable(&b, l->shift)) {
		struct tl_bin g;

		block_bin(l, &b, &g);
		l->merged++;
		l->merged_ns += b.dur;
		err = bin_add(t, l, &g);
	} else {
		if (grow_array((void **)&l->b, &l->cb, l->nb + 1, sizeof(*l->b)))
			return -ENOMEM;
		l->b[l->nb++] = b;
		t->items++;
		err = 0;
	}
	return err ?: bound(t, l);
}

static int on_sample(struct sample_consumer *c, const struct report_sample *s)
{
	struct timeline *t = consumer_of(c, struct timeline, c);
	struct tl_lane *l;
	int err = 0, kind;

	if (!(s->flags & SAMPLE_ROWS) && s->role != SAMPLE_BEFORE)
		return 0;
	kind = blocks__sample(&t->blocks, s);
	if (kind < 0 || kind == BLOCKS_UNTIMED || s->role == SAMPLE_BEFORE)
		return kind < 0 ? kind : 0;
	if (s->role == SAMPLE_OTHER &&
	    (!(s->flags & SAMPLE_TIME) || !s->time || s->time >= (~0ULL << 32))) {
		t->blocks.untimed++;
		return 0;
	}
	l = lane_of(t, s->pid, s->tid);
	if (!l)
		return -ENOMEM;
	if (s->comm != UINT32_MAX && s->comm)
		l->comm = s->comm;
	if (s->role == SAMPLE_OTHER) {
		struct tl_bin g = { .idx = s->time >> l->shift, .ticks = 1 };

		t->ticks++;
		err = bin_add(t, l, &g);
		if (!t->t0 || s->time < t->t0)
			t->t0 = s->time;
	} else if (kind == BLOCKS_SUMMED) {
		/* the interval: since the drain before, else since the recording's start (0 here) */
		struct tl_sum u = { .start = s->interval_start, .end = s->time, .ns = s->period,
				    .stack = s->stack, .state = s->state, .waker = s->waker,
				    .chain = s->chain };

		t->summed++;
		if (l->sums_merged) {
			struct tl_bin g = { .idx = s->time >> l->shift, .summed = s->period };

			err = bin_add(t, l, &g);
		} else {
			if (grow_array((void **)&l->u, &l->cu, l->nu + 1, sizeof(*l->u)))
				return -ENOMEM;
			l->u[l->nu++] = u;
			t->items++;
		}
	}
	/* a wait (blocks or their sum): it began period ns before its time */
	if (s->role != SAMPLE_OTHER && (!t->t0 || s->time - s->period < t->t0))
		t->t0 = s->time - s->period;
	if (s->time > t->t1)
		t->t1 = s->time;
	return err ?: bound(t, l);
}

static int on_task(struct sample_consumer *c, const struct report_task *k)
{
	struct timeline *t = consumer_of(c, struct timeline, c);

	return k->kind == TASK_EXIT ? blocks__exit(&t->blocks, k->pid, k->tid) : 0;
}

struct timeline *timeline__new(const struct profile *p)
{
	struct timeline *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->p = p;
	t->c.sample = on_sample;
	t->c.task = on_task;
	blocks__init(&t->blocks, on_block, t);
	return t;
}

struct sample_consumer *timeline__consumer(struct timeline *t)
{
	return &t->c;
}

void timeline__free(struct timeline *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr; i++) {
		free(t->lanes[i].b);
		free(t->lanes[i].g);
		free(t->lanes[i].u);
	}
	free(t->lanes);
	hashmap__free(&t->idx);
	blocks__free(&t->blocks);
	free(t);
}

/*
 * The fields of a lane's arrays, in the order timeline__write() prints them
 * (b: a block, g: a bin of merged blocks, u: a summed total): the page finds
 * each by its name (DATA.layout; timeline/page.js, path.js), so the two
 * sides agree on one list.
 */
static const char *const block_fields[] = { "end", "dur", "state", "stack", "waker",
					    "chain", "wstack", "wtid", "flags", "since" };
static const char *const bin_fields[] = { "at", "sleep", "io", "preempted", "runqueue",
					  "other", "summed", "blocks", "ticks" };
static const char *const sum_fields[] = { "start", "end", "ns", "stack", "state", "waker",
					  "chain" };

static void layout_list(FILE *f, const char *key, const char *const *names, size_t n)
{
	size_t i;

	fprintf(f, "\"%s\": [", key);
	for (i = 0; i < n; i++)
		fprintf(f, "%s\"%s\"", i ? ", " : "", names[i]);
	fputc(']', f);
}

/*
 * @s as a JSON string in a <script>: escaped first as on a terminal
 * (str_escape: valid UTF-8, no control character), then '"' and '\' for
 * JSON and '<', '>', '&' as \u escapes, so no "</script>" or comment can
 * close the element.
 */
static void js_str(FILE *f, const char *s)
{
	char small[256], *e = small;
	size_t len = str_escape(small, sizeof(small), s), i;

	if (len >= sizeof(small)) {
		e = malloc(len + 1);
		if (!e) {
			fputs("\"\"", f);
			return;
		}
		str_escape(e, len + 1, s);
	}
	fputc('"', f);
	for (i = 0; i < len; i++) {
		switch (e[i]) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '<': fputs("\\u003c", f); break;
		case '>': fputs("\\u003e", f); break;
		case '&': fputs("\\u0026", f); break;
		default: fputc(e[i], f);
		}
	}
	fputc('"', f);
	if (e != small)
		free(e);
}

static int lanes_cmp_pid(const void *a, const void *b)
{
	const struct tl_lane *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if ((x->tid == x->pid) != (y->tid == y->pid))
		return x->tid == x->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}


int timeline__write(struct timeline *t, const char *title, FILE *f, struct timeline_stats *st)
{
	const struct profile *p = t->p;
	uint8_t *used_str = NULL, *used_stack = NULL;
	uint64_t pxw, arrows = 0, blocks = 0, merged = 0, merged_ns = 0;
	unsigned shift = FIRST_SHIFT;
	size_t i, k;
	uint32_t s;
	bool first;
	int err = 0;

	err = blocks__finish(&t->blocks);
	if (err)
		return err;
	/* the recording's start, when the session knows it, for the first summed intervals */
	if (p->start_time && p->start_time < t->t0)
		t->t0 = p->start_time;
	if (t->t1 <= t->t0)
		t->t1 = t->t0 + 1;
	pxw = (t->t1 - t->t0) / FULL_PX;
	while (shift < 62 && (1ull << shift) < pxw)
		shift++;
	for (i = 0; i < t->nr; i++) {
		err = coarsen(t, &t->lanes[i], shift);
		if (err)
			return err;
	}
	qsort(t->lanes, t->nr, sizeof(*t->lanes), lanes_cmp_pid);
	used_str = calloc(p->str.nr + 1, 1);
	used_stack = calloc(p->nr_stacks + 1, 1);
	if (!used_str || !used_stack) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < t->nr; i++) {
		const struct tl_lane *l = &t->lanes[i];

		if (l->comm < p->str.nr)
			used_str[l->comm] = 1;
		for (k = 0; k < l->nb; k++) {
			const struct tl_block *b = &l->b[k];

			if (b->stack < p->nr_stacks)
				used_stack[b->stack] = 1;
			if (b->wstack < p->nr_stacks)
				used_stack[b->wstack] = 1;
			if (b->waker < p->str.nr)
				used_str[b->waker] = 1;
			if (b->chain < p->str.nr)
				used_str[b->chain] = 1;
			arrows += b->wtid != 0;
		}
		for (k = 0; k < l->nu; k++) {
			if (l->u[k].stack < p->nr_stacks)
				used_stack[l->u[k].stack] = 1;
			if (l->u[k].waker < p->str.nr)
				used_str[l->u[k].waker] = 1;
			if (l->u[k].chain < p->str.nr)
				used_str[l->u[k].chain] = 1;
		}
		blocks += l->nb;
		merged += l->merged;
		merged_ns += l->merged_ns;
	}
	for (s = 0; s < p->nr_stacks; s++) {
		uint32_t nr, j;
		const uint32_t *fr;

		if (!used_stack[s])
			continue;
		fr = profile__stack_frames(p, s, &nr);
		for (j = 0; j < nr; j++)
			if (fr[j] < p->nr_frames && p->frames[fr[j]].sym < p->str.nr)
				used_str[p->frames[fr[j]].sym] = 1;
	}

	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n<title>", f);
	/* the title as HTML text: the JSON escaping leaves no '<' or '&' */
	{
		char *e = str_escape_dup(title ? title : "");

		for (const char *c = e ? e : ""; *c; c++) {
			if (*c == '<')
				fputs("&lt;", f);
			else if (*c == '&')
				fputs("&amp;", f);
			else if (*c == '>')
				fputs("&gt;", f);
			else
				fputc(*c, f);
		}
		free(e);
	}
	fputs(" - offcpu timeline</title>\n<script>\nvar DATA = {\n\"title\": ", f);
	js_str(f, title ? title : "");
	fprintf(f, ",\n\"t0\": %llu, \"span\": %llu, \"pxw\": %llu, \"fullpx\": %d,\n"
		"\"merged\": %llu, \"merged_ns\": %llu, \"untimed\": %llu, \"cap\": %d,\n",
		(unsigned long long)t->t0, (unsigned long long)(t->t1 - t->t0),
		(unsigned long long)(1ull << shift), FULL_PX, (unsigned long long)merged,
		(unsigned long long)merged_ns, (unsigned long long)t->blocks.untimed, TIMELINE_LANE_CAP);
	/* what the recording has: the page says what it lacks, and how to record it */
	fprintf(f, "\"summed\": %llu, \"wakers\": %d,\n", (unsigned long long)t->summed, p->has_wakers);
	fputs("\"layout\": {", f);
	layout_list(f, "b", block_fields, ARRAY_SIZE(block_fields));
	fputs(", ", f);
	layout_list(f, "g", bin_fields, ARRAY_SIZE(bin_fields));
	fputs(", ", f);
	layout_list(f, "u", sum_fields, ARRAY_SIZE(sum_fields));
	fputs("},\n", f);
	if (p->has_clock)
		fprintf(f, "\"wall\": %lld,\n",
			(long long)p->clock_wall_ns + ((long long)t->t0 - (long long)p->clock_mono_ns));
	/* strings: a sparse object by strtab index */
	fputs("\"str\": {", f);
	first = true;
	for (s = 0; s < p->str.nr; s++) {
		if (!used_str[s])
			continue;
		fprintf(f, "%s\"%u\":", first ? "" : ",", s);
		js_str(f, strtab__get(&p->str, s));
		first = false;
	}
	fputs("},\n\"stacks\": {", f);
	first = true;
	for (s = 0; s < p->nr_stacks; s++) {
		uint32_t nr, j;
		const uint32_t *fr;

		if (!used_stack[s])
			continue;
		fr = profile__stack_frames(p, s, &nr);
		fprintf(f, "%s\"%u\":[", first ? "" : ",\n", s);
		for (j = 0; j < nr; j++) {
			const struct profile_frame *fm = fr[j] < p->nr_frames ? &p->frames[fr[j]] : NULL;

			/* a frame: its name's string, negative for a kernel frame */
			fprintf(f, "%s%lld", j ? "," : "",
				!fm ? 0ll : fm->kernel ? -(long long)fm->sym - 1 : (long long)fm->sym);
		}
		fputc(']', f);
		first = false;
	}
	fputs("},\n\"lanes\": [\n", f);
	for (i = 0; i < t->nr; i++) {
		const struct tl_lane *l = &t->lanes[i];

		fprintf(f, "%s{\"pid\":%u,\"tid\":%u,\"comm\":%lld,\"w\":%llu,\"merged\":%llu,"
			"\"merged_ns\":%llu,\"sums_merged\":%d,\n\"b\":[", i ? ",\n" : "", l->pid,
			l->tid, l->comm < p->str.nr ? (long long)l->comm : -1ll,
			(unsigned long long)(1ull << l->shift), (unsigned long long)l->merged,
			(unsigned long long)l->merged_ns, l->sums_merged);
		/* block_fields: end, duration, state, stack, waker, chain, waker's stack,
		 * waker's tid, flags (BLOCK_*), since when (BLOCK_BEFORE; 0: not known;
		 * before t0: negative) */
		for (k = 0; k < l->nb; k++) {
			const struct tl_block *b = &l->b[k];

			fprintf(f, "%s%llu,%llu,%u,%lld,%lld,%lld,%lld,%u,%u,%lld", k ? "," : "",
				(unsigned long long)(b->end - t->t0), (unsigned long long)b->dur,
				b->state, b->stack < p->nr_stacks ? (long long)b->stack : -1ll,
				b->waker && b->waker < p->str.nr ? (long long)b->waker : -1ll,
				b->chain && b->chain < p->str.nr ? (long long)b->chain : -1ll,
				b->wstack < p->nr_stacks ? (long long)b->wstack : -1ll, b->wtid,
				b->flags, b->since ? (long long)b->since - (long long)t->t0 : 0ll);
		}
		/* bin_fields: bin start, S, D, preempted, runqueue, other ns, summed ns,
		 * blocks, ticks */
		fputs("],\n\"g\":[", f);
		for (k = 0; k < l->ng; k++) {
			const struct tl_bin *g = &l->g[k];
			uint64_t at = g->idx << l->shift;

			fprintf(f, "%s%lld,%llu,%llu,%llu,%llu,%llu,%llu,%u,%u", k ? "," : "",
				(long long)at - (long long)t->t0, (unsigned long long)g->ns[0],
				(unsigned long long)g->ns[1], (unsigned long long)g->ns[2],
				(unsigned long long)g->ns[3], (unsigned long long)g->ns[4],
				(unsigned long long)g->summed, g->blocks, g->ticks);
		}
		/* sum_fields: interval start, end, total, stack, state, waker, chain */
		fputs("],\n\"u\":[", f);
		for (k = 0; k < l->nu; k++) {
			const struct tl_sum *u = &l->u[k];

			fprintf(f, "%s%llu,%llu,%llu,%lld,%u,%lld,%lld", k ? "," : "",
				(unsigned long long)(u->start > t->t0 ? u->start - t->t0 : 0),
				(unsigned long long)(u->end - t->t0),
				(unsigned long long)u->ns,
				u->stack < p->nr_stacks ? (long long)u->stack : -1ll, u->state,
				u->waker && u->waker < p->str.nr ? (long long)u->waker : -1ll,
				u->chain && u->chain < p->str.nr ? (long long)u->chain : -1ll);
		}
		fputs("]}", f);
	}
	fputs("]};\n</script>\n<script>\n", f);
	fputs(timeline_path_js, f);
	fputs("</script>\n<style>\n", f);
	fputs(timeline_css, f);
	fputs("</style>\n</head>\n<body>\n", f);
	fputs(timeline_html, f);
	fputs("<script>\n", f);
	fputs(timeline_js, f);
	fputs("</script>\n</body></html>\n", f);
	if (fflush(f) || ferror(f))
		err = errno ? -errno : -EIO;
	if (st) {
		memset(st, 0, sizeof(*st));
		st->lanes = t->nr;
		st->blocks = blocks;
		st->merged = merged;
		st->merged_ns = merged_ns;
		st->summed = t->summed;
		st->ticks = t->ticks;
		st->arrows = arrows;
		st->untimed = t->blocks.untimed;
	}
out:
	free(used_str);
	free(used_stack);
	return err;
}

int timeline__save(struct timeline *t, const char *path, const char *title)
{
	struct timeline_stats st;
	struct outfile of = { 0 };
	FILE *fp;
	int err;

	if (!strcmp(path, "-")) {
		err = timeline__write(t, title, stdout, &st);
		if (err)
			pr_err("cannot write the timeline: %s", strerror(-err));
		return err;
	}
	err = outfile__open(&of, path, OUTFILE_DEVICE, 0644);
	if (err) {
		pr_err("%s", of.msg);
		outfile__free(&of);
		return err;
	}
	fp = fdopen(of.fd, "w");
	if (!fp) {
		err = -errno;
		pr_err("cannot write %s: %s", path, strerror(-err));
		goto discard;
	}
	of.fd = -1; /* fclose closes it */
	err = timeline__write(t, title, fp, &st);
	errno = 0;
	if (fclose(fp) && !err)
		err = errno ? -errno : -EIO;
	if (err) {
		pr_err("cannot write %s: %s", path, strerror(-err));
		goto discard;
	}
	err = outfile__commit(&of);
	if (err) {
		pr_err("%s", of.msg);
		outfile__free(&of);
		return err;
	}
	pr_info("timeline: %s: %llu threads, %llu blocks drawn, %llu merged into per-interval "
		"totals, %llu summed totals, %llu on-CPU samples, %llu wakeup arrows",
		of.final ? of.final : path, (unsigned long long)st.lanes,
		(unsigned long long)st.blocks, (unsigned long long)st.merged,
		(unsigned long long)st.summed, (unsigned long long)st.ticks,
		(unsigned long long)st.arrows);
	outfile__free(&of);
	return 0;
discard:
	outfile__discard(&of);
	outfile__free(&of);
	return err;
}
