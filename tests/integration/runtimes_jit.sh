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
