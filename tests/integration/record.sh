# Integration tests of offcpu record (root). Each test_* runs in its own
# temporary directory; see tests/run.sh.
# shellcheck shell=bash

# The ground-truth workload under offcpu: per-thread off-CPU time within 5% of
# what each thread measured, read back by perf script and by offcpu report.
test_groundtruth_totals() {
	record_truth -o gt.data -- "$GT" -r truth.txt
	cat rec.err
	per_tid_perf gt.data >perf.tot
	[ ! -s gt.data.script.err ] || { cat gt.data.script.err; fail "perf script warned"; }
	echo "perf script:"
	check_threads truth.txt perf.tot 5
	per_tid_offcpu gt.data >own.tot
	echo "offcpu report:"
	check_threads truth.txt own.tot 5
	! grep -q '\[time lost\]' rec.err || fail "summary reports lost time"
	grep -q "blocks seen" rec.err && grep -q "samples written" rec.err &&
		grep -q "distinct stacks" rec.err && grep -q "wrote gt.data" rec.err || fail "summary incomplete"
}

# the collector attaches with tp_btf on this kernel (raw_tp is only a fallback:
# a program the verifier rejects must not go unnoticed behind it)
test_attaches_with_tp_btf() {
	local stacks
	for stacks in user both; do
		"$OFFCPU" record -v -q --stacks $stacks -o t.data -- true 2>rec.err || { cat rec.err; fail "record failed"; }
		grep -q "attached with tp_btf" rec.err || { cat rec.err; fail "--stacks $stacks did not attach with tp_btf"; }
	done
}

# perf report shows the event by name with symbolized user call chains
test_perf_report_symbols() {
	"$OFFCPU" record -q -o gt.data -- "$GT" -r truth.txt || fail "record failed"
	perf report -i gt.data --stdio >report.txt 2>report.err || { cat report.err; fail "perf report failed"; }
	grep -q "of event 'offcpu-time'" report.txt || fail "no offcpu-time event in perf report"
	for fn in gt_sleep_thread gt_pipe_thread gt_poll_thread gt_feed_thread gt_signal_thread; do
		grep -q "$fn" report.txt || fail "$fn not in perf report"
	done
	# the worker threads' chains are known: every frame must have a name (the
	# main thread's walk from inside libc's futex wait may hold junk beyond)
	perf script -i gt.data -F comm,ip,sym 2>/dev/null |
		awk '/^ *gt-/ { g = 1; next } /^ *[^ \t]+ *$/ && !/^[ \t]+[0-9a-f]+ / { g = 0 } g' >workers.txt
	[ -s workers.txt ] || fail "no worker frames in perf script"
	! grep -q '\[unknown\]' workers.txt || { grep -m5 unknown workers.txt; fail "unsymbolized worker frames"; }
	perf script -i gt.data >script.txt 2>script.err || fail "perf script failed"
	[ ! -s script.err ] || { cat script.err; fail "perf script printed warnings"; }
	samples=$(grep -c 'offcpu-time' script.txt)
	[ "$samples" -ge 6 ] || fail "perf script printed $samples samples"
	# every binary in the samples has a build id in the header
	perf report -i gt.data --header-only >header.txt 2>&1
	perf buildid-list -i gt.data >buildids.txt 2>&1
	grep -q groundtruth buildids.txt && grep -q 'libc.so' buildids.txt || { cat buildids.txt; fail "build ids missing"; }
	for f in hostname "os release" arch "nrcpus online" cpudesc "total memory" cmdline "time of first sample"; do
		grep -q "# $f" header.txt || fail "header lacks $f"
	done
}

