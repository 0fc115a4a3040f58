# Integration tests of the user stack walk by unwind tables (root): stacks
# through code without frame pointers are complete, held to the workloads'
# own clocks and to perf's DWARF unwinding of the same run.
# shellcheck shell=bash

NOFP=$ROOT/$BUILD/tests/gt_nofp

# time_under_folded FOLDED COMM FN [any]: the value of COMM's stacks that hold
# FN and are complete (start at clone3 or _start, no mark frame); with "any",
# of every stack that holds FN, complete or not
time_under_folded() {
	awk -v c="$2" -v f="$3" -v any="${4:-}" '{
		v = $NF; s = substr($0, 1, length($0) - length(v) - 1); n = split(s, a, ";")
		if (a[1] != c) next
		if (any != "any" && ((a[2] != "__clone3" && a[2] != "clone3" && a[2] != "_start") ||
		    s ~ /\[(no unwind|unwind:)/)) next
		for (i = 2; i <= n; i++) if (a[i] == f || index(a[i], f ".") == 1) { t += v; break }
	} END { printf "%.0f\n", t }' "$1"
}

# folded_perf FILE: perf script's samples of FILE as "comm;outer;...;inner period",
# user frames only (as offcpu report --folded prints them, without the units)
folded_perf() {
	perf script -i "$1" -F comm,period,ip,sym --no-inline 2>/dev/null | awk '
		function flush() { if (n) { s = comm; for (i = n; i >= 1; i--) s = s ";" f[i]; print s, p }; n = 0 }
		/^[^ \t]/ || /^ +[^ 0-9a-f]/ { flush(); comm = $1; p = $NF; next }
		NF >= 2 && $1 ~ /^[0-9a-f]+$/ { sym = $2; sub(/\+0x[0-9a-f]+$/, "", sym); if (sym !~ /_\[k\]$/) f[++n] = sym; next }
		NF == 0 { flush() }
		END { flush() }'
}

