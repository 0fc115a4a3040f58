# Integration tests of frames of runtimes with their own code (root): Go,
# whose ABI keeps frame pointers, walked by them as its method and ended at
# its scheduler's stack switch; JIT code (node), walked by checked
# frame-pointer steps, its JavaScript functions named from V8's frames and
# the rest from the perf map the process writes. Held to the workloads' own
# clocks.
# shellcheck shell=bash

# folded_time FOLDED COMM FN: µs of COMM's stacks in FOLDED that hold frame FN
folded_time() {
	awk -v c="$2" -v f="$3" '{
		v = $NF; s = substr($0, 1, length($0) - length(v) - 1); n = split(s, a, ";")
		if (a[1] != c) next
		for (i = 2; i <= n; i++) if (a[i] == f) { t += v; break }
	} END { printf "%.0f\n", t }' "$1"
}

# go_build: tests/workloads/gowait.go into ./gowait (SKIP without go)
go_build() {
	command -v go >/dev/null || skip "go is not installed (golang-go)"
	mkdir -p gocache gopath
	GOCACHE=$PWD/gocache GOPATH=$PWD/gopath GOFLAGS= GOPROXY=off GO111MODULE=off \
		go build -o gowait "$ROOT/tests/workloads/gowait.go" >build.log 2>&1 ||
		{ cat build.log; fail "go build failed"; }
}

# A Go program whose goroutines are locked to their threads: its stacks
# complete (from runtime.goexit, runtime.mstart or runtime.rt0_go, or ended
# at the scheduler's stack switch of a thread that waits for no goroutine of
# its own), its time under its functions within 5% of its own clocks (a
# locked goroutine's park is its thread's wait: runtime.stoplockedm).
test_runtimes_go() {
	go_build
	record_truth -v -o go.data -- ./gowait >truth.txt
	"$OFFCPU" report -i go.data --folded >go.folded || fail "report failed"
	grep -q '^gowait;' go.folded || fail "no stack of the Go program"
	! grep '^gowait;.*\[\(no unwind\|unwind:\)' go.folded || fail "a Go stack carries a mark frame"
	# (or in runtime.morestack, a stack growth on the thread's own stack: the
	# goroutine's frames are found through its g, not by frame pointers)
	! grep -v '^gowait;\(runtime\.\(goexit\|mstart\|rt0_go\|morestack\)\|\[go: scheduler, no goroutine of its own\];runtime\.mcall;\)' go.folded | grep '^gowait;' ||
		fail "a Go stack does not start where a goroutine or thread starts, or at the scheduler"
	local fn ns got bad=0 figures=
	while read -r fn ns; do
		got=$(($(folded_time go.folded gowait "main.$fn") * 1000))
		if within 5 "$got" "$ns"; then
			echo "  $fn: blocked $((ns / 1000000)) ms, $((got / 1000000)) ms under it"
		else
			echo "  $fn: blocked $((ns / 1000000)) ms, $((got / 1000000)) ms under it: off by more than 5%" >&2
			bad=1
		fi
		figures="$figures $fn $((got / 1000000))/$((ns / 1000000)) ms,"
	done <truth.txt
	[ $bad = 0 ] || fail "Go functions' times differ from the program's clocks"
	# --sort runtime: each wait under the innermost Go function outside Go's
	# runtime (goSleepCharlie's is time.Sleep, which it calls)
	"$OFFCPU" report -i go.data --sort runtime >rt.txt || fail "report --sort runtime failed"
	while read -r fn ns; do
		[ "$fn" = goSleepCharlie ] && want=time.Sleep || want=main.$fn
		got=$(awk -v f="$want" '!/^#/ && $3 == f { printf "%.0f", $1 * 1e6 }' rt.txt)
		within 5 "${got:-0}" "$ns" || { cat rt.txt; fail "--sort runtime: $want has ${got:-0} ns, $fn waited $ns"; }
	done <truth.txt
	note "Go: no mark frame;${figures%,}; $(sed -n 's/^offcpu: user stacks by unwind tables: //p' rec.err)"
}