# A short-lived child process is attributed to its own command and symbolized,
# though it exited long before the recording ended.
test_child_process() {
	"$OFFCPU" record -q -o child.data -- sh -c 'sleep 0.3; sleep 0.2; true' || fail "record failed"
	perf script -i child.data -F comm,pid,period,ip,dso 2>err.txt >script.txt
	[ ! -s err.txt ] || { cat err.txt; fail "perf script warned"; }
	total=$(awk '/^ *sleep / { s += $3 } END { print s + 0 }' script.txt)
	echo "sleep: $total ns"
	within 5 "$total" 500000000 || fail "sleep children: $total ns, expected 500 ms"
	pids=$(awk '/^ *sleep / { print $2 }' script.txt | sort -u | wc -l)
	[ "$pids" -eq 2 ] || fail "expected 2 sleep processes, got $pids"
	grep -A3 '^ *sleep' script.txt | grep -q 'libc.so' || { cat script.txt; fail "sleep's frames not symbolized to libc"; }
	# the shell waited for its children about as long
	sh_total=$(awk '/^ *sh / { s += $3 } END { print s + 0 }' script.txt)
	within 10 "$sh_total" 500000000 || fail "sh waited $sh_total ns"
}

# -p attaches to a running process and ends when it exits
test_attach_pid() {
	local try
	for try in 1 2 3; do
		rm -f go p.data
		"$GT" -r truth.txt -w go &
		local pid=$!
		"$OFFCPU" record -o p.data -p "$pid" 2>rec.err &
		local rec=$!
		wait_for_line rec.err "recording" 60 || { kill $pid $rec; cat rec.err; fail "offcpu did not start"; }
		touch go
		wait $pid || fail "workload failed"
		wait $rec || { cat rec.err; fail "offcpu record -p failed"; }
		# a loss the recorder reported calls for another recording
		lost_time rec.err || break
	done
	per_tid_perf p.data >perf.tot
	check_threads truth.txt perf.tot 5
	per_tid_offcpu p.data >own.tot
	check_threads truth.txt own.tot 5
}

# -a records everything; the workload's threads are among it, correct
test_system_wide() {
	record_truth -a -o a.data -- "$GT" -r truth.txt
	cat rec.err
	per_tid_perf a.data >perf.tot
	[ ! -s a.data.script.err ] || { cat a.data.script.err; fail "perf script warned"; }
	check_threads truth.txt perf.tot 5
	others=$(perf script -i a.data -F comm 2>/dev/null | sort -u | wc -l)
	echo "commands seen system-wide: $others"
	[ "$others" -gt 7 ] || fail "system-wide recording saw only $others commands"
}

# -a -d stops on its own after the duration
test_duration() {
	local t0 t1
	t0=$(date +%s%N)
	"$OFFCPU" record -a -d 1 -o d.data 2>rec.err || { cat rec.err; fail "record -a -d 1 failed"; }
	t1=$(date +%s%N)
	echo "took $(((t1 - t0) / 1000000)) ms"
	[ $(((t1 - t0) / 1000000)) -ge 900 ] || fail "stopped too early"
	[ $(((t1 - t0) / 1000000)) -lt 10000 ] || fail "did not stop"
	perf script -i d.data >/dev/null 2>err.txt || fail "perf script failed"
	# perf may warn of lost samples only when offcpu reported them
	[ ! -s err.txt ] || grep -q "this recording is incomplete" rec.err ||
		{ cat err.txt; fail "perf script warned"; }
}

