# Integration tests of recordings nothing can take away (issue 21): one
# killed with SIGKILL is readable up to its last round, by offcpu report
# (with a warning that says what was not read) and by perf; a --threads
# directory whose data holds no record reads; a flight recorder survives a
# full disk.
# shellcheck shell=bash

LOOP='while :; do sleep 0.5; done'

# killed_recording SECONDS ARGS...: offcpu record ARGS -- sh -c "$LOOP" in the
# background (stderr in rec.err), SIGKILLed SECONDS after its command began
# to sleep; then the command, left running, is ended by its pid.
killed_recording() {
	local secs=$1 rec sh i
	shift
	"$OFFCPU" record "$@" -- sh -c "$LOOP" 2>rec.err &
	rec=$!
	# (60 s: a bound for a hang, not for a busy machine)
	for ((i = 0; i < 1200; i++)); do
		sh=$(pgrep -P "$rec" | head -1)
		[ -n "$sh" ] && pgrep -P "$sh" -x sleep >/dev/null && break
		sleep 0.05
	done
	[ $i -lt 1200 ] || { kill -9 "$rec"; fail "the command did not start"; }
	start=$(date +%s.%N)
	sleep "$secs"
	killed_after "$rec" "$sh"
}

# killed_after REC SH: SIGKILL offcpu (REC), then end its command (SH)
killed_after() {
	kill -9 "$1"
	wait "$1" 2>/dev/null
	kill "$2" 2>/dev/null
	echo "killed after $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }') s"
}

# sleep_ms REPORT: the ms off-CPU of the sleep processes in offcpu report -s comm
sleep_ms() {
	awk '$3 == "sleep" { s += $1 } END { printf "%d", s }' "$1"
}

# perf_sleep_ms INPUT: the same, read by perf script
perf_sleep_ms() {
	perf script -i "$1" -F comm,period 2>perf.err | awk '$1 == "sleep" { s += $2 } END { printf "%d", s / 1e6 }'
}

# check_unfinished INPUT MIN_MS: offcpu report and perf read the recording that
# never finished, offcpu report says so, and its sleeps add up to MIN_MS
check_unfinished() {
	local in=$1 min=$2 ms pms
	"$OFFCPU" report -i "$in" -s comm >own.txt 2>own.err || { cat own.err; fail "offcpu report of $in failed"; }
	cat own.err own.txt
	grep -q "did not finish" own.err || fail "no warning that the recording did not finish"
	grep -q "read [0-9]* records" own.err || fail "the warning does not say what was read"
	ms=$(sleep_ms own.txt)
	[ "$ms" -ge "$min" ] || fail "$in holds $ms ms of sleeps, not the $min ms before the kill"
	perf report -i "$in" --stdio >perf.txt 2>&1 || { tail perf.txt; fail "perf report of $in failed"; }
	grep -q "of event 'offcpu-time'" perf.txt || { head -20 perf.txt; fail "perf report: no offcpu-time event in $in"; }
	pms=$(perf_sleep_ms "$in")
	[ "$pms" -ge "$min" ] || { cat perf.err; fail "perf script reads $pms ms of sleeps in $in, not $min"; }
	echo "$in: $ms ms of sleeps (perf script: $pms)"
	figures="$figures $ms/$pms ms"
}

# SIGKILL 2.2 s in: the temporary file left reads up to its last round
test_unfinished_killed_file() {
	figures=
	killed_recording 2.2 -o k.data
	[ ! -e k.data ] || fail "k.data exists: the recording was finished"
	f=$(ls -d k.data.tmp.* 2>/dev/null)
	[ "$(echo "$f" | wc -w)" -eq 1 ] || { ls -la; fail "not one temporary left: $f"; }
	check_unfinished "$f" 1000
	# asked for by its final name, offcpu report names the temporary
	"$OFFCPU" report -i k.data 2>err.txt && fail "report of a k.data that is not there succeeded"
	grep -q "$f is a recording of that name that has not finished" err.txt || { cat err.txt; fail "the temporary not named"; }
	note "killed at 2.2 s, read:$figures (offcpu report/perf script)"
}

