# shellcheck shell=bash
# The time a user expects is there, in every mode: pipe mode with a chatty
# command, blocks that span the start or the end, -d, processes forked under
# -p, periodic flushes of the summed blocks, -a without offcpu, long rotated
# recordings that keep every stack, file sizes, map sizes.

STACKS=$ROOT/$BUILD/tests/stacks

# sum_comm FILE COMM: offcpu-time ns of COMM, read by perf script
sum_comm() {
	# offcpu-time only: offcpu-before says how long a block had lasted before the start
	perf script -i "$1" -F comm,period,event 2>/dev/null |
		awk -v c="$2" '$1 == c && $3 == "offcpu-time:" { s += $2 } END { print s + 0 }'
}

# -o - with a command that prints: its stdout goes to stderr, the stream stays whole
test_pipe_chatty_command() {
	"$OFFCPU" record -o - -- sh -c 'for i in $(seq 300); do echo "line $i of the command"; sleep 0.002; done' \
		2>rec.err | perf script -i - -F comm,period >script.txt 2>perf.err
	grep -q 'unexpected end\|failed\|Error' perf.err && { cat perf.err; fail "perf script could not read the stream"; }
	grep -q '^line 300 of the command$' rec.err || fail "the command's output is not on stderr"
	grep -q 'line' script.txt && fail "the command's output went into the stream"
	n=$(awk '$1 == "sleep"' script.txt | wc -l)
	[ "$n" -ge 100 ] || { cat perf.err; fail "perf script read only $n sleep samples"; }
	"$OFFCPU" record -o - -- sh -c 'for i in $(seq 50); do echo chat; sleep 0.002; done' 2>/dev/null |
		"$OFFCPU" report -i - -s comm >rep.txt || fail "offcpu report could not read the stream"
	grep -q ' sleep' rep.txt || { cat rep.txt; fail "no sleep in offcpu report"; }
	"$OFFCPU" record --help | tr -s ' \n' '  ' | grep -q "standard output then goes to standard error" ||
		fail "--help does not say it"
}

# -d 1 -- sleep 5: the sleep under way at the end counts up to it
test_open_block_at_end() {
	"$OFFCPU" record -o d.data -d 1 -- sleep 5 2>rec.err || fail "record failed"
	cat rec.err
	t=$(sum_comm d.data sleep)
	echo "sleep: $t ns"
	within 5 "$t" 1000000000 || fail "sleep recorded $t ns, expected 1000 ms"
	grep -q 'blocks under way: .* 1 still were when it ended' rec.err || fail "the summary does not say"
	# the file ends with the block: perf report reads it whole
	perf report -i d.data --stdio 2>&1 | grep -q 'clock_nanosleep' || fail "perf report does not show the sleep"
}

