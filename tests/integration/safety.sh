# Integration tests of issue 10: a root recorder in a directory other users
# can write never follows, deletes or replaces what they planted; bad input
# and signals end in a clear error or a complete file. Each test plays the
# attack as an unprivileged user this file creates (offcpu-test).
# shellcheck shell=bash

TESTER=offcpu-test

# public_dir: a world-writable sticky directory like /tmp (the test's own
# directory is 0700), removed when the test ends. Sets PUB and the tester.
public_dir() {
	id -u "$TESTER" >/dev/null 2>&1 ||
		useradd --system --no-create-home --shell /usr/sbin/nologin "$TESTER" ||
		fail "cannot create the user $TESTER"
	PUB=$(mktemp -d /tmp/offcpu-pub.XXXXXX)
	chmod 1777 "$PUB"
	VICTIM=$(mktemp -d /tmp/offcpu-victim.XXXXXX)
	echo precious >"$VICTIM/a"
	echo precious >"$VICTIM/b"
	trap 'rm -rf "$PUB" "$VICTIM"' EXIT
}

# as_tester CMD...: run CMD as the unprivileged user
as_tester() {
	setpriv --reuid="$TESTER" --regid="$TESTER" --clear-groups -- "$@"
}

victim_intact() {
	[ "$(cat "$VICTIM/a" "$VICTIM/b" 2>/dev/null)" = "$(printf 'precious\nprecious')" ] ||
		fail "files in $VICTIM were removed or changed: $(ls -la "$VICTIM")"
}

# 1: a planted NAME.old symlink to a directory; NAME a directory of the tester's
test_safety_planted_old_symlink() {
	public_dir
	as_tester mkdir "$PUB/x.data"
	as_tester ln -s "$VICTIM" "$PUB/x.data.old"
	"$OFFCPU" record -o "$PUB/x.data" -- true 2>rec.err && fail "record replaced the tester's directory"
	cat rec.err
	grep -q "refusing to replace $PUB/x.data: it is a directory owned by user" rec.err ||
		fail "no clear refusal"
	victim_intact
	[ -L "$PUB/x.data.old" ] || fail "the planted symlink was removed"
	# NAME ours, NAME.old a planted symlink: refused too, nothing followed
	rmdir "$PUB/x.data"
	"$OFFCPU" record -q -o "$PUB/y.data" -- true || fail "record failed"
	as_tester ln -s "$VICTIM" "$PUB/y.data.old"
	"$OFFCPU" record -o "$PUB/y.data" -- true 2>rec.err && fail "record replaced a planted y.data.old"
	grep -q "y.data.old, where the previous recording would be kept: it is a symbolic link" rec.err ||
		fail "no clear refusal of y.data.old"
	victim_intact
	[ -L "$PUB/y.data.old" ] && [ -f "$PUB/y.data" ] || fail "y.data or y.data.old changed"
	# --threads: the same with directories
	as_tester ln -s "$VICTIM" "$PUB/d.old"
	"$OFFCPU" record -q --threads -o "$PUB/d" -- true || fail "record --threads failed"
	"$OFFCPU" record --threads -o "$PUB/d" -- true 2>rec.err && fail "record --threads replaced d.old"
	victim_intact
}

# 1b: a symlink the tester planted among the directory components, directly or
# behind a link of root's: never followed (checked on the descriptor it opens)
test_safety_directory_symlinks() {
	public_dir
	echo precious >"$VICTIM/out"
	as_tester ln -s "$VICTIM" "$PUB/atk"
	ln -s "$PUB/atk" "$PUB/rootlink"
	"$OFFCPU" record -o "$PUB/atk/out" -- true 2>rec.err && fail "followed the tester's link"
	grep -q "symbolic link owned by user" rec.err || fail "no clear refusal: $(cat rec.err)"
	"$OFFCPU" record -o "$PUB/rootlink/out" -- true 2>rec.err && fail "followed a link behind root's"
	[ "$(cat "$VICTIM/out")" = precious ] && [ ! -e "$VICTIM/out.old" ] || fail "the victim's file was moved"
	# root's own link to a directory is followed, as a user expects
	mkdir "$PUB/real"
	ln -s real "$PUB/good"
	"$OFFCPU" record -q -o "$PUB/good/r.data" -- true || fail "root's own link not followed"
	[ -f "$PUB/real/r.data" ] || fail "nothing written through root's link"
}

