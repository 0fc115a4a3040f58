# shellcheck shell=bash
# Why threads waited: who woke each wait (--wakers), in which state, and the
# wait for a CPU after the wakeup (--state SDR), against the wakers
# workload's own clocks (tests/workloads/wakers.c); the file stays one perf
# reads with the same totals.

WAKERS=$ROOT/$BUILD/tests/wakers

# record_why ARGS...: the workload under offcpu record ARGS -o why.data
record_why() {
	"$OFFCPU" record "$@" -o why.data -- "$WAKERS" -r truth.txt 2>rec.err ||
		fail "record $* failed"
	cat rec.err truth.txt
	! grep FALLBACK rec.err || fail "a fallback was taken"
}

# the ground truth: time per waker function, the timer, D, preemption, run queue
test_why_ground_truth() {
	record_why --wakers --state SDR
	grep -q "wakeups of recorded blocks: [1-9]" rec.err || fail "the summary does not count wakeups"
	"$OFFCPU" report -i why.data --wakers --folded >wakers.folded || fail "report --wakers --folded failed"
	"$OFFCPU" report -i why.data --folded --states >states.folded || fail "report --folded --states failed"
	grep '^wakee;' wakers.folded
	grep '^\[' states.folded | grep 'wakee\|spin'
	why_check truth.txt wakers.folded states.folded
	note "$why_figures"
}

# the run queue split without a program at each wakeup (the scheduler's
# enqueue time, read at the switch-in) and with one (a sched_waking stamp):
# both hold the sleeper's wait for a CPU to the kernel's own account, and -v
# says which one ran
test_why_runq_sources() {
	local src
	for src in queued wakeup; do
		OFFCPU_TEST_RUNQ=$src record_why -v --state SDR
		if [ $src = queued ]; then
			grep -q "split off from the scheduler's enqueue times" rec.err || fail "-v does not name the enqueue times"
			! grep -q "wakeups of recorded blocks" rec.err || fail "a wakeup program ran for the split"
		else
			grep -q "split off from a sched_waking program's stamps" rec.err || fail "-v does not name the stamps"
		fi
		"$OFFCPU" report -i why.data --folded --states >states.folded || fail "report --folded --states failed"
		grep '^\[.*runq_sleeper' states.folded | cut -c1-160
		runq_check truth.txt states.folded
		note "$src: $runq_figures"
	done
}

# perf reads the file: offcpu-time totals per thread are what offcpu report
# gives, the waker samples add nothing to them, and the wakee's waits are all there
test_why_perf_totals() {
	record_why --wakers --state SDR --stacks both
	perf script -i why.data -F tid,event,period 2>perf.err >script.txt
	grep -q 'offcpu-waker:' script.txt || fail "perf script shows no waker samples"
	! grep -qi 'error\|unexpected\|failed' perf.err || { cat perf.err; fail "perf script complained"; }
	awk '$3 == "offcpu-time:" { s[$1] += $2 } END { for (t in s) print t, s[t] }' script.txt | sort >perf.tot
	per_tid_offcpu why.data | sort >offcpu.tot
	# (offcpu report prints ms with 3 decimals)
	join perf.tot offcpu.tot | awk '{ d = $2 - $3; if (d < 0) d = -d; if (d > 1000 + $2 / 1000) { print; bad = 1 } } END { exit bad }' ||
		fail "perf and offcpu report disagree on per-thread totals"
	[ "$(wc -l <perf.tot)" = "$(wc -l <offcpu.tot)" ] || fail "perf and offcpu report see other threads"
	wakee=$(awk '$1 == "by_alpha" { print $2 }' truth.txt)
	want=$(awk '$1 ~ /^by_|^timer_sleep$|^vfork_d$/ { s += $3 } END { print s }' truth.txt)
	got=$(awk -v t="$wakee" '$1 == t { print $2 }' perf.tot)
	within 5 "${got:-0}" "$want" ||
		fail "perf script: the wakee waited $got ns, the workload measured $want ns"
	# perf report reads the waker event too: the wakers' own stacks
	perf report -i why.data --stdio --sort comm -g none 2>&1 |
		awk '/of event .offcpu-waker./ { w = 1 } w && / waker_bravo *$/ { f = 1 } END { exit !f }' ||
		fail "perf report does not show waker_bravo as a waker"
	perf script -i why.data -F weight 2>/dev/null | awk 'NF { print $1 }' | sort -u | tr '\n' ' ' >weights.txt
	grep -q '2' weights.txt && grep -q '3' weights.txt && grep -q '1' weights.txt && grep -q '6' weights.txt ||
		{ cat weights.txt; fail "the weights do not carry S, D, preempted and runqueue"; }
}

# the text table groups by state and by waker
test_why_sort_keys() {
	record_why --wakers --state SDR
	"$OFFCPU" report -i why.data --sort comm,state >state.txt || fail "--sort comm,state failed"
	cat state.txt
	grep -qE '^ *[0-9.]+ +.*wakee +D *$' state.txt || fail "no D row for the wakee"
	grep -qE 'spin_a +preempted *$' state.txt || fail "no preempted row for spin_a"
	grep -qE 'runqueue *$' state.txt || fail "no runqueue row"
	"$OFFCPU" report -i why.data --sort waker --comm wakee >waker.txt || fail "--sort waker failed"
	cat waker.txt
	want=$(awk '$1 == "by_bravo" { print $3 }' truth.txt)
	got=$(awk '$0 ~ /waker_bravo/ && $1 ~ /^[0-9.]+$/ { s += $1 } END { printf "%.0f", s * 1e6 }' waker.txt)
	within 5 "$got" "$want" || fail "--sort waker: waker_bravo $got ns, the workload measured $want ns"
}

