# A root recorder next to a local user who attacks it through the files of
# their own programs (issue 21): truncated libraries, a library's name made a
# fifo, a library whose CFI is quadratic to read row by row, one with 20,000
# distinct rules. The recording ends on its deadline, exits 0 and reads;
# other processes keep complete stacks.
# shellcheck shell=bash

HOSTILE=$ROOT/$BUILD/tests/hostile

# hostile_lib MODE ROWS: assembly of a library exporting hostile_block(usec)
# (usleep), whose one FDE goes on past its ret with ROWS rows: two rules
# alternating (alt: 31.6 s for 400 KB through libdw's row-at-a-time API), or
# each row its own rule (distinct).
hostile_lib() {
	awk -v mode="$1" -v n="$2" 'BEGIN {
		print "\t.text\n\t.globl hostile_block\n\t.type hostile_block, @function"
		print "hostile_block:\n\t.cfi_startproc\n\tpush %rbp\n\t.cfi_adjust_cfa_offset 8"
		print "\t.cfi_offset %rbp, -16\n\tcall usleep@PLT\n\tpop %rbp\n\t.cfi_adjust_cfa_offset -8\n\tret"
		for (i = 0; i < n; i++)
			printf "\tnop\n\t.cfi_def_cfa_offset %d\n", mode == "alt" ? (i % 2 ? 8 : 16) : 16 + 8 * i
		print "\t.cfi_endproc\n\t.size hostile_block, .-hostile_block"
		print "\t.section .note.GNU-stack,\"\",@progbits"
	}'
}

# as_nobody CMD...: run as the unprivileged user nobody
as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
}

test_hostile_objects() {
	local dir rc t0 t1 secs d3 pypid pids recpid all root quad
	command -v setpriv >/dev/null || skip "no setpriv (util-linux)"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	[ -x /usr/bin/python3 ] || skip "no python3"
	dir=$(mktemp -d /tmp/offcpu-hostile.XXXXXX)
	# shellcheck disable=SC2064
	trap "pkill -u nobody -f '$HOSTILE' 2>/dev/null; rm -rf '$dir'" EXIT
	hostile_lib alt 300000 >quad.S && gcc -shared -o "$dir/quad.so" quad.S || fail "cannot build quad.so"
	hostile_lib distinct 20000 >rules.S && gcc -shared -o "$dir/rules.so" rules.S || fail "cannot build rules.so"
	hostile_lib alt 50000 >med.S && gcc -shared -o "$dir/med.so" med.S || fail "cannot build med.so"
	printf 'import time\ndef py_sleeper():\n    for i in range(40):\n        time.sleep(0.05)\npy_sleeper()\n' >"$dir/sleeper.py"
	chmod 755 "$dir" && chown -R nobody "$dir"
	ls -l "$dir"
	as_nobody "$HOSTILE" truncate "$dir/med.so" "$dir" 8 >trunc.out 2>&1 &
	pids=$!
	as_nobody "$HOSTILE" fifo "$dir/med.so" "$dir" 8 >fifo.out 2>&1 &
	pids="$pids $!"
	as_nobody "$HOSTILE" load "$dir/quad.so" 8 &
	pids="$pids $!"
	as_nobody "$HOSTILE" load "$dir/rules.so" 8 &
	pids="$pids $!"
	sleep 0.5
	(sleep 1 && exec setpriv --reuid=nobody --regid=nogroup --clear-groups -- /usr/bin/python3 "$dir/sleeper.py") &
	pypid=$!
	t0=$(date +%s.%N)
	"$OFFCPU" record -a -d 3 -o rec.data 2>rec.err
	rc=$?
	t1=$(date +%s.%N)
	cat rec.err
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	[ $rc = 0 ] || fail "offcpu record exited $rc"
	echo "recording of -d 3 took $secs s"
	d3=$secs
	# (a recorder stuck on these objects takes tens of seconds, or never ends:
	# the quadratic CFI alone costs libdw 31.6 s; 3 s and what a busy
	# machine adds to writing the file stay far below 15 s)
	awk -v s="$secs" 'BEGIN { exit !(s < 15) }' || fail "the recording took $secs s, its deadline was 3 s"
	wait $pypid
	# Ctrl-C, among the same objects: the end soon after, not after their 31 s
	"$OFFCPU" record -a -o int.data 2>int.err &
	recpid=$!
	wait_for_line int.err recording 60 || fail "the second recording did not start"
	sleep 1
	t0=$(date +%s.%N)
	kill -INT $recpid
	wait $recpid
	rc=$?
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	echo "Ctrl-C ended the recording in $secs s, exit $rc"
	[ $rc = 0 ] || { cat int.err; fail "offcpu record exited $rc after SIGINT"; }
	awk -v s="$secs" 'BEGIN { exit !(s < 10) }' || fail "the recording took $secs s to end after SIGINT"
	"$OFFCPU" report -i int.data >/dev/null || fail "the interrupted recording does not read"
	# shellcheck disable=SC2086
	wait $pids
	cat trunc.out fifo.out
	grep -q "copies truncated" trunc.out || fail "the truncating user did not run"
	grep -q "is a fifo" fifo.out || fail "the library's name did not become a fifo"
	"$OFFCPU" report -i rec.data >report.txt 2>report.err || { cat report.err; fail "offcpu report failed"; }
	perf report -i rec.data --stdio >perf.txt 2>perf.err || { cat perf.err; fail "perf report failed"; }
	grep -q offcpu-time perf.txt || fail "perf read no offcpu-time samples"
	# the 20,000 rules: one object over its budget, said; the rule array kept for the others
	grep -q "over their budget" rec.err || fail "the summary does not say an object was over its budget"
	grep -q "rules.so" rec.err || fail "the summary does not name the object over its budget"
	grep "objects without an unwind table" rec.err | grep -q "rules.so: .*budget" ||
		fail "the summary's objects without a table do not name rules.so and its budget"
	! grep -q "rule array is full" rec.err || fail "the shared rule array filled"
	"$OFFCPU" report -i rec.data --folded >all.folded || fail "report --folded failed"
	# the quadratic library was read (linear time) and its stacks are complete
	quad=$(awk '/hostile_block/ && /usleep/ { t += $NF } END { print t + 0 }' all.folded)
	root=$(awk '/hostile_block/ && /usleep/ && /;load_loop;/ && !/\[(no unwind|unwind:)/ { t += $NF } END { print t + 0 }' all.folded)
	echo "hostile_block: $((quad / 1000)) ms, $((root / 1000)) ms reaching main through a table"
	# python3, started during all this: complete once its tables are built
	# (the loader gets to it while the hostile objects are read: some of its
	# sleep reaches main; how soon is the machine's, and the sleep walked
	# before, by frame pointers, is what the summary says was not complete)
	# (its own process: other python3s of the machine are not the canary)
	"$OFFCPU" report -i rec.data --folded --pid "$pypid" >py.folded || fail "report --pid failed"
	all=$(awk '/^python3;/ && /clock_nanosleep|pysleep|time_sleep/ { t += $NF } END { print t + 0 }' py.folded)
	root=$(awk '/^python3;/ && /clock_nanosleep|pysleep|time_sleep/ && /;_start;.*Py_BytesMain;/ && !/\[(no unwind|unwind:)/ { t += $NF } END { print t + 0 }' py.folded)
	echo "python3: $((all / 1000)) ms of sleep, $((root / 1000)) ms reaching main"
	note "-d 3 took $d3 s; Ctrl-C $secs s; python3 started during it: $((root / 1000)) of $((all / 1000)) ms of sleep reach main"
	[ "$all" -ge 1000000 ] || { grep '^python3' py.folded | head; fail "only $((all / 1000)) ms of python's sleep recorded"; }
	[ "$root" -gt 0 ] || { grep '^python3' py.folded | head; fail "none of python's sleep reaches main: its tables were never built"; }
	[ $((all - root)) -le "$(incomplete_us rec.err)" ] ||
		{ grep '^python3' py.folded | head; fail "$(((all - root) / 1000)) ms of python's sleep does not reach main, more than the summary says was not complete"; }
}

