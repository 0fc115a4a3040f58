# A root recorder next to a local user who attacks it through what it reads
# of theirs besides their programs' objects (issue 35): a deleted library's
# name under a lease, a mount namespace of thousands of mounts, FUSE files
# that never answer (a perf map, a mapped library, a stack), perf maps that
# take memory, a fake CPython that takes frame ids, a name made of escape
# sequences, a fifo for an output. Each recording ends on its deadline and
# on SIGINT (within 0.4 s of either here when the machine is not loaded; the
# tests allow 10 s and 5 s, and note the time: each attack cost 45 s and more,
# or for ever), stays within its stated bounds, and keeps the other
# processes' stacks and names. A user of its own, made here, plays the
# attacker.
# shellcheck shell=bash

HOSTILE=$ROOT/$BUILD/tests/hostile
FUSEHANG=$ROOT/$BUILD/tests/fusehang
FAKEPY=$ROOT/$BUILD/tests/fakepy
ATTACKER=offcpu-attacker

# attacker: the unprivileged user, made if missing; ATTACKER_UID
attacker() {
	command -v setpriv >/dev/null || skip "no setpriv (util-linux)"
	id -u "$ATTACKER" >/dev/null 2>&1 ||
		useradd --system --no-create-home --shell /usr/sbin/nologin "$ATTACKER" ||
		fail "cannot create the user $ATTACKER"
	ATTACKER_UID=$(id -u "$ATTACKER")
}

as_attacker() {
	setpriv --reuid="$ATTACKER" --regid="$ATTACKER" --clear-groups -- "$@"
}

# attacker_dir: a directory of the attacker's own in ADIR, removed at the end
attacker_dir() {
	ADIR=$(mktemp -d /tmp/offcpu-attacker.XXXXXX)
	chmod 755 "$ADIR"
	chown "$ATTACKER" "$ADIR"
}

# hostile_lib alt ROWS: a library exporting hostile_block(usec) (from hostile.sh)
small_lib() {
	awk 'BEGIN {
		print "\t.text\n\t.globl hostile_block\n\t.type hostile_block, @function"
		print "hostile_block:\n\t.cfi_startproc\n\tpush %rbp\n\t.cfi_adjust_cfa_offset 8"
		print "\t.cfi_offset %rbp, -16\n\tcall usleep@PLT\n\tpop %rbp\n\t.cfi_adjust_cfa_offset -8\n\tret"
		print "\t.cfi_endproc\n\t.size hostile_block, .-hostile_block"
		print "\t.section .note.GNU-stack,\"\",@progbits"
	}' >small.S && gcc -shared -o "$1" small.S || fail "cannot build $1"
}

# timed_record SECONDS ARGS...: offcpu record ARGS -d SECONDS -o rec.data (stderr in
# rec.err), its end timed from its "recording" line and its resident memory
# watched: fails past SECONDS + 10 s (what each attack cost was 45 s or more, or
# for ever; a loaded machine's end takes seconds: the time is noted); sets PEAK_MB
# and SECS
timed_record() {
	local d=$1 pid t0 t1 hwm=0 h rc
	shift
	"$OFFCPU" record "$@" -d "$d" -o rec.data 2>rec.err &
	pid=$!
	wait_for_line rec.err 'recording' 60 || { kill -9 $pid; fail "the recording did not start"; }
	t0=$(date +%s.%N)
	while kill -0 $pid 2>/dev/null; do
		h=$(awk '/^VmHWM/ { print $2 }' /proc/$pid/status 2>/dev/null)
		[ -z "$h" ] || hwm=$h
		t1=$(date +%s.%N)
		if awk -v a="$t0" -v b="$t1" -v d="$d" 'BEGIN { exit !(b - a > d + 30) }'; then
			kill -9 $pid
			fail "the recording of -d $d still ran after $((d + 30)) s"
		fi
		sleep 0.1
	done
	wait $pid
	rc=$?
	t1=$(date +%s.%N)
	SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	PEAK_MB=$((hwm / 1024))
	cat rec.err
	echo "-d $d ended $SECS s after it began (peak resident $PEAK_MB MiB), exit $rc"
	[ $rc = 0 ] || fail "offcpu record exited $rc"
	awk -v s="$SECS" -v d="$d" 'BEGIN { exit !(s <= d + 10) }' ||
		fail "the recording ended $SECS s after it began: its deadline was $d s"
}

