// SPDX-License-Identifier: GPL-2.0
/*
 * The timeline page's script (report --timeline): lanes, bars, arrows, zoom
 * and pan, the details panel with a clicked block's critical path drawn
 * across the lanes, and a window's flame graph, drawn from DATA, which
 * timeline.c writes before it, with CritPath (path.js). Nothing is fetched.
 * Embedded in offcpu at build time (timeline_assets.S).
 */
'use strict';
(function () {
var D = DATA, AXIS = 22, LH = 20, PH = 18, LABW = 210;
/* a lane's arrays: b its blocks, u its summed totals, g its merged bins, each a run of fields
   named by DATA.layout (timeline.c's one table of them) */
var FB = TimelineFields(D.layout.b), FU = TimelineFields(D.layout.u), FG = TimelineFields(D.layout.g);
var BS = FB.n, US = FU.n, GS = FG.n;
/* Okabe-Ito's colours, told apart with any colour vision: waiting (blue, vermillion), waiting for a CPU (green, orange) */
var COL = ['#0072b2', '#d55e00', '#009e73', '#e69f00', '#999999'], TICK = '#222', PATHC = '#cc00cc';
var BEFORE = 4, OPEN = 8; /* a block's flags: waiting since before the recording, still at its end */
var CLN = ['S (sleep)', 'D (I/O, uninterruptible)', 'preempted', 'runqueue (woken, waiting for a CPU)', 'other'];
var rows = [], lanes = [], byTid = {}, v0 = 0, v1 = Math.max(D.span, 1), W = 800, H = 100;
var CH = 100, off = 0; /* the canvas covers the visible part of the lanes: CH high, from off */
var cv = document.getElementById('tl'), cx = cv.getContext('2d'), sel = null, win = null, drag = null, cp = null;
var hatch = null; /* the pattern over the part of a wait before the recording */
var tip = document.getElementById('tip'), details = document.getElementById('details');

function cls(st) { return st === 2 ? 0 : st === 3 ? 1 : st === 1 ? 2 : st === 6 ? 3 : 4; }
function sname(st) { return ['?', 'preempted', 'S', 'D', 'T', 'I', 'runqueue'][st] || '?'; }
function str(i) { return i < 0 || D.str[i] === undefined ? '' : D.str[i]; }
function frames(s) {
  var a = s < 0 ? [] : D.stacks[s] || [];
  return a.map(function (x) { return x < 0 ? str(-x - 1) + ' [k]' : str(x) || '[unknown]'; });
}
function fmtD(ns) {
  if (ns >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
  if (ns >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
  if (ns >= 1e3) return (ns / 1e3).toFixed(1) + ' us';
  return Math.round(ns) + ' ns';
}
function fmtT(ns) {
  var s = (ns < 0 ? '-' : '+') + (Math.abs(ns) / 1e6).toFixed(3) + ' ms';
  if (D.wall !== undefined) {
    var d = new Date((D.wall + ns) / 1e6);
    s += ' (' + d.toISOString().substring(11, 23) + ' UTC)';
  }
  return s;
}
/* where block b (its numbers) began: since when, for a wait since before the recording */
function bstart(b, i) { return (b[i + FB.flags] & BEFORE) && b[i + FB.since] ? Math.min(b[i + FB.since], b[i + FB.end] - b[i + FB.dur]) : b[i + FB.end] - b[i + FB.dur]; }
function waker(b) {
  var w = str(b[FB.waker]);
  if (!w) return '';
  var c = str(b[FB.chain]);
  return w + (b[FB.wtid] ? ' (tid ' + b[FB.wtid] + ')' : '') + (c ? ' <- ' + c.split(';').join(' <- ') : '');
}

function setup() {
  var pid = -1, name = {};
  D.lanes.forEach(function (l) {
    var mx = 0, i;
    for (i = 0; i < l.b.length; i += BS) mx = Math.max(mx, l.b[i + FB.end] - bstart(l.b, i));
    l.maxdur = mx;
    l.name = str(l.comm) || '?';
    if (l.tid === l.pid || !(l.pid in name)) name[l.pid] = l.name;
    lanes.push(l);
    byTid[l.tid] = l;
  });
  lanes.forEach(function (l) {
    if (l.pid !== pid) { rows.push({ proc: l.pid, name: name[l.pid] }); pid = l.pid; }
    rows.push({ lane: l });
  });
  var y = AXIS, lab = document.getElementById('labels');
  rows.forEach(function (r) {
    var d = document.createElement('div');
    r.y = y; r.h = r.lane ? LH : PH;
    d.style.top = y + 'px'; d.style.height = r.h + 'px'; d.style.lineHeight = r.h + 'px';
    if (r.lane) {
      d.className = 'lane'; d.textContent = r.lane.name + ' ' + r.lane.tid;
      d.setAttribute('data-tid', r.lane.tid); d.setAttribute('data-comm', r.lane.name);
      d.title = r.lane.name + ', thread ' + r.lane.tid + ' of process ' + r.lane.pid;
      r.lane.y = y;
    } else {
      d.className = 'proc'; d.textContent = r.name + ' (pid ' + r.proc + ')';
    }
    lab.appendChild(d);
    y += r.h;
  });
  H = y + 4;
  document.getElementById('title').textContent = 'offcpu timeline: ' + D.title;
  var mb = 0, sm = 0, nb = 0, since = 0, i;
  lanes.forEach(function (l) {
    mb += l.merged; sm += l.u.length / US;
    for (i = 0; i < l.b.length; i += BS) if (l.b[i + FB.flags] & BEFORE) { nb++; since = Math.min(since, bstart(l.b, i)); }
  });
  /* a view from the earliest wait since before the recording, at most a recording's length before it */
  v0 = Math.max(since, -D.span);
  var note = document.getElementById('note'), lines = [
    fmtD(D.span) + ' recorded, ' + lanes.length + ' threads. Blocks shorter than ' + fmtD(D.pxw) +
    ' (a pixel of the full view), and the shortest of a thread with more than ' + D.cap +
    ' items, are merged into per-interval totals, drawn as pale bars whose height is the share of the interval spent waiting: ' +
    mb + ' blocks, ' + fmtD(D.merged_ns) + '.' + (D.untimed ? ' ' + D.untimed + ' samples without a time are not shown.' : '')];
  if (nb) lines.push(nb + ' threads were already waiting when the recording began: each such wait is one block from when it began, hatched before the recording.');
  /* what the recording lacks, and how to record it */
  if (D.summed) lines.push(D.summed + ' summed samples: short blocks (below the recording\'s --off-cpu-thresh) have no times of their own, drawn as a faint band over the interval they were summed in; offcpu record --off-cpu-thresh 0 writes each block with its times.');
  if (!D.wakers) lines.push('No wakers in this recording: no arrows, and the critical path of a block stops at it; offcpu record --wakers records who woke each wait.');
  if (D.summed || !D.wakers) lines.push('offcpu record --critical-path records all of it (every block with its times, wakers, preemption, on-CPU samples).');
  lines.forEach(function (t) { el('div', t, note); });
  var lg = document.getElementById('legend');
  CLN.forEach(function (n, i) {
    var s = document.createElement('span'), b = document.createElement('i');
    b.style.background = COL[i]; s.appendChild(b); s.appendChild(document.createTextNode(n)); lg.appendChild(s);
  });
  [['rgba(0,114,178,0.18)', 'summed short blocks (faint, by state)'], [TICK, 'on-CPU sample'], ['#333', 'wakeup: waker -> the end of the wait it ended'],
   ['repeating-linear-gradient(45deg,#0072b2 0 3px,#fff 3px 5px)', 'before the recording'], [PATHC, 'critical path of the clicked block']].forEach(function (x) {
    var s = document.createElement('span'), b = document.createElement('i');
    b.style.background = x[0]; s.appendChild(b); s.appendChild(document.createTextNode(x[1])); lg.appendChild(s);
  });
  var hc = document.createElement('canvas');
  hc.width = hc.height = 6;
  var hx = hc.getContext('2d');
  hx.strokeStyle = 'rgba(255,255,255,0.75)'; hx.lineWidth = 2;
  hx.beginPath(); hx.moveTo(0, 6); hx.lineTo(6, 0); hx.stroke();
  hatch = cx.createPattern(hc, 'repeat');
}

function X(t) { return (t - v0) / (v1 - v0) * W; }
function T(x) { return v0 + x / W * (v1 - v0); }

function resize() {
  var wrap = document.getElementById('wrap'), dpr = window.devicePixelRatio || 1;
  W = Math.max(200, wrap.clientWidth - LABW);
  CH = Math.min(H, Math.max(200, window.innerHeight));
  wrap.style.height = H + 'px'; document.getElementById('labels').style.height = H + 'px';
  cv.width = W * dpr; cv.height = CH * dpr; cv.style.width = W + 'px'; cv.style.height = CH + 'px';
  cx.setTransform(dpr, 0, 0, dpr, 0, 0);
  place();
  draw();
}

/* the canvas where the window shows the lanes, however many there are */
function place() {
  var top = document.getElementById('wrap').getBoundingClientRect().top;
  off = Math.max(0, Math.min(H - CH, -top));
  cv.style.top = off + 'px';
}

function step(span) {
  var raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
  return (m < 2 ? 1 : m < 5 ? 2 : 5) * p;
}

function axis(t, st) {
  var div = st >= 1e9 ? 1e9 : st >= 1e6 ? 1e6 : st >= 1e3 ? 1e3 : 1;
  return (t / div).toFixed(Math.max(0, -Math.floor(Math.log10(st / div) + 1e-9))) + ['ns', 'us', 'ms', 's'][Math.round(Math.log10(div) / 3)];
}

function first(l, t) { /* the first block of l ending at t or later */
  var lo = 0, hi = l.b.length / BS;
  while (lo < hi) { var m = (lo + hi) >> 1; if (l.b[m * BS + FB.end] < t) lo = m + 1; else hi = m; }
  return lo;
}

function draw() {
  var i, k;
  var st = step(v1 - v0), t, x;
  cx.clearRect(0, 0, W, CH);
  cx.save();
  cx.translate(0, -off); /* lane coordinates from here */
  cx.strokeStyle = '#ddd';
  for (t = Math.ceil(v0 / st) * st; t <= v1; t += st) {
    x = X(t);
    cx.beginPath(); cx.moveTo(x + 0.5, off + AXIS); cx.lineTo(x + 0.5, off + CH); cx.stroke();
  }
  rows.forEach(function (r) {
    if (r.y + r.h < off + AXIS || r.y > off + CH) return;
    if (!r.lane) { cx.fillStyle = '#eef'; cx.fillRect(0, r.y, W, r.h); return; }
    var l = r.lane, y = r.y, h = r.h - 2;
    cx.fillStyle = '#eee'; cx.fillRect(0, y + r.h - 1, W, 1);
    for (i = 0; i < l.u.length; i += US) { /* summed: faint bands over their intervals */
      if (l.u[i + FU.end] < v0 || l.u[i + FU.start] > v1) continue;
      cx.globalAlpha = Math.min(0.3, 0.08 + 0.22 * l.u[i + FU.ns] / Math.max(1, l.u[i + FU.end] - l.u[i + FU.start]));
      cx.fillStyle = COL[cls(l.u[i + FU.state])]; /* by state, faint */
      cx.fillRect(X(l.u[i + FU.start]), y + 1, Math.max(1, X(l.u[i + FU.end]) - X(l.u[i + FU.start])), h);
      cx.globalAlpha = 1;
    }
    for (i = 0; i < l.g.length; i += GS) { /* merged: pale bars, height the share waited */
      var g0 = l.g[i + FG.at], g1 = g0 + l.w;
      if (g1 < v0 || g0 > v1) continue;
      var x0 = X(g0), w = Math.max(1, X(g1) - x0), tot = 0, best = 0;
      for (k = 0; k < 5; k++) { tot += l.g[i + FG.sleep + k]; if (l.g[i + FG.sleep + k] > l.g[i + FG.sleep + best]) best = k; }
      if (l.g[i + FG.summed]) { cx.fillStyle = 'rgba(0,114,178,0.18)'; cx.fillRect(x0, y + 1, w, h); }
      if (tot) {
        var hh = Math.max(2, h * Math.min(1, tot / l.w));
        cx.globalAlpha = 0.55; cx.fillStyle = COL[best]; cx.fillRect(x0, y + 1 + h - hh, w, hh); cx.globalAlpha = 1;
      }
      if (l.g[i + FG.ticks]) { cx.fillStyle = TICK; cx.fillRect(x0 + w / 2 - 0.5, y + h - 4, 1.5, 5); }
    }
    var d0 = [0, 0, 0, 0, 0], d1 = [-1e9, -1e9, -1e9, -1e9, -1e9], fill = -1;
    for (i = first(l, v0) * BS; i < l.b.length && l.b[i + FB.end] - l.maxdur <= v1; i += BS) {
      var e = l.b[i + FB.end], s = bstart(l.b, i);
      if (s > v1) continue;
      var bx = X(s), bw = Math.max(1, X(e) - bx), c = cls(l.b[i + FB.state]);
      /* a block within pixels already filled in its colour adds nothing */
      /* (d0, d1: the pixels filled last in that colour, without a hole) */
      if (bx >= d0[c] - 0.25 && bx + bw <= d1[c] + 0.25 && !(sel && sel.l === l && sel.i === i)) continue;
      if (bx <= d1[c] + 0.25 && bx + bw >= d0[c] - 0.25) { d0[c] = Math.min(d0[c], bx); d1[c] = Math.max(d1[c], bx + bw); }
      else { d0[c] = bx; d1[c] = bx + bw; }
      if (c !== fill) { cx.fillStyle = COL[c]; fill = c; }
      cx.fillRect(bx, y + 1, bw > 4 ? bw - 1 : bw, h); /* a gap between neighbours */
      if (s < e - l.b[i + FB.dur]) { /* waiting since before the recording: that part hatched */
        cx.fillStyle = hatch; cx.fillRect(bx, y + 1, X(e - l.b[i + FB.dur]) - bx, h); fill = -1;
      }
      if (sel && sel.l === l && sel.i === i) {
        cx.strokeStyle = '#000'; cx.lineWidth = 2; cx.strokeRect(bx, y + 1, bw, h); cx.lineWidth = 1; fill = -1;
      }
    }
  });
  arrows();
  drawPath();
  if (win) { /* the flame graph's window: marked on the axis, its edges across the lanes */
    var w0 = X(win[0]), w1 = X(win[1]);
    cx.strokeStyle = 'rgba(200,120,0,0.9)'; cx.setLineDash([4, 3]);
    cx.beginPath(); cx.moveTo(w0 + 0.5, off); cx.lineTo(w0 + 0.5, off + CH); cx.moveTo(w1 - 0.5, off); cx.lineTo(w1 - 0.5, off + CH); cx.stroke();
    cx.setLineDash([]);
  }
  cx.restore();
  /* the time axis, on top however far the lanes are scrolled */
  cx.fillStyle = '#f4f4f4'; cx.fillRect(0, 0, W, AXIS);
  cx.fillStyle = '#333'; cx.strokeStyle = '#bbb'; cx.font = '11px Verdana, sans-serif';
  for (t = Math.ceil(v0 / st) * st; t <= v1; t += st) {
    x = X(t);
    cx.beginPath(); cx.moveTo(x + 0.5, AXIS - 6); cx.lineTo(x + 0.5, AXIS); cx.stroke();
    cx.fillText(axis(t, st), x + 2, 12);
  }
  if (win) { cx.fillStyle = 'rgba(255,170,0,0.45)'; cx.fillRect(X(win[0]), AXIS - 5, X(win[1]) - X(win[0]), 5); }
}

/* one redraw per frame however many wheel and move events came */
var pending = false;
function later() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(function () { pending = false; draw(); });
}

function arrow(x, y0, y1, strong) {
  var d = y1 > y0 ? 1 : -1;
  cx.strokeStyle = strong ? '#c00' : 'rgba(40,40,40,0.55)'; cx.lineWidth = strong ? 2 : 1;
  cx.beginPath(); cx.moveTo(x - 6, y0); cx.quadraticCurveTo(x - 12, (y0 + y1) / 2, x, y1 - d * 3); cx.stroke();
  cx.fillStyle = cx.strokeStyle;
  cx.beginPath(); cx.moveTo(x, y1); cx.lineTo(x - 4, y1 - d * 7); cx.lineTo(x + 3, y1 - d * 6); cx.fill();
  cx.lineWidth = 1;
}

function arrows() {
  var n = 0, list = [];
  lanes.forEach(function (l) {
    for (var i = first(l, v0) * BS; i < l.b.length && l.b[i + FB.end] <= v1; i += BS) {
      var wl = l.b[i + FB.wtid] ? byTid[l.b[i + FB.wtid]] : null;
      if (!wl || wl === l) continue;
      list.push([l, i, wl]);
    }
  });
  list.forEach(function (a) {
    var l = a[0], i = a[1], strong = sel && sel.l === l && sel.i === i;
    if (list.length > 3000 && !strong && X(l.b[i + FB.end]) - X(l.b[i + FB.end] - l.b[i + FB.dur]) < 3) return;
    arrow(X(l.b[i + FB.end]), a[2].y + LH / 2, l.y + LH / 2, strong);
    n++;
  });
  cv.setAttribute('data-arrows', n);
}

/* the clicked block's critical path: its segments outlined on their lanes, a line at each hop */
function drawPath() {
  var n = 0;
  if (!cp) { cv.setAttribute('data-path', 0); return; }
  cx.strokeStyle = PATHC; cx.fillStyle = 'rgba(204,0,204,0.22)'; cx.lineWidth = 2;
  /* a lane's touching segments outlined as one */
  var runs = [];
  cp.segs.filter(function (g) { return g.l && g.t1 >= v0 && g.t0 <= v1; })
    .sort(function (a, b) { return a.l.y - b.l.y || a.t0 - b.t0; }).forEach(function (g) {
      var r = runs[runs.length - 1];
      if (r && r.l === g.l && X(g.t0) - X(r.t1) < 1) r.t1 = Math.max(r.t1, g.t1);
      else runs.push({ l: g.l, t0: g.t0, t1: g.t1 });
      n++;
    });
  runs.forEach(function (r) {
    var x0 = X(r.t0), w = Math.max(1, X(r.t1) - x0);
    cx.fillRect(x0, r.l.y, w, 4);
    cx.strokeRect(x0, r.l.y + 1, w, LH - 2);
  });
  cp.hops.forEach(function (p) {
    if (!p.to || p.at < v0 || p.at > v1) return;
    cx.beginPath(); cx.moveTo(X(p.at), p.from.y + LH / 2); cx.lineTo(X(p.at), p.to.y + LH / 2); cx.stroke();
  });
  cx.lineWidth = 1;
  cv.setAttribute('data-path', n);
}

/* the path's time by lane, what it did and who ended it, most first */
function pathTotals(c) {
  var by = {}, out = [];
  c.segs.forEach(function (g) {
    var k = (g.l ? g.l.tid : 0) + '|' + g.kind + '|' + g.state;
    if (!by[k]) out.push(by[k] = { comm: g.l ? g.l.name : '', tid: g.l ? g.l.tid : 0, kind: g.kind, state: sname(g.state), who: g.who, ns: 0 });
    by[k].ns += g.t1 - g.t0;
  });
  return out.sort(function (a, b) { return b.ns - a.ns; });
}

/* what is under a point: a block, else a summed band, else a merged bar */
function hit(px, py) {
  var r = null, i;
  if (py < AXIS) return null;
  py += off;
  rows.forEach(function (x) { if (x.lane && py >= x.y && py < x.y + x.h) r = x; });
  if (!r) return null;
  var l = r.lane, t = T(px), slop = 3 * (v1 - v0) / W, best = null;
  for (i = first(l, t - slop) * BS; i < l.b.length && l.b[i + FB.end] - l.maxdur <= t + slop; i += BS) {
    var e = l.b[i + FB.end], s = bstart(l.b, i);
    if (s - slop <= t && t <= e + slop) {
      var inside = s <= t && t <= e;
      if (!best || (inside && !best.inside) || (inside === best.inside && l.b[i + FB.dur] < l.b[best.i + FB.dur]))
        best = { l: l, i: i, inside: inside, kind: 'block' };
    }
  }
  if (best) return best;
  for (i = 0; i < l.u.length; i += US)
    if (l.u[i + FU.start] <= t && t <= l.u[i + FU.end]) return { l: l, i: i, kind: 'summed', all: sumsAt(l, l.u[i + FU.end]) };
  for (i = 0; i < l.g.length; i += GS)
    if (l.g[i + FG.at] - slop <= t && t <= l.g[i + FG.at] + l.w + slop) return { l: l, i: i, kind: 'merged' };
  return null;
}

/* the summed totals of a lane's interval ending at end: one per stack and state */
function sumsAt(l, end) {
  var out = [];
  for (var i = 0; i < l.u.length; i += US) if (l.u[i + FU.end] === end) out.push(i);
  return out.sort(function (a, b) { return l.u[b + FU.ns] - l.u[a + FU.ns]; });
}

function el(tag, text, parent) {
  var e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function stackList(s, parent) {
  var f = frames(s), ol = el('ol', undefined, parent);
  if (!f.length) el('li', '(no stack)', ol);
  f.forEach(function (n) { el('li', n, ol); });
  return ol;
}

function show(h) {
  var l = h.l, i = h.i;
  details.textContent = '';
  if (h.kind === 'block') {
    var b = l.b.slice(i, i + BS), s = b[FB.end] - b[FB.dur];
    el('h3', l.name + ' ' + l.tid + ' (pid ' + l.pid + '): ' + sname(b[FB.state]) + ', ' + fmtD(b[FB.end] - bstart(b, 0)) + ((b[FB.flags] & BEFORE) && b[FB.since] ? ' (' + fmtD(b[FB.dur]) + ' of it in the recording)' : ''), details);
    el('div', 'state: ' + sname(b[FB.state]) + ', duration ' + fmtD(b[FB.dur]), details);
    if ((b[FB.flags] & BEFORE) && b[FB.since]) el('div', 'waiting since ' + fmtT(b[FB.since]) + ', ' + fmtD(s - b[FB.since]) + ' before the recording began (hatched); ' + fmtD(b[FB.end] - b[FB.since]) + ' in all', details).className = 'since';
    else if (b[FB.flags] & BEFORE) el('div', 'waiting since before the recording began (when, not known)', details).className = 'since';
    el('div', 'start: ' + fmtT(s) + ((b[FB.flags] & BEFORE) ? ' (the recording\'s start)' : ''), details);
    el('div', 'end: ' + fmtT(b[FB.end]) + ((b[FB.flags] & OPEN) ? ' (the recording\'s end: still waiting then)' : ''), details);
    el('div', 'waker: ' + (waker(b) || (b[FB.state] === 6 ? '(the run queue wait after a wakeup)' : 'not recorded')), details).className = 'waker';
    if (b[FB.chain] >= 0) el('div', 'chain: ' + str(b[FB.waker]) + ' <- ' + str(b[FB.chain]).split(';').join(' <- '), details).className = 'chain';
    el('div', 'stack (root first):', details);
    stackList(b[FB.stack], details).className = 'stack';
    if (b[FB.wstack] >= 0) {
      el('div', 'waker\'s stack (root first):', details);
      stackList(b[FB.wstack], details).className = 'wstack';
    }
    if (cp) {
      var tot = pathTotals(cp);
      el('h3', 'Critical path of this wait (' + fmtD(b[FB.dur]) + '), drawn across the lanes:', details);
      var ul = el('ol', undefined, details);
      ul.className = 'path';
      tot.slice(0, 15).forEach(function (x) {
        el('li', fmtD(x.ns) + '  ' + (x.comm ? x.comm + ' ' + x.tid : '') + '  ' + x.kind + (x.state !== '?' && x.kind.indexOf(x.state) < 0 ? ' (' + x.state + ')' : '') +
          (x.kind === 'unknown' ? ': ' + x.who : ''), ul);
      });
      if (tot.length > 15) el('li', (tot.length - 15) + ' more', ul);
    }
  } else if (h.kind === 'summed') {
    var u = l.u.slice(i, i + US), tot = 0;
    h.all.forEach(function (j) { tot += l.u[j + FU.ns]; });
    el('h3', l.name + ' ' + l.tid + ': summed short blocks, ' + fmtD(tot), details);
    el('div', 'in the interval ' + fmtT(u[FU.start]) + ' .. ' + fmtT(u[FU.end]) + ' (' + fmtD(u[FU.end] - u[FU.start]) + '); each shorter than the recording\'s threshold, with no times of its own (offcpu record --off-cpu-thresh 0 writes each).', details);
    var byw = {}, ws = [];
    h.all.forEach(function (j) {
      var w = str(l.u[j + FU.waker]), c = str(l.u[j + FU.chain]), k = w ? w + (c ? ' <- ' + c.split(';').join(' <- ') : '') : (D.wakers ? '[none]' : '');
      if (!k) return;
      if (!(k in byw)) { byw[k] = 0; ws.push(k); }
      byw[k] += l.u[j + FU.ns];
    });
    if (ws.length) {
      el('div', 'By waker, most first:', details);
      var wl = el('ol', undefined, details);
      wl.className = 'wakers';
      ws.sort(function (a, b) { return byw[b] - byw[a]; }).forEach(function (k) { el('li', fmtD(byw[k]) + '  ' + k, wl); });
    }
    el('div', 'By stack, most first:', details);
    h.all.forEach(function (j) {
      el('div', fmtD(l.u[j + FU.ns]) + ' in ' + sname(l.u[j + FU.state]) + (str(l.u[j + FU.waker]) ? ', woken by ' + str(l.u[j + FU.waker]) : '') + ', stack (root first):', details);
      stackList(l.u[j + FU.stack], details);
    });
  } else {
    var g = l.g.slice(i, i + 9), parts = [];
    for (var k = 0; k < 5; k++) if (g[FG.sleep + k]) parts.push(CLN[k].split(' ')[0] + ' ' + fmtD(g[FG.sleep + k]));
    el('h3', l.name + ' ' + l.tid + ': ' + g[FG.blocks] + ' merged blocks, ' + fmtD(g[FG.sleep] + g[FG.io] + g[FG.preempted] + g[FG.runqueue] + g[FG.other]), details);
    el('div', 'in ' + fmtT(g[FG.at]) + ' .. ' + fmtT(g[FG.at] + l.w) + ': ' + (parts.join(', ') || 'no block') +
      (g[FG.summed] ? '; summed ' + fmtD(g[FG.summed]) : '') + (g[FG.ticks] ? '; ' + g[FG.ticks] + ' on-CPU samples' : ''), details);
    el('div', 'Blocks narrower than ' + fmtD(l.w) + ' are kept as totals per interval, without stacks.', details);
  }
}

function tipText(h) {
  var l = h.l, i = h.i;
  if (h.kind === 'block') {
    var b = l.b;
    return l.name + ' ' + l.tid + ': ' + sname(b[i + FB.state]) + ' ' + fmtD(b[i + FB.end] - bstart(b, i)) + ((b[i + FB.flags] & BEFORE) ? ', since before the recording' : '') +
      ((b[i + FB.flags] & OPEN) ? ', still at its end' : '') + '\n' + (frames(b[i + FB.stack]).slice(-1)[0] || '') +
      (b[i + FB.waker] >= 0 ? '\nwoken by ' + waker(b.slice(i, i + BS)) : '');
  }
  if (h.kind === 'summed') {
    var st = 0;
    h.all.forEach(function (j) { st += l.u[j + FU.ns]; });
    return l.name + ' ' + l.tid + ': summed short blocks, ' + fmtD(st) + ' in ' + h.all.length + ' stacks over ' + fmtD(l.u[i + FU.end] - l.u[i + FU.start]);
  }
  var g = l.g, tot = g[i + FG.sleep] + g[i + FG.io] + g[i + FG.preempted] + g[i + FG.runqueue] + g[i + FG.other];
  return l.name + ' ' + l.tid + ': ' + g[i + FG.blocks] + ' merged blocks, ' + fmtD(tot) + (g[i + FG.summed] ? ', summed ' + fmtD(g[i + FG.summed]) : '') +
    (g[i + FG.ticks] ? ', ' + g[i + FG.ticks] + ' on-CPU samples' : '') + ' in ' + fmtD(l.w);
}

/* the flame graph of [a, b]: drawn blocks clipped to it, summed totals by their interval's share */
function flame(a, b) {
  var root = { n: 'all', v: 0, k: {} }, merged = 0, summed = 0, self = {};
  function add(name, path, v) {
    var node = root; root.v += v;
    [name].concat(path).forEach(function (f) {
      node = node.k[f] || (node.k[f] = { n: f, v: 0, k: {} }); node.v += v;
    });
    var leaf = path.length ? path[path.length - 1] : name;
    self[leaf] = (self[leaf] || 0) + v;
  }
  lanes.forEach(function (l) {
    var i;
    for (i = first(l, a) * BS; i < l.b.length && l.b[i + FB.end] - l.maxdur <= b; i += BS) {
      var e = l.b[i + FB.end], s = e - l.b[i + FB.dur], o = Math.min(e, b) - Math.max(s, a);
      if (o > 0) add(l.name, frames(l.b[i + FB.stack]), o);
    }
    for (i = 0; i < l.u.length; i += US) {
      var len = Math.max(1, l.u[i + FU.end] - l.u[i + FU.start]), ov = Math.min(l.u[i + FU.end], b) - Math.max(l.u[i + FU.start], a);
      if (ov > 0) { add(l.name, frames(l.u[i + FU.stack]), l.u[i + FU.ns] * ov / len); summed += l.u[i + FU.ns] * ov / len; }
    }
    for (i = 0; i < l.g.length; i += GS) {
      var og = Math.min(l.g[i + FG.at] + l.w, b) - Math.max(l.g[i + FG.at], a);
      if (og > 0) merged += (l.g[i + FG.sleep] + l.g[i + FG.io] + l.g[i + FG.preempted] + l.g[i + FG.runqueue] + l.g[i + FG.other] + l.g[i + FG.summed]) * og / l.w;
    }
  });
  document.getElementById('flamehead').textContent = 'Window ' + fmtT(a) + ' .. ' + fmtT(b) + ' (' + fmtD(b - a) + '): ' +
    fmtD(root.v) + ' off-CPU in its blocks' + (summed ? ' (' + fmtD(summed) + ' of it summed, by each interval\'s share)' : '') +
    (merged ? '; ' + fmtD(merged) + ' in merged short blocks, whose stacks are not kept, is not in the graph' : '') + '. Click a frame to zoom into it.';
  var box = document.getElementById('flame');
  function render(top) {
    box.textContent = '';
    var bw = box.clientWidth || 600, maxd = 0;
    function walk(n, x, d, w) {
      if (w < 0.5) return;
      maxd = Math.max(maxd, d);
      var e = el('div', n.n, box);
      e.style.left = x + 'px'; e.style.top = d * 18 + 'px'; e.style.width = w + 'px';
      e.style.background = d === 0 ? '#ccc' : 'hsl(' + (200 + (n.n.length * 37) % 40) + ',60%,' + (62 + (n.n.length * 13) % 20) + '%)';
      e.title = n.n + ': ' + fmtD(n.v) + ' (' + (100 * n.v / top.v).toFixed(2) + '%)';
      e.onclick = function (ev) { ev.stopPropagation(); render(n === top ? root : n); };
      var kids = Object.keys(n.k).sort(), cx0 = x;
      kids.forEach(function (k) { var c = n.k[k], cw = w * c.v / n.v; walk(c, cx0, d + 1, cw); cx0 += cw; });
    }
    if (top.v > 0) walk(top, 0, 0, bw);
    box.style.height = (maxd + 1) * 18 + 'px';
  }
  render(root);
  var tops = Object.keys(self).sort(function (x, y) { return self[y] - self[x]; }).slice(0, 15);
  document.getElementById('top').textContent = tops.length ? 'innermost frames, most time first:\n' +
    tops.map(function (n) { return ('          ' + fmtD(self[n])).slice(-12) + '  ' + n; }).join('\n') : '';
}

function pos(ev) { var r = cv.getBoundingClientRect(); return [ev.clientX - r.left, ev.clientY - r.top]; }
cv.addEventListener('wheel', function (ev) {
  ev.preventDefault();
  var p = pos(ev), t = T(p[0]), f = Math.exp(ev.deltaY * 0.002), span = (v1 - v0) * f;
  span = Math.max(1000, Math.min(span, D.span * 4 + 1000));
  v0 = t - (t - v0) * span / (v1 - v0); v1 = v0 + span; later();
}, { passive: false });
cv.addEventListener('mousedown', function (ev) {
  var p = pos(ev);
  drag = { x: p[0], y: p[1], v0: v0, v1: v1, shift: ev.shiftKey, moved: false };
  if (ev.shiftKey) win = [T(p[0]), T(p[0])];
  cv.style.cursor = ev.shiftKey ? 'col-resize' : 'grabbing';
});
window.addEventListener('mousemove', function (ev) {
  var p = pos(ev);
  if (drag) {
    if (Math.abs(p[0] - drag.x) > 2 || Math.abs(p[1] - drag.y) > 2) drag.moved = true;
    if (drag.shift) { var t0 = T(drag.x), t1 = T(p[0]); win = [Math.min(t0, t1), Math.max(t0, t1)]; }
    else { var dv = (p[0] - drag.x) / W * (drag.v1 - drag.v0); v0 = drag.v0 - dv; v1 = drag.v1 - dv; }
    later(); return;
  }
  var h = p[0] >= 0 && p[0] < W && p[1] >= 0 && p[1] < CH ? hit(p[0], p[1]) : null;
  if (h) { tip.textContent = tipText(h); tip.style.display = 'block'; tip.style.left = ev.clientX + 12 + 'px'; tip.style.top = ev.clientY + 12 + 'px'; }
  else tip.style.display = 'none';
});
window.addEventListener('mouseup', function (ev) {
  if (!drag) return;
  var p = pos(ev), d = drag;
  drag = null; cv.style.cursor = 'grab';
  if (d.shift && d.moved && win && win[1] > win[0]) { flame(win[0], win[1]); draw(); return; }
  if (!d.moved) {
    var h = hit(p[0], p[1]);
    if (h) { sel = h.kind === 'block' ? h : null; cp = sel ? path(sel.l, sel.i) : null; show(h); draw(); }
  }
});
var v00 = 0; /* the first view's start */
document.getElementById('reset').onclick = function () { v0 = v00; v1 = Math.max(D.span, 1); draw(); };
document.getElementById('viewflame').onclick = function () { win = [Math.max(0, v0), Math.min(D.span, v1)]; flame(win[0], win[1]); draw(); };
window.addEventListener('resize', resize);
window.addEventListener('scroll', function () { place(); later(); });

/* for tests and scripts: a block's place on the page */
window.TL = {
  lanes: function () { return lanes.map(function (l) { return { pid: l.pid, tid: l.tid, comm: l.name, blocks: l.b.length / BS }; }); },
  blocks: function (tid) {
    var l = byTid[tid], r = cv.getBoundingClientRect(), out = [];
    if (!l) return out;
    for (var i = 0; i < l.b.length; i += BS) {
      var s = l.b[i + FB.end] - l.b[i + FB.dur];
      out.push({ i: i / BS, end: l.b[i + FB.end], dur: l.b[i + FB.dur], state: sname(l.b[i + FB.state]), waker: str(l.b[i + FB.waker]), wtid: l.b[i + FB.wtid],
        before: !!(l.b[i + FB.flags] & BEFORE), open: !!(l.b[i + FB.flags] & OPEN), since: (l.b[i + FB.flags] & BEFORE) ? l.b[i + FB.since] : null,
        frames: frames(l.b[i + FB.stack]), x: r.left + (X(s) + X(l.b[i + FB.end])) / 2, y: r.top + l.y - off + LH / 2,
        x0: r.left + X(bstart(l.b, i)), x1: r.left + X(l.b[i + FB.end]) });
    }
    return out;
  },
  sums: function (tid) {
    var l = byTid[tid], r = cv.getBoundingClientRect(), out = [];
    if (!l) return out;
    for (var i = 0; i < l.u.length; i += US)
      out.push({ start: l.u[i + FU.start], end: l.u[i + FU.end], ns: l.u[i + FU.ns], frames: frames(l.u[i + FU.stack]),
        x: r.left + (Math.max(X(l.u[i + FU.start]), 0) + Math.min(X(l.u[i + FU.end]), W)) / 2, y: r.top + l.y - off + LH / 2 });
    return out;
  },
  flame: flame,
  /* the critical path of block i of thread tid: its time by lane and kind */
  path: function (tid, i) { var l = byTid[tid]; return l ? pathTotals(path(l, i * BS)) : []; },
  view: function () { return [v0, v1]; },
  t0: D.t0,
  draw: function () { var t = performance.now(); draw(); return performance.now() - t; }
};
var path = CritPath(byTid, str, D.layout);
setup();
v00 = v0;
resize();
document.body.setAttribute('data-ready', lanes.length);
})();
