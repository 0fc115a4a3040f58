// SPDX-License-Identifier: GPL-2.0
// Load an offcpu --timeline page in headless Chromium (Debian's
// /usr/bin/chromium, driven by playwright-core) and check what a reader sees:
//   node timeline.js PAGE.html check LANE_NAME...   no page or console error, no
//       request off the page, a lane per name; click the wakee's block that
//       waker_alpha ended: its stack function and waker in the details panel;
//       shift-drag a window: a flame graph of it
//   node timeline.js PAGE.html summed LANE_NAME...  no error, the lanes; click a
//       summed total: its stack in the details panel
//   node timeline.js PAGE.html load                 no error; how long to show, redraw
//   node timeline.js PAGE.html shot OUT.png          a screenshot
//   node timeline.js PAGE.html path ROOT [OUT.png]   click ROOT's longest wait: its critical
//       path drawn across the lanes and listed in the details panel; prints
//       "PATH COMM TID KIND NS" lines (and a screenshot)
//   node timeline.js PAGE.html hang HANG.txt         each thread of HANG.txt (COMM TID
//       NS FUNCTION) one block from when it began waiting (NS) to the end of the
//       recording; a click on its part before the recording says since when
// Prints what it found; exits 1 with "FAIL: ..." on the first failure.
'use strict';
const { chromium } = require('playwright-core');
const path = require('path');

function fail(msg) {
	console.log('FAIL: ' + msg);
	process.exit(1);
}