# interrupted_record ARGS...: offcpu record ARGS, SIGINT 1 s after it began: it must end
# within 5 s of it (a stall is for ever; the time is noted), exit 0; sets INT_SECS
interrupted_record() {
	local pid t0 t1 rc
	"$OFFCPU" record "$@" -o int.data 2>int.err &
	pid=$!
	wait_for_line int.err 'recording' 60 || { kill -9 $pid; fail "the recording did not start"; }
	sleep 1
	t0=$(date +%s.%N)
	kill -INT $pid
	for _ in $(seq 300); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
	t1=$(date +%s.%N)
	kill -0 $pid 2>/dev/null && { kill -9 $pid; fail "the recording still ran 15 s after SIGINT"; }
	wait $pid
	rc=$?
	INT_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	echo "SIGINT ended the recording in $INT_SECS s, exit $rc"
	[ $rc = 0 ] || { cat int.err; fail "offcpu record exited $rc after SIGINT"; }
	awk -v s="$INT_SECS" 'BEGIN { exit !(s < 5) }' || fail "$INT_SECS s to end after SIGINT"
	"$OFFCPU" report -i int.data >/dev/null || fail "the interrupted recording does not read"
}

# python_sleeper: a python3 (pid PYPID), started now, that sleeps 6 s in py_sleeper() once
# the next recording (timed_record) began; it writes when (CLOCK_MONOTONIC) to sleeper.start
python_sleeper() {
	printf 'import os, time\nwhile not os.path.exists("go"):\n    time.sleep(0.01)\nopen("sleeper.start", "w").write("%%.3f" %% time.monotonic())\ndef py_sleeper():\n    for i in range(120):\n        time.sleep(0.05)\npy_sleeper()\n' >sleeper.py
	chmod 644 sleeper.py
	rm -f rec.err sleeper.start go
	python3 "$PWD/sleeper.py" &
	PYPID=$!
	(wait_for_line rec.err 'recording' 120 && touch go) &
}

# python_checked: the sleeper's time under py_sleeper, 90% at least, in rec.data, from 3 s
# after it began: with -a its tables are loaded, and it is found Python, when it first blocks
# in the recording, among every process's (seconds on a loaded machine); summed blocks are
# stamped up to 1 s after they end
python_checked() {
	local all named from
	wait $PYPID
	[ -s sleeper.start ] || fail "the python sleeper did not run"
	from=$(awk '{ printf "%.3f", $1 + 3 }' sleeper.start)
	"$OFFCPU" report -i rec.data --folded --time="$from," --pid="$PYPID" >rec.folded 2>/dev/null ||
		fail "report --folded failed"
	all=$(awk '/^python3;/ && /clock_nanosleep|pysleep|time_sleep/ { t += $NF } END { print t + 0 }' rec.folded)
	named=$(awk '/^python3;/ && /;py_sleeper;/ { t += $NF } END { print t + 0 }' rec.folded)
	echo "python3 beside it: $((named / 1000)) of $((all / 1000)) ms of sleep under py_sleeper from 3 s in"
	[ "$all" -ge 1500000 ] || fail "only $((all / 1000)) ms of python's sleep recorded from 3 s in"
	[ $((named * 100)) -ge $((all * 90)) ] || { cat rec.folded; fail "less than 90% of python's sleep under its function"; }
}

