# Integration tests of how offcpu record holds the command it runs until its
# unwind tables are loaded (root): whatever happens to offcpu during the
# hold, the command runs as it would have without offcpu; one that cannot be
# held runs unheld and is recorded; the tables are in place in time.
# shellcheck shell=bash

PY=/usr/bin/python3

# reaper STATUS ARGS...: run ARGS as a child subreaper's (offcpu's orphans,
# its command, come back to it), writing "offcpu PID" first, then one line
# per process that ends: "offcpu|command PID exit N|signal N"
reaper() {
	[ -x $PY ] || skip "no $PY to reap the command offcpu leaves behind"
	cat >reap.py <<'EOF'
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
out = open(sys.argv[1], "w", buffering=1)
p = subprocess.Popen(sys.argv[2:])
out.write(f"offcpu {p.pid}\n")
while True:
    try:
        pid, st = os.waitpid(-1, 0)
    except ChildProcessError:
        break
    who = "offcpu" if pid == p.pid else "command"
    how = f"exit {os.WEXITSTATUS(st)}" if os.WIFEXITED(st) else f"signal {os.WTERMSIG(st)}"
    out.write(f"{who} {pid} {how}\n")
EOF
	$PY reap.py "$@"
}

# held WHERE CMD...: offcpu record of CMD, paused at the hold's stops WHERE
# (OFFCPU_FAULT_HOLD_PAUSE, in target.c), under the reaper, in the
# background; returns once offcpu says the command is held at the first
# one, with offcpu's pid in $op, the command's in $cp, the reaper's in $rp
held() {
	local where=$1 first=${1%%,*}
	shift
	rm -f status.txt cmd.out rec.err
	OFFCPU_FAULT_HOLD_PAUSE=$where reaper status.txt "$OFFCPU" record -o h.data -- "$@" >cmd.out 2>rec.err &
	rp=$!
	wait_for_line rec.err "is held at $first " 60 || fail "offcpu never said the command was held at $first"
	op=$(awk '$1 == "offcpu" { print $2; exit }' status.txt)
	cp=$(sed -n 's/.*the command (pid \([0-9]*\)) is held at.*/\1/p' rec.err | head -n 1)
	[ -n "$op" ] && [ -n "$cp" ] || fail "no pids for offcpu ($op) and the command ($cp)"
	[ "$(awk '/^TracerPid:/ { print $2 }' /proc/"$cp"/status)" = "$op" ] || fail "the command is not traced by offcpu while held"
}

# command_ended HOW: the reaper saw the command end so ("exit 3", "signal 10")
command_ended() {
	wait "$rp"
	grep -q "^command $cp $1\$" status.txt || { cat status.txt; fail "the command did not end with $1"; }
}

# offcpu SIGKILLed while the command is held, at its exec stop and at system
# call stops (the exec's own exit, one in the loader, the one that ends the
# hold): each time the command runs on, untraced, prints and exits 3 as it
# would have alone; no SIGTRAP, no SIGKILL
test_hold_killed_at_each_stop() {
	local at
	for at in exec 1 5 last; do
		held $at sh -c 'echo ran; exit 3'
		kill -KILL "$op"
		command_ended "exit 3"
		grep -q "^offcpu $op signal 9\$" status.txt || { cat status.txt; fail "offcpu did not die of SIGKILL"; }
		[ "$(cat cmd.out)" = ran ] || fail "killed at $at: the command printed '$(cat cmd.out)', not 'ran'"
		echo "  killed at $at: $(grep '^command' status.txt)"
	done
}

# A signal on its way to the command when offcpu dies is delivered, as it
# would have been without offcpu: not lost, not turned into another
test_hold_killed_at_signal() {
	held exec,signal sh -c 'echo ran; exit 3'
	kill -USR1 "$cp"
	kill -CONT "$op" # on from the exec stop, to the signal's stop
	wait_for_line rec.err "is held at signal 10 " 60 || fail "offcpu never stopped at the command's SIGUSR1"
	kill -KILL "$op"
	command_ended "signal 10"
	[ ! -s cmd.out ] || fail "the command ran on after its SIGUSR1: '$(cat cmd.out)'"
}