# 2: symlinks planted at the temporary names of the next few hundred pids
test_safety_planted_temporaries() {
	local next
	public_dir
	# one process plants them all, so that the pids it names are still to come
	next=$(cat /proc/sys/kernel/ns_last_pid)
	as_tester perl -e '
my ($pub, $victim, $next) = @ARGV;
for my $pid ($next .. $next + 399) {
	symlink($victim, "$pub/offcpu.data.tmp.$pid") or die "symlink: $!";
	symlink($victim, "$pub/t.dir.tmp.$pid") or die "symlink: $!";
}
' "$PUB" "$VICTIM" "$next" || fail "cannot plant symlinks"
	(cd "$PUB" && "$OFFCPU" record -q -- true) || fail "record of the default offcpu.data failed"
	"$OFFCPU" record -q --threads -o "$PUB/t.dir" -- true || fail "record --threads failed"
	victim_intact
	[ -f "$PUB/offcpu.data" ] && [ -f "$PUB/t.dir/data" ] || fail "no recording written"
	[ "$(find "$PUB" -maxdepth 1 -type l | wc -l)" -eq 800 ] || fail "planted symlinks were removed"
	perf script -i "$PUB/offcpu.data" >/dev/null 2>&1 || fail "perf cannot read the recording"
	# what offcpu creates itself is not left behind either
	[ -z "$(find "$PUB" -maxdepth 1 -name '*.tmp.*' ! -type l)" ] || fail "temporaries left behind"
}

# 3: a device, fifo or socket at NAME is written in place or refused, never replaced
test_safety_devices() {
	public_dir
	mknod "$PUB/null" c 1 3 && chmod 666 "$PUB/null"
	"$OFFCPU" record -q -o "$PUB/null" -- sleep 0.1 || fail "record into a character device failed"
	[ -c "$PUB/null" ] && [ ! -e "$PUB/null.old" ] || fail "the device was replaced: $(ls -la "$PUB")"
	"$OFFCPU" record -q -o /dev/null -- sleep 0.1 || fail "record -o /dev/null failed"
	[ -c /dev/null ] || fail "/dev/null is no longer a device"
	# a fifo gets perf's pipe format, read at the other end
	mkfifo "$PUB/fifo"
	perf script -i - <"$PUB/fifo" >fifo.txt 2>fifo.err &
	local reader=$!
	"$OFFCPU" record -q -o "$PUB/fifo" -- sleep 0.2 || fail "record into a fifo failed"
	wait $reader || { cat fifo.err; fail "perf script could not read the fifo"; }
	grep -q "offcpu-time" fifo.txt || fail "no sample came through the fifo"
	[ -p "$PUB/fifo" ] || fail "the fifo was replaced"
	# the tester's fifo: the recording would be theirs, so it is refused
	as_tester mkfifo "$PUB/leak"
	as_tester sh -c "cat '$PUB/leak' > /dev/null" &
	timeout 20 "$OFFCPU" record -o "$PUB/leak" -- true 2>rec.err && fail "wrote into the tester's fifo"
	grep -q "refusing to write into .*a fifo owned by user" rec.err || fail "fifo: $(cat rec.err)"
	# offcpu never opened it: its reader still waits for a writer; end it
	: >"$PUB/leak"
	wait
	# a block device and a socket are refused, and stay
	mknod "$PUB/blk" b 7 200
	"$OFFCPU" record -o "$PUB/blk" -- true 2>rec.err && fail "record replaced a block device"
	grep -q "it is a block device" rec.err || fail "no clear refusal of a block device"
	[ -b "$PUB/blk" ] || fail "the block device was replaced"
	perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Local => $ARGV[0], Listen => 1) or die' "$PUB/sock"
	"$OFFCPU" record -o "$PUB/sock" -- true 2>rec.err && fail "record replaced a socket"
	[ -S "$PUB/sock" ] || fail "the socket was replaced"
}

