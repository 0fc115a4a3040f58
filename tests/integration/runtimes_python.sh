# shellcheck shell=bash
# Python frames (issues 24, 29): the Python functions of a blocked CPython
# thread (3.10 to 3.13) in its user stack, inside the
# _PyEval_EvalFrameDefault frame that runs them, named "[py] QUALNAME
# (FILE:LINE)" by MMAP2 records that perf reads, taken while the process
# lives (read here after it exited); in the wakers' stacks too; the layouts
# offcpu reads checked against each version's DWARF.

PY311=/usr/bin/python3.11
PYWAITS=$ROOT/tests/workloads/py_waits.py

need_python() {
	[ -x $PY311 ] || skip "no $PY311 (Debian: python3.11)"
}

# pyenv_python MINOR: PY is pyenv's CPython 3.MINOR (the project's
# machines have 3.10 to 3.13: doc/runtimes.md), or SKIP saying what is missing
pyenv_python() {
	local root p
	root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")
	for p in "$root"/versions/3."$1".*/bin/python3."$1"; do
		[ -x "$p" ] && { PY=$p; return 0; }
	done
	skip "no CPython 3.$1 from pyenv under $root/versions (pyenv install 3.$1)"
}

# py_samples FILE EVENT: one line per EVENT sample: "tid period |FUNC:LINE|..."
# (the [py] frames' names without their files, as perf names them: the
# symbols of the symbol file beside the recording)
py_samples() {
	perf script -i "$1" -F tid,period,event,ip,sym 2>"$1.script.err" |
		awk -v ev="$2:" '
			function out() { if (tid != "") print tid, per, names "|"; tid = "" }
			/^ *[0-9]+ +[0-9]+ +[a-z-]+: *$/ { out(); if ($3 == ev) { tid = $1; per = $2; names = "" }; next }
			tid != "" && / \[py\] / {
				s = $0; sub(/^[^[]*\[py\] /, "", s); l = s
				sub(/ \(.*$/, "", s); sub(/^.*:/, "", l); sub(/\)$/, "", l)
				names = names "|" s ":" l }
			END { out() }'
}

# perf_report_check FILE TRUTH: perf report --stdio puts each waiting
# thread's time under its function's symbols (90% of it at least)
perf_report_check() {
	local func tid waited total under
	perf report -i "$1" --stdio --no-children --sort pid -g none >perf.tids 2>perf.err ||
		{ cat perf.err; fail "perf report failed"; }
	while read -r func tid waited; do
		# (offcpu-time's section: other events follow it)
		total=$(awk -v t="$tid" '/of event / { ev = index($0, "of event '"'"'offcpu-time'"'"'") }
			ev && $2 ~ "^" t ":" { sub(/%/, "", $1); print $1 }' perf.tids)
		perf report -i "$1" --stdio --tid "$tid" --children --sort sym -g none >perf.sym 2>perf.err ||
			{ cat perf.err; fail "perf report --tid $tid failed"; }
		under=$(awk -v f="[py] $func (" '/of event / { ev = index($0, "of event '"'"'offcpu-time'"'"'") }
			ev && index($0, f) { sub(/%/, "", $1); s += $1 } END { printf "%.2f", s }' perf.sym)
		perf_figures="${perf_figures:-}$func: $under% of $total%; "
		awk -v u="$under" -v t="${total:-0}" 'BEGIN { exit !(t > 0 && u >= 0.9 * t) }' ||
			{ head -20 perf.sym; fail "perf report: $func has $under% of its thread's ${total:-0}%"; }
	done <"$2"
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

# py_waits PYTHON: perf script and offcpu report name each blocked thread's
# Python function, after the process exited
py_waits() {
	local py=$1 func tid waited got
	"$OFFCPU" record -o py.data -- "$py" "$PYWAITS" -r truth.txt 2>rec.err || fail "record failed"
	cat rec.err truth.txt
	[ "$(wc -l <truth.txt)" = 3 ] || fail "the workload did not measure its three waits"
	grep -q "Python frames: .* walks" rec.err || fail "the summary says nothing of Python frames"
	! grep -q "Python frames not read" rec.err || fail "the summary says Python frames were not read"
	py_samples py.data offcpu-time >samples.txt
	! grep -qi 'error\|unexpected\|failed' py.data.script.err || { cat py.data.script.err; fail "perf script complained"; }
	grep '|' samples.txt | head -5
	py_check truth.txt samples.txt
	# the spliced frames sit inside their interpreter frame: a Python frame is
	# followed by another one or by _PyEval_EvalFrameDefault's
	perf script -i py.data -F ip,sym 2>/dev/null |
		awk '/ \[py\] / { py = 1; next } py && NF { if ($0 !~ /_PyEval_EvalFrameDefault/) { print; bad = 1 }; py = 0 } END { exit bad }' ||
		fail "a group of Python frames is not inside _PyEval_EvalFrameDefault"
	# perf report names them (from the symbol file beside the recording)
	[ -s .py.data.names ] || fail "no symbol file .py.data.names beside the recording"
	perf_report_check py.data truth.txt
	# offcpu report names them too (folded stacks in microseconds)
	"$OFFCPU" report -i py.data --folded >py.folded 2>report.err || fail "report --folded failed"
	while read -r func tid waited; do
		got=$(awk -v f=";$func;" 'index($0, f) { s += $NF } END { printf "%.0f", s * 1000 }' py.folded)
		within 5 "$got" "$waited" || fail "report --folded: $got ns under $func, the workload measured $waited ns"
	done <truth.txt
	note "$("$py" -c 'import sys; print(sys.version.split()[0])'): ${py_figures}perf report: $perf_figures"
}

# Debian's python3.11 (libpython linked into the executable)
test_python_frames_waits() {
	need_python
	py_waits $PY311
}

# pyenv's CPython 3.10 to 3.13 (libpython3.N.so): each version's layout
test_python_frames_waits_310() {
	pyenv_python 10
	py_waits "$PY"
}

test_python_frames_waits_311() {
	pyenv_python 11
	py_waits "$PY"
}

test_python_frames_waits_312() {
	pyenv_python 12
	py_waits "$PY"
}

test_python_frames_waits_313() {
	pyenv_python 13
	py_waits "$PY"
}

# py_exec PYTHON: 200 functions made by exec() one after another, each
# called once and freed (tests/workloads/py_exec.py), the next one's code
# object often at the address of the one before: each is named on its own,
# with its own time (a name by address alone had 164 names, one with 20
# functions' time)
py_exec() {
	local py=$1 names bad
	"$OFFCPU" record -o ex.data -- "$py" "$ROOT/tests/workloads/py_exec.py" -n 200 -p 0.02 -r truth.txt 2>rec.err ||
		fail "record failed"
	[ "$(wc -l <truth.txt)" = 200 ] || fail "the workload did not measure its 200 functions"
	"$OFFCPU" report -i ex.data --folded >ex.folded 2>report.err || fail "report --folded failed"
	# the time under each function, from the folded stacks (us)
	awk '{ n = split($0, f, ";"); for (i = 1; i <= n; i++) if (f[i] ~ /^func_[0-9][0-9][0-9]$/) { t[f[i]] += $NF; break } }
	     END { for (k in t) print k, t[k] * 1000 }' ex.folded | sort >got.txt
	names=$(wc -l <got.txt)
	# each within 10% (and 3 ms) of what it measured; none with another's time
	bad=$(awk 'NR == FNR { w[$1] = $3; next } { d = $2 - w[$1]; if (d < 0) d = -d; if (!($1 in w) || d > w[$1] * 0.1 + 3000000) print $1, $2, w[$1] }' truth.txt got.txt)
	[ -z "$bad" ] || { echo "$bad" | head; fail "$(echo "$bad" | wc -l) functions not with their own time (name, ns, measured)"; }
	[ "$names" = 200 ] || { head -3 got.txt; fail "$names of the 200 functions named"; }
	# perf names them too, each apart
	names=$(perf script -i ex.data -F ip,sym 2>/dev/null | grep -oE '\[py\] func_[0-9]{3} ' | sort -u | wc -l)
	[ "$names" = 200 ] || fail "perf script names $names of the 200 functions"
	grep -q "code objects named ([1-9][0-9]* at the address of a freed one" rec.err ||
		fail "no code object counted as named at the address of a freed one"
	note "$("$py" -c 'import sys; print(sys.version.split()[0])'): 200 of 200 functions named, each with its own time; $(sed -nE 's/.*named \(([0-9]+) at the address of a freed one.*/\1/p' rec.err) named at a freed one's address"
}

test_python_exec_names() {
	need_python
	py_exec $PY311
}

test_python_exec_names_310() {
	pyenv_python 10
	py_exec "$PY"
}

test_python_exec_names_312() {
	pyenv_python 12
	py_exec "$PY"
}

test_python_exec_names_313() {
	pyenv_python 13
	py_exec "$PY"
}

# --no-python: the native stacks alone, as before
test_python_frames_off() {
	need_python
	"$OFFCPU" record --no-python -o py.data -- $PY311 "$PYWAITS" -r truth.txt 2>rec.err || fail "record failed"
	perf script -i py.data -F ip,sym,dso 2>/dev/null | grep -q '\[py\]' && fail "--no-python still has Python frames"
	[ ! -e .py.data.names ] || fail "--no-python: a symbol file of no named frame"
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
	perf script -i py.data -F tid,period,event,ip,sym 2>/dev/null |
		awk '
			function out() { if (kind != "") print kind, tid, per, names "|"; kind = "" }
			/^ *[0-9]+ +[0-9]+ +[a-z-]+: *$/ { out(); kind = $3; tid = $1; per = $2; names = ""; next }
			/ \[py\] / {
				s = $0; sub(/^[^[]*\[py\] /, "", s); l = s
				sub(/ \(.*$/, "", s); sub(/^.*:/, "", l); sub(/\)$/, "", l)
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

# check_layout GDB_TARGET MINOR: every OFFCPU_PY3<MINOR>_* offset of
# src/record/pylayout.h is what GDB_TARGET's DWARF says; the table below
# names, for each field, the versions that have it and its DWARF expression
check_layout() {
	local target=$1 minor=$2 versions name expr want got n=0 i=0
	local -a names exprs args vals
	while read -r versions name expr; do
		[[ ",$versions," == *",$minor,"* ]] || continue
		names+=("$name")
		exprs+=("$expr")
		args+=(-ex "print (long)($expr)")
	done <<-'EOF'
		10,11 RUNTIME_TSS &((_PyRuntimeState *)0)->gilstate.autoTSSkey
		12,13 RUNTIME_TSS &((_PyRuntimeState *)0)->autoTSSkey
		10 TSTATE_FRAME &((PyThreadState *)0)->frame
		13 TSTATE_FRAME &((PyThreadState *)0)->current_frame
		11,12 TSTATE_CFRAME &((PyThreadState *)0)->cframe
		11,12 CFRAME_CURRENT &((struct _PyCFrame *)0)->current_frame
		10 FRAME_BACK &((PyFrameObject *)0)->f_back
		10 FRAME_CODE &((PyFrameObject *)0)->f_code
		10 FRAME_LASTI &((PyFrameObject *)0)->f_lasti
		11,12 FRAME_CODE &((struct _PyInterpreterFrame *)0)->f_code
		13 FRAME_CODE &((struct _PyInterpreterFrame *)0)->f_executable
		11,12,13 FRAME_PREVIOUS &((struct _PyInterpreterFrame *)0)->previous
		11,12 FRAME_PREV_INSTR &((struct _PyInterpreterFrame *)0)->prev_instr
		13 FRAME_INSTR_PTR &((struct _PyInterpreterFrame *)0)->instr_ptr
		11 FRAME_IS_ENTRY &((struct _PyInterpreterFrame *)0)->is_entry
		12,13 FRAME_OWNER &((struct _PyInterpreterFrame *)0)->owner
		12,13 OWNED_BY_CSTACK FRAME_OWNED_BY_CSTACK
		10,11,12,13 CODE_FIRSTLINENO &((PyCodeObject *)0)->co_firstlineno
		10,11,12,13 CODE_FILENAME &((PyCodeObject *)0)->co_filename
		10,11 CODE_NAME &((PyCodeObject *)0)->co_name
		11,12,13 CODE_QUALNAME &((PyCodeObject *)0)->co_qualname
		10,11,12,13 CODE_LINETABLE &((PyCodeObject *)0)->co_linetable
		11,12,13 CODE_CODE &((PyCodeObject *)0)->co_code_adaptive
		12,13 CODE_VERSION &((PyCodeObject *)0)->co_version
		10 CODE_SIZE sizeof(PyCodeObject)
		10,11,12,13 STR_HASH &((PyASCIIObject *)0)->hash
		10,11,12,13 STR_STATE &((PyASCIIObject *)0)->state
		10,11,12,13 STR_ASCII sizeof(PyASCIIObject)
		10,11,12,13 STR_UTF8 &((PyCompactUnicodeObject *)0)->utf8
		10,11,12,13 STR_SIZE sizeof(PyUnicodeObject)
		10,11,12,13 BYTES_SIZE &((PyVarObject *)0)->ob_size
		10,11,12,13 BYTES_DATA &((PyBytesObject *)0)->ob_sval
	EOF
	# what offcpu compares with the object's own type objects at each
	# process, and the key's place in Py_tss_t, last
	args+=(-ex 'print (long)&((PyTypeObject *)0)->tp_basicsize' -ex 'print (long)PyCode_Type.tp_basicsize'
		-ex 'print (long)&((Py_tss_t *)0)->_key' -ex 'ptype /o PyASCIIObject')
	# one gdb for all (each prints "$N = VALUE", or an error line instead)
	gdb -batch "${args[@]}" "$target" >gdb.out 2>&1
	mapfile -t vals < <(sed -nE 's/^\$[0-9]+ = (-?[0-9]+)$/\1/p; /^(No symbol|There is no member|A syntax error)/s/.*/?/p' gdb.out)
	for ((i = 0; i < ${#names[@]}; i++)); do
		name=${names[$i]}
		got=${vals[$i]:-?}
		want=$(sed -nE "s/^#define OFFCPU_PY3${minor}_${name} ([0-9]+).*/\\1/p" "$ROOT/src/record/pylayout.h")
		[ -n "$want" ] || fail "3.$minor: no OFFCPU_PY3${minor}_$name in src/record/pylayout.h"
		echo "3.$minor $name: offcpu $want, DWARF $got"
		[ "$got" = "$want" ] || fail "3.$minor $name: offcpu reads $want, DWARF says $got (${exprs[$i]})"
		n=$((n + 1))
	done
	[ "$n" -ge 15 ] || fail "3.$minor: only $n offsets checked"
	want=$(sed -nE 's/^#define OFFCPU_PY_TYPE_BASICSIZE ([0-9]+).*/\1/p' "$ROOT/src/record/pylayout.h")
	[ "${vals[$i]:-?}" = "$want" ] || fail "3.$minor: PyTypeObject.tp_basicsize is at ${vals[$i]:-?}, offcpu reads $want"
	want=$(sed -nE "s/^#define OFFCPU_PY3${minor}_CODE_(CODE|SIZE) ([0-9]+).*/\\2/p" "$ROOT/src/record/pylayout.h")
	[ "${vals[$i + 1]:-?}" = "$want" ] || fail "3.$minor: PyCode_Type.tp_basicsize is ${vals[$i + 1]:-?}, offcpu expects $want"
	[ "${vals[$i + 2]:-?}" = 4 ] || fail "3.$minor: Py_tss_t._key is at ${vals[$i + 2]:-?}, offcpu reads 4"
	# (gdb prints a bit field's place as "/* BYTE: BIT | SIZE */")
	grep -qE '^ */\* *32: *6 *\| *4 \*/ *unsigned int ascii : 1;' gdb.out ||
		fail "3.$minor: the ascii bit is not bit 6 of PyASCIIObject.state"
	note "3.$minor: $n offsets as DWARF says"
}

# the 3.11 layout offcpu reads (src/record/pylayout.h) is Debian's python3.11's
# own (DWARF from python3.11-dbg), and glibc's TSS slots are where libc6-dbg says
test_python_offsets_dwarf() {
	local want got
	need_python
	command -v gdb >/dev/null || skip "no gdb (Debian: gdb)"
	gdb -batch -ex 'ptype struct _PyInterpreterFrame' $PY311 2>&1 | grep -q f_code ||
		skip "no DWARF for $PY311 (Debian: python3.11-dbg)"
	gdb -batch -ex 'ptype struct pthread' /lib/x86_64-linux-gnu/libc.so.6 2>&1 | grep -q specific_1stblock ||
		skip "no DWARF for glibc (Debian: libc6-dbg)"
	check_layout $PY311 11
	want=$(sed -nE "s/^#define OFFCPU_GLIBC_TSS_SLOTS ([0-9]+).*/\\1/p" "$ROOT/src/offcpu.h")
	got=$(gdb -batch -ex "print (long)&((struct pthread *)0)->specific_1stblock" /lib/x86_64-linux-gnu/libc.so.6 2>&1 | sed -nE 's/^\$1 = ([0-9]+)$/\1/p')
	echo "GLIBC_TSS_SLOTS: offcpu $want, DWARF ${got:-?}"
	[ "$got" = "$want" ] || fail "GLIBC_TSS_SLOTS: offcpu reads $want, DWARF says ${got:-nothing}"
}

# each layout offcpu reads is its version's own: pyenv's builds of 3.10 to
# 3.13 carry their DWARF in libpython3.N.so.1.0
test_python_offsets_dwarf_pyenv() {
	local minor lib
	command -v gdb >/dev/null || skip "no gdb (Debian: gdb)"
	for minor in 10 11 12 13; do
		pyenv_python $minor
		lib=$(dirname "$(dirname "$PY")")/lib/libpython3.$minor.so.1.0
		[ -f "$lib" ] || skip "no $lib (pyenv's build of 3.$minor without --enable-shared?)"
		gdb -batch -ex 'ptype PyCodeObject' "$lib" 2>&1 | grep -q co_filename ||
			skip "no DWARF in $lib"
		check_layout "$lib" $minor
	done
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

# py_attach PYTHON: -p attaches while every thread of the program waits in
# its Python function (tests/workloads/py_blocked.py): their stacks are read
# from their memory as they sleep, their Python frames too; each thread's
# time is under its function, in offcpu report and in the offcpu-before
# samples of how long they had waited
py_attach() {
	local py=$1 pid func tid total under before
	rm -f ready.txt
	"$py" "$ROOT/tests/workloads/py_blocked.py" -t 4 -r ready.txt &
	pid=$!
	wait_for_line ready.txt blocked_sleep 20 || fail "the workload did not start"
	"$OFFCPU" record -p $pid -d 1 -o at.data 2>rec.err || fail "record -p failed"
	kill $pid 2>/dev/null
	wait $pid 2>/dev/null
	while read -r func tid; do
		"$OFFCPU" report -i at.data --folded --tid="$tid" >at.folded 2>/dev/null || fail "report --folded failed"
		total=$(awk '{ s += $NF } END { printf "%.0f", s }' at.folded)
		under=$(awk -v f=";$func;" 'index($0, f) { s += $NF } END { printf "%.0f", s }' at.folded)
		"$OFFCPU" report -i at.data --folded --tid="$tid" -e offcpu-before >at.before 2>/dev/null ||
			fail "report -e offcpu-before failed"
		before=$(awk -v f=";$func;" 'index($0, f) { s += $NF } END { printf "%.0f", s }' at.before)
		py_figures="${py_figures:-}$func: $((under / 1000)) of $((total / 1000)) ms; "
		[ "$total" -ge 500000 ] || fail "$func: only $total us of its thread recorded"
		awk -v u="$under" -v t="$total" 'BEGIN { exit !(u >= 0.9 * t) }' ||
			{ cat at.folded; fail "$func: only $under of its thread's $total us are under it"; }
		[ "${before:-0}" -gt 0 ] || { cat at.before; fail "$func: its wait before the recording is not under it"; }
	done <ready.txt
	perf_report_check at.data ready.txt
	grep -q "threads blocked at the start with their Python frames read" rec.err ||
		fail "the summary does not say Python frames were read at the start"
	note "$("$py" -c 'import sys; print(sys.version.split()[0])'): ${py_figures}perf report: $perf_figures"
}

test_python_frames_attach_blocked() {
	need_python
	py_attach $PY311
}

test_python_frames_attach_blocked_310() {
	pyenv_python 10
	py_attach "$PY"
}

test_python_frames_attach_blocked_312() {
	pyenv_python 12
	py_attach "$PY"
}

test_python_frames_attach_blocked_313() {
	pyenv_python 13
	py_attach "$PY"
}

# unnamed_py FILE: the Python frames of FILE's samples that neither perf
# (its symbol file) nor offcpu report (its named records) names
unnamed_py() {
	local p o
	# (a frame perf finds no symbol for: its raw address, or an address in
	# a symbol file that does not name it)
	p=$(perf script -i "$1" -F ip,sym,dso 2>/dev/null |
		awk '($1 ~ /^10000000000/ || /names\)$/) && !/\[py\] / { n++ } END { print n + 0 }')
	o=$("$OFFCPU" report -i "$1" --folded 2>/dev/null | awk -F';' '/_PyEval_EvalFrameDefault;\[unknown\]/ { n++ } END { print n + 0 }')
	echo $((p + o))
}

# --switch-output: every file names its own Python frames, the ones a file
# before it named too (a file after the first had 1,015 unnamed, 20 named),
# whether it ends at a size in the middle of a round or on time
test_python_frames_rotation() {
	local mode f n named files all=
	need_python
	for mode in 8K 400ms; do
		rm -f rot.data.*
		"$OFFCPU" record --switch-output=$mode -o rot.data -- $PY311 "$PYWAITS" -r truth.txt 2>rec.err ||
			fail "record --switch-output=$mode failed"
		files=$(ls rot.data.* | wc -l)
		[ "$files" -ge 3 ] || fail "--switch-output=$mode: only $files files"
		for f in rot.data.*; do
			n=$(unnamed_py "$f")
			named=$(perf script -i "$f" -F ip,sym 2>/dev/null | grep -c ' \[py\] ')
			[ "$n" = 0 ] || fail "--switch-output=$mode: $n Python frames unnamed in $f ($named named)"
			[ -s ".$f.names" ] || [ "$named" = 0 ] || fail "no symbol file .$f.names"
		done
		# the files hold the waits whole
		for f in rot.data.*; do py_samples "$f" offcpu-time; done >samples.txt
		py_check truth.txt samples.txt
		all="${all:-}--switch-output=$mode: $files files, every Python frame named; $py_figures"
		py_figures=
	done
	note "$all"
}

# the flight recorder: each snapshot names the Python frames of its own
# samples, those an earlier snapshot named too
test_python_frames_snapshots() {
	local rec f n files=0
	need_python
	"$OFFCPU" record --overwrite -o fl.data -- $PY311 "$PYWAITS" -r truth.txt 2>rec.err &
	rec=$!
	wait_for_line rec.err 'armed' 20 || fail "the flight recorder did not start"
	sleep 0.8
	kill -USR2 $rec
	sleep 0.5
	kill -USR2 $rec
	wait $rec || fail "record --overwrite failed"
	for f in fl.data.*; do
		files=$((files + 1))
		n=$(unnamed_py "$f")
		[ "$n" = 0 ] || fail "$n Python frames unnamed in snapshot $f"
		# the snapshots after the first need names the first wrote
		[ $files = 1 ] || [ "$(perf script -i "$f" -F ip,sym 2>/dev/null | grep -c ' \[py\] ')" -gt 0 ] ||
			fail "no Python frame named in snapshot $f"
	done
	[ "$files" -ge 2 ] || fail "only $files snapshots"
	note "$files snapshots, every Python frame named in each"
}

# a Python process whose frames are not read is said at normal verbosity,
# with why and which (native frames only, before: -vv printed its version)
test_python_not_read_said() {
	local fake=$ROOT/$BUILD/tests/fakepy314
	[ -x "$fake" ] || skip "no $fake (make check builds it)"
	"$OFFCPU" record -o np.data -- "$fake" 1 2>rec.err || { cat rec.err; fail "record failed"; }
	grep -q "Python frames not read in 1 processes running a CPython offcpu has no layout of (it reads 3.10 to 3.13) (the first: pid [0-9]* fakepy314, 3.14)" rec.err ||
		{ cat rec.err; fail "the summary does not say the 3.14 process's frames were not read"; }
	note "$(grep 'Python frames not read' rec.err)"
}