# Goroutines not locked to a thread park (time.Sleep, a timer channel) in
# named functions: their threads wait in Go's scheduler, for no goroutine in
# particular. No function gets more time than its goroutines waited (within
# 5%, and 1 ms): a thread's wait after a goroutine parked on it is the
# scheduler's (its stack ends at runtime.mcall with a mark), not charged to
# that goroutine, which waits elsewhere if at all.
test_runtimes_go_unlocked() {
	go_build
	record_truth -v -o go.data -- ./gowait unlocked >truth.txt
	"$OFFCPU" report -i go.data --folded >go.folded || fail "report failed"
	grep -q '^gowait;\[go: scheduler, no goroutine of its own\];runtime\.mcall;' go.folded ||
		fail "no thread's wait ended at the scheduler's switch"
	grep -q "ended at Go's scheduler" rec.err || fail "the summary does not count the scheduler's waits"
	local fn ns got bad=0 figures=
	while read -r fn ns; do
		got=$(($(folded_time go.folded gowait "main.$fn") * 1000))
		if awk -v g="$got" -v n="$ns" 'BEGIN { exit !(g <= n * 1.05 + 1000000) }'; then
			echo "  $fn: parked $((ns / 1000000)) ms, $((got / 1000000)) ms under it"
		else
			echo "  $fn: parked $((ns / 1000000)) ms, $((got / 1000000)) ms under it: more than it waited" >&2
			bad=1
		fi
		figures="$figures $fn $((got / 1000000))/$((ns / 1000000)) ms,"
	done <truth.txt
	[ $bad = 0 ] || fail "a Go function was charged another goroutine's or the scheduler's wait"
	note "Go, goroutines not locked:${figures%,}; the scheduler's waits $(awk '/^gowait;\[go: scheduler/ { t += $NF } END { printf "%.0f", t / 1000 }' go.folded) ms"
}

# node_js_time SCRIPT PID FN: ns of PID's main thread under frames perf
# names "[js] FN (...)" (from the symbol file beside the recording) in perf
# script's output SCRIPT (-F ...,ip,sym,dso)
node_js_time() {
	awk -v tid="$2" -v f="$3" '
		/^[^ \t]/ { if (hit) t += p; hit = 0; keep = ($2 == tid); p = $3; next }
		keep && index($0, " [js] " f " (") { hit = 1 }
		END { if (hit) t += p; printf "%.0f\n", t }' "$1"
}