# 4: -o DIR where DIR.old holds files that are not a recording: refused before
# recording, nothing deleted; an earlier recording at DIR.old is replaced
test_safety_directory_old() {
	"$OFFCPU" record -q --threads -o rec.dir -- true || fail "first record failed"
	mkdir rec.dir.old
	echo notes >rec.dir.old/notes.txt
	"$OFFCPU" record --threads -o rec.dir -- sleep 0.1 2>rec.err && fail "rec.dir.old was replaced"
	cat rec.err
	grep -q "holding 'notes.txt'" rec.err || fail "the refusal does not say why"
	[ "$(cat rec.dir.old/notes.txt)" = notes ] || fail "notes.txt was deleted"
	[ -f rec.dir/data ] || fail "the existing recording was lost"
	# the same with recordings only: NAME becomes NAME.old, the older one goes
	rm -r rec.dir.old
	"$OFFCPU" record -q --threads -o rec.dir -- true || fail "second record failed"
	"$OFFCPU" record -q --threads -o rec.dir -- true || fail "third record failed"
	[ -f rec.dir/data ] && [ -f rec.dir.old/data ] || fail "rec.dir or rec.dir.old missing"
	[ "$(ls -d rec.dir* | wc -l)" -eq 2 ] || fail "left over: $(ls -d rec.dir*)"
}

# 5: --switch-output names are unique, and the summary counts the files on
# disk: two switches one after the other, then 40 signals 10 ms apart (names
# within one hundredth of a second); signals while the program loads wait
# for it (they made the verifier give up on a piece of it, which fell back)
test_switch_output_unique_names() {
	"$OFFCPU" record --switch-output=signal -o sw.data -- sleep 5 2>rec.err &
	local rec=$! i
	# the command runs once offcpu is loaded and attached
	until pgrep -P $rec -x sleep >/dev/null; do
		kill -0 $rec 2>/dev/null || { cat rec.err; fail "offcpu ended before its command ran"; }
		sleep 0.05
	done
	for i in 1 2; do
		kill -USR2 $rec
		until [ "$(grep -c 'wrote sw.data' rec.err)" -ge $i ]; do
			kill -0 $rec 2>/dev/null || { cat rec.err; fail "switch $i: no file written"; }
			sleep 0.05
		done
	done
	for i in $(seq 40); do
		kill -USR2 $rec 2>/dev/null
		sleep 0.01
	done
	wait $rec || { cat rec.err; fail "record failed"; }
	cat rec.err
	! grep FALLBACK rec.err || fail "a fallback was taken"
	written=$(sed -n 's/.*wrote \([0-9]*\) files, \([0-9]*\) of them on disk.*/\1 \2/p' rec.err)
	[ -n "$written" ] || fail "no count of files in the summary"
	set -- $written
	[ "$1" -eq "$(ls sw.data.* | wc -l)" ] && [ "$2" -eq "$1" ] ||
		fail "summary says $1 files ($2 on disk), $(ls sw.data.* | wc -l) on disk"
	[ "$1" -ge 3 ] || fail "only $1 files: the signals did not switch"
	for f in sw.data.*; do
		"$OFFCPU" report -i "$f" >/dev/null || fail "cannot read $f"
	done
}