# A deleted library's mapping names "LIB (deleted)": a file the user made
# under that name, with a write lease held, made an open for reading wait
# fs.lease-break-time (45 s) in libdw's fallback, holding the unwinder's
# lock: -d 3 took 48 s. The threads blocked in the deleted library keep
# complete stacks (its mapped inode is read through map_files).
test_hostile_deleted_lease() {
	local pid n d1
	attacker
	attacker_dir
	# shellcheck disable=SC2064
	trap "pkill -KILL -u $ATTACKER 2>/dev/null; rm -rf '$ADIR'" EXIT
	small_lib "$ADIR/lib.so"
	chown "$ATTACKER" "$ADIR/lib.so"
	as_attacker "$HOSTILE" deleted "$ADIR/lib.so" "$ADIR" 30 >del.out 2>&1 &
	wait_for_line del.out 'lease held' 10 || { cat del.out; fail "the lease was not taken"; }
	grep -q LEASE /proc/locks || fail "no lease in /proc/locks"
	pid=$(pgrep -u "$ATTACKER" -o -f "$HOSTILE deleted")
	grep -q 'd.so (deleted)' /proc/"$pid"/maps || fail "the mapping does not say deleted"
	timed_record 2 -p "$pid"
	d1=$SECS
	# its three threads, blocked in the deleted library since before: 2 s each, through it
	"$OFFCPU" report -i rec.data --folded >del.folded || fail "report failed"
	n=$(awk '/;(hostile_block|d\.so \(deleted\)\+0x[0-9a-f]*);usleep;/ && /;(deleted|deleted_thread);/ { t += $NF } END { printf "%.0f", t / 1000 }' del.folded)
	echo "threads blocked in the deleted library: $n ms through it to their callers"
	[ "$n" -ge 5000 ] || { cat del.folded; fail "the deleted library's threads lost their stacks"; }
	interrupted_record -p "$pid"
	note "-p next to a leased '(deleted)' name: -d 2 ended after $d1 s, SIGINT in $INT_SECS s; $n of 6000 ms through the library to their callers"
}

# 12,000 bind mounts in the user's own mount namespace (over the 10,000 a
# table is read for): read once, refused, said; -a -d 3 took 241 s and 1.2 GB
# when every process's table was read each second on the sample path.
test_hostile_mount_flood() {
	local pid n
	attacker
	command -v python3 >/dev/null || skip "no python3"
	as_attacker "$HOSTILE" mounts 12000 40 >mnt.out 2>&1 &
	wait_for_line mnt.out 'bind mounts' 60 || { cat mnt.out; fail "the user could not make its mounts (user namespaces?)"; }
	# shellcheck disable=SC2064
	trap "pkill -KILL -u $ATTACKER 2>/dev/null" EXIT
	pid=$(pgrep -u "$ATTACKER" -n -f "$HOSTILE mounts")
	n=$(wc -l <"/proc/$pid/mountinfo")
	echo "the attacker's namespace: $n mounts"
	[ "$n" -gt 10000 ] || fail "only $n mounts"
	python_sleeper
	timed_record 8 -a
	grep -q "pid $pid: in a mount namespace of more than 10,000 mounts" rec.err ||
		fail "the summary does not say the namespace was refused"
	! grep -q 'side-band records lost' rec.err || fail "side-band records were lost"
	python_checked
	note "-a next to $n mounts: -d 8 ended after $SECS s, peak $PEAK_MB MiB resident"
}

