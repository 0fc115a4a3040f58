# Helpers for offcpu's integration tests (sourced by run.sh for every test).
# shellcheck shell=bash

: "${BUILD:=build}"
OFFCPU=$ROOT/$BUILD/offcpu
GT=$ROOT/$BUILD/tests/groundtruth
SPIN=$ROOT/$BUILD/tests/spin

fail() {
	echo "FAIL: $*" >&2
	# the recorder's summary says what it dropped, if anything
	[ ! -s rec.err ] || sed 's/^/  rec.err: /' rec.err >&2
	exit 1
}

# skip REASON: a prerequisite cannot be had; run.sh counts and shows it
skip() {
	echo "SKIP: $*"
	exit 77
}

# note TEXT: a line run.sh shows under the test's result, even when it passes
note() {
	echo "NOTE: $*"
}

# within PCT ACTUAL EXPECTED: |actual - expected| <= pct% of expected
within() {
	awk -v p="$1" -v a="$2" -v e="$3" 'BEGIN { d = a - e; if (d < 0) d = -d; exit !(e > 0 && d <= e * p / 100) }'
}

# per_tid_perf FILE: "tid ns" per thread of the offcpu-time event, read by perf script
per_tid_perf() {
	perf script -i "$1" -F tid,period,event 2>"$1.script.err" |
		awk 'NF == 3 && $3 == "offcpu-time:" { s[$1] += $2 } END { for (t in s) print t, s[t] }'
}

# per_tid_offcpu FILE: "tid ns" per thread, read by offcpu report
per_tid_offcpu() {
	"$OFFCPU" report -i "$1" -s tid -e offcpu-time |
		awk '!/^#/ && NF == 3 { printf "%s %.0f\n", $3, $1 * 1e6 }'
}

# check_threads RESULT TOTALS PCT: every thread the workload measured is recorded within PCT%
check_threads() {
	local result=$1 totals=$2 pct=$3 bad=0 comm tid ns calls got
	[ -s "$result" ] || fail "no ground truth in $result"
	while read -r comm tid ns calls; do
		got=$(awk -v t="$tid" '$1 == t { print $2 }' "$totals")
		got=${got:-0}
		if within "$pct" "$got" "$ns"; then
			echo "  $comm/$tid: blocked $((ns / 1000000)) ms, recorded $((got / 1000000)) ms"
		else
			echo "  $comm/$tid: blocked $((ns / 1000000)) ms, recorded $((got / 1000000)) ms: off by more than $pct%" >&2
			bad=1
		fi
	done <"$result"
	[ $bad = 0 ] || fail "per-thread totals differ from ground truth"
}

# wait_for_line FILE PATTERN SECONDS
wait_for_line() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# cgroup v2 mount point
cgroup2_root() {
	awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts
}

# lost_time FILE: the summary in FILE reports lost time: a "[time lost]" line
# of the loss table (src/record/summary.c). A block kept without its stack,
# or summed instead of streamed, keeps its time and is no reason to retry.
# When it is, the retry is logged with the summary that caused it.
lost_time() {
	grep -q '\[time lost\]' "$1" || return 1
	echo "the recording lost time (a rare, counted kernel-side miss); made again:" >&2
	grep '\[time lost\]' "$1" >&2
}

# record_truth ARGS...: offcpu record ARGS with its summary in rec.err. When the
# recorder reports that it lost time (see lost_time), the recording cannot be
# held to the ground truth: it is made again, up to three times. A silent
# loss still fails the test.
record_truth() {
	local try
	for try in 1 2 3; do
		# stdout (-o -) of a recording that is made again must not pile up
		"$OFFCPU" record "$@" >rec.out 2>rec.err || { cat rec.err >&2; fail "record $* failed"; }
		lost_time rec.err || { cat rec.out; rm -f rec.out; return 0; }
	done
	fail "three recordings in a row reported losses"
}