# 6: input that is not perf.data is refused after its first bytes
test_report_bounded_input() {
	local rc
	timeout 20 "$OFFCPU" report -i /dev/zero 2>err.txt
	rc=$?
	[ $rc -eq 1 ] && grep -q "not a perf.data file" err.txt || fail "/dev/zero: exit $rc, $(cat err.txt)"
	timeout 20 "$OFFCPU" report -i - </dev/urandom 2>err.txt
	rc=$?
	[ $rc -eq 1 ] && grep -q "standard input is not a perf.data file" err.txt ||
		fail "stdin /dev/urandom: exit $rc"
	# a valid pipe header, then zeros: refused at the first record, not read to the end
	{ printf 'PERFILE2\x10\0\0\0\0\0\0\0'; cat /dev/zero; } | timeout 20 "$OFFCPU" report -i - 2>err.txt
	rc=${PIPESTATUS[1]}
	[ $rc -eq 1 ] || fail "pipe header then zeros: exit $rc, $(cat err.txt)"
	# a file header whose offsets wrap, and one that claims a terabyte of data
	perl -e 'print pack("a8Q<Q<Q<Q<Q<Q<Q<Q<Q<4", "PERFILE2", 104, 136, 104, 136,
		2**64 - 4000, 0, 0, 0, ~0, ~0, ~0, ~0)' | timeout 20 "$OFFCPU" report -i - 2>err.txt
	rc=${PIPESTATUS[1]}
	[ $rc -eq 1 ] || fail "wrapping offsets: exit $rc, $(cat err.txt)"
	{ perl -e 'print pack("a8Q<Q<Q<Q<Q<Q<Q<Q<Q<4", "PERFILE2", 104, 0, 104, 0, 200, 2**40,
		0, 0, 0, 0, 0, 0)'; cat /dev/zero; } | timeout 20 "$OFFCPU" report -i - 2>err.txt
	rc=${PIPESTATUS[1]}
	[ $rc -eq 1 ] || fail "a terabyte of zeros claimed: exit $rc, $(cat err.txt)"
	cat err.txt
}

# 7: SIGHUP, SIGUSR1, SIGALRM, SIGQUIT (and SIGUSR2 without --switch-output)
# end the recording with a complete file, as SIGINT does
test_signals_hangup() {
	local sig rec
	for sig in HUP USR1 ALRM QUIT USR2; do
		rm -f s.data
		"$OFFCPU" record -a -o s.data 2>rec.err &
		rec=$!
		wait_for_line rec.err recording 60 || fail "did not start"
		sleep 0.3
		kill -$sig $rec
		wait $rec || { cat rec.err; fail "exit status after SIG$sig"; }
		grep -q "wrote s.data" rec.err || fail "no summary after SIG$sig"
		perf script -i s.data >/dev/null 2>&1 || fail "perf script cannot read the file after SIG$sig"
		[ -z "$(ls s.data.tmp.* 2>/dev/null)" ] || fail "temporary left after SIG$sig"
	done
	# a hang-up of the terminal's session: the workload dies of it too; the file is complete
	"$OFFCPU" record -o w.data -- sleep 30 2>rec.err &
	rec=$!
	sleep 0.5
	kill -HUP $rec
	wait $rec
	perf script -i w.data >/dev/null 2>&1 || fail "no complete file with a workload after SIGHUP"
}

