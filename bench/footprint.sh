#!/usr/bin/env bash
# What offcpu costs its machine beside the work it records (issue 31), each
# figure for this build, BASE (an older build, optional) and offcputime
# (libbpf-tools, when installed), run side by side, ROUNDS times (default 3),
# the median printed:
#   start   CPU time (user + system) from exec to the first line saying the
#           recording runs (offcputime, which says nothing: 3 s after exec),
#           -p on a sleeper
#   idle    CPU per second of a 10 s recording attached to a sleeping process
#   rss     peak resident memory (VmHWM) of that recording
#   exit    wall time from SIGINT to exit
#   make    peak resident memory recording `make -j2` of this project's
#           tests/workloads (-- make), and its summary's memory lines
#   short   peak resident memory of -a while SHORT (default 3000) short
#           processes come and go
# CPU comes from /proc/PID/stat (10 ms ticks): the idle figure's resolution is
# 0.1% of a CPU per 10 s. Needs root.
# Usage: [BASE=OLD_OFFCPU] [SHORT=N] bench/footprint.sh [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
OFFCPU=${OFFCPU:-$ROOT/$BUILD/offcpu}
BASE=${BASE:-}
SHORT=${SHORT:-3000}
ROUNDS=${1:-3}
TMP=$(mktemp -d)
TICK=$(getconf CLK_TCK)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT

make -s -C "$ROOT" BUILD="$BUILD" all >/dev/null
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
cpu_ms() { awk -v t="$TICK" '{ printf "%d\n", ($14 + $15) * 1000 / t }' "/proc/$1/stat"; }

# wait_line PATTERN PID: until the output or errors have PATTERN (or PID is gone)
wait_line() {
	local i
	for ((i = 0; i < 6000; i++)); do
		grep -q "$1" "$TMP/out" "$TMP/err" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

sleep 100000 &
SLEEPER=$!
pids+=("$SLEEPER")

# one NAME CMD...: start, idle, rss and exit of CMD attached to the sleeper
one() {
	local name=$1 pat p t0 c0 c1 start idle rss exit_ms
	shift
	pat=recording
	"$@" >"$TMP/out" 2>"$TMP/err" &
	p=$!
	if [[ $name == offcputime ]]; then
		sleep 3 # it says nothing when it starts: loaded by then
		kill -0 "$p" 2>/dev/null || { echo "$name: did not start: $(head -3 "$TMP/err")" >&2; return 1; }
	elif ! wait_line "$pat" "$p"; then
		echo "$name: did not start: $(head -3 "$TMP/err")" >&2
		return 1
	fi
	start=$(cpu_ms "$p")
	sleep 1
	c0=$(cpu_ms "$p")
	sleep 10
	c1=$(cpu_ms "$p")
	idle=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", (b - a) / 10 / 10 }') # % of a CPU
	rss=$(awk '/VmHWM/ { print $2 }' "/proc/$p/status")
	t0=$(date +%s%N)
	kill -INT "$p"
	wait "$p" || true
	exit_ms=$((($(date +%s%N) - t0) / 1000000))
	echo "$start $idle $rss $exit_ms"
}

run() {
	local name=$1 r
	shift
	: >"$TMP/$name"
	for ((r = 0; r < ROUNDS; r++)); do
		one "$name" "$@" >>"$TMP/$name" || return 0
	done
	printf '%-12s start %4d ms CPU   idle %5.2f%% of a CPU   peak RSS %6.1f MiB   exit %4d ms\n' "$name" \
		"$(cut -d' ' -f1 "$TMP/$name" | median)" "$(cut -d' ' -f2 "$TMP/$name" | median)" \
		"$(cut -d' ' -f3 "$TMP/$name" | median | awk '{ print $1 / 1024 }')" \
		"$(cut -d' ' -f4 "$TMP/$name" | median)"
}

echo "attached to a sleeping process (-p), $ROUNDS rounds, medians:"
run offcpu "$OFFCPU" record -p "$SLEEPER" -o "$TMP/a.data"
[[ -n $BASE ]] && run base "$BASE" record -p "$SLEEPER" -o "$TMP/b.data"
if command -v offcputime >/dev/null; then
	run offcputime offcputime -p "$SLEEPER"
fi

# peak RSS of a recording of CMD... by BIN (one run: these take long)
peak() {
	local name=$1 bin=$2
	shift 2
	/usr/bin/time -f "%M" -o "$TMP/time" "$bin" record "$@" >/dev/null 2>"$TMP/rec.err" || true
	printf '%-12s peak RSS %6.1f MiB   %s\n' "$name" "$(awk '{ print $1 / 1024 }' "$TMP/time")" \
		"$(grep -E 'unwind tables:|kernel maps:' "$TMP/rec.err" | sed 's/^offcpu: //' | cut -c1-110 | paste -sd'|')"
}

echo "recording make -j2 of tests/workloads (a clean build each time):"
for b in offcpu${BASE:+ base}; do
	bin=$OFFCPU
	[[ $b == base ]] && bin=$BASE
	rm -rf "$TMP/wl" && mkdir "$TMP/wl"
	peak "$b" "$bin" -o "$TMP/m.data" -- make -s -C "$ROOT" BUILD="$TMP/wl" -j2 \
		"$TMP/wl/tests/groundtruth" "$TMP/wl/tests/wakers" "$TMP/wl/tests/stacks" "$TMP/wl/tests/critpath"
done

echo "-a while $SHORT short processes come and go:"
for b in offcpu${BASE:+ base}; do
	bin=$OFFCPU
	[[ $b == base ]] && bin=$BASE
	peak "$b" "$bin" -a -o "$TMP/s.data" -- sh -c "i=0; while [ \$i -lt $SHORT ]; do /bin/true; i=\$((i + 1)); done"
done
