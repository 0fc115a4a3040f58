// SPDX-License-Identifier: GPL-2.0
/*
 * A self-contained interactive flame graph (SVG with inline script, nothing
 * fetched): root at the bottom, one tower per command, frames root first.
 * Click a frame to zoom into it, "Reset zoom" to go back, "Search" (or a
 * "#search=REGEX" URL fragment) to highlight matching frames and show their
 * share; hovering shows a frame's time (or samples) and percent. Off-CPU
 * events use a blue palette, sampling events a warm one; kernel frames are
 * coloured apart from user frames. With --wakers, a wait's waker is drawn
 * above it (past a "--" frame) in greens; with --states each tower stands on
 * its state ([S], [D], ...).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "profile.h"
#include "../util/util.h"

#define WIDTH 1200
#define FRAME_H 16
#define TOP 48
#define BOTTOM 34
#define PAD 10
#define MAX_DEPTH 1024

enum kind { K_ROOT, K_COMM, K_USER, K_KERNEL, K_INLINE, K_UNKNOWN, K_WAKER };

struct node {
	uint32_t name; /* strtab */
	uint8_t kind;
	uint32_t parent, first_child, next_sibling;
	uint32_t depth;
	uint64_t value, x; /* x: offset in value units from the left */
};

struct tree {
	struct node *n;
	uint32_t nr;
	size_t cap;
	struct hashmap idx;
};

static uint32_t child(struct tree *t, uint32_t parent, uint32_t name, uint8_t kind)
{
	uint32_t key[3] = { parent, name, kind };
	int created;
	uint64_t *v = hashmap__upsert(&t->idx, key, sizeof(key), &created);

	if (!v)
		return UINT32_MAX;
	if (created) {
		struct node *nd;

		if (grow_array((void **)&t->n, &t->cap, t->nr + 1, sizeof(*t->n)))
			return UINT32_MAX;
		nd = &t->n[t->nr];
		memset(nd, 0, sizeof(*nd));
		nd->name = name;
		nd->kind = kind;
		nd->parent = parent;
		nd->first_child = nd->next_sibling = UINT32_MAX;
		if (parent != UINT32_MAX) {
			nd->depth = t->n[parent].depth + 1;
			nd->next_sibling = t->n[parent].first_child;
			t->n[parent].first_child = t->nr;
		}
		*v = t->nr++;
	}
	return (uint32_t)*v;
}

static const struct profile *sort_p;
static struct tree *sort_t;

static int cmp_child(const void *a, const void *b)
{
	const struct node *x = &sort_t->n[*(const uint32_t *)a], *y = &sort_t->n[*(const uint32_t *)b];

	return strcmp(strtab__get(&sort_p->str, x->name), strtab__get(&sort_p->str, y->name));
}

/* Lay children out left to right in name order, as flame graphs do. */
static int layout(struct tree *t, const struct profile *p)
{
	uint32_t *kids = NULL, i;
	size_t cap = 0;
	int err = 0;

	sort_p = p;
	sort_t = t;
	/* parents come before children in creation order */
	for (i = 0; i < t->nr; i++) {
		uint32_t c, n = 0, k;
		uint64_t x = t->n[i].x;

		for (c = t->n[i].first_child; c != UINT32_MAX; c = t->n[c].next_sibling) {
			if (grow_array((void **)&kids, &cap, n + 1, sizeof(*kids))) {
				err = -ENOMEM;
				goto out;
			}
			kids[n++] = c;
		}
		if (n)
			qsort(kids, n, sizeof(*kids), cmp_child);
		for (k = 0; k < n; k++) {
			t->n[kids[k]].x = x;
			x += t->n[kids[k]].value;
		}
	}
out:
	free(kids);
	return err;
}

