# Integration tests of output rotation and the flight recorder (issue 5).
# shellcheck shell=bash

# per_tid_all FILES...: "tid ns" summed over several files, read by perf script
per_tid_all() {
	local f
	for f in "$@"; do
		perf script -i "$f" -F tid,period,event 2>>script.err
	done | awk 'NF == 3 && $3 == "offcpu-time:" { s[$1] += $2 } END { for (t in s) print t, s[t] }'
}

# --switch-output=TIME with --switch-max-files: at most that many files, each readable
test_switch_output_time() {
	"$OFFCPU" record -a --switch-output=1s --switch-max-files=2 -d 3.5 -o rot.data 2>rec.err ||
		{ cat rec.err; fail "record failed"; }
	cat rec.err
	ls -la
	n=$(ls rot.data.* | wc -l)
	[ "$n" -eq 2 ] || fail "$n files kept, expected 2"
	grep -Eq "2 of them on disk now \([1-9][0-9]* removed by --switch-max-files" rec.err ||
		fail "summary does not say files were removed"
	[ "$(grep -c 'offcpu: wrote rot.data\.' rec.err)" -ge 3 ] || fail "fewer than 3 files written"
	for f in rot.data.*; do
		[[ $f =~ ^rot\.data\.[0-9]{16}$ ]] || fail "bad name $f"
		perf script -i "$f" >/dev/null 2>err.txt || fail "perf script cannot read $f"
		# perf may warn of losses only when offcpu reported them
		[ ! -s err.txt ] || grep -q "this recording is incomplete" rec.err ||
			{ cat err.txt; fail "perf script warned on $f"; }
		"$OFFCPU" report -i "$f" >/dev/null || fail "offcpu report cannot read $f"
	done
}