(async () => {
	const [page_file, mode, ...args] = process.argv.slice(2);
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		args: ['--no-sandbox'],
	});
	try {
		const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
		const errors = [], requests = [];
		page.on('pageerror', (e) => errors.push('page error: ' + e.message));
		page.on('console', (m) => { if (m.type() === 'error') errors.push('console error: ' + m.text()); });
		await page.route('**/*', (route) => {
			const u = route.request().url();
			if (!u.startsWith('file:')) {
				requests.push(u);
				return route.abort();
			}
			return route.continue();
		});
		const t0 = Date.now();
		await page.goto('file://' + path.resolve(page_file));
		await page.waitForSelector('body[data-ready]', { timeout: 60000 });
		const shown_ms = Date.now() - t0;
		console.log(`shown in ${shown_ms} ms`);
		if (mode === 'shot') {
			// the longest block of the thread with the most blocks clicked, and the view's flame graph
			const ls = await page.evaluate(() => window.TL.lanes());
			const busy = ls.slice().sort((a, b) => b.blocks - a.blocks)[0];
			if (busy && busy.blocks) {
				const bs = await page.evaluate((tid) => window.TL.blocks(tid), busy.tid);
				const b = bs.sort((x, y) => y.dur - x.dur)[0];
				await page.mouse.click(b.x, b.y);
			}
			await page.click('#viewflame');
			const bottom = await page.$eval('#panels', (e) => e.getBoundingClientRect().bottom);
			await page.screenshot({ path: args[0], clip: { x: 0, y: 0, width: 1400, height: Math.min(900, bottom + 8) } });
			if (errors.length) fail(errors.join('; '));
			return;
		}
		if (mode === 'path') {
			const ls = await page.evaluate(() => window.TL.lanes());
			const root = ls.find((l) => l.comm === args[0]);
			if (!root) fail(`no lane for ${args[0]}`);
			const bs = await page.evaluate((tid) => window.TL.blocks(tid), root.tid);
			const b = bs.filter((x) => x.state !== 'runqueue').sort((x, y) => y.dur - x.dur)[0];
			if (!b) fail(`no block of ${args[0]}`);
			console.log(`clicking ${args[0]}'s ${(b.dur / 1e6).toFixed(3)} ms ${b.state} block`);
			await page.mouse.click(b.x, b.y);
			const drawn = +(await page.getAttribute('canvas', 'data-path'));
			console.log(`path segments drawn: ${drawn}`);
			if (!(drawn > 1)) fail('no critical path drawn');
			const det = await page.textContent('#details');
			if (!det.includes('Critical path of this wait')) fail('the details panel has no critical path');
			const tot = await page.evaluate((a) => window.TL.path(a[0], a[1]), [root.tid, b.i]);
			let sum = 0;
			for (const x of tot) {
				console.log(`PATH ${x.comm || '-'} ${x.tid} ${x.kind.replace(/ /g, '_')} ${x.ns}`);
				sum += x.ns;
			}
			console.log(`PATHSUM ${sum} ${b.dur}`);
			if (Math.abs(sum - b.dur) > 1) fail(`the path sums to ${sum} ns, the block lasted ${b.dur}`);
			if (args[1]) {
				const bottom = await page.$eval('#panels', (e) => e.getBoundingClientRect().bottom);
				await page.screenshot({ path: args[1], clip: { x: 0, y: 0, width: 1400, height: Math.min(900, bottom + 8) } });
			}
			if (errors.length) fail(errors.join('; '));
			console.log('ok');
			return;
		}
		if (mode === 'hang') {
			const want = require('fs').readFileSync(args[0], 'utf8').trim().split('\n').map((l) => l.split(' '));
			const t0 = await page.evaluate(() => window.TL.t0);
			const left = await page.$eval('canvas', (c) => c.getBoundingClientRect().left);
			let hatched = null;
			for (const [comm, tid, ns, fn] of want) {
				const bs = await page.evaluate((t) => window.TL.blocks(t), +tid);
				if (bs.length !== 1) fail(`${comm}/${tid}: ${bs.length} blocks, one since it began waiting expected`);
				const b = bs[0];
				if (!b.before || !b.open) fail(`${comm}/${tid}: its block is not marked as waiting since before the recording and to its end`);
				if (b.frames.indexOf(fn) < 0) fail(`${comm}/${tid}: its block is not in ${fn}`);
				const since = t0 + b.since, d = Math.abs(since - +ns);
				console.log(`${comm}/${tid}: one block since ${((+ns - t0) / 1e6).toFixed(1)} ms (drawn from ${(b.since / 1e6).toFixed(1)} ms, ${(d / 1e6).toFixed(2)} ms apart) to ${(b.end / 1e6).toFixed(1)} ms`);
				if (d > 50e6) fail(`${comm}/${tid}: drawn since ${b.since} ns, it began waiting at ${+ns - t0} ns`);
				// where the recording began on the page: the block's part left of it is before
				b.rx = b.x1 - b.dur / (b.end - b.since) * (b.x1 - b.x0);
				if (!hatched && Math.max(b.x0, left) + 3 < b.rx) hatched = b;
			}
			if (!hatched) fail('no block shows its part before the recording');
			console.log(`clicking ${hatched.x0 < left ? 'at the left edge of' : 'the start of'} a block, ${(hatched.rx - Math.max(hatched.x0, left)).toFixed(0)} px before the recording`);
			await page.mouse.click(Math.max(hatched.x0, left) + 2, hatched.y);
			const det = await page.textContent('#details');
			console.log('details: ' + det.replace(/\s+/g, ' ').slice(0, 300));
			if (!det.includes('waiting since')) fail('a click on the part before the recording does not say since when');
			if (!det.includes('still waiting then')) fail('the details do not say the wait lasted to the end');
			if (errors.length) fail(errors.join('; '));
			console.log('ok');
			return;
		}
		const lanes = await page.evaluate(() => window.TL.lanes());
		console.log('lanes: ' + lanes.map((l) => `${l.comm}/${l.tid}(${l.blocks})`).join(' '));
		for (const name of args)
			if (!lanes.some((l) => l.comm === name)) fail(`no lane for ${name}`);
		const labels = await page.$$eval('#labels .lane', (ds) => ds.map((d) => d.textContent));
		for (const name of args)
			if (!labels.some((t) => t.startsWith(name + ' '))) fail(`no lane label for ${name}`);
		if (mode === 'summed') {
			// a summed total: a band over its interval, its stack in the details
			let hit = null;
			for (const l of lanes.filter((x) => !x.blocks)) { // no block to click instead
				const u = (await page.evaluate((tid) => window.TL.sums(tid), l.tid)).filter((x) => x.end > x.start && x.frames.length);
				if (u.length) { hit = u[u.length - 1]; hit.lane = l; break; }
			}
			if (!hit) fail('no summed total in any lane');
			console.log(`clicking ${hit.lane.comm}'s summed ${(hit.ns / 1e6).toFixed(3)} ms over ${((hit.end - hit.start) / 1e6).toFixed(1)} ms`);
			await page.mouse.click(hit.x, hit.y);
			const det = await page.textContent('#details');
			console.log('details: ' + det.replace(/\s+/g, ' ').slice(0, 300));
			if (!det.includes('summed short blocks')) fail('the details panel does not say summed');
			if (!det.includes(hit.frames[hit.frames.length - 1])) fail('the details panel does not show the summed stack');
			// a recording with wakers: the interval's totals by waker
			if (!det.includes('By waker')) fail('the details panel does not total the summed blocks by waker');
			// what the recording lacks, and how to record it
			const note = await page.textContent('#note');
			if (!note.includes('--off-cpu-thresh 0')) fail('the page does not say how to record each block with its times');
		}
		if (errors.length) fail(errors.join('; '));
		if (requests.length) fail('the page asked for ' + requests.join(' '));
		if (mode === 'load') { // figures: a redraw of the full view, the script's heap
			const f = await page.evaluate(() => {
				let ms = 0;
				for (let i = 0; i < 5; i++)
					ms += window.TL.draw();
				return { redraw: ms / 5, heap: performance.memory ? performance.memory.usedJSHeapSize : 0 };
			});
			console.log(`redraw ${f.redraw.toFixed(0)} ms, JS heap ${(f.heap / 1048576).toFixed(0)} MiB`);
		}
		if (mode !== 'check') {
			console.log('ok');
			return;
		}
		// the wakee's block that waker_alpha ended (a pipe read in wakee_pipe_a)
		const wakee = lanes.find((l) => l.comm === 'wakee' && l.blocks > 0);
		if (!wakee) fail('no wakee lane with blocks');
		const blocks = await page.evaluate((tid) => window.TL.blocks(tid), wakee.tid);
		const b = blocks.find((x) => x.waker === 'waker_alpha');
		if (!b) fail('no block of the wakee with waker_alpha as its waker');
		console.log(`clicking the wakee's ${(b.dur / 1e6).toFixed(1)} ms ${b.state} block at ${b.x.toFixed(0)},${b.y.toFixed(0)}: ${b.frames.slice(-4).join(';')}`);
		if (!b.frames.includes('wakee_pipe_a')) fail('the block has no wakee_pipe_a frame');
		// a block split at its wakeup ends where its run queue wait begins
		let split = 0;
		for (let k = 1; k < blocks.length; k++) {
			const q = blocks[k], prev = blocks[k - 1];
			if (q.state !== 'runqueue' || prev.state === 'runqueue' || prev.end > q.end - q.dur + 1e6) continue;
			if (prev.end !== q.end - q.dur) fail(`block ${k - 1} ends at ${prev.end}, its run queue wait begins at ${q.end - q.dur}`);
			split++;
		}
		console.log(`run queue waits right after their block: ${split}`);
		await page.mouse.click(b.x, b.y);
		const det = await page.textContent('#details');
		console.log('details: ' + det.replace(/\s+/g, ' ').slice(0, 400));
		if (!det.includes('wakee_pipe_a')) fail('the details panel does not show wakee_pipe_a');
		if (!det.includes('waker_alpha')) fail('the details panel does not show the waker waker_alpha');
		if (!det.includes('waker_alpha_write')) fail("the details panel does not show the waker's stack (waker_alpha_write)");
		const arrows = await page.getAttribute('canvas', 'data-arrows');
		console.log(`arrows drawn: ${arrows}`);
		if (!(+arrows > 0)) fail('no wakeup arrow drawn');
		// zoom in around the block, then a window by shift-drag over it
		await page.mouse.move(b.x, b.y);
		await page.mouse.wheel(0, -300);
		const after = await page.evaluate((tid) => window.TL.blocks(tid), wakee.tid);
		const z = after[b.i];
		// the wheel zooms around the cursor: the point under it stays
		if (Math.abs(z.x - b.x) > 2) fail(`zooming at the block moved it from ${b.x} to ${z.x}`);
		await page.keyboard.down('Shift');
		const box = await page.$eval('canvas', (c) => { const r = c.getBoundingClientRect(); return [r.left, r.right]; });
		await page.mouse.move(Math.max(box[0] + 2, z.x - 100), z.y);
		await page.mouse.down();
		await page.mouse.move(Math.min(box[1] - 2, z.x + 100), z.y, { steps: 5 });
		await page.mouse.up();
		await page.keyboard.up('Shift');
		const head = await page.textContent('#flamehead');
		const flame = await page.$$eval('#flame div', (ds) => ds.map((d) => d.textContent));
		console.log('window: ' + head.slice(0, 200));
		if (!flame.includes('wakee_pipe_a')) fail('the window\'s flame graph has no wakee_pipe_a');
		if (errors.length) fail(errors.join('; '));
		if (requests.length) fail('the page asked for ' + requests.join(' '));
		console.log('ok');
	} finally {
		await browser.close();
	}
})().catch((e) => fail(e.stack || String(e)));
