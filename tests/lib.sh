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

# wait_for_line FILE PATTERN SECONDS: SECONDS bounds a hang (the tests give 60),
# never how fast a busy machine gets there
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
# (µs, waker last), STATES is --folded --states (µs, state first). For each
# kind of wait, the wakee's off-CPU time in the function that waits is what
# the workload measured (the time it did not run in its calls, within 5%),
# and all of its sleep there (S) was ended by the one waker that ends it:
# the time under that waker is the S time of the function, to the µs of
# rounding. (The rest is the wait for a CPU after the wakeup, and any
# preemption in the call: on a busy machine, or a guest whose vCPU the host
# holds, it can be a tenth.) Sets why_figures to what it measured.
why_check() {
	local truth=$1 wk=$2 st=$3 label fn func got want woken sleep line
	[ -s "$truth" ] || fail "no ground truth in $truth"
	why_figures=
	# the wakee's part of a line: before ";--;", the waker's after it
	for line in "by_alpha wakee_pipe_a waker_alpha_write" "by_bravo wakee_pipe_b waker_bravo_write" \
		"by_charlie wakee_cond waker_charlie_signal" "timer_sleep wakee_sleep [timer]"; do
		set -- $line
		label=$1 func=$2 fn=$3
		want=$(awk -v l="$label" '$1 == l { print $3 }' "$truth")
		got=$(awk -v f=";$func;" '/^wakee;/ { w = $0; sub(/;--;.*/, "", w); if (index(w, f)) s += $NF }
			END { printf "%.0f", s * 1000 }' "$wk")
		woken=$(awk -v f=";$func;" -v k="$fn" '/^wakee;/ && index($0, ";--;") { w = $0; sub(/;--;.*/, "", w)
				b = substr($0, index($0, ";--;") + 4); sub(/ [0-9]+$/, "", b)
				if (index(w, f) && (k == "[timer]" ? b ~ /(^|;)\[timer\]$/ : index(b, k))) s += $NF }
			END { printf "%.0f", s * 1000 }' "$wk")
		sleep=$(awk -v f=";$func;" '/^\[S\];wakee;/ && index($0, f) { s += $NF } END { printf "%.0f", s * 1000 }' "$st")
		within 5 "$got" "$want" ||
			{ grep "^wakee;.*;$func;" "$wk"; fail "$label: $((got / 1000000)) ms off-CPU in $func, the workload measured $((want / 1000000)) ms"; }
		[ "$sleep" -gt 0 ] && awk -v a="$woken" -v b="$sleep" 'BEGIN { d = a - b; exit !(d <= 1000000 && d >= -1000000) }' ||
			{ grep "^wakee;.*;$func;" "$wk"; fail "$label: of $((sleep / 1000)) us asleep in $func, $((woken / 1000)) us were ended by $fn"; }
		why_figures="$why_figures $fn $((woken / 1000000))/$((got / 1000000))/$((want / 1000000)) ms,"
	done
	! grep '^wakee;.*wakee_sleep.*;--;' "$wk" | grep -v '[;-]\[timer\] [0-9]*$' || fail "the sleep was attributed to something else than [timer]"
	# the vfork: the parent (its stack has vfork, the child's the syscall)
	# waits in D (TASK_KILLABLE), never S
	# (glibc's vfork has no unwind rule where it waits: its caller is not always seen)
	want=$(awk '$1 == "vfork_d" { print $3 }' "$truth")
	got=$(awk '/^wakee;/ { w = $0; sub(/;--;.*/, "", w); if (w ~ /;(__)?vfork([; ]|$)/) s += $NF } END { printf "%.0f", s * 1000 }' "$wk")
	sleep=$(awk '/^\[D\];wakee;/ { s += $NF } END { printf "%.0f", s * 1000 }' "$st")
	within 5 "$got" "$want" || fail "the vfork: $((got / 1000000)) ms off-CPU, the workload measured $((want / 1000000)) ms"
	[ "$sleep" -gt $((got / 2)) ] || fail "the vfork: only $((sleep / 1000000)) of its $((got / 1000000)) ms in D"
	! grep -E '^\[S\];wakee;.*;(__)?vfork[; ]' "$st" || fail "the vfork's parent was recorded asleep in S"
	why_figures="$why_figures D $((sleep / 1000000))/$((got / 1000000))/$((want / 1000000)) ms,"
	# the spinners: preempted about half of the time each, in the loop
	# they measure (spin_hot, and clock_ns reading their clocks; not as the
	# thread starts or once it measured)
	for label in spin_a spin_b; do
		want=$(awk -v l="$label" '$1 == l { print $3 }' "$truth")
		got=$(awk -v l="[preempted];$label;" 'index($0, l) == 1 && /;(spin_hot|clock_ns)[; ]/ { s += $NF } END { printf "%.0f", s * 1000 }' "$st")
		within 10 "$got" "$want" || fail "$label: preempted $((got / 1000000)) ms, the workload measured $((want / 1000000)) ms"
		why_figures="$why_figures $label preempted $((got / 1000000))/$((want / 1000000)) ms,"
	done
	grep -q '^\[runqueue\];' "$st" || fail "no run queue wait recorded"
	runq_check "$truth" "$st"
	why_figures="$why_figures $runq_figures"
}

# runq_check TRUTH STATES: the wakers workload's sleeper beside the spinners
# waits for their CPU after its wakeups; its run queue and preempted time in
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
	local truth=$1 st=$2 want got rq lo hi woken rqs
	want=$(awk '$1 == "runq_wait" { print $3 }' "$truth")
	[ -n "$want" ] || fail "no run queue truth in $truth"
	got=$(awk '/^\[(runqueue|preempted)\];runq_sleeper[; ]/ { s += $NF } END { printf "%.0f", s * 1000 }' "$st")
	rq=$(awk '/^\[runqueue\];runq_sleeper[; ]/ { s += $NF } END { printf "%.0f", s * 1000 }' "$st")
	lo=$((want - want / 20)) hi=$((want + want / 20 + got - rq))
	[ "$got" -ge "$lo" ] && [ "$got" -le "$hi" ] ||
		fail "runq_sleeper: $((rq / 1000000)) ms in the run queue and $(((got - rq) / 1000000)) preempted, the kernel counted $((want / 1000000)) ms"
	# the part after the wakeups of its sleeps, against the kernel's count
	# of its wait from before each sleep call to after it (which may hold
	# a preemption in the call too): how much there was is the scheduler's
	woken=$(awk '$1 == "runq_woken" { print $3 }' "$truth")
	[ -n "$woken" ] || fail "no run queue truth of the sleeps in $truth"
	rqs=$(awk '/^\[runqueue\];runq_sleeper;/ && /;sleep_ms;/ { s += $NF } END { printf "%.0f", s * 1000 }' "$st")
	[ "$rqs" -le $((woken + woken / 20 + 1000000)) ] && [ $((rqs + got - rq)) -ge $((woken - woken / 20 - 1000000)) ] ||
		fail "runq_sleeper: $((rqs / 1000000)) ms split off as run queue wait after the wakeups of its sleeps, $(((got - rq) / 1000000)) preempted; the kernel counted $((woken / 1000000)) ms in its sleep calls"
	runq_figures="runq_sleeper runqueue $((rq / 1000000)) ($((rqs / 1000000)) after its sleeps, schedstat $((woken / 1000000))) + preempted $(((got - rq) / 1000000)) / schedstat $((want / 1000000)) ms"
}