# SIGTERM or SIGINT to offcpu during the hold: the hold ends, the command is
# let go and gets offcpu's SIGTERM as an unheld one does (not a SIGKILL 2 s
# later, no SIGTRAP), and the recording is written; all of it well before
# the command's sleep would have ended
test_hold_stop_signal() {
	local sig t0 t1
	for sig in TERM INT; do
		held 5 sleep 5
		t0=$(date +%s%N)
		kill -$sig "$op"
		wait "$rp" # (offcpu, alive, reaps the command itself)
		t1=$(date +%s%N)
		! kill -0 "$cp" 2>/dev/null || fail "the command is still there after SIG$sig to offcpu"
		grep -q "^offcpu $op exit 0\$" status.txt || { cat status.txt; fail "offcpu did not exit 0 after SIG$sig"; }
		grep -q "offcpu sent it SIGTERM$" rec.err || fail "after SIG$sig, offcpu did not say it sent the command SIGTERM"
		! grep -qi "SIGKILL\|could not hold\|SIGTRAP\|Trace/breakpoint" rec.err || fail "after SIG$sig: $(grep -i 'sigkill\|hold\|trap' rec.err)"
		# (the command's sleep began after t0, once let go: had offcpu waited
		# for it to end, not ended it, 5 s would have passed)
		[ $(((t1 - t0) / 1000000)) -lt 5000 ] || fail "offcpu took $(((t1 - t0) / 1000000)) ms to end after SIG$sig: it waited for the command's sleep"
		"$OFFCPU" report -i h.data >/dev/null 2>&1 || fail "no readable recording after SIG$sig"
		echo "  SIG$sig to offcpu during the hold: offcpu and the command ended $(((t1 - t0) / 1000000)) ms later"
	done
}

# Under strace -f the command is traced already: it runs unheld, offcpu
# says so, records it and reports its exit status as always
test_hold_under_strace() {
	local ms
	command -v strace >/dev/null || skip "no strace"
	strace -f -o /dev/null "$OFFCPU" record -o x.data -- sh -c 'sleep 0.3; exit 3' >cmd.out 2>rec.err ||
		fail "offcpu under strace exited $?"
	grep -q "cannot hold the command before it runs: it is traced already, by process [0-9]* (strace)" rec.err ||
		fail "no warning that the command could not be held"
	grep -q "the command exited with status 3" rec.err || fail "the command's exit status is not reported"
	"$OFFCPU" report -i x.data -s comm >report.txt 2>&1 || { cat report.txt; fail "report failed"; }
	ms=$(awk '$NF == "sleep" { printf "%.0f", $1 }' report.txt)
	within 10 "${ms:-0}" 300 || { cat report.txt; fail "the command's sleep: ${ms:-no} ms recorded, not 300"; }
}

# The tables are loaded in time: the command's first block (sleep's only
# one, in libc) is walked complete, and no block of python3 starting up is
# walked before its object's table; -d still ends the command
test_hold_tables_in_time() {
	local stack
	"$OFFCPU" record -v -o s.data -- sleep 0.3 2>rec.err || fail "record failed"
	grep -q "held the command for [0-9.]* ms, [0-9]* system call stops" rec.err || fail "the command was not held"
	"$OFFCPU" report -i s.data --folded >s.folded || fail "report failed"
	stack=$(grep '^sleep;.*nanosleep' s.folded) || { cat s.folded; fail "no sleep block"; }
	# (the _start of a stripped program is [unknown], outside __libc_start_main)
	[[ $stack == sleep\;\[unknown\]\;__libc_start_main* || $stack == sleep\;_start\;* ]] &&
		[[ $stack != *"[no unwind"* && $stack != *"[unwind:"* ]] || fail "sleep's block is not walked complete: $stack"
	if [ -x $PY ]; then
		"$OFFCPU" record -v -o p.data -- $PY -c 'import time; time.sleep(0.3)' 2>rec.err || fail "record failed"
		# (how complete a walk is past its tables is the unwinder's business)
		! grep 'user stacks' rec.err | grep -q "not loaded yet\|no mapping known yet\|table being built" ||
			fail "python3: walks before their tables: $(grep 'user stacks' rec.err)"
		"$OFFCPU" report -i p.data --folded >p.folded || fail "report failed"
		grep -q '^python3;_start;.*;Py_BytesMain;.*clock_nanosleep' p.folded || { cat p.folded; fail "python3's sleep is not walked to main"; }
		note "python3: $(grep -o 'held the command.*' rec.err); $(grep -o 'user stacks by unwind tables: .*' rec.err)"
	fi
	"$OFFCPU" record -d 0.5 -o d.data -- sleep 5 2>rec.err || fail "record -d failed"
	grep -q "offcpu sent it SIGTERM at the end of -d" rec.err || fail "-d did not end the command"
}