# -p of a process asleep the whole time: counted from the start, its user
# stack read as it slept, and since when it slept said by an offcpu-before
# sample; without that reading (OFFCPU_LATE_STACKS=0), its stack said unknown.
# Since when: at least the 0.5 s the test waited once the sleep was in its
# system call, at most the time from the sleep's start to the recording's
# (which lasted 1 s), however long offcpu took to start.
test_open_block_at_start() {
	local t0 t1 t2 before said nr
	t0=$(date +%s%N)
	sleep 30 &
	local pid=$!
	# in clock_nanosleep (230) or nanosleep (35): its block has begun
	until read -r nr _ </proc/$pid/syscall 2>/dev/null && { [ "$nr" = 230 ] || [ "$nr" = 35 ]; }; do
		kill -0 $pid 2>/dev/null || fail "sleep 30 ended"
		sleep 0.01
	done
	t1=$(date +%s%N)
	sleep 0.5
	"$OFFCPU" record -o p.data -d 1 --stacks both -p "$pid" 2>rec.err || { kill $pid; fail "record failed"; }
	t2=$(date +%s%N)
	OFFCPU_LATE_STACKS=0 "$OFFCPU" record -o u.data -d 0.3 --stacks both -p "$pid" 2>u.err ||
		{ kill $pid; fail "record failed"; }
	kill $pid
	cat rec.err
	t=$(sum_comm p.data sleep)
	echo "sleep: $t ns"
	within 5 "$t" 1000000000 || fail "sleep recorded $t ns, expected 1000 ms"
	grep -q 'blocks under way: 1 were already when the recording began (.*user stacks read as they slept' rec.err ||
		fail "the summary does not say"
	said=$(sed -nE 's/.*already waiting when the recording began; the longest, sleep \(tid [0-9]*\), for ([0-9.]+) s before it.*/\1/p' rec.err)
	[ -n "$said" ] || fail "the summary does not say since when the sleep waited"
	"$OFFCPU" report -i p.data --folded -e offcpu-time >p.folded || fail "report failed"
	cat p.folded
	grep -q '^sleep;.*__libc_start_call_main;.*clock_nanosleep.*;.*hrtimer_nanosleep' p.folded ||
		fail "no user stack above the kernel's sleep"
	# perf reads the offcpu-before sample: how long the sleep had lasted
	before=$(perf script -i p.data -F event,period 2>/dev/null | awk '/offcpu-before/ { print $1 }')
	echo "offcpu-before: ${before:-none} ns, the summary ${said} s; the sleep was in its call $(((t2 - t1) / 1000000)) ms before the recording ended, began $(((t2 - t0) / 1000000)) ms before"
	[ -n "$before" ] && [ "$before" -ge 500000000 ] && [ "$before" -le $((t2 - t0 - 1000000000)) ] ||
		fail "offcpu-before says the sleep had lasted ${before:-nothing} ns; 500 ms to $(((t2 - t0 - 1000000000) / 1000000)) ms expected"
	awk -v s="$said" -v b="$before" 'BEGIN { d = s * 1e9 - b; exit !(d < 50000001 && d > -50000001) }' ||
		fail "the summary says the sleep waited ${said} s before, the offcpu-before sample $before ns"
	"$OFFCPU" report -i u.data --folded >u.folded || fail "report failed"
	grep -q '^sleep;\[user stack unknown: blocked before the recording began\];.*hrtimer_nanosleep' u.folded ||
		fail "OFFCPU_LATE_STACKS=0: no unknown user stack above the kernel's sleep"
}

# -d ends the command: the summary says with what
test_duration_ends_command() {
	"$OFFCPU" record -o d.data -d 0.3 -- sleep 5 2>rec.err || fail "record failed"
	grep -q 'the command (pid [0-9]*) was still running: offcpu sent it SIGTERM at the end of -d' rec.err ||
		{ cat rec.err; fail "no word of SIGTERM"; }
	# one that ignores SIGTERM gets SIGKILL after 2 s
	"$OFFCPU" record -o d.data -d 0.3 -- sh -c 'trap "" TERM; sleep 10' 2>rec.err || fail "record failed"
	grep -q 'sent it SIGTERM, then SIGKILL' rec.err || { cat rec.err; fail "no word of SIGKILL"; }
	"$OFFCPU" record --help | tr -s ' \n' '  ' | grep -q 'a command still running then is sent SIGTERM' ||
		fail "--help does not say it"
}

# processes forked by a -p process after the attach are recorded; not with --no-inherit
test_pid_follows_forks() {
	local pid rec mode
	for mode in follow no-inherit; do
		rm -f go f.data
		sh -c 'while [ ! -e go ]; do sleep 0.05; done; sleep 0.3; sleep 0.2' &
		pid=$!
		sleep 0.2
		"$OFFCPU" record -o f.data -p "$pid" $([ $mode = follow ] || echo --no-inherit) 2>rec.err &
		rec=$!
		wait_for_line rec.err "recording" 60 || { kill $pid $rec; cat rec.err; fail "offcpu did not start"; }
		touch go
		wait $pid
		wait $rec || { cat rec.err; fail "record -p failed"; }
		# the two sleeps after go (the 50 ms polls before it are not counted)
		t=$(perf script -i f.data -F comm,pid,period 2>/dev/null |
			awk '$1 == "sleep" { s[$2] += $3 } END { for (p in s) if (s[p] > 1.5e8) t += s[p]; print t + 0 }')
		echo "$mode: children's sleeps $t ns"
		if [ $mode = follow ]; then
			within 5 "$t" 500000000 || fail "children forked after the attach: $t ns, expected 500 ms"
		else
			[ "$t" -lt 200000000 ] || fail "--no-inherit recorded $t ns of the children"
		fi
	done
}