# incomplete_us ERR: the µs of off-CPU time whose user stack the summary in
# ERR says its walk did not complete (every reason but "complete", by its
# share of the time), with the rounding of those shares (0.05% each)
incomplete_us() {
	local secs
	secs=$(sed -nE 's/.* blocks seen \(([0-9.]+) s off-CPU\).*/\1/p' "$1")
	sed -n 's/^offcpu: user stacks by unwind tables: //p' "$1" | tr ';' '\n' |
		awk -v s="${secs:-0}" '/%/ { p = $1; sub(/%.*/, "", p); n++; if ($0 !~ /walks\) complete/) bad += p }
			END { printf "%.0f\n", s * 1e6 * (bad + 0.05 * n) / 100 }'
}

# locks_truth LABEL: the sum of the locks workload's measured waits of LABEL
# (tests/workloads/locks.c), in ns, from $locks_truth_file
locks_truth() {
	awk -v l="$1" '$1 == l { s += $3 } END { print s + 0 }' "$locks_truth_file"
}

# locks_tid LABEL: the thread (or process) of LABEL
locks_tid() {
	awk -v l="$1" '$1 == l { print $2; exit }' "$locks_truth_file"
}

# object_ms PATTERN: the ms of the --locks row ($locks_file) whose object matches PATTERN
object_ms() {
	P=$1 awk '/^  +[0-9.]+ +[0-9]+  / && $0 ~ ENVIRON["P"] { printf "%.0f\n", $1 * 1e6; exit }' "$locks_file"
}

# locks_block PATTERN: the --locks row matching PATTERN and its detail lines
locks_block() {
	P=$1 awk '/^  +[0-9.]+ +[0-9]+  / { on = ($0 ~ ENVIRON["P"]) } on' "$locks_file"
}

# locks_row PATTERN LABEL PCT: the row's time within PCT% of the workload's waits of LABEL
locks_row() {
	local got want
	got=$(object_ms "$1")
	want=$(locks_truth "$2")
	[ -n "$got" ] || { cat "$locks_file"; fail "no --locks row for $1"; }
	within "$3" "$got" "$want" || fail "$1: $((got / 1000000)) ms waited, the workload measured $((want / 1000000)) ms"
	echo "  $1: $((got / 1000000)) ms, measured $((want / 1000000)) ms"
}