# FUSE that never answers: a file system a user serves (here mounted for them
# with allow_other, as fusermount3 does where /etc/fuse.conf allows it), its
# file mapped by one process (with a thread whose stack pointer is in it) and
# bind-mounted onto another's /tmp/perf-PID.map in their own mount namespace.
# Once the server stops answering, any stat, open or fault there waits for
# ever, and once it read the request not even SIGKILL ends the wait.
test_hostile_fuse() {
	local mnt v1 v2 srv
	attacker
	[ -c /dev/fuse ] || skip "no /dev/fuse on this machine"
	grep -qw fuse /proc/filesystems || modprobe fuse 2>/dev/null || true
	grep -qw fuse /proc/filesystems || skip "no FUSE in this kernel"
	attacker_dir
	mnt=$ADIR/mnt
	as_attacker mkdir "$mnt"
	cp /usr/lib/x86_64-linux-gnu/libz.so.1 "$ADIR/src" && chmod 644 "$ADIR/src"
	"$FUSEHANG" serve "$mnt" "$ADIR/src" "$PWD/server.pid" "$ATTACKER_UID" >server.out 2>&1 &
	for _ in $(seq 100); do [ -s server.pid ] && [ -e "$mnt/f" ] && break; sleep 0.05; done
	[ -e "$mnt/f" ] || { cat server.out; skip "cannot mount a FUSE file system here"; }
	srv=$(cat server.pid)
	# shellcheck disable=SC2064
	trap "kill -KILL $srv 2>/dev/null; pkill -KILL -u $ATTACKER 2>/dev/null; umount -l '$mnt' 2>/dev/null; rm -rf '$ADIR'" EXIT
	as_attacker "$FUSEHANG" map "$mnt/f" >v1.pid &
	as_attacker unshare -Urm --propagation private sh -c "
		'$FUSEHANG' map '$mnt/f' >'$ADIR/v2.pid' &
		while [ ! -s '$ADIR/v2.pid' ]; do sleep 0.05; done
		v=\$(cat '$ADIR/v2.pid')
		touch /tmp/perf-\$v.map && mount --bind '$mnt/f' /tmp/perf-\$v.map && echo bound >'$ADIR/bound'
		wait" >v2.out 2>&1 &
	for _ in $(seq 100); do [ -s v1.pid ] && [ -s "$ADIR/bound" ] && break; sleep 0.05; done
	[ -s "$ADIR/bound" ] || { cat v2.out; fail "the perf map was not bind-mounted"; }
	v1=$(cat v1.pid)
	v2=$(cat "$ADIR/v2.pid")
	kill -USR1 "$srv"
	sleep 0.2
	timed_record 2 -p "$v1"
	grep -q '1 with their stack in a mapped file, not read' rec.err ||
		fail "the thread whose stack is in the FUSE file was read, or not said"
	timed_record 2 -p "$v2"
	grep -q "perf maps of 1 processes not read (the first, pid $v2: on a file system a user serves" rec.err ||
		fail "the FUSE perf map was not refused, or not said"
	python_sleeper
	timed_record 8 -a
	local a=$SECS
	python_checked
	interrupted_record -a
	note "FUSE that never answers: -p (mapped) -d 2, -p (perf map) -d 2, -a -d 8 ended in time ($a s); SIGINT in $INT_SECS s"
}

# Perf maps in all: eight processes with maps of 100 MB that keep growing
# took the recorder to 985 MB, and two re-sorted at every look made -d 10 take
# 74 s; maps of exited processes were never freed. Now the maps hold 64 MiB
# at most in all, a quarter of it each, freed once their process exits.
test_hostile_perfmap_memory() {
	local base held freed
	attacker
	timed_record 3 -a
	base=$PEAK_MB
	as_attacker "$HOSTILE" perfmaps 8 100 30 >pm.out 2>&1 &
	# shellcheck disable=SC2064
	trap "pkill -KILL -u $ATTACKER 2>/dev/null; find /tmp -maxdepth 1 -name 'perf-*.map' -user $ATTACKER -delete" EXIT
	sleep 4
	timed_record 5 -a
	held=$(sed -nE 's/.*perf maps: .* records; ([0-9.]+) MiB at most of the 64.0 MiB.*/\1/p' rec.err)
	[ -n "$held" ] || fail "the summary does not say what the perf maps held"
	awk -v h="$held" 'BEGIN { exit !(h <= 64) }' || fail "the perf maps held $held MiB"
	# (how far the maps were read by then is how fast the machine was: a cut, when
	# there was one, is said)
	if grep -q 'perf maps: .* records; [0-9.]* MiB at most of the 64.0 MiB' rec.err &&
		awk -v h="$held" 'BEGIN { exit !(h >= 60) }'; then
		grep -q 'WARNING: perf maps of [0-9]* processes read only up to' rec.err ||
			fail "the maps held $held MiB and no cut was said"
	fi
	echo "resident: $base MiB without the maps, $PEAK_MB MiB with them"
	[ "$PEAK_MB" -le $((base + 192)) ] || fail "the perf maps took $((PEAK_MB - base)) MiB (64 MiB is their bound)"
	pkill -KILL -u "$ATTACKER"
	find /tmp -maxdepth 1 -name 'perf-*.map' -user "$ATTACKER" -delete
	local d1=$SECS p1=$PEAK_MB
	# short-lived JIT processes, one after the other: their maps are freed
	as_attacker "$HOSTILE" jitchurn 30 >churn.out 2>&1 &
	sleep 1
	timed_record 10 -a
	freed=$(sed -nE "s/.*, ([0-9]+) processes' freed after they exited.*/\1/p" rec.err)
	held=$(sed -nE 's/.*perf maps: .* records; ([0-9.]+) MiB at most of the 64.0 MiB.*/\1/p' rec.err)
	echo "short-lived JIT processes: $freed freed, $held MiB held at most"
	[ "${freed:-0}" -ge 10 ] || fail "the maps of exited processes were not freed"
	awk -v h="$held" 'BEGIN { exit !(h <= 64) }' || fail "the perf maps held $held MiB"
	note "8 growing 100 MB perf maps: -d 5 ended after $d1 s, $p1 MiB resident ($base without); churn: $freed freed, $held MiB at most"
}