# node: JavaScript functions named from V8's own frames (the layout node
# exports as v8dbg_* symbols), interpreted ones too: each call's time under
# its function, at least 90% of what the functions measured, in perf script
# (named from the symbol file beside the recording) and in offcpu report --folded. Run with
# --perf-basic-prof only and functions called once (interpreted: no perf map
# entry of their own), with baseline code (--always-sparkplug), and with no
# flag at all. The perf map is removed before the file is read. What the
# functions measured is the time their thread did not run in them; --state
# SDR records all of it (its preemptions too: a busy machine makes them long
# in execSync's fork and exec).
test_runtimes_node_jit() {
	command -v node >/dev/null || skip "node is not installed (nodejs)"
	nm -D "$(readlink -f "$(command -v node)")" 2>/dev/null | grep -q ' v8dbg_off_fp_function$' ||
		skip "this node does not export V8's frame layout (v8dbg_* symbols)"
	local run args pid fn ns got ok bad=0 figures=
	for run in "once:--perf-basic-prof:1 once" "sparkplug:--perf-basic-prof --always-sparkplug:3" \
		"noflag::1 once"; do
		IFS=: read -r label args wargs <<<"$run"
		# shellcheck disable=SC2086
		record_truth -v --state SDR -o node.data -- node $args "$ROOT/tests/workloads/jitwait.js" $wargs >truth.txt
		pid=$(awk '$1 == "pid" { print $2 }' truth.txt)
		[ -n "$pid" ] || fail "no pid from the workload"
		rm -f "/tmp/perf-$pid.map"
		# (each execSync child blocks in node's code too before its exec:
		# more node processes at times, the busier the machine)
		grep -q "JavaScript frames: [1-9][0-9]* stacks in [1-9][0-9]* node processes" rec.err ||
			fail "$label: no JavaScript frames named"
		perf script -i node.data -F comm,tid,period,ip,sym,dso 2>/dev/null >node.script ||
			fail "perf script failed"
		"$OFFCPU" report -i node.data --folded >node.folded || fail "report failed"
		figures="$figures $label:"
		while read -r fn ns; do
			[ "$fn" != pid ] || continue
			got=$(node_js_time node.script "$pid" "$fn")
			ok=$(awk -v g="$got" -v n="$ns" 'BEGIN { print (g >= 0.9 * n && g <= 1.05 * n) }')
			echo "  $label $fn: blocked $((ns / 1000000)) ms, $((got / 1000000)) ms under its [js] frame (perf script)"
			[ "$ok" = 1 ] || { echo "  $label $fn: not 90-105%" >&2; bad=1; }
			got=$(($(folded_time node.folded node "$fn") * 1000))
			ok=$(awk -v g="$got" -v n="$ns" 'BEGIN { print (g >= 0.9 * n && g <= 1.05 * n) }')
			echo "  $label $fn: $((got / 1000000)) ms under it in offcpu report --folded"
			[ "$ok" = 1 ] || { echo "  $label $fn: not 90-105% in the report" >&2; bad=1; }
			figures="$figures $fn $((got / 1000000))/$((ns / 1000000)) ms"
		done <truth.txt
		[ $bad = 0 ] || { grep -m3 "\[js\]" node.script >&2; fail "$label: JS functions' times are not under their names"; }
		# --srcline: a JavaScript function with its script
		"$OFFCPU" report -i node.data --folded --srcline >srcline.folded || fail "report --srcline failed"
		grep -q ";blockChildAlpha (/[^;]*/tests/workloads/jitwait.js);" srcline.folded ||
			{ head -c 2000 srcline.folded; fail "$label: --srcline does not name the script"; }
		figures="$figures;"
	done
	note "node:${figures%;}; $(sed -n 's/^offcpu: JavaScript frames: //p' rec.err)"
}

# --switch-output: every file names its own JavaScript frames, those a file
# before it named too, for perf (from the symbol file beside it: without
# one, perf shows the "[js] ..." mapping and no symbol), and more than one
# file holds some.
test_runtimes_node_rotation() {
	command -v node >/dev/null || skip "node is not installed (nodejs)"
	nm -D "$(readlink -f "$(command -v node)")" 2>/dev/null | grep -q ' v8dbg_off_fp_function$' ||
		skip "this node does not export V8's frame layout (v8dbg_* symbols)"
	local f n named files with=0 all=
	"$OFFCPU" record --state SDR --switch-output=400ms -o rot.data -- \
		node "$ROOT/tests/workloads/jitwait.js" 3 >/dev/null 2>rec.err || fail "record --switch-output failed"
	files=$(ls rot.data.* | wc -l)
	[ "$files" -ge 3 ] || fail "--switch-output=400ms: only $files files"
	for f in rot.data.*; do
		perf script -i "$f" -F ip,sym,dso 2>/dev/null >rot.script || fail "perf script of $f failed"
		n=$(awk '(/\(\[js\] / || /names\)$/) && $2 != "[js]" { n++ } END { print n + 0 }' rot.script)
		named=$(awk '$2 == "[js]" { n++ } END { print n + 0 }' rot.script)
		[ "$n" = 0 ] || fail "$f: $n JavaScript frames perf leaves unnamed ($named named)"
		[ "$named" = 0 ] || { with=$((with + 1)); [ -s ".$f.names" ] || fail "no symbol file .$f.names"; }
		all="$all $named"
	done
	[ "$with" -ge 2 ] || fail "$with of $files files have named JavaScript frames (per file:$all)"
	note "--switch-output=400ms: $files files, every JavaScript frame named (per file:$all)"
}

