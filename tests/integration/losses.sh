# shellcheck shell=bash
# Nothing lost, nothing wrong, whatever the limits: the summary's totals are
# the run's, each loss has its share, and the blocks under way at the start
# are noted while their threads switch on the other CPU.

STACKS=$ROOT/$BUILD/tests/stacks

# summary_ns FILE PATTERN: the time after PATTERN in the summary ("1.2 ms"), in ns
summary_ns() {
	sed -nE "s/.*$2 ([0-9.]+) (ns|us|ms|s) of .*/\1 \2/p" "$1" | head -1 |
		awk '{ m = $2 == "s" ? 1e9 : $2 == "ms" ? 1e6 : $2 == "us" ? 1e3 : 1; printf "%.0f", $1 * m }'
}

# --max-stacks far below the stacks a run has (1024 distinct stacks, 64 map
# entries), the maps emptied only at the end (--flush 0), so that they fill
# however slowly the machine runs the workload: the stack map with the
# stacks workload's paths, the summed map with the short sleeps of 100
# processes (a summed context is a thread's: once the stacks are full, each
# thread's blocks without one still have a context of their own). Once the
# summed map is full, short blocks are written one by one; no block is lost,
# the threads of the ground-truth workload beside it have all their time,
# and the summary's totals are the run's (they were those of the blocks
# that fit the maps: 0.28 s of 1.33)
test_max_stacks_totals() {
	local seen file st n want got blocked
	record_truth --max-stacks 64 --flush 0 -o m.data -- sh -c "$STACKS 1024 1000 >stacks.txt & $GT -r truth.txt &
		i=0; while [ \$i -lt 100 ]; do sleep 0.01; i=\$((i + 1)); done; wait"
	cat rec.err
	grep -q 'short blocks written one by one: the summary map was full' rec.err ||
		fail "the summed map did not fill: the test proves nothing"
	per_tid_perf m.data >perf.tot
	check_threads truth.txt perf.tot 5
	# the time seen is the file's: nothing was lost
	seen=$(sed -nE 's/.* blocks seen \(([0-9.]+) s off-CPU\).*/\1/p' rec.err)
	file=$(awk '{ s += $2 } END { printf "%.0f", s }' perf.tot)
	echo "seen ${seen} s, in the file $((file / 1000000)) ms"
	within 1 "$(awk -v s="$seen" 'BEGIN { printf "%.0f", s * 1e9 }')" "$file" ||
		fail "the summary says ${seen} s off-CPU, the file holds $((file / 1000000)) ms"
	# the stacks workload's sleeps of 1 ms that blocked are all there (each
	# off-CPU until its timer, 1 ms after it was armed, with 50 us of slack)
	blocked=$(awk '{ print $2 }' stacks.txt)
	[ -n "$blocked" ] || fail "the stacks workload did not say what it blocked in"
	st=$(perf script -i m.data -F comm,period 2>/dev/null | awk '$1 == "stacks" { s += $2 } END { printf "%.0f", s }')
	[ "$st" -ge $((blocked * 1000000)) ] || fail "stacks: $((st / 1000000)) ms recorded, $blocked sleeps of 1 ms blocked"
	# of its distinct stacks, the stack map held 64 at most: the rest of the
	# blocks that were said to be kept without a user stack are the file's stackless ones
	n=$(sed -nE 's/.* ([0-9]+) blocks kept without a user stack.*/\1/p' rec.err)
	[ "${n:-0}" -ge $((blocked - 64)) ] || fail "only ${n:-0} blocks without a user stack: $blocked distinct stacks blocked, the map holds 64"
	want=$(summary_ns rec.err 'kept without a user stack.* blocks \([^)]*\),')
	"$OFFCPU" report -i m.data --folded >m.folded || fail "report failed"
	got=$(awk -F';' 'NF == 2 && $2 ~ /^\[unknown\] / { split($2, a, " "); s += a[2] } END { printf "%.0f", s * 1000 }' m.folded)
	echo "without a user stack: $n blocks, $((want / 1000000)) ms said, $((got / 1000000)) ms in the file"
	within 2 "$got" "$want" || fail "the summary's stackless time is not the file's"
}

