// JIT workload for offcpu's runtime tests (tests/integration/runtimes_jit.sh):
// named JS functions block in child_process.execSync for times they measure
// themselves, printed as "name ns" lines at the end, with "pid N".
// Run with node --perf-basic-prof (and --always-sparkplug, so that the
// functions are compiled code with perf map names from their first call).
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
// a short call of each first: the code the long ones run exists before them
let a = timed(blockChildAlpha, 0.01, 1);
let b = timed(blockChildBravo, 0.01, 1);
a += timed(blockChildAlpha, 0.3, rounds);
b += timed(blockChildBravo, 0.2, rounds);
console.log(`pid ${process.pid}\nblockChildAlpha ${a}\nblockChildBravo ${b}`);
