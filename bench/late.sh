#!/usr/bin/env bash
# What finishing stacks in user space costs (issue 22), each against the same
# run with it off (OFFCPU_LATE_STACKS=0), side by side:
#   attach  offcpu record -p of a process whose N threads (-t, default 1000)
#           are blocked before the attach: the wall time of the recording
#           (-d 0.2), and the per-thread cost the summary gives (their
#           registers from the start iterator, their stacks read and unwound
#           by libdw)
#   execs   offcpu record of sh running M (-n, default 300) short commands one
#           after another: offcpu's CPU time, and the per-walk cost the
#           summary gives (walks of new processes, copied with their stack in
#           BPF and unwound by libdw)
# ROUNDS rounds (-r, default 5), medians. Needs root; builds with make.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# the switch it turns is a test hook: a test build (TEST_HOOKS=1) of its own
BUILD=${BUILD:-$ROOT/build/test}
OFFCPU=${OFFCPU:-$BUILD/offcpu}
THREADS=1000
EXECS=300
ROUNDS=5
while [ $# -gt 0 ]; do
	case $1 in
	-t) THREADS=$2 && shift ;;
	-n) EXECS=$2 && shift ;;
	-r) ROUNDS=$2 && shift ;;
	*) echo "usage: bench/late.sh [-t THREADS] [-n EXECS] [-r ROUNDS]" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" = 0 ] || { echo "bench/late.sh: needs root" >&2; exit 1; }
make -s -C "$ROOT" BUILD="$BUILD" TEST_HOOKS=1 "$BUILD/offcpu" "$BUILD/bench/stuck" >/dev/null || exit 1
TMP=$(mktemp -d)
trap 'kill $stuck 2>/dev/null; rm -rf "$TMP"' EXIT
median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }

"$BUILD/bench/stuck" -t "$THREADS" >"$TMP/stuck.out" &
stuck=$!
for i in $(seq 50); do grep -q ready "$TMP/stuck.out" && break; sleep 0.1; done
echo "# attach to $THREADS blocked threads, -d 0.2, $ROUNDS rounds (medians)"
for late in 1 0; do
	for r in $(seq "$ROUNDS"); do
		t0=$(date +%s%N)
		OFFCPU_LATE_STACKS=$late "$OFFCPU" record -p $stuck -d 0.2 -o "$TMP/a.data" 2>"$TMP/a.err"
		echo $(( ($(date +%s%N) - t0) / 1000000 )) >>"$TMP/wall.$late"
		sed -nE 's/.*threads blocked at the start \([^)]*; ([0-9]+) us each\).*/\1/p' "$TMP/a.err" >>"$TMP/each.$late"
	done
done
echo "| late stacks | wall ms | us a thread |"
echo "|---|---|---|"
echo "| on | $(median <"$TMP/wall.1") | $(median <"$TMP/each.1") |"
echo "| off | $(median <"$TMP/wall.0") | - |"
kill $stuck 2>/dev/null

echo
echo "# sh running $EXECS short commands one after another, $ROUNDS rounds (medians)"
for late in 1 0; do
	for r in $(seq "$ROUNDS"); do
		/usr/bin/time -f "%U %S" -o "$TMP/t" env OFFCPU_LATE_STACKS=$late "$OFFCPU" record -o "$TMP/e.data" -- \
			sh -c "i=0; while [ \$i -lt $EXECS ]; do /bin/true; i=\$((i + 1)); done" 2>"$TMP/e.err"
		awk '{ printf "%.0f\n", ($1 + $2) * 1000 }' "$TMP/t" >>"$TMP/cpu.$late"
		sed -nE 's/.* walks that met code with no table yet \(([0-9]+) finished.*; ([0-9]+) us each\).*/\1 \2/p' \
			"$TMP/e.err" >>"$TMP/walks.$late"
	done
done
echo "| late stacks | offcpu CPU ms | walks finished | us a walk |"
echo "|---|---|---|---|"
echo "| on | $(median <"$TMP/cpu.1") | $(awk '{ print $1 }' "$TMP/walks.1" | median) | $(awk '{ print $2 }' "$TMP/walks.1" | median) |"
echo "| off | $(median <"$TMP/cpu.0") | - | - |"