# -t records only the given threads
test_tid_filter() {
	# two shells that block again and again, each waiting for its sleep
	sh -c 'while :; do sleep 0.05; done' &
	local a=$!
	sh -c 'while :; do sleep 0.05; done' &
	local b=$!
	"$OFFCPU" record -o t.data -t "$a" -d 1 2>rec.err || { kill $a $b; cat rec.err; fail "record -t failed"; }
	kill $a $b 2>/dev/null
	perf script -i t.data -F tid,period,event 2>/dev/null | awk '$3 == "offcpu-time:" { print $1, $2 }' >samples.txt
	awk '{ print $1 }' samples.txt | sort -u >tids.txt
	cat tids.txt
	grep -qw "$b" tids.txt && fail "thread $b recorded though not asked"
	[ "$(cat tids.txt)" = "$a" ] || fail "expected thread $a alone, got: $(cat tids.txt)"
	# it waited for 20 sleeps of 50 ms in the second: most of it is off-CPU
	ns=$(awk '{ s += $2 } END { print s + 0 }' samples.txt)
	[ "$ns" -gt 500000000 ] || fail "thread $a: only $ns ns off-CPU in 1 s"
	"$OFFCPU" record -q -o t2.data -t "$a,$b" -d 0.2 2>/dev/null && fail "record -t on dead threads succeeded"
	true
}

# -C: only blocks that begin on the given cpus
test_cpu_filter() {
	[ "$(nproc)" -ge 2 ] || skip "one cpu: nothing to filter"
	"$OFFCPU" record -q -C 0 -o c0.data -- taskset -c 1 "$GT" -r truth0.txt || fail "record -C 0 failed"
	n=$(perf script -i c0.data -F comm 2>/dev/null | grep -c gt-)
	[ "$n" -eq 0 ] || fail "-C 0 recorded $n samples of a workload pinned to cpu 1"
	record_truth -C 1 -o c1.data -- taskset -c 1 "$GT" -r truth1.txt
	per_tid_perf c1.data >perf.tot
	check_threads truth1.txt perf.tot 5
}

# -G: only tasks in a cgroup v2; --all-cgroups names the cgroup in perf report
test_cgroup() {
	local root cg
	root=$(cgroup2_root)
	[ -n "$root" ] || fail "no cgroup v2 mount"
	cg=$root/offcpu-test-$$
	mkdir "$cg" || fail "cannot create $cg"
	sleep 2 &
	local outside=$! rc try
	for try in 1 2 3; do
		"$OFFCPU" record -a -G "offcpu-test-$$" --all-cgroups -o g.data -- \
			sh -c "echo \$\$ > $cg/cgroup.procs && exec $GT -r truth.txt" 2>rec.err
		rc=$?
		# a loss the recorder reported calls for another recording
		[ $rc -ne 0 ] || ! lost_time rec.err || continue
		break
	done
	kill $outside 2>/dev/null
	rmdir "$cg" 2>/dev/null
	[ $rc -eq 0 ] || fail "record -G failed"
	per_tid_perf g.data >perf.tot
	check_threads truth.txt perf.tot 5
	n=$(perf script -i g.data -F comm 2>/dev/null | grep -vc 'gt-\|groundtruth')
	[ "$n" -eq 0 ] || fail "$n samples from outside the cgroup"
	perf report -i g.data --stdio --sort cgroup 2>/dev/null >cg.txt
	grep -q "offcpu-test-$$" cg.txt || { head -30 cg.txt; fail "cgroup name not in perf report --sort cgroup"; }
	"$OFFCPU" record -q -G /no/such/cgroup -d 1 -o x.data 2>err.txt && fail "bad cgroup accepted"
	grep -q "cgroup" err.txt || fail "no clear error for a bad cgroup"
}

# the raw_tp fallback measures the same
test_raw_tp_fallback() {
	record_truth --raw-tp -o raw.data -- "$GT" -r truth.txt
	per_tid_perf raw.data >perf.tot
	check_threads truth.txt perf.tot 5
}

# --state D leaves out interruptible sleeps
test_state_filter() {
	"$OFFCPU" record -q --state D -o d.data -- "$GT" -r truth.txt || fail "record --state D failed"
	# gt-sleep's 1 s of nanosleep is S; a page fault or an mm lock on its
	# way can be a genuine D wait of a few microseconds, so the time is held
	# to under 1% of its sleep rather than the count to zero
	ns=$(perf script -i d.data -F comm,period 2>/dev/null | awk '$1 == "gt-sleep" { s += $2 } END { print s + 0 }')
	[ "$ns" -lt 10000000 ] || fail "--state D recorded $ns ns of gt-sleep's interruptible sleeps"
	record_truth --state S,D,R -o sdr.data -- "$GT" -r truth.txt
	per_tid_perf sdr.data >perf.tot
	check_threads truth.txt perf.tot 5
}