# A fake CPython names new code objects at every block: it used up the one
# pool of 16.7 M ids shared by all processes, and every other process's
# Python frames were gone, unsaid. Ids are each process's own now: the fake
# is cut off at its own bound, said; a real python3 keeps its names.
test_hostile_python_ids() {
	local fake
	attacker
	command -v python3 >/dev/null || skip "no python3"
	as_attacker "$FAKEPY" 60 >fake.pid 2>fake.err &
	# shellcheck disable=SC2064
	trap "pkill -KILL -u $ATTACKER 2>/dev/null" EXIT
	wait_for_line fake.pid '^[0-9]' 10 || fail "the fake did not start"
	fake=$(cat fake.pid)
	python_sleeper
	timed_record 8 -a
	grep -q "WARNING: [0-9]* Python processes cut off (the first: pid $fake)" rec.err ||
		fail "the fake CPython was not cut off, or not said"
	python_checked
	note "a fake CPython cut off at its $(sed -nE 's/.*they named ([0-9]+) code objects.*/\1/p' rec.err | head -1) ids; python3 kept its names"
}

# A recording of 100,000 Python names in one process (written as offcpu
# record names them, by bench/gen-perfdata: each a named mapping before its
# first sample): offcpu report took 266 s (each name a mapping, the
# process's mappings sorted again at each); it must take no more CPU than
# perf report --stdio on the same file (CPU time: the machine may be busy).
test_hostile_report_named_linear() {
	local ours perfs n
	make -s -C "$ROOT" BUILD="$BUILD" bench-gen >make.log 2>&1 || { cat make.log; fail "cannot build gen-perfdata"; }
	"$ROOT/$BUILD/bench/gen-perfdata" -o names.data -n 100000 -s 500 -y 100000 "$OFFCPU" ||
		fail "gen-perfdata failed"
	TIMEFORMAT='%U %S'
	ours=$( { time "$OFFCPU" report -i names.data --folded >ours.txt 2>ours.err; } 2>&1 | awk '{ printf "%.0f", ($1 + $2) * 1000 }')
	n=$(grep -o 'py_function_[0-9]*' ours.txt | sort -u | wc -l)
	echo "offcpu report: $n distinct Python names"
	[ "$n" = 100000 ] || { cat ours.err; fail "$n names in the report, not 100000"; }
	perfs=$( { time perf report -i names.data --stdio >perf.txt 2>perf.err; } 2>&1 | awk '{ printf "%.0f", ($1 + $2) * 1000 }')
	grep -q 'offcpu-time' perf.txt || { cat perf.err; fail "perf report failed"; }
	echo "CPU time of the report: offcpu $ours ms, perf $perfs ms"
	[ "$ours" -le "$perfs" ] || fail "offcpu report took $ours ms of CPU, perf report $perfs ms"
	note "100,000 Python names in one process: offcpu report $ours ms of CPU, perf report --stdio $perfs ms"
}

