#!/usr/bin/env bash
# Report benchmark (issue 4): offcpu report against perf report --stdio on the
# same perf.data file of SAMPLES samples (default 1000000) with user call
# chains (6-29 frames, 5000 distinct stacks, 40 threads) into a real binary,
# so that both tools symbolize. Prints wall time and peak memory of each run
# (/usr/bin/time -v), the median of ROUNDS runs (default 3), and the ratios.
# No root needed. Usage: bench/report.sh [SAMPLES] [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
OFFCPU=${OFFCPU:-$ROOT/$BUILD/offcpu}
SAMPLES=${1:-1000000}
ROUNDS=${2:-3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

make -s -C "$ROOT" BUILD="$BUILD" all bench-gen >/dev/null
# a private copy of the binary the stacks point into: rebuilding does not move it
cp "$OFFCPU" "$TMP/target"
"$ROOT/$BUILD/bench/gen-perfdata" -o "$TMP/bench.data" -n "$SAMPLES" "$TMP/target"
echo "file: $SAMPLES samples, $(du -h "$TMP/bench.data" | cut -f1)"

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# measure NAME CMD...: runs CMD ROUNDS times; prints "NAME seconds max_rss_kb"
measure() {
	local name=$1 i secs rss
	shift
	: >"$TMP/$name.t" ; : >"$TMP/$name.m"
	for ((i = 0; i < ROUNDS; i++)); do
		/usr/bin/time -v -o "$TMP/time.txt" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
		awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, a, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + a[i]; print s }' "$TMP/time.txt" >>"$TMP/$name.t"
		awk -F': ' '/Maximum resident set size/ { print $2 }' "$TMP/time.txt" >>"$TMP/$name.m"
	done
	secs=$(median <"$TMP/$name.t")
	rss=$(median <"$TMP/$name.m")
	printf '%-28s %8.2f s %10d KiB\n' "$name" "$secs" "$rss" >&2
	echo "$name $secs $rss"
}

{
	measure offcpu-report "$OFFCPU" report -i "$TMP/bench.data"
	measure offcpu-report-folded "$OFFCPU" report -i "$TMP/bench.data" --folded
	measure offcpu-report-svg "$OFFCPU" report -i "$TMP/bench.data" --svg "$TMP/b.svg" --pprof "$TMP/b.pb.gz"
	measure perf-report-stdio perf report -i "$TMP/bench.data" --stdio
} >"$TMP/results"
head -3 "$TMP/offcpu-report.out" >&2
grep -m3 '%' "$TMP/perf-report-stdio.out" >&2 || true
echo >&2
awk '
	{ t[$1] = $2; m[$1] = $3 }
	END {
		p = "perf-report-stdio"
		for (k in t) if (k != p)
			printf "%-28s %6.1fx faster than perf report --stdio, %5.1fx less peak memory\n", k, t[p] / t[k], m[p] / m[k]
	}' "$TMP/results" | sort
