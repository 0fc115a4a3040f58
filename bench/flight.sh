#!/usr/bin/env bash
# Flight recorder benchmark (issue 5): offcpu's own CPU time while armed
# (--overwrite, reading nothing) against the streaming mode at threshold 0,
# side by side, with the same background load of context switches.
# Needs root. Usage: bench/flight.sh [SECONDS] [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OFFCPU=${OFFCPU:-$ROOT/build/offcpu}
SECS=${1:-5}
ROUNDS=${2:-3}
TMP=$(mktemp -d)
trap 'kill $load 2>/dev/null; rm -rf "$TMP"' EXIT

cpu_ms() { # utime + stime of a pid, in ms
	awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) * 1000 / hz }' "/proc/$1/stat"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# background load: pipe ping-pong, forever
(while :; do perf bench sched pipe -l 100000 >/dev/null 2>&1; done) &
load=$!

run() { # mode -> offcpu CPU ms over SECS
	local pid ms start
	case $1 in
	streaming) "$OFFCPU" record -q -a --off-cpu-thresh 0 -o "$TMP/s.data" 2>/dev/null & ;;
	armed) "$OFFCPU" record -q -a --overwrite -o "$TMP/f.data" 2>/dev/null & ;;
	esac
	pid=$!
	sleep 1 # past start-up (loading BPF, synthesizing /proc)
	start=$(cpu_ms $pid)
	sleep "$SECS"
	ms=$(awk -v a="$(cpu_ms $pid)" -v b="$start" 'BEGIN { print a - b }')
	kill -INT $pid
	wait $pid || true
	rm -f "$TMP"/*.data*
	echo "$ms"
}

echo "# offcpu flight recorder: offcpu's CPU time over ${SECS}s after start-up, system-wide, under a pipe ping-pong load"
echo "# $(uname -r), $(nproc) cpus, $(date -u +%Y-%m-%d), $ROUNDS rounds, medians"
for ((i = 0; i < ROUNDS; i++)); do
	run streaming >>"$TMP/streaming"
	run armed >>"$TMP/armed"
done
s=$(median <"$TMP/streaming")
a=$(median <"$TMP/armed")
printf '%-22s %10s\n' mode "cpu ms"
printf '%-22s %10s\n' "streaming (thresh 0)" "$s"
printf '%-22s %10s\n' "armed (--overwrite)" "$a"
awk -v s="$s" -v a="$a" 'BEGIN { if (s > 0) printf "armed / streaming: %.3f\n", a / s }'