# 8: --svg and --pprof refuse a planted symlink, and replace their own file
test_report_outputs_symlinks() {
	public_dir
	"$OFFCPU" record -q -o "$PUB/r.data" -- sleep 0.1 || fail "record failed"
	as_tester ln -s "$VICTIM/a" "$PUB/out.svg"
	as_tester ln -s "$VICTIM/b" "$PUB/out.pb.gz"
	"$OFFCPU" report -i "$PUB/r.data" --svg "$PUB/out.svg" 2>err.txt && fail "--svg followed a symlink"
	grep -q "it is a symbolic link" err.txt || fail "no clear refusal: $(cat err.txt)"
	"$OFFCPU" report -i "$PUB/r.data" --pprof "$PUB/out.pb.gz" 2>err.txt && fail "--pprof followed a symlink"
	victim_intact
	[ -L "$PUB/out.svg" ] && [ -L "$PUB/out.pb.gz" ] || fail "planted symlinks replaced"
	# the tester's own file is not replaced either; our own is
	as_tester touch "$PUB/theirs.svg"
	"$OFFCPU" report -i "$PUB/r.data" --svg "$PUB/theirs.svg" 2>err.txt && fail "replaced the tester's file"
	"$OFFCPU" report -i "$PUB/r.data" --svg "$PUB/ours.svg" || fail "--svg failed"
	"$OFFCPU" report -i "$PUB/r.data" --svg "$PUB/ours.svg" || fail "--svg over its own file failed"
	grep -q "<svg" "$PUB/ours.svg" || fail "no svg written"
	# "-" is standard output, where a user pipes it
	"$OFFCPU" report -i "$PUB/r.data" --svg - | grep -q "<svg" || fail "--svg - wrote no svg"
	"$OFFCPU" report -i "$PUB/r.data" --pprof - | gzip -t || fail "--pprof - wrote no gzip"
	[ -z "$(find "$PUB" -name '*.tmp.*')" ] || fail "temporaries left behind"
}

# 9: a directory with data.N missing, renumbered or duplicated is refused (-f reads it)
test_report_directory_streams() {
	local n
	"$OFFCPU" record -q --threads -o d.dir -- "$GT" -r truth.txt || fail "record failed"
	n=$(ls d.dir/data.* | wc -l)
	[ "$n" -ge 2 ] || fail "only $n streams"
	"$OFFCPU" report -i d.dir >/dev/null || fail "the complete directory is refused"
	cp -r d.dir miss.dir && rm miss.dir/data.0
	"$OFFCPU" report -i miss.dir >/dev/null 2>err.txt && fail "data.0 missing: read without a word"
	grep -q "data.0 is missing" err.txt || fail "the error does not name data.0: $(cat err.txt)"
	"$OFFCPU" report -f -i miss.dir >/dev/null 2>err.txt || fail "-f does not read it"
	grep -q "warning" err.txt || fail "-f reads it without a warning"
	cp -r d.dir renum.dir && mv renum.dir/data.1 renum.dir/data.7
	"$OFFCPU" report -i renum.dir >/dev/null 2>err.txt && fail "renumbered: read without a word"
	grep -q "data.1 is missing" err.txt || fail "renumbered: $(cat err.txt)"
	cp -r d.dir dup.dir && cp dup.dir/data.0 "dup.dir/data.$n"
	"$OFFCPU" report -i dup.dir >/dev/null 2>err.txt && fail "duplicated: read without a word"
	grep -q "copy of data.0" err.txt || fail "duplicated: $(cat err.txt)"
}

# 10: the input truncated while it is read: a clear error, exit 1, not SIGBUS
test_report_truncated_while_read() {
	local delay rc rep
	make -s -C "$ROOT" BUILD="$BUILD" bench-gen >make.log 2>&1 || { cat make.log; fail "cannot build gen-perfdata"; }
	"$ROOT/$BUILD/bench/gen-perfdata" -o big.data -n 600000 "$OFFCPU" >/dev/null ||
		fail "cannot generate a file"
	# truncate while the records are read; a report that got past them first
	# (rc 0) is tried again with an earlier truncation
	for delay in 0.3 0.2 0.1 0.05 0.02 0.01; do
		cp big.data t.data
		"$OFFCPU" report -i t.data >/dev/null 2>err.txt &
		rep=$!
		sleep $delay
		truncate -s 200000 t.data
		wait $rep
		rc=$?
		cat err.txt
		[ $rc -eq 0 ] && continue
		[ $rc -eq 1 ] || fail "exit $rc after truncation"
		# truncated before the report mapped it: an ordinary damaged file, try again
		grep -q "shrank" err.txt || { grep -q "outside the" err.txt && continue; }
		grep -q "t.data shrank while it was being read" err.txt || fail "no clear error"
		return 0
	done
	fail "the report always got past the records before the truncation"
}

