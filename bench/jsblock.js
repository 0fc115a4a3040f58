// bench/jsframes.sh's workload: after PAUSE ms (the tracer attaches), a JS
// function blocks N times in a short futex wait (Atomics.wait, 20 us), two
// JS frames under node's module loader's (about 10 JavaScript frames a block).
'use strict';
const n = Number(process.argv[2] || 50000), pause = Number(process.argv[3] || 1000);
const ia = new Int32Array(new SharedArrayBuffer(4));
function waitShort() {
	Atomics.wait(ia, 0, 0, 0.02);
}
function blockMany(k) {
	for (let i = 0; i < k; i++)
		waitShort();
}
setTimeout(() => blockMany(n), pause);
