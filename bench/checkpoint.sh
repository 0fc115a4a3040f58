#!/usr/bin/env bash
# Checkpoint cost (issue 21): the writes a recording makes so that a killed
# one stays readable (after every round that wrote: the buffered records,
# then the header), counted with perf stat over the whole run of
# `offcpu record -a --off-cpu-thresh 0` under a load of context switches:
# rounds (the file's FINISHED_ROUND records), pwrite64 calls, all system
# calls and CPU time. OFFCPU_BASE, when given, is an offcpu built without
# checkpoints, measured the same way, for the difference.
# Needs root. Usage: bench/checkpoint.sh [SECONDS] [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OFFCPU=${OFFCPU:-$ROOT/build/offcpu}
SECS=${1:-5}
RUNS=${2:-3}
TMP=$(mktemp -d)
trap 'kill $load 2>/dev/null; rm -rf "$TMP"' EXIT

# background load: pipe ping-pong, forever
(while :; do perf bench sched pipe -l 100000 >/dev/null 2>&1; done) &
load=$!

measure() { # label binary
	local label=$1 bin=$2
	perf stat -x, -o "$TMP/stat" -e 'syscalls:sys_enter_pwrite64,raw_syscalls:sys_enter,task-clock' \
		-- "$bin" record -q -a -d "$SECS" --off-cpu-thresh 0 -o "$TMP/c.data" 2>/dev/null
	rounds=$(perf report -i "$TMP/c.data" -D 2>/dev/null | grep -c 'FINISHED_ROUND$' || true)
	awk -F, -v l="$label" -v r="$rounds" -v mb="$(stat -c %s "$TMP/c.data")" '
		$3 == "syscalls:sys_enter_pwrite64" { p = $1 }
		$3 == "raw_syscalls:sys_enter" { t = $1 }
		$3 == "task-clock" { c = $1 }
		END { printf "%-6s %4d rounds  %6d pwrite64 (%5.2f a round)  %7d system calls  %6.0f ms CPU  %5.1f MB\n",
			l, r, p, p / (r ? r : 1), t, c, mb / 1e6 }' "$TMP/stat"
	rm -f "$TMP"/c.data*
}

for ((i = 0; i < RUNS; i++)); do
	measure offcpu "$OFFCPU"
	[ -z "${OFFCPU_BASE:-}" ] || measure base "$OFFCPU_BASE"
done