# 11: a file owned by another user is refused, as perf does; -f reads it
test_report_foreign_owner() {
	public_dir
	"$OFFCPU" record -q -o "$PUB/r.data" -- sleep 0.1 || fail "record failed"
	as_tester cp "$PUB/r.data" "$PUB/theirs.data" 2>/dev/null || {
		cp "$PUB/r.data" "$PUB/theirs.data"
		chown "$TESTER" "$PUB/theirs.data"
	}
	chmod 666 "$PUB/theirs.data"
	"$OFFCPU" report -i "$PUB/theirs.data" >/dev/null 2>err.txt && fail "read another user's file"
	grep -q "not by the current user or root (-f reads it anyway)" err.txt || fail "$(cat err.txt)"
	"$OFFCPU" report -f -i "$PUB/theirs.data" | grep -q "sleep" || fail "-f does not read it"
	# a fifo the tester made is theirs as much as a file
	as_tester mkfifo "$PUB/theirs.fifo"
	as_tester sh -c "cat '$PUB/r.data' > '$PUB/theirs.fifo'" 2>/dev/null &
	timeout 20 "$OFFCPU" report -i "$PUB/theirs.fifo" >/dev/null 2>err.txt && fail "read the tester's fifo"
	grep -q "not by the current user or root" err.txt || fail "fifo: $(cat err.txt)"
	kill %1 2>/dev/null; wait 2>/dev/null
	true
}

# the low ones: each a clear error and the right exit status
test_safety_messages() {
	local rc
	"$OFFCPU" record -p 2 -d 0.2 -o k.data 2>err.txt
	rc=$?
	[ $rc -eq 1 ] && grep -q "kernel thread" err.txt || fail "-p 2 (kthreadd): exit $rc, $(cat err.txt)"
	"$OFFCPU" record -G '' -d 0.2 -o g.data 2>err.txt
	[ $? -eq 2 ] || fail "-G '' accepted"
	"$OFFCPU" record --off-cpu-thresh nan -o n.data -- true 2>err.txt
	[ $? -eq 2 ] || fail "--off-cpu-thresh nan accepted"
	"$OFFCPU" record -C 4096 -o c.data -- true 2>err.txt
	rc=$?
	[ $rc -eq 2 ] && grep -q "invalid cpu 4096 in -C" err.txt || fail "-C 4096: exit $rc, $(cat err.txt)"
	"$OFFCPU" record -m 1073741824 -- true 2>err.txt
	grep -q "1 to 1048576 pages" err.txt || fail "-m message: $(cat err.txt)"
	head -c 4096 /dev/urandom >garbage.btf
	"$OFFCPU" record --btf garbage.btf -o b.data -- true 2>err.txt
	rc=$?
	[ $rc -eq 1 ] && grep -q "cannot read BTF from garbage.btf: not a BTF file" err.txt &&
		! grep -q "Unknown error" err.txt || fail "--btf garbage: exit $rc, $(cat err.txt)"
	"$OFFCPU" record -o /missing/dir/x -- true 2>err.txt
	[ $? -eq 1 ] && [ "$(grep -c error err.txt)" -eq 1 ] || fail "-o /missing/dir/x: $(cat err.txt)"
	# a workload killed by a signal: said, and the exit status a shell gives
	"$OFFCPU" record -o w.data -- sh -c 'kill -KILL $$' 2>err.txt
	rc=$?
	[ $rc -eq 137 ] && grep -q "killed by signal 9" err.txt || fail "killed workload: exit $rc, $(cat err.txt)"
	perf script -i w.data >/dev/null 2>&1 || fail "no complete file after the workload was killed"
	# a header with every feature bit set is refused
	"$OFFCPU" record -q -o f.data -- true || fail "record failed"
	printf '\xff%.0s' $(seq 32) | dd of=f.data bs=1 seek=72 conv=notrunc status=none
	"$OFFCPU" report -i f.data >/dev/null 2>err.txt && fail "every feature bit set: read"
	grep -q "feature bitmap" err.txt || fail "feature bits: $(cat err.txt)"
	# the session fuzzer's qsort(NULL, 0) input runs clean under UBSan
	make -s -C "$ROOT" BUILD="$BUILD" fuzz >make.log 2>&1 || { cat make.log; fail "cannot build the fuzzers"; }
	echo UEVSRklMRTIQAAAAAAAAAA== | base64 -d >qsort.in
	"$ROOT/$BUILD/tests/fuzz-session" qsort.in >fz.log 2>&1 || { cat fz.log; fail "qsort input fails"; }
}

