/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An off-CPU timeline as one self-contained HTML page (report --timeline):
 * a lane per thread, grouped by process, each streamed block a bar at its
 * real times coloured by state, on-CPU samples as ticks, summed short
 * blocks as faint per-interval bands, an arrow from each waking thread to
 * the end of the block it ended; zoom, pan, a details panel per block and a
 * flame graph of a selected window, computed in the page. Script and style
 * are inline; nothing is fetched.
 *
 * A consumer of the session's stream (stream.h) that keeps only the samples
 * the filters let through (SAMPLE_ROWS). Memory is bounded: each lane holds
 * at most TIMELINE_LANE_CAP drawn items and all lanes TIMELINE_CAP; past
 * that, and for blocks narrower than a pixel of the full view, a lane's
 * short blocks are merged into per-interval totals (the page says so).
 */
#ifndef OFFCPU_REPORT_TIMELINE_H
#define OFFCPU_REPORT_TIMELINE_H

#include <stdint.h>
#include <stdio.h>
#include "profile.h"
#include "stream.h"

#define TIMELINE_LANE_CAP 20000
#define TIMELINE_CAP 400000

struct timeline;

struct timeline_stats {
	uint64_t lanes, blocks, merged, merged_ns, summed, ticks, arrows, untimed;
};

/* A timeline of @p's session (@p is read when writing); NULL when out of memory. */
struct timeline *timeline__new(const struct profile *p);
/* The consumer to hand the session (session__load_with()). */
struct sample_consumer *timeline__consumer(struct timeline *t);
/* The page, titled @title, to @f. 0 or -errno. */
int timeline__write(struct timeline *t, const char *title, FILE *f, struct timeline_stats *st);
/*
 * The page to @path ("-": stdout) through outfile (no symlink followed, no
 * other user's file replaced); messages printed. 0 or -errno.
 */
int timeline__save(struct timeline *t, const char *path, const char *title);
void timeline__free(struct timeline *t);

/*
 * The page's assets (src/report/timeline/, embedded by timeline_assets.S):
 * its style, its body's markup, its script, and the critical path's walk
 * in the page, a script of its own before it.
 */
extern const char timeline_css[], timeline_html[], timeline_js[], timeline_path_js[];

#endif