# gt_slept REC: the ground-truth workload that offcpu record (pid REC) runs
# has ended one of its gt-sleep thread's sleeps (the thread switched out
# voluntarily twice: it ran again after its first sleep)
gt_slept() {
	local gt task n
	for gt in $(pgrep -P "$1" -x groundtruth); do
		for task in /proc/$gt/task/*; do
			[ "$(cat "$task/comm" 2>/dev/null)" = gt-sleep ] || continue
			n=$(sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' "$task/status" 2>/dev/null)
			[ "${n:-0}" -ge 2 ] && return 0
		done
	done
	return 1
}

# --switch-output=signal: SIGUSR2 splits the recording; the files add up to
# the truth, and a sleep that ended before the signal is in the first file
test_switch_output_signal() {
	local tries
	for tries in 1 2 3; do
		rm -f sig.data.*
		"$OFFCPU" record --switch-output=signal -o sig.data -- "$GT" -r truth.txt 2>rec.err &
		local rec=$!
		until gt_slept $rec; do
			kill -0 $rec 2>/dev/null || { cat rec.err; fail "the recording ended before gt-sleep's first sleep was seen to end"; }
			sleep 0.02
		done
		kill -USR2 $rec
		wait $rec || { cat rec.err; fail "record failed"; }
		lost_time rec.err || break
	done
	cat rec.err
	n=$(ls sig.data.* | wc -l)
	[ "$n" -eq 2 ] || fail "$n files, expected 2"
	per_tid_all sig.data.* >perf.tot
	check_threads truth.txt perf.tot 5
	# the 250 ms sleep that ended before the signal is in the first file, the rest in the second
	first=$(ls sig.data.* | head -1)
	n=$(perf script -i "$first" -F comm 2>/dev/null | grep -c gt-sleep)
	[ "$n" -ge 1 ] || fail "the first file has no gt-sleep sample"
}

# the flight recorder: armed system-wide, a snapshot on SIGUSR2 holds the
# workload's blocks with symbols; a second one only what is newer
test_flight_recorder() {
	local try
	for try in 1 2 3; do
		flight_recorder_once && return 0
		# only time the recorder itself reported lost calls for a second try
		# (a block summed instead of streamed keeps its time: lib.sh, lost_time)
		grep -q '\[time lost\]' rec.err || fail "flight recorder failed"
		echo "the recording reported losses (try $try)"
		rm -f fr.data.*
	done
	fail "three flight recordings in a row reported losses"
}

flight_recorder_once() {
	# buffers large enough to hold the workload on a busy machine
	"$OFFCPU" record --overwrite -a -m 1024 -o fr.data 2>rec.err &
	local rec=$!
	# (60 s: a bound for a hang, not for a busy machine)
	wait_for_line rec.err "armed" 60 || { kill $rec; cat rec.err; fail "not armed"; }
	"$GT" -r truth.txt
	kill -USR2 $rec
	wait_for_line rec.err "wrote fr.data" 60 || { kill $rec; cat rec.err; fail "no snapshot after SIGUSR2"; }
	sleep 0.5
	kill -USR2 $rec
	sleep 1
	kill -INT $rec
	wait $rec || { cat rec.err; fail "flight recorder failed"; }
	cat rec.err
	ls -la
	n=$(ls fr.data.* | wc -l)
	[ "$n" -eq 3 ] || fail "$n snapshots, expected 3 (two signals and the exit)"
	first=$(ls fr.data.* | head -1)
	second=$(ls fr.data.* | sed -n 2p)
	rm -f script.err
	per_tid_all "$first" >perf.tot
	if lost_time rec.err; then
		return 1
	fi
	[ ! -s script.err ] || { cat script.err; fail "perf script warned"; }
	check_threads truth.txt perf.tot 5
	perf report -i "$first" --stdio --no-children 2>/dev/null >report.txt
	grep -q gt_sleep_thread report.txt || fail "snapshot not symbolized"
	n=$(perf script -i "$second" -F comm 2>/dev/null | grep -c 'gt-')
	[ "$n" -eq 0 ] || fail "the second snapshot repeats $n samples of the first"
	perf script -i "$second" >/dev/null 2>err.txt || fail "perf cannot read the second snapshot"
}

# option combinations that cannot work are refused with exit 2
test_output_option_errors() {
	local rc
	"$OFFCPU" record --overwrite -o - -a 2>err.txt >/dev/null; rc=$?
	[ $rc -eq 2 ] || fail "--overwrite with -o -: exit $rc"
	"$OFFCPU" record --switch-output=bogus -a 2>err.txt; rc=$?
	[ $rc -eq 2 ] && grep -q "invalid --switch-output" err.txt || fail "bad --switch-output: exit $rc"
	"$OFFCPU" record --switch-max-files=3 -a 2>err.txt; rc=$?
	[ $rc -eq 2 ] || fail "--switch-max-files alone: exit $rc"
	"$OFFCPU" record --overwrite --switch-output=10M -a 2>err.txt; rc=$?
	[ $rc -eq 2 ] || fail "--overwrite with a size: exit $rc"
}

# --threads: perf's directory format, written by several threads; perf 6.1 and
# offcpu report give the same totals as a single file
test_threads_directory() {
	# with a spinning process beside it: the ground truth alone runs so
	# little on the CPU that 499 Hz can miss it altogether
	record_truth --threads=2 --off-cpu-thresh 0 -F 499 -o dir.data -- \
		sh -c "'$GT' -r truth.txt & '$SPIN' 0.3 >/dev/null; wait"
	cat rec.err
	[ -d dir.data ] && [ -f dir.data/data ] && [ -f dir.data/data.0 ] && [ -f dir.data/data.1 ] ||
		{ ls -laR; fail "not a perf directory"; }
	[ "$(stat -c %a dir.data)" = 700 ] || fail "directory mode $(stat -c %a dir.data)"
	[ -s dir.data/data.0 ] && [ -s dir.data/data.1 ] || { ls -la dir.data; fail "a writer thread wrote nothing"; }
	perf report -i dir.data --header-only 2>/dev/null | grep -q "directory data version : 1" || fail "no DIR_FORMAT"
	per_tid_perf dir.data >perf.tot
	[ ! -s dir.data.script.err ] || { cat dir.data.script.err; fail "perf script warned"; }
	check_threads truth.txt perf.tot 5
	per_tid_offcpu dir.data >own.tot
	check_threads truth.txt own.tot 5
	perf report -i dir.data --stdio --no-children 2>/dev/null | grep -q "of event 'cpu-clock'" || fail "no cpu-clock in the directory"
	local rc
	"$OFFCPU" record --threads -o - -a >/dev/null 2>err.txt; rc=$?
	[ $rc -eq 2 ] || fail "--threads with -o -: exit $rc"
}

# wait_tmp GLOB: until offcpu's temporary exists (the recording has begun)
wait_tmp() {
	local i
	for ((i = 0; i < 200; i++)); do
		compgen -G "$1" >/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# the output directory removed, or moved, while the recording runs: removed
# (or the temporary removed), the error says so and that the data is lost,
# exit 1; moved, the file is committed where the directory is now, and the
# summary and a warning name that place
test_output_directory_removed_or_moved() {
	local rc here
	here=$(pwd -P)
	# removed with everything in it
	mkdir out
	"$OFFCPU" record -d 3 -o out/x.data -- sleep 10 2>rec.err &
	local rec=$!
	wait_tmp 'out/x.data.tmp.*' || fail "no temporary appeared"
	rm -rf out
	wait $rec
	rc=$?
	cat rec.err
	[ $rc -eq 1 ] || fail "directory removed: exit $rc"
	grep -q "error: cannot write out/x.data: its directory out was removed while the file was being written.*: the data is lost" rec.err ||
		fail "directory removed: no clear message"
	! grep -q "replaced by someone else\|wrote out/x.data" rec.err || fail "directory removed: a misleading message"
	# the temporary alone removed
	mkdir out
	"$OFFCPU" record -d 3 -o out/x.data -- sleep 10 2>rec.err &
	rec=$!
	wait_tmp 'out/x.data.tmp.*' || fail "no temporary appeared"
	rm -f out/x.data.tmp.*
	wait $rec
	rc=$?
	cat rec.err
	[ $rc -eq 1 ] || fail "temporary removed: exit $rc"
	grep -q "error: cannot write out/x.data: someone removed its temporary out/x.data.tmp.[a-z0-9]* while it was being written: the data is lost" rec.err ||
		fail "temporary removed: no clear message"
	[ -z "$(ls out)" ] || fail "temporary removed: left $(ls out)"
	# moved: the file is where the directory went, and named there
	"$OFFCPU" record -d 3 -o out/x.data -- sleep 10 2>rec.err &
	rec=$!
	wait_tmp 'out/x.data.tmp.*' || fail "no temporary appeared"
	mv out moved
	wait $rec || { cat rec.err; fail "directory moved: record failed"; }
	cat rec.err
	[ -f moved/x.data ] && [ ! -e out ] || fail "directory moved: no moved/x.data ($(ls -R))"
	[ -z "$(ls moved | grep tmp)" ] || fail "directory moved: temporary left: $(ls moved)"
	grep -q "warning: the directory out was moved to $here/moved during the recording: the recording is $here/moved/x.data" rec.err ||
		fail "directory moved: no warning naming the new place"
	grep -q "^offcpu: wrote $here/moved/x.data (" rec.err || fail "directory moved: the summary names another place"
	"$OFFCPU" report -i moved/x.data | grep -q sleep || fail "directory moved: the file cannot be read"
	# --threads: the recording directory goes along with its directory
	mkdir out2
	"$OFFCPU" record --threads -d 3 -o out2/t.dir -- sleep 10 2>rec.err &
	rec=$!
	wait_tmp 'out2/t.dir.tmp.*' || fail "no temporary directory appeared"
	mv out2 moved2
	wait $rec || { cat rec.err; fail "--threads, directory moved: record failed"; }
	[ -f moved2/t.dir/data ] || fail "--threads, directory moved: no moved2/t.dir/data"
	grep -q "^offcpu: wrote $here/moved2/t.dir (" rec.err || fail "--threads: the summary names another place"
	# --switch-output: the files after the move go where the directory went
	mkdir out3
	"$OFFCPU" record --switch-output=1s -d 3.5 -o out3/r.data -- sleep 10 2>rec.err &
	rec=$!
	sleep 1.5
	mv out3 moved3
	wait $rec || { cat rec.err; fail "--switch-output, directory moved: record failed"; }
	cat rec.err
	[ ! -e out3 ] || fail "--switch-output, directory moved: files at the old place: $(ls out3)"
	[ "$(ls moved3 | grep -c '^r\.data\.[0-9]*$')" -ge 3 ] ||
		fail "--switch-output, directory moved: $(ls moved3 | tr '\n' ' ')in moved3"
	! ls moved3 | grep -q tmp || fail "--switch-output, directory moved: temporaries left"
}

# --switch-output=SIZE below what a file starts with (-a: every process's
# mappings) wrote a file at every turn of the loop (121 files in 2 s): the
# size is raised to twice that, said
test_switch_output_size_below_start() {
	local files
	"$OFFCPU" record -a --switch-output=8K -d 2 -o tiny.data 2>rec.err || { cat rec.err; fail "record failed"; }
	files=$(ls tiny.data.* | wc -l)
	grep -q "switch-output=8.0 KiB: each file starts with .* raised to" rec.err ||
		fail "the raise of the size is not said"
	# each file holds at least what it starts with of the recording, by
	# construction: a few in 2 s, never one a loop
	[ "$files" -le 20 ] || fail "$files files in 2 s"
	for f in tiny.data.*; do perf script -i "$f" >/dev/null 2>&1 || fail "perf script cannot read $f"; done
	note "$files files in 2 s: $(sed -nE 's/.*(raised to [^,]*),.*/\1/p' rec.err | head -1)"
}
