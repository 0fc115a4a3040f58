# shellcheck shell=bash
# Python frames (issue 24): the Python functions of a blocked CPython 3.11
# thread in its user stack, inside the _PyEval_EvalFrameDefault frame that
# runs them, named "[py] QUALNAME (FILE:LINE)" by MMAP2 records that perf
# reads, taken while the process lives (read here after it exited); in the
# wakers' stacks too; the layout offcpu reads checked against DWARF.

PY311=/usr/bin/python3.11
PYWAITS=$ROOT/tests/workloads/py_waits.py

need_python() {
	[ -x $PY311 ] || skip "no $PY311 (Debian: python3.11)"
}

# py_samples FILE EVENT: one line per EVENT sample: "tid period |FUNC:LINE|..."
# (the [py] frames' names without their files)
py_samples() {
	perf script -i "$1" -F tid,period,event,ip,dso 2>"$1.script.err" |
		awk -v ev="$2:" '
			function out() { if (tid != "") print tid, per, names "|"; tid = "" }
			/^ *[0-9]+ +[0-9]+ +[a-z-]+: *$/ { out(); if ($3 == ev) { tid = $1; per = $2; names = "" }; next }
			tid != "" && /\(\[py\] / {
				s = $0; sub(/^[^(]*\(\[py\] /, "", s); l = s
				sub(/ \(.*$/, "", s); sub(/^.*:/, "", l); sub(/\)\)$/, "", l)
				names = names "|" s ":" l }
			END { out() }'
}

# py_check TRUTH SAMPLES: each waiting thread's time is under its function
# (90% at least), at the line it waits on (its current line, not the
# function's first), and that time is what the thread measured itself
py_check() {
	local func tid waited total under line at
	while read -r func tid waited; do
		line=$(grep -n "# waits: $func\$" "$PYWAITS" | cut -d: -f1)
		total=$(awk -v t="$tid" '$1 == t { s += $2 } END { printf "%.0f", s }' "$2")
		under=$(awk -v t="$tid" -v f="|$func:" '$1 == t && index($0, f) { s += $2 } END { printf "%.0f", s }' "$2")
		at=$(awk -v t="$tid" -v f="|$func:$line|" '$1 == t && index($0, f) { s += $2 } END { printf "%.0f", s }' "$2")
		awk -v a="$at" -v u="$under" 'BEGIN { exit !(a >= 0.9 * u) }' ||
			fail "$func: only $at of its $under ns are at line $line, where it waits"
		py_figures="${py_figures:-}$func: $((under / 1000000)) of $((total / 1000000)) ms, $((at / 1000000)) at line $line (measured $((waited / 1000000)) ms); "
		[ "$total" -gt 0 ] || fail "no sample of $func's thread $tid"
		awk -v u="$under" -v t="$total" 'BEGIN { exit !(u >= 0.9 * t) }' ||
			fail "$func: only $under of its thread's $total ns are under it"
		# its waits, and the little the thread waits around them (the GIL, its start)
		awk -v u="$under" -v w="$waited" 'BEGIN { exit !(u >= 0.97 * w && u <= w * 1.05 + 50000000) }' ||
			fail "$func: $under ns under it, the workload measured $waited ns"
	done <"$1"
}

# perf script names each blocked thread's Python function, after the process exited
test_python_frames_waits() {
	local func tid waited got
	need_python
	"$OFFCPU" record -o py.data -- $PY311 "$PYWAITS" -r truth.txt 2>rec.err || fail "record failed"
	cat rec.err truth.txt
	[ "$(wc -l <truth.txt)" = 3 ] || fail "the workload did not measure its three waits"
	grep -q "Python frames: .* walks" rec.err || fail "the summary says nothing of Python frames"
	py_samples py.data offcpu-time >samples.txt
	! grep -qi 'error\|unexpected\|failed' py.data.script.err || { cat py.data.script.err; fail "perf script complained"; }
	grep '|' samples.txt | head -5
	py_check truth.txt samples.txt
	# the spliced frames sit inside their interpreter frame: a Python frame is
	# followed by another one or by _PyEval_EvalFrameDefault's
	perf script -i py.data -F ip,sym,dso 2>/dev/null |
		awk '/\(\[py\] / { py = 1; next } py && NF { if ($0 !~ /_PyEval_EvalFrameDefault/) { print; bad = 1 }; py = 0 } END { exit bad }' ||
		fail "a group of Python frames is not inside _PyEval_EvalFrameDefault"
	# offcpu report names them too (folded stacks in microseconds)
	"$OFFCPU" report -i py.data --folded >py.folded 2>report.err || fail "report --folded failed"
	while read -r func tid waited; do
		got=$(awk -v f=";$func;" 'index($0, f) { s += $NF } END { printf "%.0f", s * 1000 }' py.folded)
		within 5 "$got" "$waited" || fail "report --folded: $got ns under $func, the workload measured $waited ns"
	done <truth.txt
	note "$py_figures"
}

# --no-python: the native stacks alone, as before
test_python_frames_off() {
	need_python
	"$OFFCPU" record --no-python -o py.data -- $PY311 "$PYWAITS" -r truth.txt 2>rec.err || fail "record failed"
	perf script -i py.data -F ip,dso 2>/dev/null | grep -q '\[py\]' && fail "--no-python still has Python frames"
	perf script -i py.data -F ip,sym 2>/dev/null | grep -q _PyEval_EvalFrameDefault ||
		fail "no interpreter frame at all"
}

# --wakers: the lock waiter was woken by the holder's release, in lock_holder_hold
test_python_frames_wakers() {
	local tid total by line
	need_python
	"$OFFCPU" record --wakers -o py.data -- $PY311 "$PYWAITS" -r truth.txt 2>rec.err || fail "record failed"
	cat truth.txt
	tid=$(awk '$1 == "lock_waiter_wait" { print $2 }' truth.txt)
	line=$(grep -n "# wakes: lock_waiter_wait\$" "$PYWAITS" | cut -d: -f1)
	# each offcpu-waker sample follows the offcpu-time sample of the wait it ended
	perf script -i py.data -F tid,period,event,ip,dso 2>/dev/null |
		awk '
			function out() { if (kind != "") print kind, tid, per, names "|"; kind = "" }
			/^ *[0-9]+ +[0-9]+ +[a-z-]+: *$/ { out(); kind = $3; tid = $1; per = $2; names = ""; next }
			/\(\[py\] / {
				s = $0; sub(/^[^(]*\(\[py\] /, "", s); l = s
				sub(/ \(.*$/, "", s); sub(/^.*:/, "", l); sub(/\)\)$/, "", l)
				names = names "|" s ":" l }
			END { out() }' >pairs.txt
	awk -v t="$tid" '$1 == "offcpu-time:" { w = ($2 == t && index($0, "|lock_waiter_wait:")); next }
		$1 == "offcpu-waker:" && w { print; w = 0 }' pairs.txt >wakers.txt
	head -3 wakers.txt
	total=$(awk '{ s += $3 } END { printf "%.0f", s }' wakers.txt)
	# at the line that releases the lock
	by=$(awk -v f="|lock_holder_hold:$line|" 'index($0, f) { s += $3 } END { printf "%.0f", s }' wakers.txt)
	[ "${total:-0}" -gt 0 ] || fail "no waker of the lock waiter"
	awk -v b="$by" -v t="$total" 'BEGIN { exit !(b >= 0.9 * t) }' ||
		fail "of the lock waiter's $total ns with a waker, only $by were ended in lock_holder_hold at line $line"
	note "lock waiter: $((by / 1000000)) of $((total / 1000000)) ms woken in lock_holder_hold at line $line (lock.release())"
}

# the 3.11 layout offcpu reads (src/offcpu.h) is python3.11's own (DWARF from
# python3.11-dbg), and glibc's TSS slots are where libc6-dbg says
test_python_offsets_dwarf() {
	local line name want got expr
	need_python
	command -v gdb >/dev/null || skip "no gdb (Debian: gdb)"
	gdb -batch -ex 'ptype struct _PyInterpreterFrame' $PY311 2>&1 | grep -q f_code ||
		skip "no DWARF for $PY311 (Debian: python3.11-dbg)"
	gdb -batch -ex 'ptype struct pthread' /lib/x86_64-linux-gnu/libc.so.6 2>&1 | grep -q specific_1stblock ||
		skip "no DWARF for glibc (Debian: libc6-dbg)"
	while read -r name expr; do
		want=$(sed -nE "s/^#define OFFCPU_${name} ([0-9]+).*/\\1/p" "$ROOT/src/offcpu.h")
		[ -n "$want" ] || fail "no OFFCPU_$name in src/offcpu.h"
		if [ "$name" = GLIBC_TSS_SLOTS ]; then
			got=$(gdb -batch -ex "print (long)&((struct pthread *)0)->specific_1stblock" /lib/x86_64-linux-gnu/libc.so.6 2>&1 | sed -nE 's/^\$1 = ([0-9]+)$/\1/p')
		else
			got=$(gdb -batch -ex "print (long)($expr)" $PY311 2>&1 | sed -nE 's/^\$1 = ([0-9]+)$/\1/p')
		fi
		echo "$name: offcpu $want, DWARF ${got:-?}"
		[ "$got" = "$want" ] || fail "$name: offcpu reads $want, DWARF says ${got:-nothing}"
	done <<-'EOF'
		PY311_RUNTIME_TSS &((struct pyruntimestate *)0)->gilstate.autoTSSkey
		PY311_TSTATE_CFRAME &((PyThreadState *)0)->cframe
		PY311_CFRAME_CURRENT &((struct _PyCFrame *)0)->current_frame
		PY311_FRAME_CODE &((struct _PyInterpreterFrame *)0)->f_code
		PY311_FRAME_PREVIOUS &((struct _PyInterpreterFrame *)0)->previous
		PY311_FRAME_IS_ENTRY &((struct _PyInterpreterFrame *)0)->is_entry
		PY311_CODE_FIRSTLINENO &((PyCodeObject *)0)->co_firstlineno
		PY311_CODE_FILENAME &((PyCodeObject *)0)->co_filename
		PY311_CODE_QUALNAME &((PyCodeObject *)0)->co_qualname
		PY311_STR_STATE &((PyASCIIObject *)0)->state
		PY311_STR_ASCII sizeof(PyASCIIObject)
		PY311_STR_UTF8 &((PyCompactUnicodeObject *)0)->utf8
		PY311_FRAME_PREV_INSTR &((struct _PyInterpreterFrame *)0)->prev_instr
		PY311_CODE_LINETABLE &((PyCodeObject *)0)->co_linetable
		PY311_CODE_CODE &((PyCodeObject *)0)->co_code_adaptive
		PY311_BYTES_SIZE &((PyVarObject *)0)->ob_size
		PY311_BYTES_DATA &((PyBytesObject *)0)->ob_sval
		GLIBC_TSS_SLOTS -
	EOF
	# the ASCII bit of the state, and the key's place in Py_tss_t
	got=$(gdb -batch -ex 'print (long)&((Py_tss_t *)0)->_key' $PY311 2>&1 | sed -nE 's/^\$1 = ([0-9]+)$/\1/p')
	[ "$got" = 4 ] || fail "Py_tss_t._key is at ${got:-?}, offcpu reads 4"
	# (gdb prints a bit field's place as "/* BYTE: BIT | SIZE */")
	gdb -batch -ex 'ptype /o PyASCIIObject' $PY311 2>&1 | grep -E '^ */\* *32: *6 *\| *4 \*/ *unsigned int ascii : 1;' ||
		fail "the ascii bit is not bit 6 of PyASCIIObject.state"
}

# -p: a running Python process is looked at before its first block after
# the attach; only the waits already under way then (their stacks read
# while they sleep) have no Python frame: one wait of 200 ms at most per
# thread. (24 rounds of 200 ms: the process outlives offcpu's start on a
# busy machine.)
test_python_frames_attach() {
	local pid func tid waited total under
	need_python
	PY_WAITS_ROUNDS=24 $PY311 "$PYWAITS" -r truth.txt &
	pid=$!
	sleep 0.4
	"$OFFCPU" record -p $pid -o py.data 2>rec.err || fail "record -p failed"
	wait $pid
	py_samples py.data offcpu-time >samples.txt
	while read -r func tid waited; do
		total=$(awk -v t="$tid" '$1 == t { s += $2 } END { printf "%.0f", s }' samples.txt)
		under=$(awk -v t="$tid" -v f="|$func:" '$1 == t && index($0, f) { s += $2 } END { printf "%.0f", s }' samples.txt)
		py_figures="${py_figures:-}$func: $((under / 1000000)) of $((total / 1000000)) ms; "
		[ "$under" -gt 0 ] || fail "$func: no time under it (its thread has $total ns)"
		[ $((total - under)) -le 220000000 ] ||
			fail "$func: $((total - under)) of its thread's $total ns are not under it, more than the one wait of 200 ms under way at the attach"
	done <truth.txt
	note "$py_figures"
}
