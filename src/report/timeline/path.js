// SPDX-License-Identifier: GPL-2.0
/*
 * The critical path of a clicked block, computed in the timeline page from
 * its data: the walk of report --critical-path (critpath.c) on the lanes'
 * drawn blocks, so the page draws it across the lanes it passes through.
 * The page has less than the report: no on-CPU samples' stacks (a run is
 * "running"), and where a lane's short blocks are merged into per-interval
 * totals or summed, what the thread did is unknown, as a thread without a
 * lane in the page (filtered out). Each part of the wait is charged once:
 * the segments sum to the block's length.
 *
 * CritPath(lanes by tid, string lookup, DATA.layout)(lane, index) returns
 * { segs: [{ l, t0, t1, kind, state, who }], hops: [{ from, to, at }] }.
 */
'use strict';
/* the fields of a lane's arrays by name, from DATA.layout (their order is timeline.c's) */
var TimelineFields = function (names) {
  var f = { n: names.length };
  names.forEach(function (k, i) { f[k] = i; });
  return f;
};
var CritPath = function (byTid, str, layout) {
  var FB = TimelineFields(layout.b), FU = TimelineFields(layout.u), FG = TimelineFields(layout.g);
  var BS = FB.n, US = FU.n, GS = FG.n, RUNQ = 2, OPEN = 8, MAXD = 100000, MAXSTALL = 64;
  /* 1 + the index of the last block of l that began before t; 0: none */
  function before(l, t) {
    var lo = 0, hi = l.b.length / BS;
    while (lo < hi) { var m = (lo + hi) >> 1; if (l.b[m * BS + FB.end] - l.b[m * BS + FB.dur] < t) lo = m + 1; else hi = m; }
    return lo;
  }
  function seg(out, l, t0, t1, kind, state, who) {
    if (t1 > t0) out.segs.push({ l: l, t0: t0, t1: t1, kind: kind, state: state, who: who || '' });
  }
  /* l between its drawn blocks over [x, y): running, but where its short
     blocks were merged or summed, which hide when it waited */
  function run(out, l, x, y) {
    var unk = [], i, lo = 0, hi = l.g.length / GS;
    while (lo < hi) { var m = (lo + hi) >> 1; if (l.g[m * GS + FG.at] + l.w <= x) lo = m + 1; else hi = m; }
    for (i = lo * GS; i < l.g.length && l.g[i + FG.at] < y; i += GS)
      if (l.g[i + FG.blocks] || l.g[i + FG.summed]) unk.push([Math.max(x, l.g[i + FG.at]), Math.min(y, l.g[i + FG.at] + l.w), l.g[i + FG.blocks] ? 'merged' : 'summed']);
    for (i = 0; i < l.u.length; i += US)
      if (l.u[i + FU.start] < y && l.u[i + FU.end] > x) unk.push([Math.max(x, l.u[i + FU.start]), Math.min(y, l.u[i + FU.end]), 'summed']);
    unk.sort(function (p, q) { return p[0] - q[0]; });
    var cur = x;
    unk.forEach(function (u) {
      if (u[0] > cur) seg(out, l, cur, u[0], 'running', 0);
      if (u[1] > cur) seg(out, l, Math.max(cur, u[0]), u[1], 'unknown', 0, u[2] === 'merged' ? 'short blocks merged' : 'short blocks summed');
      cur = Math.max(cur, u[1]);
    });
    if (cur < y) seg(out, l, cur, y, 'running', 0);
  }
  /* the part [x, y) of block i of lane l, by what ended it; w: the walk it is in */
  function part(out, work, l, i, x, y, w) {
    var b = l.b, st = b[i + FB.state], fl = b[i + FB.flags];
    if (fl & RUNQ) return seg(out, l, x, y, 'runqueue', st);
    if (st === 1) return seg(out, l, x, y, 'preempted', st);
    if (fl & OPEN) return seg(out, l, x, y, 'not woken by the end', st);
    if (b[i + FB.wtid]) {
      var stall = w && y >= w.b ? w.stall + 1 : 0, depth = w ? w.depth + 1 : 1, wl = byTid[b[i + FB.wtid]];
      if (depth > MAXD || stall > MAXSTALL) return seg(out, l, x, y, 'unknown', st, 'not followed');
      /* the run queue's clock dates a wakeup late: where the waker had
         already stopped, the wakeup was by then (as the report does) */
      if (wl && y === b[i + FB.end]) {
        var k = before(wl, y), j = (k - 1) * BS;
        if (k && wl.b[j + FB.end] > y) {
          var at = Math.max(x, wl.b[j + FB.end] - wl.b[j + FB.dur]);
          seg(out, l, at, y, 'runqueue', 6);
          y = at;
          if (x >= y) return;
        }
      }
      out.hops.push({ from: l, to: wl, at: y });
      work.push({ l: wl, tid: b[i + FB.wtid], who: str(b[i + FB.waker]), a: x, b: y, depth: depth, stall: stall });
      return;
    }
    if (b[i + FB.waker] >= 0) return seg(out, l, x, y, 'woken by ' + str(b[i + FB.waker]), st, str(b[i + FB.waker]));
    seg(out, l, x, y, 'waker not recorded', st);
  }
  /* what lane w.l did over [w.a, w.b) */
  function walk(out, work, w) {
    var l = w.l, a = w.a, x = w.b, k;
    if (!l) return seg(out, null, a, x, 'unknown', 0, w.who + ' ' + w.tid + ': no lane in this page');
    for (k = before(l, x); x > a; k--) {
      var j = k ? (k - 1) * BS : -1, kend = j >= 0 ? Math.min(l.b[j + FB.end], x) : a;
      if (kend < a) kend = a;
      if (kend < x) { run(out, l, kend, x); x = kend; }
      if (j < 0 || x <= a) break;
      var s = l.b[j + FB.end] - l.b[j + FB.dur];
      if (s < x) { var s0 = Math.max(s, a); part(out, work, l, j, s0, x, w); x = s0; }
    }
  }
  return function (l, i) {
    var out = { segs: [], hops: [] }, work = [];
    part(out, work, l, i, l.b[i + FB.end] - l.b[i + FB.dur], l.b[i + FB.end], null);
    while (work.length) walk(out, work, work.pop());
    return out;
  };
};
