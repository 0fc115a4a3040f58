# shellcheck shell=bash
# offcpu report --perfetto: a Perfetto trace of the wakers workload
# (tests/workloads/wakers.c), read back with protoc --decode_raw (Debian's
# protobuf-compiler) and held to the workload's own clocks: every thread
# named, a slice per streamed block, the wakeup arrows joined, a block's
# slice as long as the workload measured it.

WAKERS=$ROOT/$BUILD/tests/wakers

need_protoc() {
	command -v protoc >/dev/null || skip "no protoc (apt-get install protobuf-compiler)"
}

# decode FILE: the trace as protoc --decode_raw prints it, to FILE.txt, then
# one line per track event to FILE.ev: TYPE TRACK TS FLOW TFLOW "NAME", and one
# per thread track to FILE.th: UUID TID "NAME"
decode() {
	protoc --decode_raw <"$1" >"$1.txt" || fail "protoc --decode_raw cannot decode $1"
	awk '
		/^1 \{/ { ts = ""; type = ""; track = ""; name = ""; flow = "-"; tflow = "-"; ev = 0; next }
		/^  8: / { ts = $2; next }
		/^  11 \{/ { ev = 1; next }
		ev && /^    9: / { type = $2; next }
		ev && /^    11: / { track = $2; next }
		ev && /^    23: / { name = substr($0, index($0, "\"")); next }
		ev && /^    47: / { flow = $2; next }
		ev && /^    48: / { tflow = $2; next }
		/^}/ { if (ev) print type, track, ts, flow, tflow, name; ev = 0 }
	' "$1.txt" >"$1.ev"
	awk '
		/^  60 \{/ { d = 1; uuid = ""; th = 0; next }
		d && /^    1: / { uuid = $2; next }
		d && /^    4 \{/ { th = 1; next }
		th && /^      2: / { tid = $2; next }
		th && /^      5: / { name = substr($0, index($0, "\"")); next }
		/^}/ { if (th) print uuid, tid, name; d = 0; th = 0; name = "" }
	' "$1.txt" >"$1.th"
}

# the wakers workload with every block its own sample, its trace decoded
test_timeline_perfetto_wakers() {
	need_protoc
	"$OFFCPU" record --wakers --state SDR --off-cpu-thresh 0 -o t.data -- "$WAKERS" -r truth.txt 2>rec.err ||
		fail "record failed"
	cat truth.txt
	"$OFFCPU" report -i t.data --perfetto t.pftrace -v 2>rep.err || { cat rep.err; fail "report --perfetto failed"; }
	cat rep.err
	! grep -q 'summed samples' rep.err || fail "summed samples in a recording with --off-cpu-thresh 0"
	decode t.pftrace
	ls -la t.pftrace
	cat t.pftrace.th
	# every thread of the workload named in a thread descriptor
	for name in wakee waker_alpha waker_bravo waker_charlie spin_a spin_b runq_sleeper; do
		grep -q " \"$name\"\$" t.pftrace.th || fail "no thread track named $name"
	done
	grep -q '^    13: 1$\|^  13: 1$' t.pftrace.txt || fail "the first packet does not clear the incremental state"
	# a slice per streamed block
	samples=$(perf script -i t.data -F event 2>/dev/null | grep -c 'offcpu-time:')
	begins=$(awk '$1 == 1' t.pftrace.ev | wc -l)
	ends=$(awk '$1 == 2' t.pftrace.ev | wc -l)
	note "$samples offcpu-time samples, $begins slices, $(stat -c %s t.pftrace) bytes"
	[ "$samples" -gt 100 ] || fail "only $samples offcpu-time samples"
	[ "$begins" -ge "$samples" ] || fail "$begins slices for $samples offcpu-time samples"
	[ "$begins" = "$ends" ] || fail "$begins slice begins, $ends ends"
	# no slice begins before the end of its thread's previous one
	awk '$1 == 1 { if ($3 < e[$2]) { print; bad = 1 } } $1 == 2 { e[$2] = $3 } END { exit bad }' t.pftrace.ev ||
		fail "slices of a thread overlap"
	# the arrows: each instant's flow id ends on one slice end, and each waker woke the wakee 3 times
	awk '$1 == 3 && $4 != "-" { print $4 }' t.pftrace.ev | sort >flows.out
	awk '$1 == 2 && $5 != "-" { print $5 }' t.pftrace.ev | sort >flows.in
	[ -s flows.out ] || fail "no wakeup arrows"
	cmp -s flows.out flows.in || { diff flows.out flows.in | head; fail "arrow tails and heads do not match"; }
	[ "$(sort -u flows.out | wc -l)" = "$(wc -l <flows.out)" ] || fail "a flow id is used twice"
	for name in waker_alpha waker_bravo waker_charlie; do
		uuid=$(awk -v n="\"$name\"" '$3 == n { print $1; exit }' t.pftrace.th)
		n=$(awk -v u="$uuid" '$1 == 3 && ($2 "") == (u "") && $6 == "\"wakes" && $7 == "wakee"' t.pftrace.ev | wc -l)
		[ "$n" = 3 ] || fail "$name wakes the wakee $n times in the trace, 3 in the workload"
	done
	# a slice as long as the workload measured: the vfork parent's D wait (and its run queue part)
	want=$(awk '$1 == "vfork_d" { print $3 }' truth.txt)
	got=$(awk '$1 == 1 { b[$2] = $3; n[$2] = substr($0, index($0, "\"")) }
		$1 == 2 && n[$2] ~ /^"(D|runqueue) wakee_vfork"$/ { s += $3 - b[$2] } END { print s + 0 }' t.pftrace.ev)
	note "vfork_d: slices $got ns, the workload $want ns"
	within 5 "$got" "$want" || fail "the vfork wait's slices last $got ns, the workload measured $want ns"
	# each of waker_bravo's wakeups ended a wait of ~200 ms: the slices its arrows end on
	want=$(awk '$1 == "by_bravo" { print $3 }' truth.txt)
	uuid=$(awk '$3 == "\"waker_bravo\"" { print $1; exit }' t.pftrace.th)
	got=$(awk -v u="$uuid" '$1 == 3 && ($2 "") == (u "") { f[$4] = 1 } $1 == 1 { b[$2] = $3 }
		$1 == 2 && ($5 in f) { s += $3 - b[$2] } END { print s + 0 }' t.pftrace.ev)
	note "by_bravo: slices $got ns, the workload $want ns"
	within 5 "$got" "$want" || fail "waker_bravo's woken slices last $got ns, the workload measured $want ns"
	# the stack, state and waker go with the block
	grep -q '"wakee_pipe_b"' t.pftrace.txt || fail "no frame wakee_pipe_b in the callstacks"
	grep -q '"waker_bravo <- \[timer\]"' t.pftrace.txt || fail "no waker chain annotation"
	# every field with the number and type Perfetto gives it: protoc prints a
	# field it does not know, or of another wire type, by its number
	protoc --proto_path="$ROOT/tests/integration" --decode=perfetto.protos.Trace perfetto_subset.proto \
		<t.pftrace >typed.txt 2>typed.err || { cat typed.err; fail "protoc cannot decode the trace as Perfetto's Trace"; }
	! grep -nE '^ *[0-9]+(:| \{)' typed.txt | head -5 | grep . ||
		fail "fields Perfetto's protos do not have (by number above)"
	grep -q 'type: TYPE_SLICE_BEGIN' typed.txt && grep -q 'flow_ids: ' typed.txt &&
		grep -q 'terminating_flow_ids: ' typed.txt && grep -q 'function_name: "wakee_pipe_b"' typed.txt ||
		fail "the typed decoding lacks slices, flows or callstacks"
	sched_check typed.txt t.pftrace.ev t.pftrace.th
}

# sched_check TYPED EV TH: Perfetto's own thread states, the sched_switch and
# sched_waking events its importer turns into its thread_state table, as
# Perfetto would read them: each thread's time between a switch-out and its
# next switch-in is what its slices hold, and the wakee's waits that
# waker_bravo ended are woken by waker_bravo
sched_check() {
	awk '
		/^    event \{/ { ts = ""; pid = ""; kind = ""; prev = ""; next_ = ""; st = ""; wk = ""; next }
		/^      timestamp: / { ts = $2; next }
		/^      pid: / { pid = $2; next }
		/^      sched_switch \{/ { kind = "SW"; next }
		/^      sched_waking \{/ { kind = "WK"; next }
		/^        prev_pid: / { prev = $2; next }
		/^        next_pid: / { next_ = $2; next }
		/^        prev_state: / { st = $2; next }
		/^        pid: / { wk = $2; next }
		/^    \}/ { if (kind == "SW") print "SW", ts, prev, next_, st; else if (kind == "WK") print "WK", ts, pid, wk }
	' "$1" | sort -k2,2n >sched.txt
	[ -s sched.txt ] || fail "no sched_switch or sched_waking events: no thread states for Perfetto"
	grep -q '^WK ' sched.txt || fail "no sched_waking events"
	# off-CPU per thread from the switches, and from the slices
	awk '$1 == "SW" && $3 != 0 { out[$3] = $2 } $1 == "SW" && $4 != 0 && ($4 in out) { s[$4] += $2 - out[$4]; delete out[$4] }
		END { for (t in s) print t, s[t] }' sched.txt | sort >sched.off
	awk 'NR == FNR { tid[$1] = $2; next } $1 == 1 { b[$2] = $3 } $1 == 2 { s[tid[$2]] += $3 - b[$2] }
		END { for (t in s) if (t != "") print t, s[t] }' "$3" "$2" | sort >slices.off
	join sched.off slices.off | awk '{ d = $2 - $3; if (d < 0) d = -d; if (d > $3 / 1000 + 1000) { print "tid " $1 ": " $2 " ns between switches, " $3 " in slices"; bad = 1 } } END { exit bad }' ||
		fail "the thread states do not hold the slices' time"
	[ "$(join sched.off slices.off | wc -l)" -ge 7 ] || fail "thread states for only $(join sched.off slices.off | wc -l) threads"
	bravo=$(awk '$1 == "by_bravo" { print $2 }' truth.txt)
	wtid=$(awk '$3 == "\"waker_bravo\"" { print $2; exit }' "$3")
	n=$(awk -v w="$wtid" -v t="$bravo" '$1 == "WK" && $3 == w && $4 == t' sched.txt | wc -l)
	[ "$n" = 3 ] || fail "waker_bravo wakes the wakee $n times in the thread states, 3 in the workload"
	note "$(wc -l <sched.txt) sched events, thread states of $(wc -l <sched.off) threads"
}

# summed short blocks: counters, not slices, and a line that says so; to stdout
test_timeline_perfetto_summed() {
	need_protoc
	"$OFFCPU" record -o s.data -- "$WAKERS" -s 0.2 -r truth.txt 2>rec.err || fail "record failed"
	"$OFFCPU" report -i s.data --perfetto - >s.pftrace 2>rep.err || { cat rep.err; fail "report --perfetto - failed"; }
	cat rep.err
	grep -q 'summed samples .* --off-cpu-thresh 0' rep.err || fail "no line about the summed samples"
	decode s.pftrace
	grep -q '"off-CPU summed, ns"' s.pftrace.txt || fail "no summed counter track"
	# no thread states where short blocks were summed: when the threads ran is not known
	grep -q 'no thread states' rep.err || fail "no line saying there are no thread states"
	! grep -q '^  1 {' s.pftrace.txt || fail "ftrace events in a trace of summed blocks"
	[ "$(awk '$1 == 4' s.pftrace.ev | wc -l)" -gt 0 ] || fail "no counter values"
	# --tid: only that thread's blocks (and its wakers' instants)
	tid=$(awk '$1 == "by_alpha" { print $2 }' truth.txt)
	"$OFFCPU" report -i s.data --tid "$tid" --perfetto f.pftrace 2>/dev/null || fail "--tid --perfetto failed"
	decode f.pftrace
	awk '$1 == 1 || $1 == 2 || $1 == 4 { print $2 }' f.pftrace.ev | sort -u >tracks
	[ "$(wc -l <tracks)" -le 2 ] || fail "--tid $tid: events on $(wc -l <tracks) tracks"
}

# the file is made as --svg's: a planted symlink refused, errors clear, --help and stdout
test_timeline_perfetto_refusals() {
	"$OFFCPU" record -o r.data -- sleep 0.1 2>rec.err || fail "record failed"
	echo keep >victim
	ln -s victim out.pftrace
	"$OFFCPU" report -i r.data --perfetto out.pftrace 2>err.txt && fail "--perfetto followed a symlink"
	cat err.txt
	[ -L out.pftrace ] && [ "$(cat victim)" = keep ] || fail "the symlink or its target changed"
	"$OFFCPU" report -i r.data --perfetto nodir/x.pftrace 2>err.txt && fail "--perfetto into a missing directory worked"
	grep -q 'nodir' err.txt || { cat err.txt; fail "the error does not name the path"; }
	"$OFFCPU" report -i r.data --perfetto /dev/full 2>err.txt && fail "--perfetto to a full device worked"
	cat err.txt
	grep -q 'cannot write /dev/full: No space left' err.txt || fail "no error for a failed write"
	! grep -q 'cannot read' err.txt || fail "a failed write blamed on the input"
	"$OFFCPU" report -i missing.data --perfetto m.pftrace 2>err.txt && fail "a missing input worked"
	! ls m.pftrace* .m.pftrace* 2>/dev/null || fail "a failed report left its trace"
	"$OFFCPU" report -i r.data --perfetto - --folded >/dev/null 2>err.txt && fail "two outputs on stdout"
	grep -q 'standard output' err.txt || fail "no error for two outputs on stdout"
	"$OFFCPU" report -i r.data --perfetto ok.pftrace || fail "--perfetto failed"
	[ -s ok.pftrace ] || fail "empty trace"
	"$OFFCPU" report -i r.data --perfetto ok.pftrace || fail "--perfetto did not replace its own file"
	"$OFFCPU" report --help | grep -q -- '--perfetto=FILE' || fail "--help does not list --perfetto"
}