# A name of the user's own (an object over its budget) made of escape
# sequences: the summary printed it raw to root's terminal.
test_hostile_summary_escape() {
	local evil
	attacker
	attacker_dir
	# shellcheck disable=SC2064
	trap "pkill -KILL -u $ATTACKER 2>/dev/null; rm -rf '$ADIR'" EXIT
	awk -v n=20000 'BEGIN {
		print "\t.text\n\t.globl hostile_block\n\t.type hostile_block, @function"
		print "hostile_block:\n\t.cfi_startproc\n\tpush %rbp\n\t.cfi_adjust_cfa_offset 8"
		print "\t.cfi_offset %rbp, -16\n\tcall usleep@PLT\n\tpop %rbp\n\t.cfi_adjust_cfa_offset -8\n\tret"
		for (i = 0; i < n; i++)
			printf "\tnop\n\t.cfi_def_cfa_offset %d\n", 16 + 8 * i
		print "\t.cfi_endproc\n\t.size hostile_block, .-hostile_block"
		print "\t.section .note.GNU-stack,\"\",@progbits"
	}' >rules.S
	evil=$(printf '%s/\033[2J\033]0;owned\007evil.so' "$ADIR")
	gcc -shared -o "$evil" rules.S || fail "cannot build the library"
	chown "$ATTACKER" "$evil"
	as_attacker "$HOSTILE" load "$evil" 8 &
	sleep 0.5
	timed_record 3 -a
	grep -q 'over their budget' rec.err || fail "the object was not over its budget"
	! LC_ALL=C grep -q $'\033' rec.err || fail "an escape sequence reached the terminal"
	! LC_ALL=C grep -q $'\007' rec.err || fail "a BEL reached the terminal"
	grep -qF '\x1b[2J\x1b]0;owned\x07evil.so' rec.err || fail "the name is not shown escaped"
}

# A fifo of the user's, in a directory of theirs: -o waited for a reader they
# would never start. Refused at once.
test_hostile_fifo_output() {
	local t0 t1 rc
	attacker
	attacker_dir
	# shellcheck disable=SC2064
	trap "rm -rf '$ADIR'" EXIT
	as_attacker mkfifo "$ADIR/out.data"
	t0=$(date +%s)
	timeout 30 "$OFFCPU" record -o "$ADIR/out.data" -- true 2>rec.err
	rc=$?
	t1=$(date +%s)
	cat rec.err
	[ $rc != 124 ] || fail "offcpu waited for the fifo's reader"
	[ $rc != 0 ] || fail "offcpu wrote into the user's fifo"
	grep -q "refusing to write into $ADIR/out.data: a fifo owned by user $ATTACKER_UID" rec.err ||
		fail "no clear refusal"
	[ $((t1 - t0)) -le 10 ] || fail "the refusal took $((t1 - t0)) s"
	[ -p "$ADIR/out.data" ] || fail "the fifo was replaced"
}

# --threads on a full disk: said when the first write fails, and the recording
# ends then, not when -d runs out.
test_hostile_threads_full_disk() {
	local t0 t1 rc
	mkdir fs
	mount -t tmpfs -o size=256k tmpfs fs || skip "cannot mount a tmpfs"
	# shellcheck disable=SC2064
	trap "umount -l '$PWD/fs' 2>/dev/null" EXIT
	t0=$(date +%s)
	timeout 120 "$OFFCPU" record --threads -a -F 999 -d 60 -o fs/rec 2>rec.err
	rc=$?
	t1=$(date +%s)
	tail -5 rec.err
	[ $rc != 0 ] && [ $rc != 124 ] || fail "the recording exited $rc on a full disk"
	grep -qi 'no space left' rec.err || fail "the full disk was not said"
	echo "ended $((t1 - t0)) s after it began (-d 60)"
	[ $((t1 - t0)) -lt 40 ] || fail "the recording went on $((t1 - t0)) s on a full disk"
}