# the same for a --threads directory: data and headerless data.N streams
test_unfinished_killed_threads() {
	figures=
	killed_recording 2.2 --threads -o kd.data
	d=$(ls -d kd.data.tmp.* 2>/dev/null)
	[ "$(echo "$d" | wc -w)" -eq 1 ] && [ -d "$d" ] || { ls -la; fail "not one temporary directory left: $d"; }
	ls -la "$d"
	check_unfinished "$d" 1000
	note "killed at 2.2 s, read:$figures (offcpu report/perf script)"
}

# --switch-output=1s: the finished files and the one being written when killed
test_unfinished_killed_switch_output() {
	local rec sh i ms total=0
	"$OFFCPU" record --switch-output=1s -o s.data -- sh -c "$LOOP" 2>rec.err &
	rec=$!
	start=$(date +%s.%N)
	# two files written: the third is under way; killed before it is a second old
	wait_for_line rec.err "wrote s.data.*" 60 || { kill -9 $rec; fail "no file written"; }
	for ((i = 0; i < 100; i++)); do
		[ "$(grep -c 'wrote s.data' rec.err)" -ge 2 ] && break
		sleep 0.05
	done
	sleep 0.8
	sh=$(pgrep -P "$rec" | head -1)
	killed_after "$rec" "$sh"
	cat rec.err
	ls -la
	f=$(ls -d s.data.*.tmp.* 2>/dev/null)
	[ "$(echo "$f" | wc -w)" -eq 1 ] || fail "not one temporary left: $f"
	"$OFFCPU" report -i "$f" -s comm >own.txt 2>own.err || { cat own.err; fail "offcpu report of $f failed"; }
	cat own.err own.txt
	grep -q "did not finish" own.err || fail "no warning that $f did not finish"
	grep -q "offcpu-time: .* in [1-9][0-9]* samples" own.txt || fail "$f holds no sample of its 0.8 s"
	perf report -i "$f" --stdio 2>&1 | grep -q "of event 'offcpu-time'" || fail "perf report cannot read $f"
	for g in s.data.*; do
		[ "$g" = "$f" ] || ! "$OFFCPU" report -i "$g" -s comm 2>&1 | grep -q "did not finish" ||
			fail "$g is finished, and read as if it were not"
		ms=$(perf_sleep_ms "$g")
		total=$((total + ms))
	done
	[ "$total" -ge 1000 ] || fail "the files hold $total ms of sleeps, not a second"
	note "$(ls s.data.* | wc -l) files, $total ms of sleeps, the last one read unfinished"
}

# --threads with a quiet command: data holds no sample, the data.N streams do
test_unfinished_threads_quiet_main() {
	"$OFFCPU" record -q --threads -o q.data -- sleep 2 || fail "record failed"
	ls -la q.data
	"$OFFCPU" report -i q.data -s comm >own.txt 2>own.err || { cat own.err; fail "offcpu report failed"; }
	cat own.txt
	[ ! -s own.err ] || { cat own.err; fail "offcpu report warned"; }
	ms=$(sleep_ms own.txt)
	within 5 "$ms" 2000 || fail "offcpu report: $ms ms of sleep, not 2000"
	perf report -i q.data --stdio 2>&1 | grep -q "of event 'offcpu-time'" || fail "perf report cannot read q.data"
	pms=$(perf_sleep_ms q.data)
	within 5 "$pms" 2000 || fail "perf script: $pms ms of sleep, not 2000"
	# one that an earlier offcpu wrote: an empty data section, as perf record --threads leaves it
	python3 - q.data/data <<-'EOF' || fail "cannot empty the data section"
		import struct, sys
		b = bytearray(open(sys.argv[1], "rb").read())
		off, size = struct.unpack_from("<QQ", b, 40)
		feat = b[off + size:]  # the feature index, its offsets shifted by size
		bits = struct.unpack_from("<Q", b, 72)[0]
		for i in range(bin(bits).count("1")):
		    o, s = struct.unpack_from("<QQ", feat, 16 * i)
		    struct.pack_into("<QQ", feat, 16 * i, o - size, s)
		struct.pack_into("<QQ", b, 40, off, 0)
		open(sys.argv[1], "wb").write(bytes(b[:off]) + bytes(feat))
	EOF
	"$OFFCPU" report -i q.data -s comm >own2.txt 2>own.err || { cat own.err; fail "offcpu report of an empty data section failed"; }
	ms=$(sleep_ms own2.txt)
	within 5 "$ms" 2000 || fail "empty data section: $ms ms of sleep, not 2000"
	perf report -i q.data --stdio 2>&1 | grep -q "of event 'offcpu-time'" || fail "perf report cannot read the empty data section"
}