# SIGINT and SIGTERM end the recording with a complete file
test_signals() {
	local sig
	for sig in INT TERM; do
		"$OFFCPU" record -a -o s.data 2>rec.err &
		local rec=$!
		wait_for_line rec.err recording 60 || fail "did not start"
		sleep 0.5
		kill -$sig $rec
		wait $rec || { cat rec.err; fail "exit status after SIG$sig"; }
		grep -q "wrote s.data" rec.err || fail "no summary after SIG$sig"
		perf script -i s.data >/dev/null 2>err.txt || fail "perf script failed after SIG$sig"
		# perf may warn of lost samples only when offcpu reported them
		[ ! -s err.txt ] || grep -q "this recording is incomplete" rec.err ||
			{ cat err.txt; fail "perf script warned after SIG$sig"; }
	done
	# with a workload: the command is stopped too
	"$OFFCPU" record -o w.data -- sleep 30 2>rec.err &
	rec=$!
	sleep 1
	kill -TERM $rec
	wait $rec || fail "exit status with a workload"
	pgrep -f "^sleep 30$" && fail "workload left running"
	perf script -i w.data >/dev/null 2>err.txt || fail "perf script failed"
	true
}

# the output file: mode 0600, an existing one kept as .old, no partial file on errors
test_output_file() {
	"$OFFCPU" record -q -o out.data -- true || fail "record failed"
	[ "$(stat -c %a out.data)" = 600 ] || fail "mode $(stat -c %a out.data)"
	cp out.data first.data
	"$OFFCPU" record -q -o out.data -- sleep 0.1 || fail "second record failed"
	cmp -s out.data.old first.data || fail "old file not kept as out.data.old"
	ls -la
	! ls | grep -q tmp || fail "temporary file left behind"
}

# errors: one clear line, non-zero exit (2 for usage), no file
test_errors() {
	local rc
	"$OFFCPU" record --bogus 2>err.txt; rc=$?
	[ $rc -eq 2 ] || fail "bad option: exit $rc"
	"$OFFCPU" record -o e.data 2>err.txt; rc=$?
	[ $rc -eq 2 ] && grep -q "no target" err.txt || fail "no target: exit $rc"
	"$OFFCPU" record -d abc -a 2>err.txt; rc=$?
	[ $rc -eq 2 ] && grep -q "invalid duration" err.txt || fail "bad duration: exit $rc"
	"$OFFCPU" record -o e.data -p 999999999 2>err.txt; rc=$?
	[ $rc -eq 2 ] || [ $rc -eq 1 ] || fail "bad pid: exit $rc"
	"$OFFCPU" record -o e.data -p 4000000 2>err.txt; rc=$?
	[ $rc -eq 1 ] && grep -q "process 4000000 does not exist" err.txt || { cat err.txt; fail "missing pid: exit $rc"; }
	"$OFFCPU" record -o e.data -- /no/such/command 2>err.txt; rc=$?
	[ $rc -eq 1 ] && grep -q "cannot execute '/no/such/command'" err.txt || { cat err.txt; fail "bad command: exit $rc"; }
	[ $(wc -l <err.txt) -eq 1 ] || { cat err.txt; fail "more than one line for a bad command"; }
	"$OFFCPU" record -o e.data --btf /no/btf -a 2>err.txt; rc=$?
	[ $rc -eq 1 ] && grep -q "BTF" err.txt || { cat err.txt; fail "missing BTF: exit $rc"; }
	chmod 755 .
	setpriv --reuid=65534 --regid=65534 --clear-groups "$OFFCPU" record -o /tmp/x.$$.data -a 2>err.txt; rc=$?
	[ $rc -eq 1 ] && grep -q "root" err.txt || { cat err.txt; fail "not root: exit $rc"; }
	ls
	! ls | grep -q 'e.data' || fail "partial file left behind"
	[ ! -e /tmp/x.$$.data ] || fail "file written without privileges"
	"$OFFCPU" --help | grep -q record || fail "--help"
	"$OFFCPU" record --help | grep -q -- "--off-cpu\|--pid" || fail "record --help"
}