static uint32_t hash_name(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void color(const struct profile *p, const struct node *n, bool off, char *out)
{
	uint32_t h = hash_name(strtab__get(&p->str, n->name));
	unsigned v1 = h % 1000, v2 = (h / 1000) % 1000;
	int r, g, b;

	switch (n->kind) {
	case K_ROOT:
	case K_COMM:
		r = g = b = 170 + (int)(v1 % 40);
		break;
	case K_UNKNOWN:
		r = g = b = 210;
		break;
	case K_WAKER: /* greens: who woke the wait, above its "--" */
		r = 60 + (int)(v1 * 70 / 1000);
		g = 170 + (int)(v2 * 60 / 1000);
		b = 80 + (int)(v1 * 50 / 1000);
		break;
	case K_KERNEL: /* violet blue (off-CPU) or orange (on-CPU) */
		if (off) {
			r = 120 + (int)(v1 * 60 / 1000);
			g = 110 + (int)(v2 * 50 / 1000);
			b = 230;
		} else {
			r = 230;
			g = 120 + (int)(v1 * 70 / 1000);
			b = 40;
		}
		break;
	default: /* user: blues and aquas off-CPU, reds and yellows on-CPU */
		if (off) {
			r = 40 + (int)(v1 * 60 / 1000);
			g = 120 + (int)(v2 * 110 / 1000);
			b = 200 + (int)(v1 * 55 / 1000);
		} else {
			r = 205 + (int)(v1 * 50 / 1000);
			g = (int)(v2 * 230 / 1000);
			b = (int)(v1 * 55 / 1000);
		}
		if (n->kind == K_INLINE) {
			r += (255 - r) / 3;
			g += (255 - g) / 3;
			b += (255 - b) / 3;
		}
	}
	sprintf(out, "rgb(%d,%d,%d)", r, g, b);
}

/*
 * @s as XML text: escaped first as on a terminal (str_escape), which leaves
 * valid UTF-8 without a control character, all an XML parser accepts; at
 * most @max characters of it, the last two of them ".." when it is cut.
 */
static void xml(FILE *f, const char *s, size_t max)
{
	char small[256], *e = small;
	size_t len = str_escape(small, sizeof(small), s), chars = 0, keep, n = 0, at;

	if (len >= sizeof(small)) {
		e = malloc(len + 1);
		if (!e)
			return;
		str_escape(e, len + 1, s);
	}
	for (at = 0; at < len; at++)
		chars += ((unsigned char)e[at] & 0xc0) != 0x80; /* a character starts */
	keep = chars <= max ? chars : max >= 2 ? max - 2 : 0;
	for (at = 0; at < len; at++) {
		if (((unsigned char)e[at] & 0xc0) != 0x80 && n++ == keep)
			break;
		switch (e[at]) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(e[at], f);
		}
	}
	if (chars > max && max >= 2)
		fputs("..", f);
	if (e != small)
		free(e);
}