# the flight recorder on a full disk: a snapshot that finds no space is
# skipped (its temporary removed, said at once), recording goes on, and the
# next snapshot holds what the skipped ones would have: the records the
# buffers still hold, and the blocks summed in the kernel (the 0.3 s sleeps,
# under --off-cpu-thresh 400), which one that failed partway had drained
test_unfinished_flight_full_disk() {
	local rec t1 t3 ms want i carried
	mkdir fs
	mount -t tmpfs -o size=1m tmpfs fs || skip "cannot mount a tmpfs"
	trap 'umount fs 2>/dev/null' EXIT
	"$OFFCPU" record -vv --overwrite --off-cpu-thresh 400 -o fs/snap -- \
		sh -c 'while :; do sleep 0.3; done' 2>rec.err &
	rec=$!
	wait_for_line rec.err "flight recorder armed" 60 || { kill $rec; fail "not armed"; }
	sleep 1
	kill -USR2 $rec
	t1=$(date +%s.%N)
	wait_for_line rec.err "wrote fs/snap" 60 || { kill $rec; fail "no first snapshot"; }
	# a disk full to the last page, then one with a page free: the second
	# snapshot fails before anything is written, the third partway
	dd if=/dev/zero of=fs/fill bs=4k 2>/dev/null
	sleep 0.5
	kill -USR2 $rec
	wait_for_line rec.err "snapshot skipped.*1 skipped so far" 60 || { kill $rec; fail "no skip said"; }
	rm fs/fill
	dd if=/dev/zero of=fs/fill bs=4k count=$(($(df --output=avail -B4k fs | tail -1) - 1)) 2>/dev/null
	sleep 0.5
	kill -USR2 $rec
	wait_for_line rec.err "snapshot skipped.*2 skipped so far" 60 || { kill $rec; fail "no second skip said"; }
	kill -0 $rec || fail "offcpu ended on a full disk"
	ls -la fs
	[ "$(ls fs | grep -c '^snap')" -eq 1 ] || fail "a skipped snapshot left a file behind"
	rm fs/fill
	sleep 0.5
	kill -USR2 $rec
	t3=$(date +%s.%N)
	for ((i = 0; i < 200; i++)); do
		[ "$(grep -c 'wrote fs/snap' rec.err)" -ge 2 ] && break
		sleep 0.05
	done
	[ $i -lt 200 ] || { kill $rec; fail "no snapshot once space was back"; }
	sleep 0.5
	kill -INT $rec
	wait $rec
	rc=$?
	grep -v '^libbpf: ' rec.err
	[ $rc -eq 0 ] || fail "exit $rc"
	grep -q "2 snapshots were skipped for lack of space" rec.err || fail "the summary does not count the skipped snapshots"
	ls -la fs
	[ "$(ls fs | grep -c '^snap')" -eq 3 ] || fail "not three snapshots on disk"
	# the second snapshot on disk: everything since the first, the skipped ones' too
	f=$(ls fs/snap.* | sed -n 2p)
	"$OFFCPU" report -i "$f" -s comm >own.txt 2>own.err || { cat own.err; fail "cannot read $f"; }
	cat own.txt
	[ ! -s own.err ] || { cat own.err; fail "offcpu report warned on $f"; }
	ms=$(sleep_ms own.txt)
	want=$(awk -v a="$t1" -v b="$t3" 'BEGIN { printf "%d", (b - a) * 1000 - 700 }')
	[ "$ms" -ge "$want" ] || fail "$f holds $ms ms of sleeps, the time since the first snapshot less 0.7 s is $want"
	perf report -i "$f" --stdio 2>&1 | grep -q "of event 'offcpu-time'" || fail "perf cannot read $f"
	carried=$(sed -n 's/.*debug: \([0-9]*\) summed blocks of a skipped snapshot.*/\1/p' rec.err)
	note "2 snapshots skipped for lack of space; the next one held $ms ms of sleeps (>= $want)," \
		"${carried:-no} summed blocks carried over from the one that failed partway"
	umount fs
}
