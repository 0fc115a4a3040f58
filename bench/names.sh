#!/usr/bin/env bash
# Named frames in the report (issue 35): a recording of one process with
# about 120,000 Python names (tests/workloads/fakepy, BLOCKS blocks of 32
# new frames each, default 4000), then offcpu report against perf report
# --stdio on it, side by side, ROUNDS times (default 3): the median wall time
# of each and their ratio. BASE=/path/to/offcpu runs an older build's report
# on the same file too. Needs root (it records). (tests/integration/
# hostile_readers.sh checks the same on a file bench/gen-perfdata -y writes,
# whose names do not depend on how fast the recorder's reader was.)
# Usage: [BASE=OLD_OFFCPU] bench/names.sh [BLOCKS] [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
OFFCPU=${OFFCPU:-$ROOT/$BUILD/offcpu}
BASE=${BASE:-}
BLOCKS=${1:-4000}
ROUNDS=${2:-3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

make -s -C "$ROOT" BUILD="$BUILD" all "$BUILD/tests/fakepy" >/dev/null
"$OFFCPU" record -o "$TMP/names.data" -- "$ROOT/$BUILD/tests/fakepy" 60 "$BLOCKS" >/dev/null 2>"$TMP/rec.err"
echo "recording: $(sed -nE 's/.*frames, ([0-9]+) code objects named.*/\1/p' "$TMP/rec.err") Python names" \
	"in one process, $(du -h "$TMP/names.data" | cut -f1)"

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# measure CMD...: the median seconds of ROUNDS runs
measure() {
	local i t0 t1
	for ((i = 0; i < ROUNDS; i++)); do
		t0=$(date +%s.%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s.%N)
		awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
	done | median
}

ours=$(measure "$OFFCPU" report -i "$TMP/names.data")
perfs=$(measure perf report -i "$TMP/names.data" --stdio)
printf 'offcpu report          %8.3f s\nperf report --stdio    %8.3f s\nratio offcpu/perf      %8.3f\n' \
	"$ours" "$perfs" "$(awk -v a="$ours" -v b="$perfs" 'BEGIN { print a / b }')"
if [ -n "$BASE" ]; then
	base=$(ROUNDS=1 measure "$BASE" report -i "$TMP/names.data")
	printf 'base offcpu report     %8.3f s (one run)\n' "$base"
fi