# locks_check TRUTH LOCKS: the locks workload's truth against its report
# --locks: the mutex by its symbol with the waiters' time (5%), its
# waiters and its holder with the function it held it in; the pipe's and the
# socket's waits (10%: the workload's clock also runs while the reader is
# on a CPU around its one block, 17-26 ms more under a loaded QEMU guest)
# and the socket's peer, the server in lk_serve. Leaves the pipe's rows in
# pipe.txt and the writer's tid in writer.txt.
locks_check() {
	local holder writer server port w1 w2 client
	locks_truth_file=$1 locks_file=$2
	holder=$(locks_tid holder)
	writer=$(locks_tid writer)
	server=$(locks_tid server)
	port=$(awk '$1 == "port" { print $4 }' "$locks_truth_file")
	read -r w1 w2 < <(awk '$1 == "mutex_wait" { printf "%s ", $2 }' "$locks_truth_file")
	client=$(locks_tid socket_wait)
	# (the waiters' own clocks: about 2 x 400 ms, less when one runs late
	# from the barrier, as in a loaded guest: 401.6 + 393.0 ms once)
	locks_row ' mutex +lk_mutex \(locks\) at 0x' mutex_wait 5
	locks_block ' mutex +lk_mutex ' >mutex.txt
	grep -q "waiters: .*lk-waiter[12]/$w1 .*lk-waiter[12]/$w2 \|waiters: .*lk-waiter[12]/$w2 .*lk-waiter[12]/$w1 " mutex.txt ||
		fail "the mutex's waiters are not both named"
	grep -q "held by: lk-holder/$holder in .*lk_hold_mutex" mutex.txt ||
		fail "the mutex's holder is not lk-holder/$holder in lk_hold_mutex"
	locks_row ' pipe +pipe:\[[0-9]+\]' pipe_wait 10
	locks_row " socket +TCP 127\.0\.0\.1:[0-9]+ -> 127\.0\.0\.1:$port" socket_wait 10
	locks_block " socket +TCP 127\.0\.0\.1:[0-9]+ -> 127\.0\.0\.1:$port" >socket.txt
	grep -q "waiters: lk-client/$client " socket.txt || fail "the socket's waiter is not lk-client/$client"
	grep -q "peer: lk-server/$server in .*lk_serve" socket.txt ||
		fail "the socket's peer is not lk-server/$server in lk_serve"
	locks_block ' pipe +pipe:' >pipe.txt
	echo "$writer" >writer.txt
	locks_figures="mutex $(($(object_ms ' mutex +lk_mutex ') / 1000000)) ms (measured $(($(locks_truth mutex_wait) / 1000000))), pipe $(($(object_ms ' pipe +pipe:') / 1000000)) ms ($(($(locks_truth pipe_wait) / 1000000))), socket $(($(object_ms ' socket +TCP 127[^ ]* ->') / 1000000)) ms ($(($(locks_truth socket_wait) / 1000000)))"
}

# deadlock_check DL REPORT: the ABBA workload's threads (DL: COMM TID lines,
# tests/workloads/abba.c) in its recording's report: one deadlock: line with
# dl-alpha and dl-bravo, their functions and stacks, and both mutexes, each
# held by the other; dl-charlie's chain into it
deadlock_check() {
	local a b c line want
	a=$(awk '$1 == "dl-alpha" { print $2 }' "$1")
	b=$(awk '$1 == "dl-bravo" { print $2 }' "$1")
	c=$(awk '$1 == "dl-charlie" { print $2 }' "$1")
	[ "$(grep -c '^deadlock:' "$2")" = 1 ] || fail "not one deadlock: line"
	line=$(grep '^deadlock:' "$2")
	for want in "dl-alpha/$a in dl_alpha_locks (stack: [^)]*dl_alpha_locks <- alpha" \
		"dl-bravo/$b in dl_bravo_locks (stack: [^)]*dl_bravo_locks <- bravo" \
		"dl-alpha/$a in [a-z_]* (stack: [^)]*) waits on mutex dl_mutex_b (abba), held by dl-bravo/$b" \
		"dl-bravo/$b in [a-z_]* (stack: [^)]*) waits on mutex dl_mutex_a (abba), held by dl-alpha/$a"; do
		grep -q "$want" <<<"$line" || fail "the deadlock line lacks: $want"
	done
	grep -q "^  waiting for it: dl-charlie/$c in dl_charlie_waits (stack: [^)]*dl_charlie_waits <- charlie[^)]*) waits on mutex dl_mutex_a (abba), held by dl-alpha/$a, in deadlock 1$" "$2" ||
		fail "dl-charlie's chain into the deadlock is not shown"
	deadlock_figures="deadlock between dl-alpha/$a and dl-bravo/$b, dl-charlie/$c waiting for it"
}