# without --wakers, or in an old file, the report says what is missing
test_why_refused_without() {
	"$OFFCPU" record -o plain.data -- sleep 0.1 2>rec.err || fail "record failed"
	"$OFFCPU" report -i plain.data --sort waker >out.txt 2>err.txt && fail "--sort waker worked without wakers"
	cat err.txt
	grep -q -- '--wakers' err.txt || fail "the error does not say to record with --wakers"
	"$OFFCPU" report -i plain.data --wakers --folded >out.txt 2>err.txt && fail "--wakers --folded worked without wakers"
	grep -q -- '--wakers' err.txt || fail "the error does not say to record with --wakers"
	# states are always kept: S here
	"$OFFCPU" report -i plain.data --folded --states | grep -q '^\[S\];sleep;' || fail "no [S] root for sleep"
	"$OFFCPU" record --help | tr -s ' \n' '  ' | grep -q -- '--wakers Also record who woke each block' ||
		fail "--help does not explain --wakers"
}

# a wakeup by a soft interrupt is the interrupt's, not the task it ran on:
# loopback TCP delivers in NET_RX
test_why_softirq_waker() {
	command -v python3 >/dev/null || skip "no python3"
	cat >tcp.py <<'PY'
import socket, threading, time
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
port = srv.getsockname()[1]
def client():
    c = socket.create_connection(("127.0.0.1", port))
    for i in range(5):
        time.sleep(0.05)
        c.sendall(b"x")
    c.close()
t = threading.Thread(target=client); t.start()
conn, _ = srv.accept()
while conn.recv(1):
    pass
t.join()
PY
	"$OFFCPU" record --wakers -o tcp.data -- python3 tcp.py 2>rec.err || fail "record failed"
	"$OFFCPU" report -i tcp.data --wakers --folded >tcp.folded || fail "report failed"
	grep 'sock_recv\|recv' tcp.folded | head
	grep -q ';--;.*\[softirq:NET_RX\] [0-9]*$' tcp.folded || fail "no wait woken by [softirq:NET_RX]"
}

# A waker on its task's kernel stack is that task, elsewhere an interrupt: the
# stack's size is the kernel's THREAD_SIZE (16 KiB on x86-64, 32 with KASAN,
# more with large pages), read from a task's stack area, and -v says it. The
# kernel's own count says it too: the kernel stacks in use (KernelStack of
# /proc/meminfo) over the threads that have one, to the nearest power of two.
test_why_kernel_stack_size() {
	local kib threads want
	"$OFFCPU" record -v --wakers -o s.data -- true 2>rec.err || { cat rec.err; fail "record failed"; }
	kib=$(sed -nE 's/.*kernel stacks are ([0-9]+) KiB \(a task.s stack area\).*/\1/p' rec.err)
	[ -n "$kib" ] || { grep -i 'stack size\|kernel stacks are' rec.err; fail "-v does not say the kernel's stack size"; }
	threads=$(awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg)
	want=$(awk -v k="$(awk '/^KernelStack:/ { print $2 }' /proc/meminfo)" -v n="$threads" \
		'BEGIN { r = k / n; p = 4; while (p * 1.5 < r) p *= 2; print p }')
	echo "offcpu: $kib KiB; KernelStack over $threads threads: about $want KiB"
	[ "$kib" = "$want" ] || fail "offcpu takes kernel stacks for $kib KiB, the kernel's count says $want"
	note "kernel stacks: $kib KiB, from a task's stack area"
}

# A waker's kernel stack is the waker's alone: the kernel's helper walks it
# from inside offcpu's BPF program, whose frame and the tracepoint's
# bpf_trace_run1 come first (the same on 6.1, 6.12 and 6.18); they are left
# out, and every waker's kernel stack begins where the wakeup began, in
# try_to_wake_up (or in __traceiter_sched_waking while another probe, such
# as a concurrent offcpu --wakers, is on sched_waking too)
test_why_waker_kernel_stack() {
	local n bad
	record_why --wakers --stacks both
	"$OFFCPU" report -i why.data --wakers --folded >wakers.folded || fail "report --wakers --folded failed"
	# the waker's frames follow "--", innermost first
	awk -F';--;' 'NF > 1 { print $2 }' wakers.folded | cut -d';' -f1-3 | sort | uniq -c | sort -rn | head -n 8
	n=$(awk -F';--;' 'NF > 1 && $2 ~ /_\[k\]/' wakers.folded | wc -l)
	[ "$n" -gt 0 ] || fail "no waker with a kernel stack"
	# (a BPF program's frame is bpf_prog_TAG_NAME: an interrupt's waker stack
	# may hold the interrupted task's bpf_prog_load, another program's load)
	! grep -E 'bpf_prog_[0-9a-f]{16}|bpf_trampoline_|bpf_trace_run[0-9]|__bpf_trace_' wakers.folded || fail "offcpu's own frames in a stack"
	bad=$(awk -F';--;' 'NF > 1 && $2 ~ /_\[k\]/ { split($2, f, ";")
		if (f[1] != "try_to_wake_up_[k]" && f[1] != "__traceiter_sched_waking_[k]") print }' wakers.folded)
	[ -z "$bad" ] || { echo "$bad" | cut -c1-300; fail "wakers' kernel stacks that do not begin at try_to_wake_up"; }
	note "$n wakers' kernel stacks, each from try_to_wake_up"
}