# short blocks are flushed every second, stamped with their interval: a steady
# 4 s loop of 10 ms sleeps has about half its time in its first 2 s
test_flush_stamps_intervals() {
	"$OFFCPU" record -o fl.data -- python3 -c '
import time
open("t0", "w").write(str(time.monotonic_ns()))
end = time.monotonic() + 4
while time.monotonic() < end:
    time.sleep(0.01)
' 2>rec.err || { cat rec.err; fail "record failed"; }
	t0=$(cat t0)
	perf script -i fl.data -F comm,time,period 2>/dev/null | awk -v t0="$t0" '
		$1 == "python3" { sub(":", "", $2); t = $2 * 1e9; all += $3; if (t <= t0 + 2e9) first += $3 }
		END { printf "%.0f %.0f\n", first, all }' >split.txt
	read -r first all <split.txt
	share=$(awk -v f="$first" -v a="$all" 'BEGIN { printf "%.0f", a ? 100 * f / a : 0 }')
	echo "first 2 s: $share% of $((all / 1000000)) ms"
	[ "$share" -ge 30 ] && [ "$share" -le 70 ] || fail "$share% of the time stamped in the first 2 s (30-70% expected)"
	grep -q 'summed blocks written every 1 s' rec.err || fail "the summary does not say"
	# --flush 0: once, at the end
	"$OFFCPU" record -q -o f0.data --flush 0 -- sleep 0.1 || fail "--flush 0 failed"
	"$OFFCPU" record -q -o f0.data --flush 5ms -- true 2>err.txt && fail "--flush 5ms accepted"
	true
}

# -a leaves offcpu out, off-CPU and on-CPU
test_system_wide_without_offcpu() {
	"$OFFCPU" record -a -d 1 -F 499 -o a.data 2>rec.err &
	local rec=$!
	wait $rec || { cat rec.err; fail "record -a failed"; }
	perf script -i a.data -F event,comm,pid 2>/dev/null >s.txt
	n=$(awk -v p="$rec" '$2 == p' s.txt | wc -l)
	others=$(awk '{ print $2 }' s.txt | sort -u | wc -l)
	echo "samples of offcpu ($rec): $n; processes: $others"
	[ "$others" -gt 1 ] || fail "nothing else recorded"
	[ "$n" -eq 0 ] || { awk -v p="$rec" '$2 == p' s.txt | head; fail "offcpu recorded itself"; }
}

# 600 distinct stacks over a rotated recording with --max-stacks 256: none lost
test_rotation_keeps_stacks() {
	"$OFFCPU" record -o r.data --switch-output=1s --max-stacks 256 -- "$STACKS" 600 5000 >/dev/null 2>rec.err ||
		{ cat rec.err; fail "record failed"; }
	cat rec.err
	grep -q 'without a user stack' rec.err && fail "stacks were lost"
	n=$(ls r.data.* | wc -l)
	[ "$n" -ge 3 ] || fail "only $n files"
	for f in r.data.*; do "$OFFCPU" report -i "$f" --folded | sed "s|^|$f |"; done >all.folded
	awk '{ print $2 }' all.folded | grep 'leaf' | sort -u >stacks.txt
	echo "$n files, $(wc -l <stacks.txt) distinct stacks"
	[ "$(wc -l <stacks.txt)" -eq 600 ] || {
		grep -v leaf all.folded | head -5
		awk '{ print $2 }' all.folded | grep leaf | sort | uniq -d | head -5
		fail "expected 600 distinct stacks in the files"
	}
	grep -q 'path_1;path_1;path_1' stacks.txt || fail "stacks not symbolized"
}