# a full disk: a clear error, non-zero exit, no partial file
test_full_disk() {
	mkdir small && mount -t tmpfs -o size=4k tmpfs small || fail "cannot mount a small tmpfs"
	"$OFFCPU" record -a -d 1 -o small/full.data 2>err.txt; rc=$?
	ls -la small
	umount small
	cat err.txt
	[ $rc -eq 1 ] || fail "exit $rc on a full disk"
	grep -q "No space left" err.txt || fail "no clear error"
}

# make install honours DESTDIR and PREFIX
test_make_install() {
	make -s -C "$ROOT" BUILD="$BUILD" install DESTDIR="$PWD/dest" PREFIX=/opt/x >/dev/null || fail "make install failed"
	[ -x dest/opt/x/bin/offcpu ] || fail "not installed under DESTDIR/PREFIX"
}

# offcpu walks user stacks (frame pointers) and kernel stacks (the kernel's
# ORC tables) in BPF instead of calling the kernel's helpers: with
# --verify-stacks it also runs the helpers on every block and counts every
# stack that differs. The whole system, every state, under varied load.
test_stack_walks_match_kernel() {
	"$OFFCPU" record -a --verify-stacks --stacks both --state S,D,R,T,I -d 4 -o v.data 2>rec.err &
	local rec=$!
	wait_for_line rec.err recording 60 || { kill $rec; fail "offcpu did not start"; }
	"$GT" -r truth.txt >/dev/null &
	taskset -c 1 perf bench sched pipe -l 30000 >/dev/null 2>&1
	find /usr/include -name '*.h' -newer /nonexistent 2>/dev/null | head -2000 | xargs cat >/dev/null 2>&1
	for i in 1 2 3 4 5; do sh -c 'ls /proc/[0-9]*/stat | head -50 | xargs cat' >/dev/null 2>&1; done
	dd if=/dev/zero of=dd.bin bs=1M count=20 conv=fsync 2>/dev/null
	wait $rec || { cat rec.err; fail "record failed"; }
	cat rec.err
	line=$(grep "verified .* stacks" rec.err) || fail "no verification line in the summary"
	read -r n ubad kbad uhelp khelp < <(echo "$line" |
		sed -E 's/.*verified ([0-9]+) stacks.*: ([0-9]+) user and ([0-9]+) kernel stacks differed; the helpers walked ([0-9]+) user and ([0-9]+) kernel.*/\1 \2 \3 \4 \5/')
	[ "$n" -ge 5000 ] || fail "only $n stacks compared"
	[ "$ubad" -eq 0 ] || fail "$ubad user stacks differ from the kernel's walk"
	[ "$kbad" -eq 0 ] || fail "$kbad kernel stacks differ from the kernel's walk"
	# the BPF walks must do the work, not leave it to the helpers
	[ $((uhelp + khelp)) -le $((n / 20)) ] || fail "the helpers walked $uhelp + $khelp of $n stacks"
	# and the file holds both kinds of frames, read by perf
	perf script -i v.data -F ip,sym 2>/dev/null >script.txt
	grep -q 'entry_SYSCALL_64' script.txt && grep -q 'gt_sleep_thread' script.txt ||
		fail "perf script lacks kernel or user frames"
}

