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
#include "timeline.h"
#include "../util/hashmap.h"
#include "../util/outfile.h"
#include "../util/util.h"

#define FIRST_SHIFT 10 /* 1024 ns */
/* perf record --off-cpu's samples of a task blocked at the end: a placeholder time */
#define PERF_OFFCPU_TIME (~0ULL << 32)
#define FULL_PX 2000 /* the full view's width in pixels, for what is narrower than one */
#define NR_CLASS 5 /* S, D, preempted, runqueue, other */

struct tl_block {
	uint64_t end, dur;
	uint32_t state, stack, waker, chain, wstack, wtid;
};

struct tl_bin {
	uint64_t idx; /* start / width */
	uint64_t ns[NR_CLASS]; /* merged blocks' time by state class */
	uint64_t summed; /* summed samples' time, once their own entries were merged */
	uint32_t blocks, ticks;
};

struct tl_sum {
	uint64_t start, end, ns;
	uint32_t stack, state;
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
	uint64_t flush_prev, flush_cur; /* the summed samples' last two interval ends */
	uint64_t untimed, ticks, summed;
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
		n += l->b[i].dur < (1ull << shift);
	if (n) {
		tmp = malloc(n * sizeof(*tmp));
		if (!tmp)
			return -ENOMEM;
		n = 0;
		for (i = 0; i < l->nb; i++) {
			if (l->b[i].dur < (1ull << shift)) {
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

static int on_sample(struct sample_consumer *c, const struct report_sample *s)
{
	struct timeline *t = consumer_of(c, struct timeline, c);
	struct tl_lane *l;
	int err = 0;

	if (!(s->flags & SAMPLE_ROWS) || s->role == SAMPLE_BEFORE)
		return 0;
	if (!(s->flags & SAMPLE_TIME) || !s->time || s->time >= PERF_OFFCPU_TIME ||
	    (s->role == SAMPLE_WAIT && s->period > s->time)) {
		t->untimed++;
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
	} else if (s->flags & SAMPLE_SUMMED) {
		struct tl_sum u = { .end = s->time, .ns = s->period, .stack = s->stack,
				    .state = s->state };

		if (s->time != t->flush_cur) {
			t->flush_prev = t->flush_cur;
			t->flush_cur = s->time;
		}
		/* the interval: since the drain before, else since the recording's start (0 here) */
		u.start = t->flush_prev && t->flush_prev < s->time ? t->flush_prev : 0;
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
		if (!t->t0 || s->time - s->period < t->t0)
			t->t0 = s->time - s->period;
	} else {
		struct tl_block b = { .end = s->time, .dur = s->period, .state = s->state,
				      .stack = s->stack, .waker = s->waker, .chain = s->chain,
				      .wstack = s->waker_stack, .wtid = s->waker_tid };

		/*
		 * A block split at its wakeup (record --state SDR): the run queue
		 * part comes right after it with the same time, the switch-in; the
		 * block itself ended where the run queue wait began.
		 */
		if (b.state == OFFCPU_STATE_RUNQ + 1 && l->nb && l->b[l->nb - 1].end == b.end &&
		    l->b[l->nb - 1].state != OFFCPU_STATE_RUNQ + 1 && b.dur < b.end)
			l->b[l->nb - 1].end -= b.dur;
		if (b.dur < (1ull << l->shift)) {
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
		}
		if (!t->t0 || s->time - s->period < t->t0)
			t->t0 = s->time - s->period;
	}
	if (s->time > t->t1)
		t->t1 = s->time;
	if (err)
		return err;
	if (lane_items(l) > TIMELINE_LANE_CAP)
		err = shrink(t, l, TIMELINE_LANE_CAP * 3 / 4);
	while (!err && t->items > TIMELINE_CAP) {
		struct tl_lane *big = &t->lanes[0];
		uint64_t before = t->items;
		size_t i;

		for (i = 1; i < t->nr; i++)
			if (lane_items(&t->lanes[i]) > lane_items(big))
				big = &t->lanes[i];
		err = shrink(t, big, lane_items(big) * 3 / 4);
		if (t->items >= before)
			break; /* more threads than the cap, each down to a bin or two */
	}
	return err;
}

struct timeline *timeline__new(const struct profile *p)
{
	struct timeline *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->p = p;
	t->c.sample = on_sample;
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
	free(t);
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

/* PAGE BEGIN */
static const char script[] =
	"<style>\n"
	"body { font: 13px Verdana, sans-serif; margin: 8px; color: #222; background: #fafafa; }\n"
	"h1 { font-size: 16px; margin: 0 0 4px 0; }\n"
	"#note, #help { color: #555; font-size: 12px; margin: 2px 0; }\n"
	"#legend span { display: inline-block; margin-right: 12px; }\n"
	"#legend i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: middle; }\n"
	"#wrap { position: relative; border: 1px solid #ccc; background: #fff; margin-top: 6px; }\n"
	"#labels { position: absolute; left: 0; top: 0; width: 210px; overflow: hidden; }\n"
	"#labels div { position: absolute; left: 4px; right: 4px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; font-size: 12px; }\n"
	"#labels div.proc { font-weight: bold; background: #eef; left: 0; right: 0; padding-left: 4px; }\n"
	"canvas { position: absolute; left: 210px; top: 0; cursor: grab; }\n"
	"#tip { position: fixed; pointer-events: none; background: #ffe; border: 1px solid #999; padding: 3px 5px; font-size: 12px; display: none; z-index: 9; max-width: 520px; white-space: pre-wrap; }\n"
	"#panels { display: flex; gap: 10px; margin-top: 8px; align-items: flex-start; }\n"
	"#details { flex: 0 0 36%; min-height: 60px; border: 1px solid #ccc; background: #fff; padding: 6px; overflow: auto; max-height: 560px; }\n"
	"#flamebox { flex: 1; border: 1px solid #ccc; background: #fff; padding: 6px; min-height: 60px; }\n"
	"#flame { position: relative; }\n"
	"#flame div { position: absolute; height: 17px; font-size: 11px; line-height: 17px; overflow: hidden; white-space: nowrap; border-right: 1px solid #fff; box-sizing: border-box; padding-left: 2px; cursor: pointer; }\n"
	"#details ol { margin: 2px 0 6px 0; padding-left: 28px; font-family: monospace; font-size: 12px; }\n"
	"#details h3 { margin: 0 0 4px 0; font-size: 14px; }\n"
	"button { font-size: 12px; }\n"
	"#top { font-family: monospace; font-size: 12px; white-space: pre; margin-top: 6px; }\n"
	"</style>\n"
	"</head>\n"
	"<body>\n"
	"<h1 id=\"title\"></h1>\n"
	"<div id=\"note\"></div>\n"
	"<div id=\"legend\"></div>\n"
	"<div id=\"help\">Wheel: zoom. Drag: pan. Click a block: its details. Shift-drag: a flame graph of that window. <button id=\"reset\">Reset zoom</button> <button id=\"viewflame\">Flame graph of this view</button></div>\n"
	"<div id=\"wrap\"><div id=\"labels\"></div><canvas id=\"tl\"></canvas></div>\n"
	"<div id=\"panels\"><div id=\"details\">Click a block for its stack, state, times and waker.</div>\n"
	"<div id=\"flamebox\"><div id=\"flamehead\">Shift-drag over the timeline for a flame graph of a window.</div><div id=\"flame\"></div><div id=\"top\"></div></div></div>\n"
	"<div id=\"tip\"></div>\n"
	"<script>\n"
	"'use strict';\n"
	"(function () {\n"
	"var D = DATA, AXIS = 22, LH = 20, PH = 18, LABW = 210;\n"
	"var COL = ['#4a86c8', '#d9534f', '#9b59b6', '#e8a33c', '#999999'];\n"
	"var CLN = ['S (sleep)', 'D (I/O, uninterruptible)', 'preempted', 'runqueue (woken, waiting for a CPU)', 'other'];\n"
	"var rows = [], lanes = [], byTid = {}, v0 = 0, v1 = Math.max(D.span, 1), W = 800, H = 100;\n"
	"var CH = 100, off = 0; /* the canvas covers the visible part of the lanes: CH high, from off */\n"
	"var cv = document.getElementById('tl'), cx = cv.getContext('2d'), sel = null, win = null, drag = null;\n"
	"var tip = document.getElementById('tip'), details = document.getElementById('details');\n"
	"\n"
	"function cls(st) { return st === 2 ? 0 : st === 3 ? 1 : st === 1 ? 2 : st === 6 ? 3 : 4; }\n"
	"function sname(st) { return ['?', 'preempted', 'S', 'D', 'T', 'I', 'runqueue'][st] || '?'; }\n"
	"function str(i) { return i < 0 || D.str[i] === undefined ? '' : D.str[i]; }\n"
	"function frames(s) {\n"
	"  var a = s < 0 ? [] : D.stacks[s] || [];\n"
	"  return a.map(function (x) { return x < 0 ? str(-x - 1) + ' [k]' : str(x) || '[unknown]'; });\n"
	"}\n"
	"function fmtD(ns) {\n"
	"  if (ns >= 1e9) return (ns / 1e9).toFixed(3) + ' s';\n"
	"  if (ns >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';\n"
	"  if (ns >= 1e3) return (ns / 1e3).toFixed(1) + ' us';\n"
	"  return Math.round(ns) + ' ns';\n"
	"}\n"
	"function fmtT(ns) {\n"
	"  var s = '+' + (ns / 1e6).toFixed(3) + ' ms';\n"
	"  if (D.wall !== undefined) {\n"
	"    var d = new Date((D.wall + ns) / 1e6);\n"
	"    s += ' (' + d.toISOString().substring(11, 23) + ' UTC)';\n"
	"  }\n"
	"  return s;\n"
	"}\n"
	"function waker(b) {\n"
	"  var w = str(b[4]);\n"
	"  if (!w) return '';\n"
	"  var c = str(b[5]);\n"
	"  return w + (b[7] ? ' (tid ' + b[7] + ')' : '') + (c ? ' <- ' + c.split(';').join(' <- ') : '');\n"
	"}\n"
	"\n"
	"function setup() {\n"
	"  var pid = -1, name = {};\n"
	"  D.lanes.forEach(function (l) {\n"
	"    var mx = 0, i;\n"
	"    for (i = 0; i < l.b.length; i += 8) mx = Math.max(mx, l.b[i + 1]);\n"
	"    l.maxdur = mx;\n"
	"    l.name = str(l.comm) || '?';\n"
	"    if (l.tid === l.pid || !(l.pid in name)) name[l.pid] = l.name;\n"
	"    lanes.push(l);\n"
	"    byTid[l.tid] = l;\n"
	"  });\n"
	"  lanes.forEach(function (l) {\n"
	"    if (l.pid !== pid) { rows.push({ proc: l.pid, name: name[l.pid] }); pid = l.pid; }\n"
	"    rows.push({ lane: l });\n"
	"  });\n"
	"  var y = AXIS, lab = document.getElementById('labels');\n"
	"  rows.forEach(function (r) {\n"
	"    var d = document.createElement('div');\n"
	"    r.y = y; r.h = r.lane ? LH : PH;\n"
	"    d.style.top = y + 'px'; d.style.height = r.h + 'px'; d.style.lineHeight = r.h + 'px';\n"
	"    if (r.lane) {\n"
	"      d.className = 'lane'; d.textContent = r.lane.name + ' ' + r.lane.tid;\n"
	"      d.setAttribute('data-tid', r.lane.tid); d.setAttribute('data-comm', r.lane.name);\n"
	"      d.title = r.lane.name + ', thread ' + r.lane.tid + ' of process ' + r.lane.pid;\n"
	"      r.lane.y = y;\n"
	"    } else {\n"
	"      d.className = 'proc'; d.textContent = r.name + ' (pid ' + r.proc + ')';\n"
	"    }\n"
	"    lab.appendChild(d);\n"
	"    y += r.h;\n"
	"  });\n"
	"  H = y + 4;\n"
	"  document.getElementById('title').textContent = 'offcpu timeline: ' + D.title;\n"
	"  var mb = 0, sm = 0;\n"
	"  lanes.forEach(function (l) { mb += l.merged; sm += l.u.length / 5; });\n"
	"  document.getElementById('note').textContent =\n"
	"    fmtD(D.span) + ' recorded, ' + lanes.length + ' threads. Blocks shorter than ' + fmtD(D.pxw) +\n"
	"    ' (a pixel of the full view), and the shortest of a thread with more than ' + D.cap +\n"
	"    ' items, are merged into per-interval totals, drawn as pale bars whose height is the share of the interval spent waiting: ' +\n"
	"    mb + ' blocks, ' + fmtD(D.merged_ns) + '. Summed short blocks (below the recording\\'s threshold) have no times of their own: a faint band over the interval they were summed in' +\n"
	"    (D.untimed ? '. ' + D.untimed + ' samples without a time are not shown.' : '.');\n"
	"  var lg = document.getElementById('legend');\n"
	"  CLN.forEach(function (n, i) {\n"
	"    var s = document.createElement('span'), b = document.createElement('i');\n"
	"    b.style.background = COL[i]; s.appendChild(b); s.appendChild(document.createTextNode(n)); lg.appendChild(s);\n"
	"  });\n"
	"  [['rgba(60,120,200,0.18)', 'summed short blocks (faint, by state)'], ['#2a2', 'on-CPU sample'], ['#333', 'wakeup: waker -> the end of the wait it ended']].forEach(function (x) {\n"
	"    var s = document.createElement('span'), b = document.createElement('i');\n"
	"    b.style.background = x[0]; s.appendChild(b); s.appendChild(document.createTextNode(x[1])); lg.appendChild(s);\n"
	"  });\n"
	"}\n"
	"\n"
	"function X(t) { return (t - v0) / (v1 - v0) * W; }\n"
	"function T(x) { return v0 + x / W * (v1 - v0); }\n"
	"\n"
	"function resize() {\n"
	"  var wrap = document.getElementById('wrap'), dpr = window.devicePixelRatio || 1;\n"
	"  W = Math.max(200, wrap.clientWidth - LABW);\n"
	"  CH = Math.min(H, Math.max(200, window.innerHeight));\n"
	"  wrap.style.height = H + 'px'; document.getElementById('labels').style.height = H + 'px';\n"
	"  cv.width = W * dpr; cv.height = CH * dpr; cv.style.width = W + 'px'; cv.style.height = CH + 'px';\n"
	"  cx.setTransform(dpr, 0, 0, dpr, 0, 0);\n"
	"  place();\n"
	"  draw();\n"
	"}\n"
	"\n"
	"/* the canvas where the window shows the lanes, however many there are */\n"
	"function place() {\n"
	"  var top = document.getElementById('wrap').getBoundingClientRect().top;\n"
	"  off = Math.max(0, Math.min(H - CH, -top));\n"
	"  cv.style.top = off + 'px';\n"
	"}\n"
	"\n"
	"function step(span) {\n"
	"  var raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;\n"
	"  return (m < 2 ? 1 : m < 5 ? 2 : 5) * p;\n"
	"}\n"
	"\n"
	"function axis(t, st) {\n"
	"  var div = st >= 1e9 ? 1e9 : st >= 1e6 ? 1e6 : st >= 1e3 ? 1e3 : 1;\n"
	"  return (t / div).toFixed(Math.max(0, -Math.floor(Math.log10(st / div) + 1e-9))) + ['ns', 'us', 'ms', 's'][Math.round(Math.log10(div) / 3)];\n"
	"}\n"
	"\n"
	"function first(l, t) { /* the first block of l ending at t or later */\n"
	"  var lo = 0, hi = l.b.length / 8;\n"
	"  while (lo < hi) { var m = (lo + hi) >> 1; if (l.b[m * 8] < t) lo = m + 1; else hi = m; }\n"
	"  return lo;\n"
	"}\n"
	"\n"
	"function draw() {\n"
	"  var i, k;\n"
	"  var st = step(v1 - v0), t, x;\n"
	"  cx.clearRect(0, 0, W, CH);\n"
	"  cx.save();\n"
	"  cx.translate(0, -off); /* lane coordinates from here */\n"
	"  cx.strokeStyle = '#ddd';\n"
	"  for (t = Math.ceil(v0 / st) * st; t <= v1; t += st) {\n"
	"    x = X(t);\n"
	"    cx.beginPath(); cx.moveTo(x + 0.5, off + AXIS); cx.lineTo(x + 0.5, off + CH); cx.stroke();\n"
	"  }\n"
	"  rows.forEach(function (r) {\n"
	"    if (r.y + r.h < off + AXIS || r.y > off + CH) return;\n"
	"    if (!r.lane) { cx.fillStyle = '#eef'; cx.fillRect(0, r.y, W, r.h); return; }\n"
	"    var l = r.lane, y = r.y, h = r.h - 2;\n"
	"    cx.fillStyle = '#eee'; cx.fillRect(0, y + r.h - 1, W, 1);\n"
	"    for (i = 0; i < l.u.length; i += 5) { /* summed: faint bands over their intervals */\n"
	"      if (l.u[i + 1] < v0 || l.u[i] > v1) continue;\n"
	"      cx.globalAlpha = Math.min(0.3, 0.08 + 0.22 * l.u[i + 2] / Math.max(1, l.u[i + 1] - l.u[i]));\n"
	"      cx.fillStyle = COL[cls(l.u[i + 4])]; /* by state, faint */\n"
	"      cx.fillRect(X(l.u[i]), y + 1, Math.max(1, X(l.u[i + 1]) - X(l.u[i])), h);\n"
	"      cx.globalAlpha = 1;\n"
	"    }\n"
	"    for (i = 0; i < l.g.length; i += 9) { /* merged: pale bars, height the share waited */\n"
	"      var g0 = l.g[i], g1 = g0 + l.w;\n"
	"      if (g1 < v0 || g0 > v1) continue;\n"
	"      var x0 = X(g0), w = Math.max(1, X(g1) - x0), tot = 0, best = 0;\n"
	"      for (k = 0; k < 5; k++) { tot += l.g[i + 1 + k]; if (l.g[i + 1 + k] > l.g[i + 1 + best]) best = k; }\n"
	"      if (l.g[i + 6]) { cx.fillStyle = 'rgba(60,120,200,0.18)'; cx.fillRect(x0, y + 1, w, h); }\n"
	"      if (tot) {\n"
	"        var hh = Math.max(2, h * Math.min(1, tot / l.w));\n"
	"        cx.globalAlpha = 0.55; cx.fillStyle = COL[best]; cx.fillRect(x0, y + 1 + h - hh, w, hh); cx.globalAlpha = 1;\n"
	"      }\n"
	"      if (l.g[i + 8]) { cx.fillStyle = '#2a2'; cx.fillRect(x0 + w / 2 - 0.5, y + h - 4, 1.5, 5); }\n"
	"    }\n"
	"    var d0 = [0, 0, 0, 0, 0], d1 = [-1e9, -1e9, -1e9, -1e9, -1e9], fill = -1;\n"
	"    for (i = first(l, v0) * 8; i < l.b.length && l.b[i] - l.maxdur <= v1; i += 8) {\n"
	"      var e = l.b[i], s = e - l.b[i + 1];\n"
	"      if (s > v1) continue;\n"
	"      var bx = X(s), bw = Math.max(1, X(e) - bx), c = cls(l.b[i + 2]);\n"
	"      /* a block within pixels already filled in its colour adds nothing */\n"
	"      /* (d0, d1: the pixels filled last in that colour, without a hole) */\n"
	"      if (bx >= d0[c] - 0.25 && bx + bw <= d1[c] + 0.25 && !(sel && sel.l === l && sel.i === i)) continue;\n"
	"      if (bx <= d1[c] + 0.25 && bx + bw >= d0[c] - 0.25) { d0[c] = Math.min(d0[c], bx); d1[c] = Math.max(d1[c], bx + bw); }\n"
	"      else { d0[c] = bx; d1[c] = bx + bw; }\n"
	"      if (c !== fill) { cx.fillStyle = COL[c]; fill = c; }\n"
	"      cx.fillRect(bx, y + 1, bw > 4 ? bw - 1 : bw, h); /* a gap between neighbours */\n"
	"      if (sel && sel.l === l && sel.i === i) {\n"
	"        cx.strokeStyle = '#000'; cx.lineWidth = 2; cx.strokeRect(bx, y + 1, bw, h); cx.lineWidth = 1; fill = -1;\n"
	"      }\n"
	"    }\n"
	"  });\n"
	"  arrows();\n"
	"  if (win) { /* the flame graph's window: marked on the axis, its edges across the lanes */\n"
	"    var w0 = X(win[0]), w1 = X(win[1]);\n"
	"    cx.strokeStyle = 'rgba(200,120,0,0.9)'; cx.setLineDash([4, 3]);\n"
	"    cx.beginPath(); cx.moveTo(w0 + 0.5, off); cx.lineTo(w0 + 0.5, off + CH); cx.moveTo(w1 - 0.5, off); cx.lineTo(w1 - 0.5, off + CH); cx.stroke();\n"
	"    cx.setLineDash([]);\n"
	"  }\n"
	"  cx.restore();\n"
	"  /* the time axis, on top however far the lanes are scrolled */\n"
	"  cx.fillStyle = '#f4f4f4'; cx.fillRect(0, 0, W, AXIS);\n"
	"  cx.fillStyle = '#333'; cx.strokeStyle = '#bbb'; cx.font = '11px Verdana, sans-serif';\n"
	"  for (t = Math.ceil(v0 / st) * st; t <= v1; t += st) {\n"
	"    x = X(t);\n"
	"    cx.beginPath(); cx.moveTo(x + 0.5, AXIS - 6); cx.lineTo(x + 0.5, AXIS); cx.stroke();\n"
	"    cx.fillText(axis(t, st), x + 2, 12);\n"
	"  }\n"
	"  if (win) { cx.fillStyle = 'rgba(255,170,0,0.45)'; cx.fillRect(X(win[0]), AXIS - 5, X(win[1]) - X(win[0]), 5); }\n"
	"}\n"
	"\n"
	"/* one redraw per frame however many wheel and move events came */\n"
	"var pending = false;\n"
	"function later() {\n"
	"  if (pending) return;\n"
	"  pending = true;\n"
	"  requestAnimationFrame(function () { pending = false; draw(); });\n"
	"}\n"
	"\n"
	"function arrow(x, y0, y1, strong) {\n"
	"  var d = y1 > y0 ? 1 : -1;\n"
	"  cx.strokeStyle = strong ? '#c00' : 'rgba(40,40,40,0.55)'; cx.lineWidth = strong ? 2 : 1;\n"
	"  cx.beginPath(); cx.moveTo(x - 6, y0); cx.quadraticCurveTo(x - 12, (y0 + y1) / 2, x, y1 - d * 3); cx.stroke();\n"
	"  cx.fillStyle = cx.strokeStyle;\n"
	"  cx.beginPath(); cx.moveTo(x, y1); cx.lineTo(x - 4, y1 - d * 7); cx.lineTo(x + 3, y1 - d * 6); cx.fill();\n"
	"  cx.lineWidth = 1;\n"
	"}\n"
	"\n"
	"function arrows() {\n"
	"  var n = 0, list = [];\n"
	"  lanes.forEach(function (l) {\n"
	"    for (var i = first(l, v0) * 8; i < l.b.length && l.b[i] <= v1; i += 8) {\n"
	"      var wl = l.b[i + 7] ? byTid[l.b[i + 7]] : null;\n"
	"      if (!wl || wl === l) continue;\n"
	"      list.push([l, i, wl]);\n"
	"    }\n"
	"  });\n"
	"  list.forEach(function (a) {\n"
	"    var l = a[0], i = a[1], strong = sel && sel.l === l && sel.i === i;\n"
	"    if (list.length > 3000 && !strong && X(l.b[i]) - X(l.b[i] - l.b[i + 1]) < 3) return;\n"
	"    arrow(X(l.b[i]), a[2].y + LH / 2, l.y + LH / 2, strong);\n"
	"    n++;\n"
	"  });\n"
	"  cv.setAttribute('data-arrows', n);\n"
	"}\n"
	"\n"
	"/* what is under a point: a block, else a summed band, else a merged bar */\n"
	"function hit(px, py) {\n"
	"  var r = null, i;\n"
	"  if (py < AXIS) return null;\n"
	"  py += off;\n"
	"  rows.forEach(function (x) { if (x.lane && py >= x.y && py < x.y + x.h) r = x; });\n"
	"  if (!r) return null;\n"
	"  var l = r.lane, t = T(px), slop = 3 * (v1 - v0) / W, best = null;\n"
	"  for (i = first(l, t - slop) * 8; i < l.b.length && l.b[i] - l.maxdur <= t + slop; i += 8) {\n"
	"    var e = l.b[i], s = e - l.b[i + 1];\n"
	"    if (s - slop <= t && t <= e + slop) {\n"
	"      var inside = s <= t && t <= e;\n"
	"      if (!best || (inside && !best.inside) || (inside === best.inside && l.b[i + 1] < l.b[best.i + 1]))\n"
	"        best = { l: l, i: i, inside: inside, kind: 'block' };\n"
	"    }\n"
	"  }\n"
	"  if (best) return best;\n"
	"  for (i = 0; i < l.u.length; i += 5)\n"
	"    if (l.u[i] <= t && t <= l.u[i + 1]) return { l: l, i: i, kind: 'summed', all: sumsAt(l, l.u[i + 1]) };\n"
	"  for (i = 0; i < l.g.length; i += 9)\n"
	"    if (l.g[i] - slop <= t && t <= l.g[i] + l.w + slop) return { l: l, i: i, kind: 'merged' };\n"
	"  return null;\n"
	"}\n"
	"\n"
	"/* the summed totals of a lane's interval ending at end: one per stack and state */\n"
	"function sumsAt(l, end) {\n"
	"  var out = [];\n"
	"  for (var i = 0; i < l.u.length; i += 5) if (l.u[i + 1] === end) out.push(i);\n"
	"  return out.sort(function (a, b) { return l.u[b + 2] - l.u[a + 2]; });\n"
	"}\n"
	"\n"
	"function el(tag, text, parent) {\n"
	"  var e = document.createElement(tag);\n"
	"  if (text !== undefined) e.textContent = text;\n"
	"  if (parent) parent.appendChild(e);\n"
	"  return e;\n"
	"}\n"
	"function stackList(s, parent) {\n"
	"  var f = frames(s), ol = el('ol', undefined, parent);\n"
	"  if (!f.length) el('li', '(no stack)', ol);\n"
	"  f.forEach(function (n) { el('li', n, ol); });\n"
	"  return ol;\n"
	"}\n"
	"\n"
	"function show(h) {\n"
	"  var l = h.l, i = h.i;\n"
	"  details.textContent = '';\n"
	"  if (h.kind === 'block') {\n"
	"    var b = l.b.slice(i, i + 8), s = b[0] - b[1];\n"
	"    el('h3', l.name + ' ' + l.tid + ' (pid ' + l.pid + '): ' + sname(b[2]) + ', ' + fmtD(b[1]), details);\n"
	"    el('div', 'state: ' + sname(b[2]) + ', duration ' + fmtD(b[1]), details);\n"
	"    el('div', 'start: ' + fmtT(s), details);\n"
	"    el('div', 'end: ' + fmtT(b[0]), details);\n"
	"    el('div', 'waker: ' + (waker(b) || (b[2] === 6 ? '(the run queue wait after a wakeup)' : 'not recorded')), details).className = 'waker';\n"
	"    if (b[5] >= 0) el('div', 'chain: ' + str(b[4]) + ' <- ' + str(b[5]).split(';').join(' <- '), details).className = 'chain';\n"
	"    el('div', 'stack (root first):', details);\n"
	"    stackList(b[3], details).className = 'stack';\n"
	"    if (b[6] >= 0) {\n"
	"      el('div', 'waker\\'s stack (root first):', details);\n"
	"      stackList(b[6], details).className = 'wstack';\n"
	"    }\n"
	"  } else if (h.kind === 'summed') {\n"
	"    var u = l.u.slice(i, i + 5), tot = 0;\n"
	"    h.all.forEach(function (j) { tot += l.u[j + 2]; });\n"
	"    el('h3', l.name + ' ' + l.tid + ': summed short blocks, ' + fmtD(tot), details);\n"
	"    el('div', 'in the interval ' + fmtT(u[0]) + ' .. ' + fmtT(u[1]) + ' (' + fmtD(u[1] - u[0]) + '); each shorter than the recording\\'s threshold, with no times of its own. By stack, most first:', details);\n"
	"    h.all.forEach(function (j) {\n"
	"      el('div', fmtD(l.u[j + 2]) + ' in ' + sname(l.u[j + 4]) + ', stack (root first):', details);\n"
	"      stackList(l.u[j + 3], details);\n"
	"    });\n"
	"  } else {\n"
	"    var g = l.g.slice(i, i + 9), parts = [];\n"
	"    for (var k = 0; k < 5; k++) if (g[1 + k]) parts.push(CLN[k].split(' ')[0] + ' ' + fmtD(g[1 + k]));\n"
	"    el('h3', l.name + ' ' + l.tid + ': ' + g[7] + ' merged blocks, ' + fmtD(g[1] + g[2] + g[3] + g[4] + g[5]), details);\n"
	"    el('div', 'in ' + fmtT(g[0]) + ' .. ' + fmtT(g[0] + l.w) + ': ' + (parts.join(', ') || 'no block') +\n"
	"      (g[6] ? '; summed ' + fmtD(g[6]) : '') + (g[8] ? '; ' + g[8] + ' on-CPU samples' : ''), details);\n"
	"    el('div', 'Blocks narrower than ' + fmtD(l.w) + ' are kept as totals per interval, without stacks.', details);\n"
	"  }\n"
	"}\n"
	"\n"
	"function tipText(h) {\n"
	"  var l = h.l, i = h.i;\n"
	"  if (h.kind === 'block') {\n"
	"    var b = l.b;\n"
	"    return l.name + ' ' + l.tid + ': ' + sname(b[i + 2]) + ' ' + fmtD(b[i + 1]) + '\\n' + (frames(b[i + 3]).slice(-1)[0] || '') +\n"
	"      (b[i + 4] >= 0 ? '\\nwoken by ' + waker(b.slice(i, i + 8)) : '');\n"
	"  }\n"
	"  if (h.kind === 'summed') {\n"
	"    var st = 0;\n"
	"    h.all.forEach(function (j) { st += l.u[j + 2]; });\n"
	"    return l.name + ' ' + l.tid + ': summed short blocks, ' + fmtD(st) + ' in ' + h.all.length + ' stacks over ' + fmtD(l.u[i + 1] - l.u[i]);\n"
	"  }\n"
	"  var g = l.g, tot = g[i + 1] + g[i + 2] + g[i + 3] + g[i + 4] + g[i + 5];\n"
	"  return l.name + ' ' + l.tid + ': ' + g[i + 7] + ' merged blocks, ' + fmtD(tot) + (g[i + 6] ? ', summed ' + fmtD(g[i + 6]) : '') +\n"
	"    (g[i + 8] ? ', ' + g[i + 8] + ' on-CPU samples' : '') + ' in ' + fmtD(l.w);\n"
	"}\n"
	"\n"
	"/* the flame graph of [a, b]: drawn blocks clipped to it, summed totals by their interval's share */\n"
	"function flame(a, b) {\n"
	"  var root = { n: 'all', v: 0, k: {} }, merged = 0, summed = 0, self = {};\n"
	"  function add(name, path, v) {\n"
	"    var node = root; root.v += v;\n"
	"    [name].concat(path).forEach(function (f) {\n"
	"      node = node.k[f] || (node.k[f] = { n: f, v: 0, k: {} }); node.v += v;\n"
	"    });\n"
	"    var leaf = path.length ? path[path.length - 1] : name;\n"
	"    self[leaf] = (self[leaf] || 0) + v;\n"
	"  }\n"
	"  lanes.forEach(function (l) {\n"
	"    var i;\n"
	"    for (i = first(l, a) * 8; i < l.b.length && l.b[i] - l.maxdur <= b; i += 8) {\n"
	"      var e = l.b[i], s = e - l.b[i + 1], o = Math.min(e, b) - Math.max(s, a);\n"
	"      if (o > 0) add(l.name, frames(l.b[i + 3]), o);\n"
	"    }\n"
	"    for (i = 0; i < l.u.length; i += 5) {\n"
	"      var len = Math.max(1, l.u[i + 1] - l.u[i]), ov = Math.min(l.u[i + 1], b) - Math.max(l.u[i], a);\n"
	"      if (ov > 0) { add(l.name, frames(l.u[i + 3]), l.u[i + 2] * ov / len); summed += l.u[i + 2] * ov / len; }\n"
	"    }\n"
	"    for (i = 0; i < l.g.length; i += 9) {\n"
	"      var og = Math.min(l.g[i] + l.w, b) - Math.max(l.g[i], a);\n"
	"      if (og > 0) merged += (l.g[i + 1] + l.g[i + 2] + l.g[i + 3] + l.g[i + 4] + l.g[i + 5] + l.g[i + 6]) * og / l.w;\n"
	"    }\n"
	"  });\n"
	"  document.getElementById('flamehead').textContent = 'Window ' + fmtT(a) + ' .. ' + fmtT(b) + ' (' + fmtD(b - a) + '): ' +\n"
	"    fmtD(root.v) + ' off-CPU in its blocks' + (summed ? ' (' + fmtD(summed) + ' of it summed, by each interval\\'s share)' : '') +\n"
	"    (merged ? '; ' + fmtD(merged) + ' in merged short blocks, whose stacks are not kept, is not in the graph' : '') + '. Click a frame to zoom into it.';\n"
	"  var box = document.getElementById('flame');\n"
	"  function render(top) {\n"
	"    box.textContent = '';\n"
	"    var bw = box.clientWidth || 600, maxd = 0;\n"
	"    function walk(n, x, d, w) {\n"
	"      if (w < 0.5) return;\n"
	"      maxd = Math.max(maxd, d);\n"
	"      var e = el('div', n.n, box);\n"
	"      e.style.left = x + 'px'; e.style.top = d * 18 + 'px'; e.style.width = w + 'px';\n"
	"      e.style.background = d === 0 ? '#ccc' : 'hsl(' + (200 + (n.n.length * 37) % 40) + ',60%,' + (62 + (n.n.length * 13) % 20) + '%)';\n"
	"      e.title = n.n + ': ' + fmtD(n.v) + ' (' + (100 * n.v / top.v).toFixed(2) + '%)';\n"
	"      e.onclick = function (ev) { ev.stopPropagation(); render(n === top ? root : n); };\n"
	"      var kids = Object.keys(n.k).sort(), cx0 = x;\n"
	"      kids.forEach(function (k) { var c = n.k[k], cw = w * c.v / n.v; walk(c, cx0, d + 1, cw); cx0 += cw; });\n"
	"    }\n"
	"    if (top.v > 0) walk(top, 0, 0, bw);\n"
	"    box.style.height = (maxd + 1) * 18 + 'px';\n"
	"  }\n"
	"  render(root);\n"
	"  var tops = Object.keys(self).sort(function (x, y) { return self[y] - self[x]; }).slice(0, 15);\n"
	"  document.getElementById('top').textContent = tops.length ? 'innermost frames, most time first:\\n' +\n"
	"    tops.map(function (n) { return ('          ' + fmtD(self[n])).slice(-12) + '  ' + n; }).join('\\n') : '';\n"
	"}\n"
	"\n"
	"function pos(ev) { var r = cv.getBoundingClientRect(); return [ev.clientX - r.left, ev.clientY - r.top]; }\n"
	"cv.addEventListener('wheel', function (ev) {\n"
	"  ev.preventDefault();\n"
	"  var p = pos(ev), t = T(p[0]), f = Math.exp(ev.deltaY * 0.002), span = (v1 - v0) * f;\n"
	"  span = Math.max(1000, Math.min(span, D.span * 4 + 1000));\n"
	"  v0 = t - (t - v0) * span / (v1 - v0); v1 = v0 + span; later();\n"
	"}, { passive: false });\n"
	"cv.addEventListener('mousedown', function (ev) {\n"
	"  var p = pos(ev);\n"
	"  drag = { x: p[0], y: p[1], v0: v0, v1: v1, shift: ev.shiftKey, moved: false };\n"
	"  if (ev.shiftKey) win = [T(p[0]), T(p[0])];\n"
	"  cv.style.cursor = ev.shiftKey ? 'col-resize' : 'grabbing';\n"
	"});\n"
	"window.addEventListener('mousemove', function (ev) {\n"
	"  var p = pos(ev);\n"
	"  if (drag) {\n"
	"    if (Math.abs(p[0] - drag.x) > 2 || Math.abs(p[1] - drag.y) > 2) drag.moved = true;\n"
	"    if (drag.shift) { var t0 = T(drag.x), t1 = T(p[0]); win = [Math.min(t0, t1), Math.max(t0, t1)]; }\n"
	"    else { var dv = (p[0] - drag.x) / W * (drag.v1 - drag.v0); v0 = drag.v0 - dv; v1 = drag.v1 - dv; }\n"
	"    later(); return;\n"
	"  }\n"
	"  var h = p[0] >= 0 && p[0] < W && p[1] >= 0 && p[1] < CH ? hit(p[0], p[1]) : null;\n"
	"  if (h) { tip.textContent = tipText(h); tip.style.display = 'block'; tip.style.left = ev.clientX + 12 + 'px'; tip.style.top = ev.clientY + 12 + 'px'; }\n"
	"  else tip.style.display = 'none';\n"
	"});\n"
	"window.addEventListener('mouseup', function (ev) {\n"
	"  if (!drag) return;\n"
	"  var p = pos(ev), d = drag;\n"
	"  drag = null; cv.style.cursor = 'grab';\n"
	"  if (d.shift && d.moved && win && win[1] > win[0]) { flame(win[0], win[1]); draw(); return; }\n"
	"  if (!d.moved) {\n"
	"    var h = hit(p[0], p[1]);\n"
	"    if (h) { sel = h.kind === 'block' ? h : null; show(h); draw(); }\n"
	"  }\n"
	"});\n"
	"document.getElementById('reset').onclick = function () { v0 = 0; v1 = Math.max(D.span, 1); draw(); };\n"
	"document.getElementById('viewflame').onclick = function () { win = [Math.max(0, v0), Math.min(D.span, v1)]; flame(win[0], win[1]); draw(); };\n"
	"window.addEventListener('resize', resize);\n"
	"window.addEventListener('scroll', function () { place(); later(); });\n"
	"\n"
	"/* for tests and scripts: a block's place on the page */\n"
	"window.TL = {\n"
	"  lanes: function () { return lanes.map(function (l) { return { pid: l.pid, tid: l.tid, comm: l.name, blocks: l.b.length / 8 }; }); },\n"
	"  blocks: function (tid) {\n"
	"    var l = byTid[tid], r = cv.getBoundingClientRect(), out = [];\n"
	"    if (!l) return out;\n"
	"    for (var i = 0; i < l.b.length; i += 8) {\n"
	"      var s = l.b[i] - l.b[i + 1];\n"
	"      out.push({ i: i / 8, end: l.b[i], dur: l.b[i + 1], state: sname(l.b[i + 2]), waker: str(l.b[i + 4]), wtid: l.b[i + 7],\n"
	"        frames: frames(l.b[i + 3]), x: r.left + (X(s) + X(l.b[i])) / 2, y: r.top + l.y - off + LH / 2 });\n"
	"    }\n"
	"    return out;\n"
	"  },\n"
	"  sums: function (tid) {\n"
	"    var l = byTid[tid], r = cv.getBoundingClientRect(), out = [];\n"
	"    if (!l) return out;\n"
	"    for (var i = 0; i < l.u.length; i += 5)\n"
	"      out.push({ start: l.u[i], end: l.u[i + 1], ns: l.u[i + 2], frames: frames(l.u[i + 3]),\n"
	"        x: r.left + (Math.max(X(l.u[i]), 0) + Math.min(X(l.u[i + 1]), W)) / 2, y: r.top + l.y - off + LH / 2 });\n"
	"    return out;\n"
	"  },\n"
	"  flame: flame,\n"
	"  draw: function () { var t = performance.now(); draw(); return performance.now() - t; }\n"
	"};\n"
	"setup();\n"
	"resize();\n"
	"document.body.setAttribute('data-ready', lanes.length);\n"
	"})();\n"
	"</script>\n"
	"</body></html>\n";
/* PAGE END */

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
		for (k = 0; k < l->nu; k++)
			if (l->u[k].stack < p->nr_stacks)
				used_stack[l->u[k].stack] = 1;
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
		(unsigned long long)merged_ns, (unsigned long long)t->untimed, TIMELINE_LANE_CAP);
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
		/* end, duration, state, stack, waker, chain, waker's stack, waker's tid */
		for (k = 0; k < l->nb; k++) {
			const struct tl_block *b = &l->b[k];

			fprintf(f, "%s%llu,%llu,%u,%lld,%lld,%lld,%lld,%u", k ? "," : "",
				(unsigned long long)(b->end - t->t0), (unsigned long long)b->dur,
				b->state, b->stack < p->nr_stacks ? (long long)b->stack : -1ll,
				b->waker && b->waker < p->str.nr ? (long long)b->waker : -1ll,
				b->chain && b->chain < p->str.nr ? (long long)b->chain : -1ll,
				b->wstack < p->nr_stacks ? (long long)b->wstack : -1ll, b->wtid);
		}
		/* bin start, S, D, preempted, runqueue, other ns, summed ns, blocks, ticks */
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
		/* summed: interval start, end, total, stack, state */
		fputs("],\n\"u\":[", f);
		for (k = 0; k < l->nu; k++) {
			const struct tl_sum *u = &l->u[k];

			fprintf(f, "%s%llu,%llu,%llu,%lld,%u", k ? "," : "",
				(unsigned long long)(u->start > t->t0 ? u->start - t->t0 : 0),
				(unsigned long long)(u->end - t->t0),
				(unsigned long long)u->ns,
				u->stack < p->nr_stacks ? (long long)u->stack : -1ll, u->state);
		}
		fputs("]}", f);
	}
	fputs("]};\n</script>\n", f);
	fputs(script, f);
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
		st->untimed = t->untimed;
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
