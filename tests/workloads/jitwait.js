// JIT workload for offcpu's runtime tests (tests/integration/runtimes_jit.sh):
// named JS functions block in child_process.execSync for times they measure
// themselves, printed as "name ns" lines at the end, with "pid N".
//   node jitwait.js N        each function called 1 + N times (a short call
//                            first, so that compiled code exists before the
//                            long ones: with --always-sparkplug, perf map names)
//   node jitwait.js 1 once   each function called once: V8 interprets it, and
//                            no perf map entry names it (offcpu reads V8's frame)
'use strict';
const { execSync } = require('child_process');

function blockChildAlpha(secs) {
	execSync(`sleep ${secs}`);
}

function blockChildBravo(secs) {
	execSync(`sleep ${secs}`);
}

function timed(f, secs, n) {
	let sum = 0n;
	for (let i = 0; i < n; i++) {
		const t0 = process.hrtime.bigint();
		f(secs);
		sum += process.hrtime.bigint() - t0;
	}
	return sum;
}

const rounds = Number(process.argv[2] || 3);
const once = process.argv[3] === 'once';
let a = 0n, b = 0n;
if (!once) {
	a += timed(blockChildAlpha, 0.01, 1);
	b += timed(blockChildBravo, 0.01, 1);
}
a += timed(blockChildAlpha, 0.3, once ? 1 : rounds);
b += timed(blockChildBravo, 0.2, once ? 1 : rounds);
console.log(`pid ${process.pid}\nblockChildAlpha ${a}\nblockChildBravo ${b}`);