# The table builder under libFuzzer (ASan, UBSan) for 30,000 inputs, seeded
# with real objects' .eh_frame sections and a whole ELF file: no crash, leak,
# hang or undefined behaviour on any bytes.
test_hostile_fuzz_tables() {
	local f n rc runs
	make -s -C "$ROOT" BUILD="$BUILD" "$BUILD/tests/fuzz-tables" >make.log 2>&1 ||
		{ cat make.log; fail "cannot build the fuzzer (clang, libclang-rt-14-dev)"; }
	mkdir corpus
	for f in /lib64/ld-linux-x86-64.so.2 /usr/lib/x86_64-linux-gnu/libz.so.1 /usr/bin/true "$HOSTILE"; do
		n=$(basename "$f")
		objcopy --dump-section .eh_frame=eh.bin "$f" x.o 2>/dev/null || continue
		{ printf '\0'; cat eh.bin; } >"corpus/eh-$n"
	done
	{ printf '\1'; cat /usr/bin/true; } >corpus/elf-true
	[ "$(ls corpus | wc -l)" -ge 3 ] || fail "no seeds (objcopy?)"
	(cd corpus && "$ROOT/$BUILD/tests/fuzz-tables" -runs=30000 \
		-max_len=131072 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 . >../fuzz.log 2>&1)
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' fuzz.log)
	echo "fuzz-tables: ${runs:-0} executions, exit $rc"
	[ $rc = 0 ] || { grep -A30 'ERROR\|runtime error' fuzz.log | head -50; fail "fuzz-tables found a crash (exit $rc)"; }
	[ "${runs:-0}" -ge 30000 ] || fail "fuzz-tables: ${runs:-0} executions, -runs=30000 asked"
}
