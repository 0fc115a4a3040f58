#!/usr/bin/env bash
# The demo: record the bundled ground-truth workload (threads that sleep, read
# a pipe, wait on a condition variable and poll), then report it with offcpu
# and with perf.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
OUT=${OUT:-$ROOT/demo.data}
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

echo "== offcpu record -o $OUT -- groundtruth   (threads block for known times)"
$SUDO "$ROOT/$BUILD/offcpu" record -o "$OUT" -- "$ROOT/$BUILD/tests/groundtruth" -r "$ROOT/demo.truth"
echo
echo "== what each thread measured itself (comm tid blocked_ns calls)"
cat "$ROOT/demo.truth"
echo
echo "== offcpu report -i $OUT"
$SUDO "$ROOT/$BUILD/offcpu" report -i "$OUT"
echo "== perf report -i $OUT --stdio (top)"
$SUDO perf report -i "$OUT" --stdio --no-children 2>/dev/null | sed -n '1,40p'