# switch_folded FILE: perf's sched_switch samples of FILE, recorded with
# --switch-events, as "comm;outer;...;inner ns": user frames only, blocks in S
# or D (what offcpu records by default), each with the time from its
# switch-out to its thread's next switch-in
switch_folded() {
	perf script -i "$1" -F comm,tid,time,ip,sym,dso,trace --no-inline --show-switch-events --ns 2>/dev/null | awk '
		function ns(t) { sub(/:$/, "", t); split(t, x, "."); return x[1] * 1e9 + x[2] }
		function flush() {
			if (n && keep) { s = comm; for (i = n; i >= 1; i--) s = s ";" f[i]; stack[tid] = s; out[tid] = t }
			n = 0; keep = 0
		}
		/ PERF_RECORD_SWITCH IN/ {
			flush()
			if ($2 in stack) { printf "%s %.0f\n", stack[$2], ns($3) - out[$2]; delete stack[$2] }
			next
		}
		/ PERF_RECORD_SWITCH / { flush(); next }
		/ prev_state=/ { flush(); comm = $1; tid = $2; t = ns($3); keep = / prev_state=[SD] /; delete stack[tid]; next }
		/^\t/ { if ($NF !~ /kernel\.kallsyms|vmlinux/) { sub(/^\t *[0-9a-f]+ /, ""); sub(/ \([^(]*\)$/, ""); f[++n] = $0 }; next }
		NF == 0 { flush() }
		END { flush() }'
}

# near_truth WHO COMM NS GOT FN [NOTE]: GOT ns under FN against the NS COMM
# measured, said either way; fails (status 1) past 5%
near_truth() {
	local line="  $1: $2: blocked $(($3 / 1000000)) ms, $(($4 / 1000000)) ms under $5${6:-}"
	if within 5 "$4" "$3"; then
		echo "$line"
	else
		echo "$line: off by more than 5%" >&2
		return 1
	fi
}

# perf_holds_truth TRUTH FOLDED: perf's DWARF stacks (switch_folded) hold each
# measured thread's time under its function, in complete stacks (but nf-deep's,
# deeper than perf's copy), and 95% of the other nf-* threads' blocks are
# complete: the workload, perf and this parsing are a sound oracle
perf_holds_truth() {
	local comm tid ns calls fn got any bad=0 n nc t tc
	while read -r comm tid ns calls; do
		fn=nf_${comm#nf-}_block
		any=
		[ "$comm" != nf-deep ] || any=any
		got=$(time_under_folded "$2" "$comm" "$fn" $any)
		near_truth "perf (DWARF)" "$comm" "$ns" "$got" "$fn" "${any:+ (any stack)}" || bad=1
	done <"$1"
	read -r n nc t tc < <(awk '{
		v = $NF; split(substr($0, 1, length($0) - length(v) - 1), a, ";")
		if (a[1] !~ /^nf-/ || a[1] == "nf-deep") next
		n++; t += v
		if (a[2] == "__clone3" || a[2] == "clone3" || a[2] == "_start") { nc++; tc += v }
	} END { printf "%d %d %.0f %.0f\n", n, nc, t, tc }' "$2")
	echo "  perf (DWARF): nf-* threads but nf-deep: $nc of $n blocks complete, $((tc / 1000000)) of $((t / 1000000)) ms"
	[ "$n" -gt 0 ] && [ $((nc * 100)) -ge $((n * 95)) ] && [ $((tc / 1000 * 100)) -ge $((t / 1000 * 95)) ] ||
		{ echo "  perf (DWARF): fewer than 95% of the blocks complete" >&2; bad=1; }
	[ $bad = 0 ] || fail "perf's DWARF stacks do not hold to the ground truth: no oracle to compare with"
}

# The frame-pointer-less ground truth: each thread's time under its own
# function, in complete stacks, through offcpu report and perf script.
test_unwind_groundtruth_nofp() {
	local comm tid ns calls fn got bad=0 deep
	record_truth -o nf.data -- "$NOFP" -r truth.txt
	cat rec.err
	"$OFFCPU" report -i nf.data --folded >own.folded || fail "report failed"
	folded_perf nf.data >perf.folded
	while read -r comm tid ns calls; do
		fn=${comm#nf-}
		fn=nf_${fn}_block
		# offcpu report --folded counts microseconds
		got=$(time_under_folded own.folded "$comm" "$fn")
		near_truth "offcpu report" "$comm" "$ns" "$((got * 1000))" "$fn" || bad=1
		got=$(time_under_folded perf.folded "$comm" "$fn")
		near_truth "perf script" "$comm" "$ns" "$got" "$fn" || bad=1
	done <truth.txt
	[ $bad = 0 ] || { cat own.folded; fail "time under the blocking functions differs from ground truth"; }
	# the deep stack: all 65 recursive frames, past the copied window
	deep=$(grep '^nf-deep;' own.folded | grep nf_deep_block | head -n 1 | tr ';' '\n' | grep -c '^nf_deep_recurse')
	[ "$deep" -ge 65 ] || fail "nf-deep's stack holds $deep recursive frames, not 65"
	# and the recorder counts every walk complete
	grep -q "user stacks by unwind tables: 100.0% of the time ([0-9]* walks) complete" rec.err ||
		fail "not every walk complete: $(grep 'user stacks' rec.err || echo 'the summary has no line on user stacks')"
}

# The frame-pointer ground truth's condition variable wait is under its
# thread's function too (a frame-pointer walk stops in libc's futex wait).
test_unwind_groundtruth_cond() {
	local ns got
	record_truth -o gt.data -- "$GT" -r truth.txt
	"$OFFCPU" report -i gt.data --folded >own.folded || fail "report failed"
	ns=$(awk '$1 == "gt-cond" { print $3 }' truth.txt)
	got=$(time_under_folded own.folded gt-cond gt_cond_block)
	echo "  gt-cond: blocked $((ns / 1000000)) ms, $((got / 1000)) ms under gt_cond_block"
	within 5 "$((got * 1000))" "$ns" || { cat own.folded; fail "gt-cond's wait is not under gt_cond_block"; }
	# the frame-pointer walk, for comparison: none of it there
	record_truth --unwind=fp -o fp.data -- "$GT" -r truth.txt
	"$OFFCPU" report -i fp.data --folded >fp.folded || fail "report failed"
	got=$(grep -c 'gt_cond_block' fp.folded)
	note "with --unwind=fp, $got gt-cond stacks reach gt_cond_block"
}

# Debian's python3 sleeping in a Python function: its native stacks reach main.
test_unwind_python_reaches_main() {
	local py=/usr/bin/python3 all root
	[ -x $py ] || skip "no $py"
	printf 'import time\ndef sleeper():\n    for i in range(10):\n        time.sleep(0.1)\nsleeper()\n' >sleeper.py
	record_truth -o py.data -- $py sleeper.py
	cat rec.err
	"$OFFCPU" report -i py.data --folded >py.folded || fail "report failed"
	all=$(awk '/clock_nanosleep|pysleep|time_sleep/ { t += $NF } END { print t + 0 }' py.folded)
	root=$(awk '/clock_nanosleep|pysleep|time_sleep/ && /^python3;_start;.*Py_BytesMain;/ && !/\[(no unwind|unwind:)/ { t += $NF } END { print t + 0 }' py.folded)
	echo "  sleep time: $((all / 1000)) ms, $((root / 1000)) ms reaching main"
	[ "$all" -ge 900000 ] || { cat py.folded; fail "only $((all / 1000)) ms of sleep recorded"; }
	[ $((root * 100)) -ge $((all * 95)) ] || { cat py.folded; fail "less than 95% of the sleep reaches main"; }
}

# perf's DWARF unwinding as the oracle, on the same run. perf's stacks are
# first held to the workload's own clocks (with --switch-events, each block
# ends at its thread's switch-in): if they do not hold, there is no oracle.
# Then at least 99% of perf's complete user stacks of the nf-* threads are
# among offcpu's stacks of the same thread, compared as (dso, symbol+offset)
# frames; every difference is counted.
test_unwind_matches_perf_dwarf() {
	local pid perfpid offpid n differ cnt tid st
	mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
		skip "no tracefs for perf's sched_switch"
	"$NOFP" -w go -r truth.txt &
	pid=$!
	perf record -q -e sched:sched_switch --call-graph dwarf,16384 --switch-events -m 64M -p $pid -o perf.data 2>perf.err &
	perfpid=$!
	"$OFFCPU" record --off-cpu-thresh 0 -p $pid -o off.data 2>off.err &
	offpid=$!
	wait_for_line off.err recording 60 || { kill $pid $perfpid $offpid; cat off.err; fail "offcpu did not start"; }
	sleep 1 # perf has no ready signal
	touch go
	wait $pid || fail "the workload failed"
	wait $offpid || { cat off.err; fail "offcpu record failed"; }
	kill -INT $perfpid 2>/dev/null # it ends with its target
	wait $perfpid
	[ -s perf.data ] || { cat perf.err; fail "perf recorded nothing"; }
	cat off.err
	switch_folded perf.data >perf.folded
	perf_holds_truth truth.txt perf.folded
	# "tid f1|f2|...": user frames (dso:sym+off), innermost first, of the
	# nf-* threads. perf's DWARF unwinder stores a caller's frame as its
	# return address - 1 (the call), offcpu as the return address, the
	# kernel's own walk's way: the caller frames of offcpu's file are moved
	# back by one to compare.
	for f in perf off; do
		perf script -i $f.data -F comm,tid,ip,sym,symoff,dso$([ $f = perf ] && echo ,trace) --no-inline 2>/dev/null |
			perl -ne 'BEGIN { $adj = shift @ARGV }
				sub flush { print "$tid ", join("|", @f), "\n" if @f && $keep; @f = () }
				# perf: only what offcpu records by default, blocks in S or D
				if (!/^\t/ && /^\s*(\S+)\s+(\d+)\s*(.*)$/) { my ($comm, $rest) = ($1, $3);
					flush(); $tid = $2;
					$keep = $comm =~ /^nf-/ && ($rest eq "" || $rest =~ /prev_state=[SD] /); next }
				if (/^\s+[0-9a-f]+ (\S+) \((.*)\)$/) {
					my ($sym, $dso) = ($1, $2);
					next if $dso =~ /kernel\.kallsyms|vmlinux/;
					$dso =~ s|.*/||;
					$sym =~ s/\+0x([0-9a-f]+)$/sprintf("+0x%x", hex($1) - 1)/e if $adj && @f;
					push @f, "$dso:$sym"; next }
				flush() if /^\s*$/; END { flush() }' $([ $f = off ] && echo 1 || echo 0) >$f.stacks
	done
	# perf's complete stacks (the outermost frame is clone3 or _start;
	# perf's 16 KiB copy cuts nf-deep's short)
	awk '$2 ~ /:(__clone3|clone3|_start)\+0x[0-9a-f]+$/' perf.stacks >perf.complete
	sort -u off.stacks >off.sorted
	n=$(wc -l <perf.complete)
	[ "$n" -ge 30 ] || { head perf.stacks; fail "only $n complete perf stacks of the nf-* threads"; }
	# every sample of perf's, not only distinct stacks
	awk 'NR == FNR { have[$0] = 1; next } !($0 in have)' off.sorted perf.complete >differ.txt
	differ=$(wc -l <differ.txt)
	echo "  perf's complete stacks of the nf-* threads: $n compared ($(sort -u perf.complete | wc -l) distinct), $((n - differ)) matched, $differ not among offcpu's $(wc -l <off.sorted) distinct stacks"
	# the first differences: where offcpu's nearest stack of that thread parts from perf's
	sort differ.txt | uniq -c | sort -rn | head -n 4 | while read -r cnt tid st; do
		awk -v t="$tid" -v p="$st" -v c="$cnt" '
			$1 == t { m = split($2, b, "|"); for (i = 1; i <= np && i <= m && a[i] == b[i]; i++);
				if (i > best) { best = i; o = (i <= m ? b[i] : "(end)") } }
			BEGIN { np = split(p, a, "|"); best = 0 }
			END { printf "  perf only (%d x, thread %s, %d frames): ", c, t, np
				if (!best) print "offcpu has no stack of this thread"
				else printf "the same for %d frame(s), then perf %s, offcpu %s\n", best - 1,
					(best <= np ? a[best] : "(end)"), o }' off.sorted
	done
	[ $((differ * 100)) -le "$n" ] || fail "$differ of perf's $n complete stacks ($((differ * 100 / n))%) are not among offcpu's: more than 1% differ"
	note "perf DWARF oracle: $n complete stacks of the nf-* threads, $differ differ"
}

# --verify-stacks: every table walk unwound again by libdw from the same
# registers and stack copy; none differs, nearly all are checked.
test_unwind_verify_stacks() {
	local line n same prefix differ shorter failed
	record_truth --verify-stacks -o v.data -- "$NOFP" -r truth.txt
	cat rec.err
	line=$(grep "verified [0-9]* table walks against libdw" rec.err) || fail "no verification line"
	read -r n same prefix differ shorter failed < <(echo "$line" |
		sed -E 's/.*verified ([0-9]+) table walks.*: ([0-9]+) the same, ([0-9]+) the same as far as the copy reached, ([0-9]+) differed, ([0-9]+) ended before libdw.s, ([0-9]+) not unwound.*/\1 \2 \3 \4 \5 \6/')
	[ "$n" -ge 40 ] || fail "only $n walks verified"
	[ "$differ" -eq 0 ] && [ "$shorter" -eq 0 ] || fail "$differ walks differ from libdw's, $shorter ended first"
	[ $(((same + prefix) * 100)) -ge $((n * 95)) ] || fail "libdw unwound only $((same + prefix)) of $n"
	# the deep thread's walks go past the copy; libdw's stop at its end
	[ "$prefix" -ge 4 ] || fail "the deep stacks were not compared as far as the copy reached"
	note "verified $n table walks against libdw: $same the same, $prefix as far as the copy reached"
}

# A stack the tables did not complete says so: a program exec'd by the
# command (not held at its entry) blocks before its tables are loaded. Every
# user stack either reaches the outermost frame or ends in a mark frame,
# and the summary's shares add up to the marks seen.
test_unwind_incomplete_marked() {
	local bad
	record_truth -o w.data -- sh -c "exec $NOFP -r truth.txt"
	cat rec.err
	"$OFFCPU" report -i w.data --folded >w.folded || fail "report failed"
	bad=$(awk '{ s = $0; sub(/ [0-9]+$/, "", s); n = split(s, a, ";")
		if (n < 2) next
		# (the _start of a stripped program is [unknown], outside __libc_start_main)
		if (a[2] ~ /^(__clone3|clone3|_start)$/ || s ~ /\[(no unwind|unwind:)/ ||
		    (a[2] == "[unknown]" && a[3] ~ /^__libc_start_main/)) next
		print }' w.folded)
	[ -z "$bad" ] || { echo "$bad"; fail "stacks neither complete nor marked"; }
	if grep -q '\[no unwind table yet' w.folded; then
		grep -q "of the time ([0-9]* walks) process not loaded yet\|table being built" rec.err ||
			fail "marks in the file, none in the summary"
	fi
	note "$(grep -c '\[no unwind\|\[unwind:' w.folded) marked stacks of $(wc -l <w.folded)"
}
