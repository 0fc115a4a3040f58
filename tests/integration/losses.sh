# shellcheck shell=bash
# Nothing lost, nothing wrong: the blocks under way at the start are noted
# while their threads switch on the other CPU.

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
		perf script -i c$i.data -F tid,comm,period 2>/dev/null |
			awk '{ s[$1 " " $2] += $3 } END { for (t in s) print t, s[t] }' >c$i.tot
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
