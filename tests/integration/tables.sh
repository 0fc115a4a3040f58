# The kernel's memory for unwind tables (issue 22): objects no process uses
# any more are taken back to make room, and nothing walks a row taken back.
# shellcheck shell=bash

HOSTILE=$ROOT/$BUILD/tests/hostile

# table_lib N ROWS: a library exporting hostile_block(usec) (usleep) whose FDE
# has ROWS rows, distinct from the other libraries' by N
table_lib() {
	awk -v id="$1" -v n="$2" 'BEGIN {
		print "\t.text\n\t.globl hostile_block\n\t.type hostile_block, @function"
		print "hostile_block:\n\t.cfi_startproc\n\tpush %rbp\n\t.cfi_adjust_cfa_offset 8"
		print "\t.cfi_offset %rbp, -16\n\tcall usleep@PLT\n\tpop %rbp\n\t.cfi_adjust_cfa_offset -8\n\tret"
		for (i = 0; i < n; i++)
			printf "\tnop\n\t.cfi_def_cfa_offset %d\n", i % 2 ? 8 : 16 + 8 * (id % 4)
		print "\t.cfi_endproc\n\t.size hostile_block, .-hostile_block"
		print "\t.section .note.GNU-stack,\"\",@progbits"
	}'
}

# Four libraries of 150,000 rows each, used one after the other by processes
# that exit, in a table memory that holds two: the later ones get tables as
# the earlier ones are taken back, and all four's stacks are complete.
test_tables_taken_back() {
	local i all root
	for i in 1 2 3 4; do
		table_lib $i 150000 >lib$i.S && gcc -shared -o "$PWD/lib$i.so" lib$i.S || fail "cannot build lib$i.so"
	done
	printf 'for i in 1 2 3 4; do "%s" load "%s/lib$i.so" 1; done\n' "$HOSTILE" "$PWD" >run.sh
	record_truth --unwind-mem 3M -o t.data -- sh run.sh
	cat rec.err
	grep -q "were taken back" rec.err || fail "the summary does not say tables were taken back"
	! grep -q "left without a table" rec.err || fail "an object was left without a table"
	"$OFFCPU" report -i t.data --folded >t.folded || fail "report failed"
	for i in 1 2 3 4; do
		all=$(awk -v l="lib$i.so" '/hostile_block/ && /usleep/ { t += $NF } END { print t + 0 }' t.folded)
		[ "$all" -gt 0 ] || fail "no block in hostile_block"
	done
	all=$(awk '/hostile_block/ && /usleep/ { t += $NF } END { print t + 0 }' t.folded)
	root=$(awk '/hostile_block/ && /usleep/ && /;load_loop;/ && !/\[(no unwind|unwind:)/ { t += $NF } END { print t + 0 }' t.folded)
	echo "hostile_block: $((all / 1000)) ms, $((root / 1000)) ms complete"
	note "4 libraries of 150,000 rows in 3M of table memory: $((root / 1000)) of $((all / 1000)) ms of their blocks complete"
	[ "$all" -ge 3000000 ] || fail "only $((all / 1000)) ms in hostile_block"
	[ $((root * 100)) -ge $((all * 90)) ] || { grep hostile_block t.folded | head; fail "less than 90% of the blocks complete"; }
}

# Twelve distinct copies of python3.11 (each its own inode: its own table of
# 65,000 rows), run one after another in 6M of table memory (786,000 rows):
# the copies no process runs any more are taken back, and the last ones'
# stacks are complete.
test_tables_python_copies() {
	local py=/usr/bin/python3.11 i all root
	[ -x $py ] || skip "no $py"
	for i in $(seq 12); do
		cp $py "py$i" || fail "cannot copy $py"
	done
	printf 'import time\ndef py_sleeper():\n    for i in range(4):\n        time.sleep(0.05)\npy_sleeper()\n' >s.py
	printf 'for i in $(seq 12); do PYTHONHOME=/usr ./py$i s.py || exit 1; done\n' >run.sh
	record_truth --unwind-mem 6M -o p.data -- sh run.sh
	cat rec.err
	grep -q "were taken back" rec.err || fail "no table was taken back"
	! grep -q "left without a table" rec.err || fail "an object was left without a table"
	"$OFFCPU" report -i p.data --folded >p.folded || fail "report failed"
	for i in 10 11 12; do
		all=$(awk -v c="py$i;" 'index($0, c) == 1 && /clock_nanosleep/ { t += $NF } END { print t + 0 }' p.folded)
		root=$(awk -v c="py$i;" 'index($0, c) == 1 && /clock_nanosleep/ && /;Py_BytesMain;/ && !/\[(no unwind|unwind:)/ { t += $NF } END { print t + 0 }' p.folded)
		echo "py$i: $((all / 1000)) ms asleep, $((root / 1000)) ms reaching main"
		[ "$all" -ge 150000 ] || fail "py$i: only $((all / 1000)) ms of sleep recorded"
		[ "$root" = "$all" ] || { grep "^py$i;" p.folded; fail "py$i: not every sleep reaches main"; }
	done
	note "12 copies of python3.11 in 6M: the last three's sleeps all reach main"
}
