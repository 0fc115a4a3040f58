# Complete stacks where offcpu attaches or processes are new (issue 22):
# threads blocked before the recording began, and a new process's first
# blocks, before its unwind tables are loaded, finished in user space.
# shellcheck shell=bash

# complete_share FOLDED COMM: "all complete" µs of COMM's blocks in folded
# stacks, complete: through libc's start of main or of a thread (a stripped
# program's own frames show as [unknown]), with no mark frame
complete_share() {
	awk -v c="$2" 'index($0, c ";") == 1 {
		all += $NF
		if (($0 ~ /;__libc_start_call_main;/ || $0 ~ /;start_thread;/) && $0 !~ /\[(no unwind|unwind:|user stack unknown)/)
			ok += $NF
	} END { printf "%d %d\n", all, ok }' "$1"
}

# Children a recorded command execs (not held: only the command is) are
# complete from their first block: their walks before their tables are
# loaded are finished in user space. A stack that is not complete is one
# the summary says is not (a process gone before its walk was finished, a
# stack not readable: on a busy machine, a tenth of the sleeps' time).
test_attach_exec_children_complete() {
	local all ok bad
	record_truth -o c.data -- sh -c 'for i in 1 2 3 4 5 6 7 8; do sleep 0.1; done'
	cat rec.err
	"$OFFCPU" report -i c.data --folded >c.folded || fail "report failed"
	read -r all ok < <(complete_share c.folded sleep)
	bad=$(incomplete_us rec.err)
	echo "sleep: $((all / 1000)) ms off-CPU, $((ok / 1000)) ms complete; the summary says $((bad / 1000)) ms of all are not"
	note "8 exec'd sleeps: $((ok / 1000)) of $((all / 1000)) ms complete (the summary: $((bad / 1000)) ms of all not)"
	[ "$all" -ge 700000 ] || { cat c.folded; fail "only $((all / 1000)) ms of sleep recorded"; }
	[ "$ok" -gt 0 ] && [ $((all - ok)) -le "$bad" ] ||
		{ grep '^sleep;' c.folded; fail "$(((all - ok) / 1000)) ms of the sleeps' time is not complete, the summary says $((bad / 1000)) ms of all is not"; }
	grep -q "walks that met code with no table yet ([1-9]" rec.err ||
		note "no walk needed finishing in user space (the tables were in time)"
}

# The same with the finishing off (OFFCPU_LATE_STACKS=0): what it is for.
test_attach_exec_children_without_late_stacks() {
	local all ok
	OFFCPU_LATE_STACKS=0 record_truth -o c.data -- sh -c 'for i in 1 2 3 4 5 6 7 8; do sleep 0.1; done'
	"$OFFCPU" report -i c.data --folded >c.folded || fail "report failed"
	read -r all ok < <(complete_share c.folded sleep)
	note "without finishing in user space: $((ok / 1000)) of $((all / 1000)) ms of the sleeps complete"
	! grep -q "finished in user space" rec.err || fail "stacks were finished in user space with OFFCPU_LATE_STACKS=0"
}

# -p on a process that forked its workers before the attach (a server's
# master): the workers, running already, are followed too (issue 34), and
# the summary says how many processes were; --no-inherit takes the master
# alone. Each worker sleeps in a loop for the whole recording.
test_attach_pid_follows_running_workers() {
	local master w n
	python3 -c '
import os, sys, time
workers = []
for i in range(2):
    pid = os.fork()
    if pid == 0:
        while True:
            time.sleep(0.02)
    workers.append(pid)
print(" ".join(map(str, workers)), flush=True)
os.wait()' >workers.txt &
	master=$!
	# shellcheck disable=SC2064
	trap "pkill -P $master; kill $master 2>/dev/null" EXIT
	wait_for_line workers.txt '[0-9]' 10 || fail "the workers did not start"
	"$OFFCPU" record -p "$master" -d 2 -o w.data 2>rec.err || { cat rec.err; fail "record -p failed"; }
	cat rec.err
	grep -q 'followed 3 processes: 1 given with -p, 2 they had forked before the recording' rec.err ||
		fail "the summary does not say the workers were followed"
	# stacks finished in user space (the threads blocked at the start) count as stacks too
	grep -qE 'summed\), [1-9][0-9]* distinct stacks' rec.err || fail "the summary counts no stacks"
	for w in $(cat workers.txt); do
		n=$("$OFFCPU" report -i w.data --pid="$w" --folded 2>/dev/null | awk '{ t += $NF } END { printf "%.0f", t / 1000 }')
		echo "worker $w: $n ms off-CPU of the 2000 ms recorded"
		[ "$n" -ge 1500 ] || fail "worker $w: only $n ms recorded"
	done
	"$OFFCPU" record -p "$master" --no-inherit -d 1 -o m.data 2>rec.err || fail "record --no-inherit failed"
	for w in $(cat workers.txt); do
		n=$("$OFFCPU" report -i m.data --pid="$w" --folded 2>/dev/null | awk '{ t += $NF } END { print t + 0 }')
		[ "$n" = 0 ] || fail "--no-inherit recorded worker $w"
	done
	! grep -q 'followed' rec.err || grep -q 'followed 1 processes: 1 given with -p, 0' rec.err ||
		fail "--no-inherit: $(grep followed rec.err)"
}
