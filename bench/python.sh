#!/usr/bin/env bash
# What walking a CPython thread's Python frames costs at each of its blocks,
# for each offcpu binary given, side by side (bench/README.md, "Python
# frames"):
#
#   bench/python.sh [-r ROUNDS] [-n PASSES] [-p PYTHON]... OFFCPU [OFFCPU...]
#
# Each round runs tests/workloads/py_handoff.py (4 threads passing a token
# through a threading.Lock each, in a Python function) under each PYTHON
# (default: every CPython 3.10-3.13 found, pyenv's and Debian's), pinned to
# cpu 1, and attaches each OFFCPU in turn with -p while it sleeps its first
# second. The BPF program's on_switch run time (kernel.bpf_stats_enabled, read
# from the program offcpu loaded while it runs) is divided by the blocks
# offcpu counted: "BPF ns per block" (every cpu's switches are in the run
# time, each other one a filter lookup), and by its runs: "ns per run".
# Prints medians and ranges. Needs root and bpftool.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=5
PASSES=200000
PYTHONS=()
while [ $# -gt 0 ]; do
	case $1 in
	-r) ROUNDS=$2 && shift ;;
	-n) PASSES=$2 && shift ;;
	-p) PYTHONS+=("$2") && shift ;;
	-*) echo "usage: bench/python.sh [-r ROUNDS] [-n PASSES] [-p PYTHON]... OFFCPU..." >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
[ $# -gt 0 ] || { echo "usage: bench/python.sh [-r ROUNDS] [-n PASSES] [-p PYTHON]... OFFCPU..." >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench/python.sh: needs root" >&2; exit 1; }
command -v bpftool >/dev/null || { echo "bench/python.sh: needs bpftool" >&2; exit 1; }
if [ ${#PYTHONS[@]} = 0 ]; then
	for v in 3.10 3.11 3.12 3.13; do
		for p in "$(pyenv root 2>/dev/null)"/versions/$v.*/bin/python$v; do
			[ -x "$p" ] && PYTHONS+=("$p") && break
		done
	done
	[ -x /usr/bin/python3.11 ] && PYTHONS+=(/usr/bin/python3.11)
fi
TMP=$(mktemp -d)
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$old_stats; rm -rf "$TMP"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1

# the on_switch program of offcpu process $1: "run_time_ns run_cnt", every 50 ms until it exits
watch_prog() {
	local rec=$1 out=$2 id
	while kill -0 "$rec" 2>/dev/null; do
		for id in $(cat /proc/"$rec"/fdinfo/* 2>/dev/null | awk '/^prog_id:/ { print $2 }' | sort -u); do
			bpftool prog show id "$id" 2>/dev/null |
				awk '/name on_switch/ { for (i = 1; i <= NF; i++) { if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) } }
				     END { if (t) print t, c }'
		done | tail -n 1 >"$out.new"
		[ -s "$out.new" ] && mv "$out.new" "$out"
		sleep 0.05
	done
}

stat() { # median (min-max) of the numbers on stdin
	sort -n | awk '{ v[NR] = $1 } END { if (!NR) { print "-"; exit } printf "%.0f (%.0f-%.0f)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}

# a python's key: its index and name (pyenv's python3.11 and Debian's share a name)
pykey() { echo "$1-$(basename "$2")"; }

for r in $(seq "$ROUNDS"); do
	for i in "${!PYTHONS[@]}"; do
		py=${PYTHONS[$i]}
		for b in $(seq $#); do
			bin=${!b}
			taskset -c 1 "$py" "$ROOT/tests/workloads/py_handoff.py" -d 1 -n "$PASSES" >"$TMP/wl.out" &
			wl=$!
			sleep 0.3
			"$bin" record -p "$wl" -o "$TMP/h.data" 2>"$TMP/rec.err" &
			rec=$!
			watch_prog "$rec" "$TMP/prog" &
			watcher=$!
			wait "$rec" "$wl"
			wait "$watcher"
			blocks=$(sed -nE 's/^offcpu: ([0-9]+) blocks seen.*/\1/p' "$TMP/rec.err")
			read -r t c <"$TMP/prog" 2>/dev/null || { t=0; c=0; }
			key=$(pykey "$i" "$py")-$b
			[ "${blocks:-0}" -gt 0 ] && echo $((t / blocks)) >>"$TMP/block.$key"
			[ "${c:-0}" -gt 0 ] && echo $((t / c)) >>"$TMP/run.$key"
			grep -q "^offcpu: Python frames: [1-9]" "$TMP/rec.err" && echo "$key" >>"$TMP/walked"
			rm -f "$TMP/prog"
		done
	done
done

echo "# py_handoff.py -n $PASSES, $ROUNDS rounds: BPF ns per block; ns per on_switch run (median (range))"
printf '| python |'
for b in $(seq $#); do printf ' %s |' "${!b}"; done
echo
printf '|---|'
for b in $(seq $#); do printf -- '---|'; done
echo
for i in "${!PYTHONS[@]}"; do
	py=${PYTHONS[$i]}
	printf '| %s |' "$py"
	for b in $(seq $#); do
		key=$(pykey "$i" "$py")-$b
		w=$(grep -cx "$key" "$TMP/walked" 2>/dev/null)
		printf ' %s; %s (Python frames in %s of %s) |' "$(stat <"$TMP/block.$key" 2>/dev/null)" \
			"$(stat <"$TMP/run.$key" 2>/dev/null)" "${w:-0}" "$ROUNDS"
	done
	echo
done