static const char script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"var W = WIDTH, PAD = 10, FH = 16, svg, details, matched, frames, zoomed = null;\n"
	"function fmt(v) { return UNIT === 'ms' ? (v / 1e6).toFixed(3) + ' ms' : v + ' samples'; }\n"
	"function pct(v) { return (100 * v / TOTAL).toFixed(2) + '%'; }\n"
	"function attr(g, k) { return +g.getAttribute('data-' + k); }\n"
	"function fit(g, w) {\n"
	"  var t = g.querySelector('text'), name = g.getAttribute('data-n'), n = Math.floor((w - 6) / 7);\n"
	"  t.textContent = n < 3 ? '' : name.length <= n ? name : name.substring(0, n - 2) + '..';\n"
	"}\n"
	"function place(g, x, w) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"  r.setAttribute('x', x); r.setAttribute('width', Math.max(w, 0)); t.setAttribute('x', x + 3); fit(g, w);\n"
	"}\n"
	"function zoom(g) {\n"
	"  var x0 = attr(g, 'x'), w0 = attr(g, 'v'), d0 = attr(g, 'd'), s = (W - 2 * PAD) / w0;\n"
	"  zoomed = g;\n"
	"  frames.forEach(function (f) {\n"
	"    var x = attr(f, 'x'), v = attr(f, 'v'), d = attr(f, 'd');\n"
	"    if (d >= d0 && x >= x0 && x + v <= x0 + w0) {\n"
	"      f.style.display = ''; f.classList.remove('parent'); place(f, PAD + (x - x0) * s, v * s);\n"
	"    } else if (d < d0 && x <= x0 && x + v >= x0 + w0) {\n"
	"      f.style.display = ''; f.classList.add('parent'); place(f, PAD, W - 2 * PAD);\n"
	"    } else f.style.display = 'none';\n"
	"  });\n"
	"  document.getElementById('unzoom').style.opacity = 1;\n"
	"}\n"
	"function unzoom() { zoom(frames[0]); zoomed = null; document.getElementById('unzoom').style.opacity = 0.3; }\n"
	"function search(re) {\n"
	"  var rx, spans = [], sum = 0, end = -1;\n"
	"  try { rx = new RegExp(re); } catch (e) { return; }\n"
	"  frames.forEach(function (f) {\n"
	"    var r = f.querySelector('rect');\n"
	"    if (!r.hasAttribute('data-fill')) r.setAttribute('data-fill', r.getAttribute('fill'));\n"
	"    if (re && rx.test(f.getAttribute('data-n'))) {\n"
	"      r.setAttribute('fill', 'rgb(230,0,230)'); f.classList.add('match');\n"
	"      spans.push([attr(f, 'x'), attr(f, 'x') + attr(f, 'v')]);\n"
	"    } else { r.setAttribute('fill', r.getAttribute('data-fill')); f.classList.remove('match'); }\n"
	"  });\n"
	"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  spans.forEach(function (s) {\n"
	"    if (s[0] >= end) { sum += s[1] - s[0]; end = s[1]; }\n"
	"    else if (s[1] > end) { sum += s[1] - end; end = s[1]; }\n"
	"  });\n"
	"  matched.textContent = re ? 'Matched: ' + pct(sum) + ' (' + fmt(sum) + ')' : '';\n"
	"  matched.setAttribute('data-value', sum);\n"
	"}\n"
	"function init() {\n"
	"  svg = document.documentElement;\n"
	"  details = document.getElementById('details');\n"
	"  matched = document.getElementById('matched');\n"
	"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"  frames.forEach(function (f) {\n"
	"    f.addEventListener('click', function () { zoom(f); });\n"
	"    f.addEventListener('mouseover', function () {\n"
	"      details.textContent = f.getAttribute('data-n') + ': ' + fmt(attr(f, 'v')) + ', ' + pct(attr(f, 'v'));\n"
	"    });\n"
	"    f.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  });\n"
	"  document.getElementById('unzoom').addEventListener('click', unzoom);\n"
	"  document.getElementById('search').addEventListener('click', function () {\n"
	"    var re = prompt('Search (regular expression):', '');\n"
	"    if (re !== null) search(re);\n"
	"  });\n"
	"  var m = /[#&]search=([^&]*)/.exec(location.hash);\n"
	"  if (m) search(decodeURIComponent(m[1]));\n"
	"  m = /[#&]zoom=([^&]*)/.exec(location.hash);\n"
	"  if (m) { var z = frames.filter(function (f) { return f.getAttribute('data-n') === decodeURIComponent(m[1]); });\n"
	"    if (z.length) zoom(z[0]); }\n"
	"  svg.setAttribute('data-ready', frames.length);\n"
	"}\n"
	"window.addEventListener('load', init);\n"
	"]]></script>\n";

int svg__write(const struct profile *p, int event, const char *title, FILE *f)
{
	const struct profile_event *ev = &p->events[event];
	struct tree t = { 0 };
	uint32_t i, root, maxd = 0, *frames = NULL, fcap = 0;
	uint64_t total;
	double scale;
	int err = 0, height;
	const char *unit = ev->offcpu ? "ms" : "samples";

	root = child(&t, UINT32_MAX, 0, K_ROOT); /* name 0 is "": shown as "all" */
	if (root == UINT32_MAX)
		return -ENOMEM;
	for (i = 0; i < p->nr_rows; i++) {
		const struct profile_row *r = &p->rows[i];
		uint64_t v = ev->offcpu ? r->period : r->count;
		uint32_t k, cur = root, comm_at;
		bool waker = false;
		int nr;

		if (r->event != (uint32_t)event || !v)
			continue;
		nr = profile__row_frames(p, r, &frames, &fcap, &comm_at);
		if (nr < 0) {
			err = nr;
			goto out;
		}
		for (k = 0; k <= (uint32_t)nr && cur != UINT32_MAX && k < MAX_DEPTH; k++) {
			const struct profile_frame *fm;
			uint8_t kind;

			if (k == comm_at) {
				cur = child(&t, cur, r->comm, K_COMM);
				continue;
			}
			fm = &p->frames[frames[k < comm_at ? k : k - 1]];
			/* the waker's frames, past "--", in colours of their own */
			waker |= frames[k < comm_at ? k : k - 1] == p->sep_frame;
			kind = fm->label ? K_COMM : waker ? K_WAKER : fm->kernel ? K_KERNEL :
			       fm->inlined ? K_INLINE : fm->dso == UINT32_MAX ? K_UNKNOWN : K_USER;
			cur = child(&t, cur, fm->sym, kind);
		}
		if (cur == UINT32_MAX) {
			err = -ENOMEM;
			goto out;
		}
		for (; cur != UINT32_MAX; cur = t.n[cur].parent)
			t.n[cur].value += v;
	}
	err = layout(&t, p);
	if (err)
		goto out;
	total = t.n[root].value;
	scale = total ? (double)(WIDTH - 2 * PAD) / (double)total : 0;
	for (i = 0; i < t.nr; i++)
		if (t.n[i].depth > maxd && t.n[i].value * scale >= 0.1)
			maxd = t.n[i].depth;
	height = TOP + (int)(maxd + 1) * FRAME_H + BOTTOM;
	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" data-total=\"%llu\" data-unit=\"%s\">\n",
		WIDTH, height, WIDTH, height, (unsigned long long)total, unit);
	fprintf(f, "<style>\n"
		"text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
		"g.f { cursor: pointer; } g.f:hover rect { stroke: black; stroke-width: 0.5; }\n"
		"g.parent rect { opacity: 0.5; } #title { font-size: 17px; }\n"
		".button { fill: rgb(0,0,200); cursor: pointer; }\n"
		"</style>\n");
	fprintf(f, "<script type=\"text/ecmascript\">var TOTAL = %llu, UNIT = '%s', WIDTH = %d;</script>\n",
		(unsigned long long)total, unit, WIDTH);
	fputs(script, f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", WIDTH, height,
		ev->offcpu ? "rgb(238,242,250)" : "rgb(250,246,236)");
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">%s flame graph: ",
		WIDTH / 2, ev->offcpu ? "Off-CPU" : "On-CPU");
	xml(f, strtab__get(&p->str, ev->name), 64);
	fputs(" (", f);
	xml(f, title, 128);
	fprintf(f, ")</text>\n");
	fprintf(f, "<text id=\"unzoom\" class=\"button\" x=\"%d\" y=\"24\" style=\"opacity:0.3\">"
		"Reset zoom</text>\n", PAD);
	fprintf(f, "<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\">Search</text>\n",
		WIDTH - PAD - 60);
	fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n", WIDTH - PAD - 260,
		height - 12);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", PAD, height - 12);
	for (i = 0; i < t.nr; i++) {
		const struct node *n = &t.n[i];
		double x = PAD + (double)n->x * scale, w = (double)n->value * scale;
		int y = TOP + (int)(maxd - n->depth) * FRAME_H;
		const char *name = n->kind == K_ROOT ? "all" : strtab__get(&p->str, n->name);
		char fill[32];
		size_t chars = w > 6 ? (size_t)((w - 6) / 7) : 0;

		if (w < 0.1 || !n->value)
			continue;
		color(p, n, ev->offcpu, fill);
		fprintf(f, "<g class=\"f\" data-n=\"");
		xml(f, name, 4096);
		if (n->kind == K_KERNEL)
			fputs("_[k]", f);
		fprintf(f, "\" data-x=\"%llu\" data-v=\"%llu\" data-d=\"%u\"><title>",
			(unsigned long long)n->x, (unsigned long long)n->value, n->depth);
		xml(f, name, 4096);
		if (ev->offcpu)
			fprintf(f, " (%.3f ms, %.2f%%)", n->value / 1e6,
				total ? 100.0 * (double)n->value / (double)total : 0);
		else
			fprintf(f, " (%llu samples, %.2f%%)", (unsigned long long)n->value,
				total ? 100.0 * (double)n->value / (double)total : 0);
		fprintf(f, "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
			"rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%d\">", x, y, w, FRAME_H - 1, fill,
			x + 3, y + 11);
		if (chars >= 3)
			xml(f, name, chars);
		fputs("</text></g>\n", f);
	}
	fputs("</svg>\n", f);
	if (ferror(f))
		err = -EIO;
out:
	free(frames);
	free(t.n);
	hashmap__free(&t.idx);
	return err;
}