# 12: another user's fifo with no reader at -o, --svg or --pprof: refused at
# once, not when someone reads it (opening a fifo waits for its reader); our
# own fifo still waits for its reader and gets the data
test_safety_foreign_fifo_refused_at_once() {
	local rc start ms what
	public_dir
	"$OFFCPU" record -q -o "$PUB/r.data" -- true || fail "record failed"
	as_tester mkfifo "$PUB/leak"
	for what in "record -o $PUB/leak -- true" "report -i $PUB/r.data --svg $PUB/leak" \
		"report -i $PUB/r.data --pprof $PUB/leak"; do
		start=$(date +%s%N)
		# shellcheck disable=SC2086
		timeout 60 "$OFFCPU" $what 2>err.txt
		rc=$?
		ms=$((($(date +%s%N) - start) / 1000000))
		note "offcpu $what: refused (exit $rc) after $ms ms"
		# (no reader ever comes: an open that waited for one would have
		# waited until the timeout, however busy the machine)
		[ $rc -ne 124 ] || fail "offcpu $what waited for a reader of the tester's fifo"
		[ $rc -eq 1 ] || fail "offcpu $what: exit $rc, $(cat err.txt)"
		grep -q "refusing to write into $PUB/leak: a fifo owned by user" err.txt ||
			fail "offcpu $what: no clear refusal: $(cat err.txt)"
	done
	[ -p "$PUB/leak" ] || fail "the tester's fifo was replaced"
	# ours, in the same directory: waits for the reader, then writes into it
	mkfifo "$PUB/own"
	timeout 10 "$OFFCPU" report -i "$PUB/r.data" --svg "$PUB/own" 2>err.txt &
	local rep=$!
	sleep 0.3
	kill -0 $rep 2>/dev/null || fail "report --svg into our own fifo did not wait for its reader"
	timeout 10 cat "$PUB/own" >own.svg
	wait $rep || fail "report --svg into our own fifo: $(cat err.txt)"
	grep -q "</svg>" own.svg || fail "no svg came through our own fifo"
	[ -p "$PUB/own" ] || fail "our fifo was replaced"
}

# 13: names other users choose reach no terminal raw and break no output: a
# process of the tester renames itself (prctl(PR_SET_NAME), 15 bytes) to clear
# the screen and forge a row, and to set the terminal's title with bytes
# that are not UTF-8; offcpu report escapes them everywhere
test_report_hostile_names() {
	local rec
	public_dir
	cat >"$PUB/evil.py" <<'PY'
import ctypes, sys, time
names = {
    "forge": b"\x1b[2J\n  9.9  99%",  # clear the screen, then a row of its own
    "title": b"\xff\xfe\x1b]0;pwne\x07\xc2\x9b2J",  # not UTF-8, a title, a C1 CSI
}
name = names[sys.argv[1]]
assert len(name) == 15, len(name)
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(name), 0, 0, 0)  # PR_SET_NAME
end = time.time() + 1.5
while time.time() < end:
    time.sleep(0.02)