# While another BPF program attaches to and detaches from sched_switch the
# kernel can run a thread without calling offcpu's program at its switch-in
# (measured: 18 times in 9 recordings of 30 ground-truth runs with a program
# attaching every 60 ms, 0 without). offcpu recovers such blocks from the
# thread's CPU time. Here the collector is made to ignore every 3rd switch-in
# of a blocked thread (a test-only fault injection), so a third of the
# blocks take that path: every ground-truth thread still holds to the truth,
# and so does a thread that runs 100 ms on the CPU after each of its blocks
# (a recovery that forgot to take its CPU time out would count it off-CPU).
test_recovers_skipped_switch_ins() {
	OFFCPU_FAULT_SKIP_SWITCH_IN=3 record_truth -o gt.data -- "$GT" -r truth.txt
	cat rec.err
	n=$(grep -o '[0-9]* blocks recovered' rec.err | cut -d' ' -f1)
	[ "${n:-0}" -ge 5 ] || fail "only ${n:-0} blocks took the recovery path"
	per_tid_perf gt.data >perf.tot
	check_threads truth.txt perf.tot 5
	per_tid_offcpu gt.data >own.tot
	check_threads truth.txt own.tot 5
	# spin 100 ms, sleep 100 ms, 9 times: off-CPU = wall - CPU
	OFFCPU_FAULT_SKIP_SWITCH_IN=3 "$OFFCPU" record -o spin.data --state S,D,R -- "$SPIN" 0.1 0.1 9 >spin.txt 2>rec.err ||
		{ cat rec.err; fail "record spin failed"; }
	cat rec.err
	n=$(grep -o '[0-9]* blocks recovered' rec.err | cut -d' ' -f1)
	[ "${n:-0}" -ge 2 ] || fail "only ${n:-0} of spin's blocks took the recovery path"
	read -r cpu wall <spin.txt
	got=$(perf script -i spin.data -F period 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
	echo "spin: off-CPU $(((wall - cpu) / 1000000)) ms by its clocks, $((got / 1000000)) ms recorded"
	within 5 "$got" $((wall - cpu)) || fail "spin's off-CPU time is wrong with recovered blocks"
}

# The kernel can also skip offcpu's program at a thread's switch-out: that
# block cannot be rebuilt, but the kernel's count of the thread's voluntary
# switches shows it at the next switch-in, and the summary counts it. Here
# every 3rd recorded switch-out of a thread seen before is ignored on
# purpose (test-only fault injection): each one is reported as lost, and
# written as perf's LOST_SAMPLES. Skipping a switch skips the switch-in of
# the thread that runs next too: where that thread's own skipped
# switch-out was to show, its next switch-out shows it (its exit is one),
# so every one is counted. (That was missed before: 3 of 5 counted, at
# times, on a busy machine.)
test_counts_skipped_switch_outs() {
	OFFCPU_FAULT_SKIP_SWITCH_OUT=3 "$OFFCPU" record -o s.data -- "$GT" -r truth.txt 2>rec.err ||
		{ cat rec.err; fail "record failed"; }
	cat rec.err
	injected=$(sed -nE 's/.*\(test\) ([0-9]+) switch-outs ignored.*/\1/p' rec.err)
	counted=$(sed -nE 's/.* ([0-9]+) blocks lost: the kernel did not run offcpu.s program when their thread blocked.*/\1/p' rec.err)
	[ "${injected:-0}" -ge 3 ] || fail "only ${injected:-0} switch-outs ignored"
	[ "${counted:-0}" -eq "$injected" ] || fail "${counted:-0} blocks counted as lost, $injected ignored"
	grep -q "this recording is incomplete" rec.err || fail "the loss is not said"
	perf report -i s.data --stdio 2>/dev/null | grep -q "Total Lost Samples" ||
		fail "perf report shows no lost samples"
}

# With a uretprobe pending on a function of the stack, the kernel puts back
# the return address the uretprobe's trampoline replaced; offcpu's own walk
# leaves such stacks to the kernel's helper (it walked them wrong before:
# 50 of 50 differed). perf probe sets the uretprobe, tracefs enables it.
test_uretprobe_stacks() {
	local tr=/sys/kernel/tracing ev
	[ -e $tr/events ] || mount -t tracefs nodev $tr || fail "cannot mount tracefs"
	ev=$tr/events/probe_groundtruth/gt_sleep_block__return
	# left by an interrupted run?
	echo 0 >"$ev/enable" 2>/dev/null
	perf probe -q -d 'probe_groundtruth:*' 2>/dev/null
	perf probe -q -x "$GT" 'gt_sleep_block%return' || fail "perf probe failed"
	trap "echo 0 >'$ev/enable' 2>/dev/null; perf probe -q -d 'probe_groundtruth:*'" EXIT
	echo 1 >"$ev/enable" || fail "cannot enable the uretprobe"
	"$OFFCPU" record -o u.data --verify-stacks -- "$GT" -r truth.txt 2>rec.err || fail "record failed"
	cat rec.err
	line=$(grep "verified .* stacks" rec.err) || fail "no verification line"
	read -r n ubad uhelp < <(echo "$line" |
		sed -E 's/.*verified ([0-9]+) stacks.*: ([0-9]+) user and .* walked ([0-9]+) user.*/\1 \2 \3/')
	[ "$ubad" -eq 0 ] || fail "$ubad user stacks differ from the kernel's under a uretprobe"
	[ "$uhelp" -ge 4 ] || fail "only $uhelp stacks were left to the helper (4 sleeps pass gt_sleep_block)"
	perf script -i u.data -F sym 2>/dev/null | grep -q 'uprobes' && fail "a uretprobe trampoline in the stacks"
	true
}

# The summed blocks leave the kernel's map many to a system call (batch map
# operations), or one at a time where the kernel has none (forced here with
# OFFCPU_DRAIN_BATCH=0): both give every block of 8 processes x 1024 stacks,
# and the batch takes them out faster (-v says how long each took). Every
# entry taken is one sample in the file, and the file holds the time the
# summary says. The ground truth is each process's paths to leaf() that
# blocked, as the workload counts them (its voluntary switches grew during
# the sleep: a 100 us sleep whose timer fires before the thread switches out
# is no block): each is one sample with its whole path, no path twice. (A
# path twice was a real bug: walks finished in user space were found by an
# id that came back after 512 of a CPU's walks, and a later block's stack
# was written for an earlier one.)
test_drain_batch_and_each() {
	local v try n all taken bad blocked secs sum degraded stacks=$ROOT/$BUILD/tests/stacks
	for v in 1 0; do
		for try in 1 2 3; do
			OFFCPU_DRAIN_BATCH=$v "$OFFCPU" record -v -o d$v.data -- sh -c \
				"for i in 1 2 3 4 5 6 7 8; do '$stacks' 1024 100 >truth$v.\$i & done; wait" 2>rec$v.err ||
				{ cat rec$v.err; fail "record failed"; }
			lost_time rec$v.err || break
			[ $try -lt 3 ] || fail "three recordings in a row reported losses"
		done
		cat truth$v.* >truth$v.txt
		[ "$(wc -l <truth$v.txt)" -eq 8 ] || fail "the 8 processes did not all say what they blocked in"
		grep 'summed blocks:' rec$v.err
		taken=$(sed -nE 's/.*summed blocks: ([0-9]+) taken.*/\1/p' rec$v.err)
		perf script -i d$v.data -F comm,pid,period,ip,sym 2>/dev/null >s$v.txt
		all=$(grep -c '^[^[:space:]]' s$v.txt)
		[ "$all" -eq "$taken" ] || fail "OFFCPU_DRAIN_BATCH=$v: $taken entries taken, $all samples in the file"
		# the time written is the file's (the summary says it to the ms)
		secs=$(sed -nE 's/.* samples written \(([0-9.]+) s in .*/\1/p' rec$v.err)
		sum=$(awk '/^[^[:space:]]/ { s += $3 } END { printf "%.3f", s / 1e9 }' s$v.txt)
		[ -n "$secs" ] && awk -v a="$secs" -v b="$sum" 'BEGIN { d = a - b; exit !(d < 0.0015 && d > -0.0015) }' ||
			fail "OFFCPU_DRAIN_BATCH=$v: the summary wrote ${secs:-?} s, the file holds $sum s"
		# each process's paths to leaf(), spelled by its path_0/path_1 frames:
		# "pid path" per sample of the workload's in a path
		awk 'BEGIN { RS = ""; FS = "\n" } /path_[01]\n/ { split($1, h, " "); p = ""
				for (i = 2; i <= NF; i++) if ($i ~ / path_[01]$/) p = p substr($i, length($i))
				print h[2], p, /leaf\n/ ? "leaf" : "-" }' s$v.txt >paths$v.txt
		# a table walk that did not complete (its stack not readable; its
		# finishing in user space not sent, the buffer full, or failed) goes
		# on by frame pointers, which skip leaf() under libc's frames
		# without them, or stops short: the summary counts such walks, by
		# how they ended; every other stack is whole, leaf() too
		degraded=$(sed -n 's/^offcpu: user stacks by unwind tables: //p' rec$v.err | tr ';' '\n' |
			sed -nE '/walks\) complete/d; s/.*\(([0-9]+) walks\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
		bad=$(awk 'length($2) != 10 || $3 != "leaf"' paths$v.txt | wc -l)
		[ "$bad" -le "$degraded" ] || {
			awk 'length($2) != 10 || $3 != "leaf"' paths$v.txt | head -5
			fail "OFFCPU_DRAIN_BATCH=$v: $bad samples in a path without their whole stack, $degraded walks said incomplete"
		}
		awk 'length($2) == 10 { print $1, $2 }' paths$v.txt | sort | uniq -d >twice$v.txt
		n=$(wc -l <twice$v.txt)
		[ "$n" -eq 0 ] || { head -5 twice$v.txt; fail "OFFCPU_DRAIN_BATCH=$v: $n paths written twice for one process: a block has another's stack"; }
		# per process: the whole paths the file holds are the paths that
		# blocked (short of the incomplete walks, if any)
		blocked=$(awk '{ s += $2 } END { print s }' truth$v.txt)
		n=$(awk 'length($2) == 10' paths$v.txt | wc -l)
		echo "OFFCPU_DRAIN_BATCH=$v: $taken summed samples ($sum s), $n whole paths, $blocked of 8192 sleeps blocked"
		awk -v spare="$degraded" 'NR == FNR { want[$1] = $2; next } length($2) == 10 { got[$1]++ }
			END { for (p in want) {
					if (got[p] + 0 != want[p]) print "pid " p ": " got[p] + 0 " whole paths in the file, " want[p] " blocked"
					if (got[p] > want[p]) bad = 1; else short += want[p] - got[p] }
				for (p in got) if (!(p in want)) { print "pid " p ": paths of an unknown process"; bad = 1 }
				exit bad || short > spare }' truth$v.txt paths$v.txt ||
			fail "OFFCPU_DRAIN_BATCH=$v: the paths in the file are not those that blocked ($degraded walks said incomplete)"
		[ "$blocked" -gt 4096 ] || fail "only $blocked of 8192 sleeps blocked: the test proves little"
		note "OFFCPU_DRAIN_BATCH=$v: $n of $blocked blocked paths, $((8192 - blocked)) sleeps did not block"
	done
	grep -q 'summed blocks: .* many to a system call' rec1.err || fail "the batch was not used"
	grep -q 'summed blocks: .* one at a time' rec0.err || fail "OFFCPU_DRAIN_BATCH=0 was not one at a time"
}
