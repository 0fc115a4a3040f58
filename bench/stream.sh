#!/usr/bin/env bash
# Streaming benchmark (issue 3): how many blocks per second offcpu can stream
# at --off-cpu-thresh 0 without loss, per transport, under a context-switch
# storm (perf bench sched pipe: two tasks ping-pong through pipes, 2 switches
# per op). Runs untraced and traced in alternation, ROUNDS times, and prints
# medians. Needs root. Usage: bench/stream.sh [LOOPS] [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OFFCPU=${OFFCPU:-$ROOT/build/offcpu}
LOOPS=${1:-200000}
ROUNDS=${2:-3}
PIN=${PIN:-"taskset -c 1"} # both tasks on one cpu: the highest switch rate
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# run_bench OUTFILE [offcpu args...]: prints "usecs_per_op blocks streamed lost"
run_one() {
	local mode=$1
	shift
	if [ "$mode" = untraced ]; then
		$PIN perf bench sched pipe -l "$LOOPS" >"$TMP/bench.txt" 2>&1
		echo "$(awk '/usecs\/op/ { print $1 }' "$TMP/bench.txt") 0 0 0"
		return
	fi
	"$OFFCPU" record -o "$TMP/s.data" --off-cpu-thresh 0 "$@" -- \
		$PIN perf bench sched pipe -l "$LOOPS" >"$TMP/bench.txt" 2>"$TMP/rec.txt"
	local us blocks streamed lost
	us=$(awk '/usecs\/op/ { print $1 }' "$TMP/bench.txt")
	blocks=$(sed -n 's/.*offcpu: \([0-9]*\) blocks seen.*/\1/p' "$TMP/rec.txt")
	streamed=$(sed -n 's/.*(\([0-9]*\) streamed.*/\1/p' "$TMP/rec.txt")
	lost=$(sed -n 's/.*offcpu: *\([0-9]*\) long blocks not streamed.*/\1/p' "$TMP/rec.txt")
	echo "$us ${blocks:-0} ${streamed:-0} ${lost:-0}"
}

echo "# offcpu streaming benchmark: perf bench sched pipe -l $LOOPS, pinned ($PIN), $ROUNDS rounds, medians"
echo "# $(uname -r), $(nproc) cpus, $(date -u +%Y-%m-%d)"
modes=(untraced "ringbuf" "perfbuf")
for ((i = 0; i < ROUNDS; i++)); do
	for m in "${modes[@]}"; do
		case $m in
		untraced) run_one untraced ;;
		*) run_one traced --transport "$m" ;;
		esac >>"$TMP/$m.res"
	done
done
base=$(awk '{ print $1 }' "$TMP/untraced.res" | median)
printf '%-10s %10s %9s %14s %12s %10s\n' mode us/op slowdown blocks/s streamed lost
for m in "${modes[@]}"; do
	us=$(awk '{ print $1 }' "$TMP/$m.res" | median)
	blocks=$(awk '{ print $2 }' "$TMP/$m.res" | median)
	streamed=$(awk '{ print $3 }' "$TMP/$m.res" | median)
	lost=$(awk '{ print $4 }' "$TMP/$m.res" | median)
	# blocks per second of the workload's run: ops * 2 switches / elapsed
	bps=$(awk -v b="$blocks" -v us="$us" -v l="$LOOPS" 'BEGIN { if (b > 0) printf "%.0f", b / (us * l / 1e6); else print "-" }')
	printf '%-10s %10s %9s %14s %12s %10s\n' "$m" "$us" "$(awk -v a="$us" -v b="$base" 'BEGIN { printf "%.2fx", a / b }')" "$bps" "$streamed" "$lost"
done
