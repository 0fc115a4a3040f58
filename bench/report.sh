#!/usr/bin/env bash
# Report benchmark (issue 4): offcpu report against perf report --stdio on the
# same perf.data file of SAMPLES samples (default 1000000) with user call
# chains (6-29 frames, 5000 distinct stacks, 40 threads) into a real binary,
# so that both tools symbolize; and offcpu report of the same samples as a
# pipe-mode stream on its standard input (offcpu record -o - | offcpu report
# -i -). Prints wall time and peak memory of each run (/usr/bin/time -v), the
# median of ROUNDS runs (default 3), and the ratios. BASE=/path/to/offcpu
# runs an older build on the same inputs too, and compares the two.
# No root needed. Usage: [BASE=OLD_OFFCPU] bench/report.sh [SAMPLES] [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
OFFCPU=${OFFCPU:-$ROOT/$BUILD/offcpu}
BASE=${BASE:-}
SAMPLES=${1:-1000000}
ROUNDS=${2:-3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

make -s -C "$ROOT" BUILD="$BUILD" all bench-gen >/dev/null
# a private copy of the binary the stacks point into: rebuilding does not move it
cp "$OFFCPU" "$TMP/target"
"$ROOT/$BUILD/bench/gen-perfdata" -o "$TMP/bench.data" -n "$SAMPLES" "$TMP/target" 2>/dev/null
"$ROOT/$BUILD/bench/gen-perfdata" -p -o "$TMP/bench.pipe" -n "$SAMPLES" "$TMP/target" 2>/dev/null
echo "file: $SAMPLES samples, $(du -h "$TMP/bench.data" | cut -f1); the same in pipe mode on stdin"

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

# offcpu_runs PREFIX BINARY: offcpu report's runs, named PREFIX, PREFIX-folded...
offcpu_runs() {
	local pre=$1 bin=$2
	measure "$pre" "$bin" report -i "$TMP/bench.data"
	measure "$pre-folded" "$bin" report -i "$TMP/bench.data" --folded
	measure "$pre-svg" "$bin" report -i "$TMP/bench.data" --svg "$TMP/b.svg" --pprof "$TMP/b.pb.gz"
	# exec: the shell becomes the report, whose own peak is then measured
	measure "$pre-pipe" sh -c 'exec "$0" report -i - <"$1"' "$bin" "$TMP/bench.pipe"
	measure "$pre-pipe-folded" sh -c 'exec "$0" report -i - --folded <"$1"' "$bin" "$TMP/bench.pipe"
}

{
	offcpu_runs offcpu-report "$OFFCPU"
	[ -z "$BASE" ] || offcpu_runs base-report "$BASE"
	measure perf-report-stdio perf report -i "$TMP/bench.data" --stdio
} >"$TMP/results"
head -3 "$TMP/offcpu-report.out" >&2
grep -m3 '%' "$TMP/perf-report-stdio.out" >&2 || true
echo >&2
awk '
	{ t[$1] = $2; m[$1] = $3 }
	END {
		p = "perf-report-stdio"
		for (k in t) if (k ~ /^offcpu-/ && k !~ /-pipe/)
			printf "%-28s %6.1fx faster than perf report --stdio, %5.1fx less peak memory\n", k, t[p] / t[k], m[p] / m[k]
		for (k in t) if (k ~ /^base-/) {
			n = "offcpu-" substr(k, 6)
			printf "%-28s %6.2fx the speed of BASE, %6.2fx less peak memory (%d -> %d KiB)\n", n, t[k] / t[n], m[k] / m[n], m[k], m[n]
		}
	}' "$TMP/results" | sort