# A perf map that is a symbolic link is not read (nothing writes through it:
# the process is no JIT, and the link points into the test's directory).
test_runtimes_perfmap_link() {
	: >target
	# (its first wait, written at once, while it waits again: alive)
	"$OFFCPU" record -v --off-cpu-thresh 10 -o link.data -- sh -c \
		'ln -s "$PWD/target" /tmp/perf-$$.map && echo $$ >link.pid && sleep 0.2; sleep 0.3' \
		>/dev/null 2>rec.err
	local rc=$? pid
	pid=$(cat link.pid 2>/dev/null)
	[ -z "$pid" ] || [ ! -L "/tmp/perf-$pid.map" ] || rm -f "/tmp/perf-$pid.map"
	[ $rc = 0 ] || fail "record failed"
	[ -n "$pid" ] || fail "the workload did not run"
	grep -q "perf map of process $pid not read" rec.err || fail "the linked perf map was not refused"
	! grep -q "perf maps: [1-9]" rec.err || fail "a perf map was read"
}

# java_named FOLDED: "THREAD total named" in ms per Java worker thread of
# JitWait.java: its off-CPU time, and the time of its stacks that hold a
# named Java method ("void JitWait.waitSleepAlpha(long)", the JVM's perf map
# names; "Interpreter" and stubs are no method)
java_named() {
	awk -F';' '$1 == "alpha" || $1 == "bravo" || $1 == "charlie" {
		v = $NF; sub(/.* /, "", v); t[$1] += v
		for (i = 2; i <= NF; i++)
			if ($i ~ /^[A-Za-z_$][A-Za-z0-9_$.\[\]<>]* [A-Za-z_$][A-Za-z0-9_$.\/]*\.[A-Za-z_$<>][A-Za-z0-9_$<>]*\(/) {
				n[$1] += v; break
			}
	} END { for (c in t) printf "%s %.0f %.0f\n", c, t[c] / 1000, n[c] / 1000 }' "$1"
}

# java_check FOLDED LABEL: at least 90% of each worker thread's wait under a named Java method
java_check() {
	local c t n bad=0
	java_named "$1" >named.txt
	[ "$(wc -l <named.txt)" = 3 ] || { cat named.txt; fail "$2: not every Java thread is in the report"; }
	while read -r c t n; do
		echo "  $2 $c: waited $t ms, $n ms under a named Java method"
		awk -v t="$t" -v n="$n" 'BEGIN { exit !(t > 0 && n >= 0.9 * t) }' ||
			{ echo "  $2 $c: under 90%" >&2; bad=1; }
		figures="$figures $c $n/$t ms,"
	done <named.txt
	[ $bad = 0 ] || { grep -m2 '^alpha;' "$1" >&2; fail "$2: Java methods unnamed"; }
}

java_needs() {
	command -v java >/dev/null && command -v jcmd >/dev/null ||
		skip "no JDK (java and jcmd: openjdk-17-jdk-headless)"
}

# Java with -XX:+DumpPerfMapAtExit: the JVM writes its map as it exits,
# after every sample; offcpu reads it then (through the process's /tmp, kept
# open) and names the frames of the samples before. The map is removed
# before the report: the names are the recording's.
test_runtimes_java_at_exit() {
	local figures= pid
	java_needs
	record_truth -v -o java.data -- java -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit \
		"$ROOT/tests/workloads/JitWait.java" "$PWD/warm" >truth.txt
	pid=$(awk '$1 == "pid" { print $2 }' truth.txt)
	[ -n "$pid" ] || fail "no pid from the workload"
	rm -f "/tmp/perf-$pid.map"
	# read as the JVM exits: at its exit, or while it writes the map at it
	# (a sample of its exit asks for a look; a busy machine makes that likely)
	grep -q "perf maps: 1 read.* written after the samples they name" rec.err ||
		fail "the map written at the exit named no earlier sample"
	"$OFFCPU" report -i java.data --folded >java.folded 2>report.err || fail "report failed"
	! grep -q "read now" report.err || fail "the report read a map itself"
	java_check java.folded at-exit
	note "Java, -XX:+DumpPerfMapAtExit:${figures%,}"
}