# each loss is stated with its share of the blocks and of the time; a run
# that loses nothing says so
test_loss_shares_stated() {
	"$OFFCPU" record --max-stacks 64 -o s.data -- "$STACKS" 1024 200 >/dev/null 2>rec.err ||
		{ cat rec.err; fail "record failed"; }
	cat rec.err
	blocks=$(sed -nE 's/^offcpu: ([0-9]+) blocks seen.*/\1/p' rec.err)
	# (a thread's first block is now and then missed when another program
	# attaches to sched_switch meanwhile: tests/integration/gaps.sh)
	[ "${blocks:-0}" -ge 1000 ] || fail "only ${blocks:-0} blocks seen"
	# (with a comma every three digits)
	blocks=$(echo "$blocks" | sed -E ':a; s/([0-9])([0-9]{3})($|,)/\1,\2\3/; ta')
	grep -Eq "\[degraded\] [0-9]+ blocks kept without a user stack: .*; [0-9,]+ of $blocks blocks \([0-9.]+%\), [0-9.]+ [mu]?s of [0-9.]+ [mu]?s off-CPU \([0-9.<>]+%\)$" rec.err ||
		fail "no share of the blocks and the time on the stackless blocks' line"
	grep -q "WARNING: this recording is incomplete: no block is missing, but some were kept with less detail" rec.err ||
		fail "most blocks without a stack, and no warning"
	"$OFFCPU" record -o n.data -- "$STACKS" 16 1000 >/dev/null 2>rec.err || { cat rec.err; fail "record failed"; }
	grep -q "nothing dropped" rec.err || { cat rec.err; fail "a small run lost something"; }
}

# -p of processes that switch about 100,000 times a second, and of one asleep
# all along: the start iterator notes the blocks under way while the switch
# program runs for the same threads on the other CPU, and writes no field
# that program writes. In ten short recordings no thread has more time than
# the recording, the sleeper has all of it, and no noted block is lost.
test_open_blocks_under_churn() {
	local pipe sleeper i t lost
	perf bench sched pipe -T -l 1000000000 >/dev/null 2>&1 &
	pipe=$!
	sleep 60 &
	sleeper=$!
	sleep 0.3
	for i in 1 2 3 4 5 6 7 8 9 10; do
		"$OFFCPU" record -o c$i.data -d 0.3 -p "$pipe,$sleeper" 2>rec$i.err ||
			{ kill $pipe $sleeper; cat rec$i.err; fail "record $i failed"; }
		perf script -i c$i.data -F tid,comm,period,event 2>/dev/null |
			awk '$4 == "offcpu-time:" { s[$1 " " $2] += $3 } END { for (t in s) print t, s[t] }' >c$i.tot
	done
	kill $pipe $sleeper 2>/dev/null
	wait 2>/dev/null
	for i in 1 2 3 4 5 6 7 8 9 10; do
		t=$(awk '$1 == "sleep" { print $3 }' c$i.tot)
		within 3 "${t:-0}" 300000000 || { cat c$i.tot; fail "recording $i: the sleeper has ${t:-0} ns of 300 ms"; }
		awk '$3 > 300000000 * 1.03 { print; bad = 1 } END { exit bad }' c$i.tot ||
			fail "recording $i: a thread has more off-CPU time than the recording lasted"
	done
	lost=$(cat rec*.err | grep -c 'under way at the start lost')
	[ "$lost" -eq 0 ] || { grep -h 'time lost' rec*.err; fail "blocks under way at the start lost in $lost recordings"; }
	note "10 recordings of -d 0.3 -p (pipe ping-pong, a sleeper): the sleeper 300 ms each, no thread over, none lost"
}
