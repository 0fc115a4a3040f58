#!/usr/bin/env bash
# JavaScript frames (issue 29): what naming a node thread's JavaScript
# functions at each block costs in the BPF program (src/bpf/v8.bpf.h), and
# what the change costs a process that is not node. Workloads pinned to cpu
# 1: bench/jsblock.js (N short blocks in a JS function, about 10 JS frames a
# block) and build/bench/handoff (C, futex handoffs). Each binary in turn,
# ROUNDS times: offcpu record -p attached to the workload while it pauses
# 1 s, kernel.bpf_stats_enabled on, on_switch's run_time_ns and run_cnt read
# just before the recording ends. Prints, per binary and workload, the
# median of BPF ns per on_switch run and per block offcpu counted.
# Usage: BEFORE=/path/to/old/offcpu bench/jsframes.sh [ROUNDS] [N]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
OFFCPU=${OFFCPU:-$ROOT/$BUILD/offcpu}
BEFORE=${BEFORE:-}
ROUNDS=${1:-5}
N=${2:-50000}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; sysctl -q kernel.bpf_stats_enabled=0' EXIT
[ "$(id -u)" = 0 ] || { echo "bench/jsframes.sh: needs root" >&2; exit 1; }
command -v node >/dev/null || { echo "bench/jsframes.sh: needs node" >&2; exit 1; }
make -s -C "$ROOT" BUILD="$BUILD" all "$BUILD/bench/handoff" >/dev/null
sysctl -q kernel.bpf_stats_enabled=1

# the loaded on_switch programs: "id run_time_ns run_cnt"
progs() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    if p.get("name") == "on_switch":
        print(p["id"], p.get("run_time_ns", 0), p.get("run_cnt", 0))'
}

# one BIN [ARGS] -- WORKLOAD...: "ns_per_run ns_per_block"
one() {
	local bin=$1 args=() wpid opid stats runs rt blocks
	shift
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	taskset -c 1 "$@" >/dev/null 2>&1 &
	wpid=$!
	sleep 0.3
	"$bin" record "${args[@]}" -p "$wpid" -o "$TMP/b.data" >/dev/null 2>"$TMP/rec.err" &
	opid=$!
	# the program's counters, read while it is attached, as the workload ends
	# (this offcpu's program, by the prog ids of its descriptors: other
	# tracers may run one of the same name)
	stats=
	while kill -0 "$wpid" 2>/dev/null; do
		ids=" $(cat /proc/"$opid"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | tr '\n' ' ')"
		stats=$(progs | awk -v ids="$ids" 'index(ids, " " $1 " ") { print "run_time_ns", $2, "run_cnt", $3 }' | tail -1)
		sleep 0.2
	done
	wait "$opid"
	wait "$wpid" 2>/dev/null
	rt=$(awk '{ print $2 }' <<<"$stats")
	runs=$(awk '{ print $4 }' <<<"$stats")
	blocks=$(sed -nE 's/^offcpu: ([0-9]+) blocks seen.*/\1/p' "$TMP/rec.err")
	awk -v rt="${rt:-0}" -v r="${runs:-0}" -v b="${blocks:-0}" \
		'BEGIN { printf "%.0f %.0f\n", r ? rt / r : 0, b ? rt / b : 0 }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A runs blocks
bins=(after nojs)
[ -n "$BEFORE" ] && bins=(before after nojs)
for ((r = 0; r < ROUNDS; r++)); do
	for b in "${bins[@]}"; do
		case $b in
		before) bin=$BEFORE args=() ;;
		after) bin=$OFFCPU args=() ;;
		nojs) bin=$OFFCPU args=(--no-js) ;;
		esac
		for w in node handoff; do
			if [ $w = node ]; then
				res=$(one "$bin" "${args[@]}" -- node "$ROOT/bench/jsblock.js" "$N" 1000)
			else
				res=$(one "$bin" "${args[@]}" -- "$ROOT/$BUILD/bench/handoff" -t 16 -n 3000000)
			fi
			runs[$b.$w]+="${res% *} "
			blocks[$b.$w]+="${res#* } "
		done
	done
done
printf '%-8s %-8s %18s %18s\n' binary workload "ns/on_switch run" "ns/block counted"
for b in "${bins[@]}"; do
	for w in node handoff; do
		printf '%-8s %-8s %18s %18s   (runs: %s)\n' "$b" "$w" \
			"$(tr ' ' '\n' <<<"${runs[$b.$w]}" | grep . | median)" \
			"$(tr ' ' '\n' <<<"${blocks[$b.$w]}" | grep . | median)" "${runs[$b.$w]}"
	done
done
