#!/usr/bin/env bash
# record --push over a long run (issue 32): resident memory and CPU time of
#   push      offcpu record -a --wakers --push URL --push-interval INTERVAL
#   baseline  offcpu record -a --wakers --switch-output INTERVAL --switch-max-files 2
# side by side for MINUTES (-m, default 30; INTERVAL -i, default 5s), the
# backend a receiver on 127.0.0.1 (tests/integration/push_receiver.py) that
# stores every request. Every 15 s: each one's VmRSS and CPU time (user +
# system, /proc/PID/stat). Prints the samples, then a table: RSS over the
# first and last five minutes, the peak, CPU seconds, and what push sent and
# dropped. Needs root.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
OFFCPU=${OFFCPU:-$BUILD/offcpu}
MINUTES=30
INTERVAL=5s
while [ $# -gt 0 ]; do
	case $1 in
	-m) MINUTES=$2 && shift ;;
	-i) INTERVAL=$2 && shift ;;
	*) echo "usage: bench/push.sh [-m MINUTES] [-i INTERVAL]" >&2; exit 2 ;;
	esac
	shift
done
[ "$(id -u)" = 0 ] || { echo "bench/push.sh: needs root" >&2; exit 1; }
make -s -C "$ROOT" BUILD="$BUILD" "$BUILD/offcpu" >/dev/null || exit 1
TMP=$(mktemp -d)
trap 'kill $recv $push $base 2>/dev/null; rm -rf "$TMP"' EXIT
recv= push= base=

python3 "$ROOT/tests/integration/push_receiver.py" --dir "$TMP/recv" --port-file "$TMP/port" 2>/dev/null &
recv=$!
for i in $(seq 100); do [ -s "$TMP/port" ] && break; sleep 0.1; done
port=$(cat "$TMP/port")
"$OFFCPU" record -a --wakers --push "http://127.0.0.1:$port" --push-interval "$INTERVAL" \
	-d "${MINUTES}m" 2>"$TMP/push.err" &
push=$!
"$OFFCPU" record -a --wakers --switch-output "$INTERVAL" --switch-max-files 2 -o "$TMP/base.data" \
	-d "${MINUTES}m" 2>"$TMP/base.err" &
base=$!

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat" 2>/dev/null; }
echo "# seconds push_rss_kib base_rss_kib push_cpu_s base_cpu_s"
t0=$(date +%s)
while kill -0 $push 2>/dev/null && kill -0 $base 2>/dev/null; do
	pr=$(rss $push) br=$(rss $base) pc=$(cpu $push) bc=$(cpu $base)
	[ -n "$pr" ] && [ -n "$br" ] && echo "$(($(date +%s) - t0)) $pr $br $pc $bc" | tee -a "$TMP/samples"
	sleep 15
done
wait $push
wait $base
awk -v m="$MINUTES" '
	{ t[NR] = $1; p[NR] = $2; b[NR] = $3; pc = $4; bc = $5 }
	$1 <= 300 { fp += $2; fb += $3; nf++ }
	$1 >= (m - 5) * 60 { lp += $2; lb += $3; nl++ }
	$2 > mp { mp = $2 } $3 > mb { mb = $3 }
	END {
		printf "\n| run | RSS, first 5 min | RSS, last 5 min | peak RSS | CPU |\n|---|---|---|---|---|\n"
		printf "| push | %.1f MiB | %.1f MiB | %.1f MiB | %.0f s |\n", fp / nf / 1024, lp / nl / 1024, mp / 1024, pc
		printf "| baseline | %.1f MiB | %.1f MiB | %.1f MiB | %.0f s |\n", fb / nf / 1024, lb / nl / 1024, mb / 1024, bc
	}' "$TMP/samples"
echo
grep 'push' "$TMP/push.err"
echo "requests stored by the receiver: $(ls "$TMP/recv" | grep -c body)"