# --switch-output=SIZE keeps files near the size, whatever the round holds
test_switch_output_size_holds() {
	"$OFFCPU" record -o s.data --switch-output=40K --off-cpu-thresh 0 -- "$STACKS" 1024 200 >/dev/null 2>rec.err ||
		{ cat rec.err; fail "record failed"; }
	ls -l s.data.* | awk '{ print $5 }' >sizes.txt
	echo "$(wc -l <sizes.txt) files, largest $(sort -n sizes.txt | tail -1) bytes"
	[ "$(wc -l <sizes.txt)" -ge 3 ] || fail "expected several files"
	[ "$(sort -n sizes.txt | tail -1)" -le $((64 * 1024)) ] || fail "a file is far past 40K"
	for f in s.data.*; do perf script -i "$f" -F period 2>/dev/null; done | awk '{ n++ } END { print n }' >n.txt
	# every sample written is in one of the files (the workload's 1024 blocks,
	# less any the summary names: one is now and then missed at its start)
	written=$(sed -nE 's/.* ([0-9]+) samples written.*/\1/p' rec.err)
	[ "${written:-0}" -ge 1000 ] || fail "only ${written:-0} samples written"
	[ "$(cat n.txt)" = "$written" ] || fail "samples missing across the files: $(cat n.txt) of $written"
}

# every map is sized to what the options use
test_map_sizes() {
	command -v bpftool >/dev/null || skip "bpftool not installed"
	"$OFFCPU" record -o m.data -- sleep 1 2>rec.err &
	local rec=$!
	sleep 0.6
	# the maps offcpu holds, by the ids in its fds
	cat /proc/$rec/fdinfo/* 2>/dev/null | awk '/^map_id:/ { print $2 }' >ids.txt
	bpftool map show -j >maps.json
	wait $rec || { cat rec.err; fail "record failed"; }
	python3 - <<-'EOF' || fail "maps not sized to the options"
		import json
		ids = {int(x) for x in open("ids.txt").read().split()}
		mine = {m["name"]: m for m in json.load(open("maps.json")) if m["id"] in ids}
		print(", ".join(f"{n}={m['max_entries']}" for n, m in sorted(mine.items())))
		assert "ustacks" in mine, "no maps of offcpu found"
		# user stacks only: no kernel stacks, no ORC cache, no thread filter, no raw_tp task map
		unused = [n for n in ("kstacks", "korc_orc_cache", "tid_filter", "tasks")
		          if n in mine and mine[n]["max_entries"] > 1]
		assert not unused, f"full size while unused: {unused}"
	EOF
}

# the summed map is drained while the program adds to the other one: under
# fast rotation and flushes every thread's time is where it belongs
test_rotation_totals() {
	record_truth -o rt.data --switch-output=200ms --flush 50ms -- "$GT" -r truth.txt -s 2
	n=$(ls rt.data.* | wc -l)
	echo "$n files"
	[ "$n" -ge 4 ] || fail "only $n files"
	for f in rt.data.*; do perf script -i "$f" -F tid,period 2>/dev/null; done |
		awk 'NF == 2 { s[$1] += $2 } END { for (t in s) print t, s[t] }' >perf.tot
	check_threads truth.txt perf.tot 5
	# each sample's thread blocked under its own function only
	for f in rt.data.*; do "$OFFCPU" report -i "$f" --folded -s tid; done >all.folded 2>/dev/null
	awk '{ print $1 }' all.folded | grep -E '^gt-(sleep|pipe|poll)' | while IFS=';' read -r comm rest; do
		case $comm in
		gt-sleep) case $rest in *gt_pipe_thread* | *gt_poll_thread*) echo "$comm;$rest" ;; esac ;;
		gt-pipe) case $rest in *gt_sleep_thread* | *gt_poll_thread*) echo "$comm;$rest" ;; esac ;;
		gt-poll) case $rest in *gt_sleep_thread* | *gt_pipe_thread*) echo "$comm;$rest" ;; esac ;;
		esac
	done >wrong.txt
	[ ! -s wrong.txt ] || { head wrong.txt; fail "time under another thread's function"; }
}
