// SPDX-License-Identifier: GPL-2.0
// Unit tests of the timeline page's scripts (src/report/timeline/), with
// node's own test runner, no browser: the data layout that offcpu writes and
// the page reads, and the critical path's walk in the page.
//   TIMELINE_HTML=page.html node --test timeline_units.test.js
// TIMELINE_HTML is a page offcpu report --timeline wrote (its DATA is read
// back against the layout it declares); without it those tests are skipped.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const vm = require('vm');

const SRC = path.join(__dirname, '../../src/report/timeline');
const pathJs = fs.readFileSync(path.join(SRC, 'path.js'), 'utf8');
const pageJs = fs.readFileSync(path.join(SRC, 'page.js'), 'utf8');

// path.js in a context of its own: TimelineFields and CritPath, as the page has them
function load() {
	const ctx = {};
	vm.createContext(ctx);
	vm.runInContext(pathJs + '\nthis.TimelineFields = TimelineFields; this.CritPath = CritPath;', ctx);
	return ctx;
}

// DATA from a page offcpu wrote
function pageData(file) {
	const html = fs.readFileSync(file, 'utf8');
	const a = html.indexOf('var DATA = ');
	const b = html.indexOf('};\n</script>', a);
	assert.ok(a >= 0 && b > a, 'the page holds DATA');
	return JSON.parse(html.slice(a + 'var DATA = '.length, b + 1));
}

const LAYOUT = {
	b: ['end', 'dur', 'state', 'stack', 'waker', 'chain', 'wstack', 'wtid', 'flags', 'since'],
	g: ['at', 'sleep', 'io', 'preempted', 'runqueue', 'other', 'summed', 'blocks', 'ticks'],
	u: ['start', 'end', 'ns', 'stack', 'state', 'waker', 'chain'],
};

test('every field the scripts read is one the layout names', () => {
	const used = { FB: new Set(), FU: new Set(), FG: new Set() };
	for (const src of [pathJs, pageJs])
		for (const m of src.matchAll(/\b(FB|FU|FG)\.([a-z]+)\b/g))
			if (m[2] !== 'n') used[m[1]].add(m[2]);
	assert.ok(used.FB.size >= 8 && used.FU.size >= 5 && used.FG.size >= 5, 'the scripts read fields by name');
	for (const f of used.FB) assert.ok(LAYOUT.b.includes(f), 'block field ' + f);
	for (const f of used.FU) assert.ok(LAYOUT.u.includes(f), 'summed field ' + f);
	for (const f of used.FG) assert.ok(LAYOUT.g.includes(f), 'bin field ' + f);
	// the five classes of a bin are read as a run from "sleep"
	assert.deepStrictEqual(LAYOUT.g.slice(LAYOUT.g.indexOf('sleep'), LAYOUT.g.indexOf('sleep') + 5),
		['sleep', 'io', 'preempted', 'runqueue', 'other']);
	// no field read by its position any more
	for (const src of [pathJs, pageJs])
		assert.ok(!/\b(l\.b|l\.u|l\.g)\[i \+ \d\]/.test(src), 'a field read by its position');
});

test('TimelineFields numbers a layout', () => {
	const { TimelineFields } = load();
	const f = TimelineFields(LAYOUT.b);
	assert.strictEqual(f.n, 10);
	assert.strictEqual(f.end, 0);
	assert.strictEqual(f.since, 9);
	assert.strictEqual(f.wtid, 7);
});

// A lane of blocks from objects, in the layout's order
function lane(tid, blocks, layout) {
	const b = [];
	for (const o of blocks)
		for (const k of layout.b) b.push(o[k] === undefined ? (k === 'waker' || k === 'chain' || k === 'stack' || k === 'wstack' ? -1 : 0) : o[k]);
	return { pid: 1, tid: tid, b: b, g: [], u: [], w: 1000 };
}