# why_check TRUTH WAKERS STATES: the wakers workload (tests/workloads/wakers.c)
# against its own clocks, through offcpu report: WAKERS is --wakers --folded
# (µs, waker last), STATES is --folded --states (µs, state first). Sets
# why_figures to what it measured.
why_check() {
	local truth=$1 wk=$2 st=$3 label fn got want pct line
	[ -s "$truth" ] || fail "no ground truth in $truth"
	why_figures=
	# time under each waker function, in the wakee's waits (µs -> ns)
	for line in "by_alpha waker_alpha_write" "by_bravo waker_bravo_write" "by_charlie waker_charlie_signal"; do
		set -- $line
		label=$1 fn=$2
		want=$(awk -v l="$label" '$1 == l { print $3 }' "$truth")
		got=$(awk -v f="$fn" '/^wakee;/ && index($0, ";--;") && index(substr($0, index($0, ";--;")), f) { s += $NF } END { printf "%.0f", s * 1000 }' "$wk")
		within 5 "$got" "$want" || fail "$label: woken by $fn for $((got / 1000000)) ms, the workload measured $((want / 1000000)) ms"
		why_figures="$why_figures $fn $((got / 1000000))/$((want / 1000000)) ms,"
	done
	# the timer's sleep: woken by no task
	want=$(awk '$1 == "timer_sleep" { print $3 }' "$truth")
	got=$(awk '/^wakee;/ && /wakee_sleep/ && /;--;(.*;)?\[timer\] [0-9]+$/ { s += $NF } END { printf "%.0f", s * 1000 }' "$wk")
	within 5 "$got" "$want" || { grep wakee_sleep "$wk"; fail "the sleep: woken by [timer] for $((got / 1000000)) ms, slept $((want / 1000000)) ms"; }
	! grep '^wakee;.*wakee_sleep.*;--;' "$wk" | grep -v '[;-]\[timer\] [0-9]*$' || fail "the sleep was attributed to something else than [timer]"
	why_figures="$why_figures [timer] $((got / 1000000))/$((want / 1000000)) ms,"
	# the vfork: uninterruptible
	want=$(awk '$1 == "vfork_d" { print $3 }' "$truth")
	# (glibc's vfork has no unwind rule where it waits: its caller is not always seen)
	got=$(awk '/^\[D\];wakee;/ { s += $NF } END { printf "%.0f", s * 1000 }' "$st")
	within 5 "$got" "$want" || fail "the vfork: $((got / 1000000)) ms in D, the workload measured $((want / 1000000)) ms"
	why_figures="$why_figures D $((got / 1000000))/$((want / 1000000)) ms,"
	# the spinners: preempted about half of the time each
	for label in spin_a spin_b; do
		want=$(awk -v l="$label" '$1 == l { print $3 }' "$truth")
		got=$(awk -v l="[preempted];$label;" 'index($0, l) == 1 { s += $NF } END { printf "%.0f", s * 1000 }' "$st")
		within 10 "$got" "$want" || fail "$label: preempted $((got / 1000000)) ms, the workload measured $((want / 1000000)) ms"
		why_figures="$why_figures $label preempted $((got / 1000000))/$((want / 1000000)) ms,"
	done
	grep -q '^\[runqueue\];' "$st" || fail "no run queue wait recorded"
	runq_check "$truth" "$st"
	why_figures="$why_figures $runq_figures"
}

# runq_check TRUTH STATES: the wakers workload's sleeper beside the spinners
# waits for their CPU after each wakeup; its run queue and preempted time in
# STATES (--folded --states, µs) against the kernel's own account of its run
# queue wait (schedstat): within 5%, with room above for its preempted time.
# Whether the kernel's account includes a task's waits after preemptions
# depends on the kernel: on 6.1 the run queue and preempted time summed to
# it (872 + 36 against 907 ms), on 6.18 mostly (110 + 47 against 152, exact
# in other runs), on 6.12 the run queue part
# alone did, by either source (enqueue times: 779 against 788 ms, 576
# against 591; wakeup stamps: 884 against 888, 722 against 733), with 11 to
# 231 ms preempted on top. Sets runq_figures.
runq_check() {
	local truth=$1 st=$2 want got rq lo hi
	want=$(awk '$1 == "runq_wait" { print $3 }' "$truth")
	[ -n "$want" ] || fail "no run queue truth in $truth"
	got=$(awk '/^\[(runqueue|preempted)\];runq_sleeper[; ]/ { s += $NF } END { printf "%.0f", s * 1000 }' "$st")
	rq=$(awk '/^\[runqueue\];runq_sleeper[; ]/ { s += $NF } END { printf "%.0f", s * 1000 }' "$st")
	lo=$((want - want / 20)) hi=$((want + want / 20 + got - rq))
	[ "$got" -ge "$lo" ] && [ "$got" -le "$hi" ] ||
		fail "runq_sleeper: $((rq / 1000000)) ms in the run queue and $(((got - rq) / 1000000)) preempted, the kernel counted $((want / 1000000)) ms"
	[ "$rq" -ge $((want / 10)) ] ||
		fail "runq_sleeper: only $((rq / 1000000)) of $((want / 1000000)) ms split off as run queue wait after wakeups"
	runq_figures="runq_sleeper runqueue $((rq / 1000000)) + preempted $(((got - rq) / 1000000)) / schedstat $((want / 1000000)) ms"
}
