// JIT workload for offcpu's runtime tests (tests/integration/runtimes_jit.sh):
// named JS functions block in child_process.execSync for times they measure
// themselves, printed as "name ns" lines at the end, with "pid N": the time
// the main thread did not run in them (the wall clock minus its CPU time,
// /proc's schedstat), what offcpu records of them with --state SDR (the
// wall clock alone would count its own running too, long on a busy machine).
//   node jitwait.js N        each function called 1 + N times (a short call
//                            first, so that compiled code exists before the
//                            long ones: with --always-sparkplug, perf map names)
//   node jitwait.js 1 once   each function called once: V8 interprets it, and
//                            no perf map entry names it (offcpu reads V8's frame)
'use strict';
const { execSync } = require('child_process');
const { readFileSync } = require('fs');

const schedstat = `/proc/self/task/${process.pid}/schedstat`;

// The wall clock minus this (main) thread's CPU time, in ns.
function offNow() {
	const cpu = BigInt(readFileSync(schedstat, 'utf8').split(' ')[0]);
	return process.hrtime.bigint() - cpu;
}

function blockChildAlpha(secs) {
	execSync(`sleep ${secs}`);
}

function blockChildBravo(secs) {
	execSync(`sleep ${secs}`);
}

function timed(f, secs, n) {
	let sum = 0n;
	for (let i = 0; i < n; i++) {
		const t0 = offNow();
		f(secs);
		sum += offNow() - t0;
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