# Java with a map written mid-run (jcmd PID Compiler.perfmap, as the waits go
# on): the blocks before it are named too, not only the later ones.
test_runtimes_java_jcmd() {
	local figures= pid i
	java_needs
	"$OFFCPU" record -v -o java.data -- java "$ROOT/tests/workloads/JitWait.java" "$PWD/warm" 4 \
		>truth.txt 2>rec.err &
	local rec=$!
	wait_for_line warm "^warm " 120 || { kill $rec; fail "the workload did not warm up"; }
	pid=$(awk '{ print $2 }' warm)
	sleep 0.3
	jcmd "$pid" Compiler.perfmap >jcmd.log 2>&1 || { cat jcmd.log; kill $rec; fail "jcmd failed"; }
	wait $rec || { cat rec.err; fail "record failed"; }
	rm -f "/tmp/perf-$pid.map"
	lost_time rec.err && fail "the recording lost time"
	grep -q "written after the samples they name" rec.err || fail "no frame named by the later map"
	"$OFFCPU" report -i java.data --folded >java.folded || fail "report failed"
	java_check java.folded jcmd
	note "Java, jcmd Compiler.perfmap mid-run:${figures%,}"
}

# A recording that named no JIT code of a JVM (it ended before the map was
# written): offcpu report reads /tmp/perf-PID.map itself, as perf does, and
# says so; a map another user owns, or a link, is not read, and said.
test_runtimes_java_report_map() {
	local figures= pid rec
	java_needs
	java "$ROOT/tests/workloads/JitWait.java" "$PWD/warm" 2 hold >truth.txt 2>java.err &
	local jv=$!
	wait_for_line warm "^warm " 120 || { kill $jv; fail "the workload did not warm up"; }
	pid=$(awk '{ print $2 }' warm)
	"$OFFCPU" record -v -d 1 -p "$pid" -o java.data >/dev/null 2>rec.err || { kill $jv; fail "record failed"; }
	jcmd "$pid" Compiler.perfmap >jcmd.log 2>&1 || { cat jcmd.log; kill $jv; fail "jcmd failed"; }
	touch warm.done
	wait $jv
	[ -s "/tmp/perf-$pid.map" ] || fail "the JVM wrote no map"
	"$OFFCPU" report -i java.data --folded >java.folded 2>report.err || fail "report failed"
	grep -q "named from /tmp/perf-PID.map read now.*/tmp/perf-$pid.map" report.err ||
		{ cat report.err; fail "the report does not say it read the map"; }
	java_check java.folded report-time
	# another user's map: not read, said
	chown nobody "/tmp/perf-$pid.map"
	"$OFFCPU" report -i java.data --folded >other.folded 2>other.err || fail "report failed"
	grep -q "perf-$pid.map: owned by uid" other.err || { cat other.err; fail "another user's map was not refused"; }
	! grep -q "read now" other.err || fail "another user's map was read"
	# a link: not followed
	mv "/tmp/perf-$pid.map" "$PWD/moved.map"
	chown root "$PWD/moved.map"
	ln -s "$PWD/moved.map" "/tmp/perf-$pid.map"
	"$OFFCPU" report -i java.data --folded >link.folded 2>link.err
	local rc=$?
	rm -f "/tmp/perf-$pid.map"
	[ $rc = 0 ] || fail "report failed"
	grep -q "perf-$pid.map: a symbolic link" link.err || { cat link.err; fail "a linked map was not refused"; }
	note "Java, a map read at report time:${figures%,}"
}