PY
	chmod 644 "$PUB/evil.py"
	"$OFFCPU" record -a -d 3 -o n.data 2>rec.err &
	rec=$!
	wait_for_line rec.err recording 60 || fail "did not start"
	as_tester /usr/bin/python3 "$PUB/evil.py" forge &
	as_tester /usr/bin/python3 "$PUB/evil.py" title &
	wait $rec || fail "record failed"
	wait
	"$OFFCPU" report -i n.data --sort comm,pid >text.txt 2>err.txt || fail "report failed: $(cat err.txt)"
	"$OFFCPU" report -i n.data >>text.txt 2>>err.txt || fail "report failed: $(cat err.txt)"
	cat text.txt err.txt | grep -aF '\x1b' | cat -v
	! LC_ALL=C grep -aq $'\x1b' text.txt err.txt || fail "a raw ESC reached the report"
	! LC_ALL=C grep -aq $'\x07\|\xc2\x9b\|\xff' text.txt || fail "a raw BEL, CSI or stray byte reached the report"
	grep -qF '\x1b[2J\n  9.9  99%' text.txt || fail "the escaped name is not in the table"
	grep -qF '\xff\xfe\x1b]0;pwne\x07\u009b2J' text.txt || fail "the second escaped name is not there"
	! grep -q '^  9.9  99%' text.txt || fail "a row was forged"
	# the name's own column still lines up the pid after it
	grep -F '\x1b[2J\n' text.txt | head -1 | grep -qE '^ +[0-9.]+ +[0-9.]+%  \\x1b\[2J\\n  9\.9  99% +[0-9]+$' ||
		fail "the row of the escaped name is not a row: $(grep -F '\x1b[2J' text.txt | head -1)"
	# folded: one stack a line, the name escaped, ';' kept out of it
	"$OFFCPU" report -i n.data --folded >folded.txt || fail "--folded failed"
	! LC_ALL=C grep -aq $'\x1b\|\x07\|\xff' folded.txt || fail "a raw control byte in --folded"
	grep -qF '\x1b[2J\n  9.9  99%;' folded.txt || fail "--folded: the name is not escaped"
	grep -qF '\xff\xfe\x1b]0:pwne\x07\u009b2J;' folded.txt || fail "--folded: the second name"
	[ "$(grep -cvE ' [0-9]+$' folded.txt)" = 0 ] || fail "--folded: a line without its count"
	# json: valid UTF-8 a strict parser reads, with no raw escape
	"$OFFCPU" report -i n.data --json >rows.json || fail "--json failed"
	! LC_ALL=C grep -aq $'\x1b\|\xff' rows.json || fail "a raw control byte in --json"
	python3 -c '
import json, sys
rows = json.load(open(sys.argv[1], encoding="utf-8"))["rows"]
comms = {r["comm"] for r in rows}
assert "\x1b[2J\n  9.9  99%" in comms, "the exact name is lost"
assert "\\xff\\xfe\x1b]0;pwne\x07\x9b2J" in comms, sorted(comms)
' rows.json || fail "--json: not valid UTF-8 JSON, or the names are wrong"
	# svg: a document an XML parser accepts
	"$OFFCPU" report -i n.data --svg n.svg || fail "--svg failed"
	! LC_ALL=C grep -aq $'\x1b\|\xff' n.svg || fail "a raw control byte in the svg"
	python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' n.svg ||
		fail "the svg is not well-formed XML"
	grep -qF '\x1b[2J\n  9.9  99%' n.svg || fail "--svg: the name is not escaped"
	# pprof: what go tool pprof prints is escaped
	"$OFFCPU" report -i n.data --pprof n.pb.gz || fail "--pprof failed"
	if command -v go >/dev/null; then
		timeout 120 go tool pprof -traces n.pb.gz >traces.txt 2>&1 || fail "go tool pprof: $(tail -3 traces.txt)"
		! LC_ALL=C grep -aq $'\x1b\|\xff' traces.txt || fail "a raw control byte in pprof's names"
		grep -qF '\x1b[2J\n  9.9  99%' traces.txt || fail "--pprof: the name is not escaped"
	else
		note "no go: the pprof names were not read back"
	fi
}