test('the page\'s critical path: a wait woken by a thread that slept to a timer, then ran', () => {
	const { CritPath } = load();
	// A waits [0, 100) and is woken by B (tid 2); B slept [0, 60) to a timer, then ran
	const a = lane(1, [{ end: 100, dur: 100, state: 2, waker: 1, wtid: 2 }], LAYOUT);
	const b = lane(2, [{ end: 60, dur: 60, state: 2, waker: 0 }], LAYOUT);
	const byTid = { 1: a, 2: b };
	const str = (i) => ['', 'A', 'timer'][i] || '';
	const out = CritPath(byTid, str, LAYOUT)(a, 0);
	const total = out.segs.reduce((s, x) => s + (x.t1 - x.t0), 0);
	assert.strictEqual(total, 100, 'every instant of the wait once');
	const ran = out.segs.filter((x) => x.l === b && x.kind === 'running').reduce((s, x) => s + x.t1 - x.t0, 0);
	const slept = out.segs.filter((x) => x.l === b && x.kind !== 'running').reduce((s, x) => s + x.t1 - x.t0, 0);
	assert.strictEqual(ran, 40, 'B ran its last 40');
	assert.strictEqual(slept, 60, 'B\'s own wait: 60');
	// (built in path.js's context: compared as text)
	assert.strictEqual(JSON.stringify(out.hops.map((h) => [h.from.tid, h.to.tid, h.at])), '[[1,2,100]]');
});

test('the page\'s critical path: a lane not in the page is unknown, and said', () => {
	const { CritPath } = load();
	const a = lane(1, [{ end: 50, dur: 50, state: 2, waker: 1, wtid: 9 }], LAYOUT);
	const out = CritPath({ 1: a }, (i) => ['', 'gone'][i] || '', LAYOUT)(a, 0);
	assert.strictEqual(out.segs.length, 1);
	assert.strictEqual(out.segs[0].kind, 'unknown');
	assert.strictEqual(out.segs[0].t1 - out.segs[0].t0, 50);
});

test('a page offcpu wrote: its DATA in the layout it declares', { skip: !process.env.TIMELINE_HTML }, () => {
	const D = pageData(process.env.TIMELINE_HTML);
	assert.deepStrictEqual(D.layout, LAYOUT, 'the layout timeline.c declares');
	const { TimelineFields, CritPath } = load();
	const FB = TimelineFields(D.layout.b), FU = TimelineFields(D.layout.u), FG = TimelineFields(D.layout.g);
	const byTid = {};
	let blocks = 0;
	for (const l of D.lanes) {
		byTid[l.tid] = l;
		assert.strictEqual(l.b.length % FB.n, 0, 'whole blocks');
		assert.strictEqual(l.u.length % FU.n, 0, 'whole summed totals');
		assert.strictEqual(l.g.length % FG.n, 0, 'whole bins');
		for (let i = 0; i < l.b.length; i += FB.n) {
			blocks++;
			assert.ok(l.b[i + FB.dur] >= 0 && l.b[i + FB.end] >= l.b[i + FB.dur] - 1e12, 'a block in the span');
			assert.ok(l.b[i + FB.end] <= D.span, 'a block ends within the recording');
			assert.ok(l.b[i + FB.stack] === -1 || String(l.b[i + FB.stack]) in D.stacks, 'its stack is in DATA');
			assert.ok(l.b[i + FB.state] >= 0 && l.b[i + FB.state] <= 6, 'a state');
		}
		for (let i = 0; i < l.u.length; i += FU.n)
			assert.ok(l.u[i + FU.end] >= l.u[i + FU.start] && l.u[i + FU.ns] >= 0, 'a summed interval');
	}
	assert.ok(blocks > 0, 'the page has blocks');
	// every block's critical path charges its whole length once
	let walked = 0;
	const str = (i) => (i < 0 || D.str[i] === undefined ? '' : D.str[i]);
	for (const l of D.lanes) {
		const cp = CritPath(byTid, str, D.layout);
		for (let i = 0; i < l.b.length && walked < 500; i += FB.n, walked++) {
			const out = cp(l, i);
			const total = out.segs.reduce((s, x) => s + (x.t1 - x.t0), 0);
			assert.strictEqual(total, l.b[i + FB.dur], 'the path of a block sums to its length');
		}
	}
});
