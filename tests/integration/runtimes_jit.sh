# Integration tests of frames of runtimes with their own code (root): Go,
# whose ABI keeps frame pointers, walked by them as its method; JIT code
# (node), walked by checked frame-pointer steps and named from the perf map
# the process writes. Held to the workloads' own clocks.
# shellcheck shell=bash

# folded_time FOLDED COMM FN: µs of COMM's stacks in FOLDED that hold frame FN
folded_time() {
	awk -v c="$2" -v f="$3" '{
		v = $NF; s = substr($0, 1, length($0) - length(v) - 1); n = split(s, a, ";")
		if (a[1] != c) next
		for (i = 2; i <= n; i++) if (a[i] == f) { t += v; break }
	} END { printf "%.0f\n", t }' "$1"
}

# A Go program: its stacks complete (no mark frame, from runtime.goexit,
# runtime.mstart or runtime.rt0_go), its time under its functions within 5%
# of its own clocks.
test_runtimes_go() {
	command -v go >/dev/null || skip "go is not installed (golang-go)"
	mkdir -p gocache gopath
	GOCACHE=$PWD/gocache GOPATH=$PWD/gopath GOFLAGS= GOPROXY=off GO111MODULE=off \
		go build -o gowait "$ROOT/tests/workloads/gowait.go" >build.log 2>&1 ||
		{ cat build.log; fail "go build failed"; }
	record_truth -v -o go.data -- ./gowait >truth.txt
	"$OFFCPU" report -i go.data --folded >go.folded || fail "report failed"
	grep -q '^gowait;' go.folded || fail "no stack of the Go program"
	! grep '^gowait;.*\[\(no unwind\|unwind:\)' go.folded || fail "a Go stack carries a mark frame"
	# (or in runtime.morestack, a stack growth on the thread's own stack: the
	# goroutine's frames are found through its g, not by frame pointers)
	! grep -v '^gowait;runtime\.\(goexit\|mstart\|rt0_go\|morestack\)' go.folded | grep '^gowait;' ||
		fail "a Go stack does not start where a goroutine or thread starts"
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
	note "Go: no mark frame;${figures%,}; $(sed -n 's/^offcpu: user stacks by unwind tables: //p' rec.err)"
}

# node --perf-basic-prof: each call's time under its JS function, named by
# offcpu's "[jit] NAME" records (the perf map itself removed before perf
# reads the file), at least 90% of what the functions measured.
test_runtimes_node_jit() {
	command -v node >/dev/null || skip "node is not installed (nodejs)"
	record_truth -v -o node.data -- node --perf-basic-prof --always-sparkplug \
		"$ROOT/tests/workloads/jitwait.js" 3 >truth.txt
	local pid fn ns got bad=0 figures=
	pid=$(awk '$1 == "pid" { print $2 }' truth.txt)
	[ -n "$pid" ] || fail "no pid from the workload"
	# its perf map is gone: names can only come from the recording
	rm -f "/tmp/perf-$pid.map"
	grep -q "perf maps: [1-9]" rec.err || fail "no perf map read"
	perf script -i node.data -F comm,tid,period,ip,dso 2>/dev/null >node.script ||
		fail "perf script failed"
	while read -r fn ns; do
		[ "$fn" != pid ] || continue
		# the samples of the process's main thread with a frame named "[jit] JS:...FN ..."
		got=$(awk -v tid="$pid" -v f="$fn" '
			/^[^ \t]/ { if (hit) t += p; hit = 0; keep = ($2 == tid); p = $3; next }
			keep && index($0, "([jit] JS:") && index($0, f " ") { hit = 1 }
			END { if (hit) t += p; printf "%.0f\n", t }' node.script)
		if awk -v g="$got" -v n="$ns" 'BEGIN { exit !(g >= 0.9 * n && g <= 1.05 * n) }'; then
			echo "  $fn: blocked $((ns / 1000000)) ms, $((got / 1000000)) ms under its JS frame"
		else
			echo "  $fn: blocked $((ns / 1000000)) ms, $((got / 1000000)) ms under its JS frame: not 90-105%" >&2
			bad=1
		fi
		figures="$figures $fn $((got / 1000000))/$((ns / 1000000)) ms,"
	done <truth.txt
	[ $bad = 0 ] || { grep -m3 "\[jit\]" node.script >&2; fail "JS functions' times are not under their names"; }
	# the report's own names, once offcpu report reads "[jit] NAME" mappings
	figures=${figures%,}
	if "$OFFCPU" report -i node.data --folded 2>/dev/null | grep -q "blockChildAlpha"; then
		figures="$figures; offcpu report names them too"
	fi
	note "node:$figures; $(sed -n 's/^offcpu: user stacks by unwind tables: //p' rec.err)"
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
