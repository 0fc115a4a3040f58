# Integration tests of offcpu report (issue 4): symbols, outputs read back by
# their real clients (go tool pprof, headless chromium), perf's own files,
# filters and hostile input. Each test_* runs in its own temporary directory.
# shellcheck shell=bash

GT_FUNCS="gt_sleep_thread gt_pipe_thread gt_poll_thread gt_feed_thread gt_signal_thread"

record_gt() {
	record_truth -o gt.data -- "$GT" -r truth.txt
	[ -s truth.txt ] || fail "no ground truth"
}

# folded_per_comm FILE: "comm ns" summed from folded lines (VALUE in us)
folded_per_comm() {
	awk '{ v = $NF; split($0, a, ";"); s[a[1]] += v } END { for (c in s) printf "%s %.0f\n", c, s[c] * 1000 }' "$1"
}

# --folded totals per thread match what each thread measured, within 5%;
# the workload's functions appear by name in every output.
test_report_groundtruth_outputs() {
	record_gt
	"$OFFCPU" report -i gt.data --folded >gt.folded 2>err.txt || { cat err.txt; fail "folded failed"; }
	head -20 gt.folded
	folded_per_comm gt.folded >comm.tot
	bad=0
	while read -r comm tid ns calls; do
		got=$(awk -v c="$comm" '$1 == c { print $2 }' comm.tot)
		echo "  $comm: blocked $ns ns, folded $got ns"
		within 5 "${got:-0}" "$ns" || bad=1
	done <truth.txt
	[ $bad = 0 ] || fail "folded totals differ from ground truth by more than 5%"
	# folded lines: comm first, root first, value last
	grep -q '^gt-sleep;__clone3;start_thread;gt_sleep_thread;gt_sleep_block;__nanosleep;clock_nanosleep[^;]* [0-9][0-9]*$' gt.folded ||
		fail "gt-sleep's stack not folded root first"
	"$OFFCPU" report -i gt.data >gt.txt || fail "text report failed"
	"$OFFCPU" report -i gt.data --json >gt.json || fail "json report failed"
	"$OFFCPU" report -i gt.data --svg gt.svg --pprof gt.pb.gz || fail "svg/pprof failed"
	python3 -c 'import json,sys; d = json.load(open("gt.json")); assert d["rows"] and d["events"][0]["name"] == "offcpu-time"' ||
		fail "json does not parse"
	gunzip -c gt.pb.gz >gt.pb || fail "pprof is not gzip"
	for fn in $GT_FUNCS; do
		for f in gt.folded gt.txt gt.json gt.svg gt.pb; do
			grep -q "$fn" "$f" || fail "$fn missing from $f"
		done
	done
	# text: header with total, the top entry and a call path through the workload
	grep -q '^# offcpu-time: .* ms off-CPU' gt.txt || fail "no event header in text output"
	grep -q 'clock_nanosleep' gt.txt && grep -q 'call paths' gt.txt || fail "text output lacks entries or call paths"
	# json totals per thread agree with truth too
	python3 - <<-'EOF' || fail "json per-thread totals differ from truth"
		import json
		d = json.load(open("gt.json"))
		tot = {}
		for r in d["rows"]:
		    if r["event"] == "offcpu-time":
		        tot[r["tid"]] = tot.get(r["tid"], 0) + r["value"]
		for line in open("truth.txt"):
		    comm, tid, ns, calls = line.split()
		    got = tot.get(int(tid), 0)
		    print(f"  json {comm}: {got} vs {ns}")
		    assert abs(got - int(ns)) <= int(ns) * 0.05
	EOF
}

# go tool pprof reads the profile: functions, total, and the binary's build id
test_report_pprof_go_tool() {
	command -v go >/dev/null || fail "go not installed (golang-go)"
	record_gt
	"$OFFCPU" report -i gt.data --pprof gt.pb.gz || fail "pprof failed"
	HOME=$PWD GOCACHE=$PWD/.gocache go tool pprof -top gt.pb.gz >top.txt 2>top.err || { cat top.err; fail "go tool pprof failed"; }
	cat top.txt
	for fn in $GT_FUNCS; do
		grep -q " $fn\$" top.txt || fail "$fn not listed by go tool pprof"
	done
	grep -q '^Type: offcpu' top.txt || fail "default sample type is not offcpu"
	total_ms=$(sed -n 's/.* of \([0-9.]*\)ms total.*/\1/p' top.txt)
	truth_ms=$(awk '{ s += $3 } END { printf "%.3f", s / 1e6 }' truth.txt)
	# the main thread's join wait is in the profile too: at least the threads' sum
	awk -v t="$total_ms" -v e="$truth_ms" 'BEGIN { exit !(t >= e * 0.95) }' || fail "pprof total $total_ms ms < truth $truth_ms ms"
	# per-thread: tag focus on the thread label
	HOME=$PWD GOCACHE=$PWD/.gocache go tool pprof -top -tagfocus=thread=gt-sleep gt.pb.gz >sleep.txt 2>/dev/null
	got=$(sed -n 's/.*accounting for \([0-9.]*\)\(m*s\),.*/\1 \2/p' sleep.txt | awk '{ print ($2 == "s") ? $1 * 1000 : $1 }')
	want=$(awk '$1 == "gt-sleep" { printf "%.3f", $3 / 1e6 }' truth.txt)
	echo "gt-sleep: pprof $got ms, truth $want ms"
	within 5 "$got" "$want" || fail "gt-sleep in pprof: $got ms, expected $want ms"
	# the mapping carries the binary's build id
	id=$(readelf -n "$GT" | awk '/Build ID/ { print $3 }')
	HOME=$PWD GOCACHE=$PWD/.gocache go tool pprof -raw gt.pb.gz >raw.txt 2>/dev/null
	grep -q "$id" raw.txt || fail "build id $id of groundtruth not in the pprof mappings"
	# a sampling event: samples and cpu nanoseconds
	perf record -q -g -e cpu-clock -o spin.data "$SPIN" 0.5 >/dev/null 2>&1 || fail "perf record failed"
	"$OFFCPU" report -i spin.data --pprof spin.pb.gz || fail "pprof of perf file failed"
	HOME=$PWD GOCACHE=$PWD/.gocache go tool pprof -top spin.pb.gz >spin.txt 2>&1 || { cat spin.txt; fail "go tool pprof failed on spin"; }
	awk '/flat%/ { getline; print; exit }' spin.txt | grep -q spin_hot || { cat spin.txt; fail "spin_hot not on top in pprof"; }
}

# png_pixels FILE: "blue warm other" pixel counts of an 8-bit RGB(A) PNG
png_pixels() {
	python3 - "$1" <<-'EOF'
		import struct, sys, zlib
		data = open(sys.argv[1], "rb").read()
		assert data[:8] == b"\x89PNG\r\n\x1a\n"
		pos, idat, w = 8, b"", 0
		while pos < len(data):
		    n, t = struct.unpack(">I4s", data[pos:pos + 8])
		    body = data[pos + 8:pos + 8 + n]
		    if t == b"IHDR":
		        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
		        assert depth == 8 and ctype in (2, 6)
		        bpp = 3 if ctype == 2 else 4
		    elif t == b"IDAT":
		        idat += body
		    pos += 12 + n
		raw = zlib.decompress(idat)
		stride = w * bpp
		prev = bytearray(stride)
		blue = warm = other = 0
		i = 0
		for y in range(h):
		    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
		    for x in range(stride):
		        a = line[x - bpp] if x >= bpp else 0
		        b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
		        if f == 1: line[x] = (line[x] + a) & 255
		        elif f == 2: line[x] = (line[x] + b) & 255
		        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
		        elif f == 4:
		            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
		            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
		    prev = line
		    for x in range(0, stride, bpp):
		        r, g, b = line[x], line[x + 1], line[x + 2]
		        if b > 180 and r < 110 and g > 110: blue += 1
		        elif r > 200 and b < 70: warm += 1
		        else: other += 1
		print(blue, warm, other)
	EOF
}

# The flame graph renders in headless chromium: frames drawn in the off-CPU
# palette, search computes the matched share in the browser, zoom widens.
test_report_svg_chromium() {
	command -v chromium >/dev/null || fail "chromium not installed"
	record_gt
	"$OFFCPU" report -i gt.data --svg gt.svg || fail "svg failed"
	xmllint --noout gt.svg 2>/dev/null || python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse("gt.svg")' ||
		fail "svg is not well-formed XML"
	run_chromium() { timeout 60 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
		--user-data-dir="$PWD/chr" "$@" 2>>chromium.err; }
	# search runs in the page: the matched share is gt-sleep's blocked time
	run_chromium --dump-dom "file://$PWD/gt.svg#search=gt_sleep_thread" >dom.txt || { tail chromium.err; fail "chromium failed"; }
	grep -q 'data-ready="[1-9]' dom.txt || fail "the flame graph's script did not run"
	got=$(sed -n 's/.*id="matched"[^>]*data-value="\([0-9]*\)".*/\1/p' dom.txt)
	want=$(awk '$1 == "gt-sleep" { print $3 }' truth.txt)
	echo "search gt_sleep_thread in chromium: $got ns, truth $want ns"
	within 5 "${got:-0}" "$want" || fail "search matched $got ns, expected $want"
	grep -q 'Matched: [0-9.]*%' dom.txt || fail "no matched percentage shown"
	# zoom into gt_sleep_thread: its frame spans the full width
	run_chromium --dump-dom "file://$PWD/gt.svg#zoom=gt_sleep_thread" >zoom.txt
	grep -o '<g class="f[^"]*" data-n="gt_sleep_thread"[^>]*>.*</g>' zoom.txt | grep -q 'width="1180"' ||
		fail "zoom did not widen gt_sleep_thread to the full width"
	grep -q 'data-n="gt_pipe_thread"[^>]*style="display: none;"' zoom.txt || fail "zoom did not hide other threads"
	# the picture: frames are drawn, in blues, with no on-CPU warm colours
	run_chromium --window-size=1200,300 --screenshot="$PWD/gt.png" "file://$PWD/gt.svg" >/dev/null
	[ -s gt.png ] || { tail chromium.err; fail "no screenshot"; }
	read -r blue warm other < <(png_pixels gt.png)
	echo "screenshot pixels: blue $blue, warm $warm, other $other"
	[ "$blue" -gt 20000 ] || fail "too few off-CPU coloured pixels ($blue)"
	[ "$warm" -lt 100 ] || fail "on-CPU colours in an off-CPU graph ($warm)"
	# hover details: each frame's title has its time and percent
	grep -q '<title>gt_sleep_thread ([0-9.]* ms, [0-9.]*%)</title>' gt.svg || fail "no hover title with time and percent"
}

# perf record -g of a spinning program: its spinning function on top
test_report_perf_spin() {
	perf record -q -g -e cpu-clock -o spin.data "$SPIN" 1 >/dev/null 2>&1 || fail "perf record failed"
	"$OFFCPU" report -i spin.data >spin.txt 2>err.txt || { cat err.txt; fail "report failed"; }
	head -8 spin.txt
	grep -q '^# cpu-clock: [0-9]* samples' spin.txt || fail "no cpu-clock header"
	awk '!/^#/ && NF { print; exit }' spin.txt | grep -q 'spin_hot$' || fail "spin_hot not on top"
	pct=$(awk '!/^#/ && NF { sub("%", "", $2); print $2; exit }' spin.txt)
	awk -v p="$pct" 'BEGIN { exit !(p > 80) }' || fail "spin_hot only $pct%"
	"$OFFCPU" report -i spin.data --folded | sort -k2 -n | tail -1 | grep -q ';spin_hot [0-9]*$' || fail "spin_hot not the top folded stack"
	# kernel frames are symbolized from kallsyms, and from a given file
	"$OFFCPU" report -i spin.data --folded >spin.folded
	if grep -q '_\[k\]' spin.folded; then
		grep -q '\[unknown\]_\[k\]' spin.folded && fail "unresolved kernel frames"
		awk '{ printf "%016x T fake_kernel_symbol\n", 0 }' /dev/null >/dev/null
		printf 'ffffffff00000000 T fake_kernel_symbol\n' >fake.kallsyms
		"$OFFCPU" report -i spin.data --kallsyms fake.kallsyms --folded | grep -q 'fake_kernel_symbol_\[k\]' ||
			fail "--kallsyms file not used"
	else
		echo "note: perf recorded no kernel frames"
	fi
	# compressed files (perf record -z) are refused by name, not misread
	perf record -q -z -g -e cpu-clock -o z.data "$SPIN" 0.2 >/dev/null 2>&1 || fail "perf record -z failed"
	"$OFFCPU" report -i z.data >/dev/null 2>z.err && fail "a compressed file was reported"
	grep -q 'COMPRESSED record .* at offset [0-9]*' z.err || { cat z.err; fail "no clear error for -z"; }
	# pipe mode from perf
	perf record -q -g -e cpu-clock -o - "$SPIN" 0.3 2>/dev/null | "$OFFCPU" report -i - >pipe.txt || fail "pipe report failed"
	awk '!/^#/ && NF { print; exit }' pipe.txt | grep -q 'spin_hot$' || { cat pipe.txt; fail "spin_hot not on top in pipe mode"; }
}

# perf's directory format (perf record --threads): data and data.N merged
test_report_perf_directory() {
	perf record -q --threads -g -e cpu-clock -o spin.dir "$SPIN" 0.5 >/dev/null 2>&1 || fail "perf record --threads failed"
	[ -d spin.dir ] || fail "perf did not write a directory"
	ls -la spin.dir
	"$OFFCPU" report -i spin.dir >dir.txt 2>err.txt || { cat err.txt; fail "report of a directory failed"; }
	head -5 dir.txt
	n=$(sed -n 's/^# cpu-clock: \([0-9]*\) samples/\1/p' dir.txt)
	want=$(perf script -i spin.dir -F tid 2>/dev/null | wc -l)
	echo "samples: offcpu $n, perf $want"
	[ "${n:-0}" -gt 0 ] && [ "$n" = "$want" ] || fail "directory: $n samples, perf counts $want"
	awk '!/^#/ && NF { print; exit }' dir.txt | grep -q 'spin_hot$' || fail "spin_hot not on top"
}

# pipe input, and the filters: --tid, --pid, --comm, --event, --time
test_report_pipe_and_filters() {
	record_gt
	"$OFFCPU" report -i gt.data --folded >file.folded || fail "report failed"
	"$OFFCPU" report -i - --folded <gt.data >stdin.folded || fail "report from stdin failed"
	cmp file.folded stdin.folded || fail "stdin and file reports differ"
	tid=$(awk '$1 == "gt-pipe" { print $2 }' truth.txt)
	ns=$(awk '$1 == "gt-pipe" { print $3 }' truth.txt)
	"$OFFCPU" report -i gt.data --tid "$tid" --folded >tid.folded
	[ "$(cut -d';' -f1 tid.folded | sort -u)" = gt-pipe ] || { cat tid.folded; fail "--tid kept other threads"; }
	got=$(folded_per_comm tid.folded | awk '{ print $2 }')
	within 5 "$got" "$ns" || fail "--tid: $got ns, expected $ns"
	"$OFFCPU" report -i gt.data --comm gt-poll,gt-cond --folded | cut -d';' -f1 | sort -u >comm.txt
	[ "$(tr '\n' ' ' <comm.txt)" = "gt-cond gt-poll " ] || { cat comm.txt; fail "--comm"; }
	pid=$(perf script -i gt.data -F pid 2>/dev/null | head -1 | tr -d ' ')
	"$OFFCPU" report -i gt.data --pid "$pid" --folded | cmp - file.folded || fail "--pid of the workload changed the output"
	[ -z "$("$OFFCPU" report -i gt.data --pid 1 --folded)" ] || fail "--pid 1 kept samples"
	# --time: the summed samples carry the end time; a window before them is empty
	t=$(perf script -i gt.data -F time 2>/dev/null | head -1 | tr -d ' :')
	[ -z "$("$OFFCPU" report -i gt.data --time ,"$(awk -v t="$t" 'BEGIN { printf "%.6f", t - 0.001 }')" --folded)" ] ||
		fail "--time window before the samples is not empty"
	"$OFFCPU" report -i gt.data --time "$(awk -v t="$t" 'BEGIN { printf "%.6f", t - 0.001 }')", --folded | cmp - file.folded ||
		fail "--time window around the samples lost some"
	"$OFFCPU" report -i gt.data --event nosuch >/dev/null 2>err.txt && fail "unknown event accepted"
	grep -q "nosuch" err.txt || fail "unknown event not named"
	"$OFFCPU" report -i gt.data --sort bogus >/dev/null 2>err.txt; [ $? = 2 ] || fail "--sort bogus should be a usage error"
	"$OFFCPU" report -i gt.data --sort state | grep -qE ' S *$' || fail "--sort state shows no S row"
	"$OFFCPU" report -i gt.data --sort tid,comm -m 15 >sorted.txt || fail "--sort tid,comm failed"
	rows=$(grep -vc '^#\|^$' sorted.txt)
	[ "$rows" -ge 1 ] && [ "$rows" -le 6 ] || { cat sorted.txt; fail "--min-percent 15 kept $rows rows"; }
	per_tid_offcpu gt.data >own.tot
	check_threads truth.txt own.tot 5
}

# --lines: source file and line through libdw; build id mismatch reported
test_report_lines_and_build_id() {
	cp "$GT" ./gtcopy
	record_truth -o gt.data -- ./gtcopy -r truth.txt
	"$OFFCPU" report -i gt.data --lines --json >lines.json || fail "--lines failed"
	# the heaviest row under gt_sleep_thread is its 4 x 250 ms sleep; a short
	# block elsewhere in the loop (a page fault in now(), say) may come first
	set -- $(python3 - lines.json <<-'EOF'
		import json, sys
		rows = json.load(open(sys.argv[1]))["rows"]
		best = None
		for r in rows:
		    for f in r["stack"]:
		        if f.get("sym") == "gt_sleep_thread" and f.get("dso") == "gtcopy":
		            if best is None or r["value"] > best[0]:
		                best = (r["value"], f.get("file", ""), f.get("line", 0))
		if best:
		    print(best[1], best[2], best[0])
	EOF
	)
	[ $# -eq 3 ] && [ "$2" -gt 0 ] && case $1 in *groundtruth.c) true ;; *) false ;; esac ||
		{ grep -m3 gt_sleep lines.json; fail "no source line for gt_sleep_thread"; }
	src=$1 line=$2
	[ "$3" -gt 900000000 ] || fail "the row with gt_sleep_thread holds $3 ns, not the 1 s of sleeps"
	sed -n "${line}p" "$src" | grep -q 'gt_sleep_block\|nanosleep\|sleep' || { sed -n "${line}p" "$src"; fail "line $line of $src is not the sleep call"; }
	# change the binary's build id: names must not be trusted any more
	id=$(readelf -n gtcopy | awk '/Build ID/ { print $3 }')
	off=$(python3 -c 'import sys; print(open("gtcopy", "rb").read().find(bytes.fromhex(sys.argv[1])))' "$id")
	[ "$off" -gt 0 ] || fail "build id $id not found in gtcopy"
	printf '\xde\xad\xbe\xef' | dd of=gtcopy bs=1 seek="$off" conv=notrunc 2>/dev/null
	"$OFFCPU" report -i gt.data --folded >mm.folded 2>mm.err || fail "report failed"
	cat mm.err
	grep -q 'build id mismatch for .*gtcopy' mm.err || fail "mismatch not reported"
	grep -q gt_sleep_thread mm.folded && fail "names from a mismatched binary"
	true
}

# A few hundred truncated and bit-flipped copies of a real file: every run
# ends with exit 0 or 1 and a message naming the offset, never a signal.
test_report_corrupt_copies() {
	"$OFFCPU" record -q -o gt.data -- "$GT" || fail "record failed"
	perf record -q -g -e cpu-clock -o spin.data "$SPIN" 0.2 >/dev/null 2>&1 || fail "perf record failed"
	python3 - <<-'EOF'
		import os, random
		random.seed(4)
		os.makedirs("bad", exist_ok=True)
		for src in ("gt.data", "spin.data"):
		    d = open(src, "rb").read()
		    for i in range(60):
		        open(f"bad/{src}.trunc{i}", "wb").write(d[:random.randrange(len(d))])
		    for i in range(90):
		        b = bytearray(d)
		        for _ in range(random.choice((1, 2, 8, 64))):
		            p = random.randrange(len(b))
		            b[p] ^= 1 << random.randrange(8)
		        open(f"bad/{src}.flip{i}", "wb").write(bytes(b))
		    for i in range(10):  # hostile sizes in the header and in records
		        b = bytearray(d)
		        p = random.choice((16, 24, 32, 40, 48)) + (0 if i % 2 else 4)
		        b[p:p + 4] = b"\xff\xff\xff\x7f"
		        open(f"bad/{src}.size{i}", "wb").write(bytes(b))
	EOF
	n=0 ok=0 err=0
	for f in bad/*; do
		n=$((n + 1))
		timeout 20 "$OFFCPU" report -i "$f" --folded >/dev/null 2>e.txt
		rc=$?
		case $rc in
		0) ok=$((ok + 1)) ;;
		1) err=$((err + 1))
		   grep -q 'offset\|not a perf.data\|shorter than\|lies outside\|no event\|not finished\|plausible' e.txt ||
			{ cat e.txt; fail "$f: error without an offset or reason"; } ;;
		*) cat e.txt; fail "$f: exit $rc (signal or hang)" ;;
		esac
	done
	echo "$n corrupt copies: $ok read, $err refused with an error"
	[ "$n" -ge 300 ] || fail "only $n copies"
	[ "$err" -gt 0 ] || fail "no copy was refused"
}

# The reader, and the whole report path (session, symbolizer, every output),
# under libFuzzer with ASan and UBSan for a number of inputs each (-runs: the
# same work however busy the machine; the session's inputs cost more),
# seeded with recordings of offcpu's and perf's: no crash, leak, hang or UB.
test_report_fuzz() {
	make -s -C "$ROOT" BUILD="$BUILD" fuzz >make.log 2>&1 || { cat make.log; fail "cannot build the fuzzers (clang, libclang-rt-14-dev)"; }
	mkdir corpus
	"$OFFCPU" record -q -o corpus/gt.data -- "$GT" || fail "record failed"
	perf record -q -g -e cpu-clock -o corpus/spin.data "$SPIN" 0.1 >/dev/null 2>&1 || fail "perf record failed"
	perf record -q -g -e cpu-clock -o - "$SPIN" 0.1 2>/dev/null >corpus/spin.pipe || fail "perf record -o - failed"
	for target in reader:40000 session:5000; do
		n=${target#*:} target=${target%:*}
		mkdir "run-$target"
		cp corpus/* "run-$target/"
		(cd "run-$target" && "$ROOT/$BUILD/tests/fuzz-$target" -runs="$n" \
			-max_len=131072 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 . >../fuzz-$target.log 2>&1)
		rc=$?
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "fuzz-$target.log")
		echo "fuzz-$target: ${runs:-0} executions, exit $rc"
		[ $rc = 0 ] || { grep -A30 'ERROR\|runtime error' "fuzz-$target.log" | head -50; fail "fuzz-$target found a crash (exit $rc)"; }
		[ "${runs:-0}" -ge "$n" ] || fail "fuzz-$target: ${runs:-0} executions, -runs=$n asked"
	done
}

# offcpu's own pipe output with kernel stacks and on-CPU samples: off-CPU
# totals still match, kernel frames are named, cpu-clock is counted in samples
test_report_offcpu_pipe_kernel_stacks() {
	record_truth -o - --stacks both -F 999 -- "$GT" -r truth.txt >gt.pipe
	"$OFFCPU" report -i - --folded -e offcpu-time <gt.pipe >gt.folded || fail "report of pipe input failed"
	folded_per_comm gt.folded >comm.tot
	while read -r comm tid ns calls; do
		got=$(awk -v c="$comm" '$1 == c { print $2 }' comm.tot)
		echo "  $comm: blocked $ns ns, folded $got ns"
		within 5 "${got:-0}" "$ns" || fail "$comm: folded $got ns, expected $ns"
	done <truth.txt
	grep -q '^gt-sleep;__clone3;start_thread;gt_sleep_thread;gt_sleep_block;__nanosleep;clock_nanosleep[^;]*;.*_\[k\].* [0-9]*$' gt.folded ||
		{ grep gt-sleep gt.folded; fail "gt-sleep's kernel frames missing"; }
	grep -q '\[unknown\]_\[k\]' gt.folded && fail "unresolved kernel frames"
	"$OFFCPU" report -i gt.pipe >gt.txt || fail "text report failed"
	grep -q '^# offcpu-time: .* ms off-CPU' gt.txt || fail "no offcpu-time section"
	grep -q '^# cpu-clock: [0-9]* samples' gt.txt || { head -30 gt.txt; fail "no cpu-clock section counted in samples"; }
	grep -q '\[kernel.kallsyms\]' gt.txt || fail "no kernel entries in the text output"
}

# --lines shows inlined functions as their own frames, with source lines
test_report_lines_inlined() {
	cat >inl.c <<-'EOF'
		static volatile unsigned long sink;
		static inline __attribute__((always_inline)) void hot_inner(unsigned long n)
		{
			for (unsigned long i = 0; i < n; i++)
				sink += i * i;
		}
		__attribute__((noinline)) void outer_fn(void)
		{
			hot_inner(100000);
		}
		int main(void)
		{
			for (int k = 0; k < 4000; k++)
				outer_fn();
			return 0;
		}
	EOF
	gcc -O2 -g -fno-omit-frame-pointer inl.c -o inl || fail "cannot compile"
	perf record -q -g -e cpu-clock -o inl.data ./inl >/dev/null 2>&1 || fail "perf record failed"
	"$OFFCPU" report -i inl.data --lines --json >inl.json || fail "report --lines failed"
	grep -q '{"sym": "outer_fn", "dso": "inl", "file": "[^"]*/inl.c", "line": 9}, {"sym": "hot_inner", "dso": "inl", "file": "[^"]*/inl.c", "line": [45], "inlined": true}' inl.json ||
		{ grep -m2 hot_inner inl.json; fail "inlined hot_inner not below outer_fn with lines"; }
	"$OFFCPU" report -i inl.data --folded | grep -q 'outer_fn;hot_inner ' && fail "inlined frames without --lines"
	"$OFFCPU" report -i inl.data --lines --folded | sort -k2 -n | tail -1 | grep -q ';outer_fn;hot_inner_\[i\] [0-9]*$' ||
		fail "inlined frame not marked in folded output"
}

# C++ names are demangled (libiberty), and --no-demangle keeps them raw
test_report_cxx_demangle() {
	cat >spin.cc <<-'EOF'
		namespace work {
		static volatile unsigned long sink;
		struct Spinner {
			__attribute__((noinline)) void spin(int n) { for (int i = 0; i < n; i++) sink += i; }
		};
		}
		int main() { work::Spinner s; for (int k = 0; k < 3000; k++) s.spin(100000); return 0; }
	EOF
	g++ -O1 -g -fno-omit-frame-pointer spin.cc -o spincc || fail "cannot compile"
	perf record -q -g -e cpu-clock -o cc.data ./spincc >/dev/null 2>&1 || fail "perf record failed"
	"$OFFCPU" report -i cc.data >cc.txt || fail "report failed"
	awk '!/^#/ && NF { print; exit }' cc.txt | grep -q 'work::Spinner::spin(int)$' || { head -5 cc.txt; fail "not demangled"; }
	"$OFFCPU" report -i cc.data --no-demangle | grep -q '_ZN4work7Spinner4spinEi' || fail "--no-demangle demangled"
}

# Reading needs no root: an unprivileged user reports a copy of the file
test_report_without_root() {
	record_gt
	dir=$(mktemp -d /tmp/offcpu-nonroot.XXXXXX)
	chmod 755 "$dir"
	cp gt.data "$dir/" && chmod 644 "$dir/gt.data"
	(cd "$dir" && setpriv --reuid=65534 --regid=65534 --clear-groups "$OFFCPU" report -i gt.data --folded) >user.folded 2>user.err
	rc=$?
	rm -rf "$dir"
	[ $rc = 0 ] || { cat user.err; fail "report as nobody failed"; }
	"$OFFCPU" report -i gt.data --folded | cmp - user.folded || fail "report as nobody differs from root's"
	grep -q gt_sleep_thread user.folded || fail "no symbols as nobody"
}

# A stripped binary is symbolized from its separate debug file, found through
# .gnu_debuglink next to it (libc's through /usr/lib/debug/.build-id)
test_report_debuglink() {
	cp "$GT" gtstripped
	objcopy --only-keep-debug gtstripped gtstripped.debug || fail "objcopy failed"
	strip --strip-all gtstripped && objcopy --add-gnu-debuglink=gtstripped.debug gtstripped || fail "strip failed"
	readelf -S gtstripped | grep -q '\.symtab' && fail "strip left .symtab"
	record_truth -o s.data -- ./gtstripped -r truth.txt
	"$OFFCPU" report -i s.data --folded >with.folded || fail "report failed"
	for fn in $GT_FUNCS; do
		grep -q ";$fn;" with.folded || { cat with.folded; fail "$fn not found through .gnu_debuglink"; }
	done
	# start_thread is not in libc's .dynsym: it comes from libc6-dbg by build id
	grep -q '^gt-sleep;__clone3;start_thread;' with.folded || fail "libc's debug file not used"
	rm gtstripped.debug
	"$OFFCPU" report -i s.data --folded >without.folded || fail "report failed"
	grep -q ';gt_sleep_thread;' without.folded && fail "names without the debug file?"
	true
}

# A block inside a signal handler: the frame of the signal trampoline
# (glibc's __restore_rt, a "return" to its first byte) is named as perf
# names it, and the whole stack is perf's, with and without --lines
test_report_signal_frame() {
	record_truth -o sig.data -- "$ROOT/$BUILD/tests/sighandler" 3
	perf script -i sig.data -F ip,sym 2>/dev/null | awk '
		NF >= 2 { sub(/\+0x[0-9a-f]+$/, "", $2); f[++n] = $2; next }
		n { s = f[n]; for (i = n - 1; i >= 1; i--) s = s ";" f[i]; print s; n = 0 }
		END { if (n) { s = f[n]; for (i = n - 1; i >= 1; i--) s = s ";" f[i]; print s } }' | sort -u >perf.stacks
	cat perf.stacks
	grep -q ';__restore_rt;sig_handler;sig_block;' perf.stacks || fail "perf script does not name __restore_rt"
	for opt in "" --lines; do
		"$OFFCPU" report -i sig.data --folded $opt >sig.folded 2>err.txt || { cat err.txt; fail "report $opt failed"; }
		cat sig.folded
		sed 's/^[^;]*;//; s/ [0-9]*$//' sig.folded | sort -u >offcpu.stacks
		grep -q ';__restore_rt;sig_handler;sig_block;' offcpu.stacks || fail "no __restore_rt in offcpu report --folded $opt"
		grep -q '\[unknown\]' offcpu.stacks && fail "an [unknown] frame in offcpu report --folded $opt"
		cmp perf.stacks offcpu.stacks || fail "offcpu report --folded $opt and perf script differ"
	done
	true
}

# pprof's main binary (go tool pprof's File:, the first mapping) is the
# recorded program: not libc when the stacks stop there (--unwind=fp), not
# the shell that started the program, which waited less than it
test_report_pprof_main_binary() {
	command -v go >/dev/null || skip "go not installed (golang-go)"
	gopprof() { HOME=$PWD GOCACHE=$PWD/.gocache go tool pprof "$@"; }
	record_truth -o fp.data --unwind=fp -- "$SPIN" 0 0.3
	"$OFFCPU" report -i fp.data --folded
	"$OFFCPU" report -i fp.data --pprof fp.pb.gz || fail "pprof failed"
	gopprof -top fp.pb.gz >fp.txt 2>fp.err || { cat fp.err; fail "go tool pprof failed"; }
	head -3 fp.txt
	grep -qx 'File: spin' fp.txt || fail "File: is not spin"
	id=$(readelf -n "$SPIN" | awk '/Build ID/ { print $3 }')
	# no frame of spin's, so no build id recorded for it: none, or spin's
	! grep '^Build ID:' fp.txt | grep -vqx "Build ID: $id" || fail "the first mapping's build id is not spin's $id"
	record_truth -o sh.data -- sh -c "'$GT' -r truth.txt; true"
	"$OFFCPU" report -i sh.data --pprof sh.pb.gz || fail "pprof failed"
	gopprof -top sh.pb.gz >sh.txt 2>sh.err || { cat sh.err; fail "go tool pprof failed"; }
	head -3 sh.txt
	grep -qx 'File: groundtruth' sh.txt || fail "File: is not groundtruth"
}

# damage_kernel IN OUT WHAT...: a copy of offcpu's recording IN with its
# kernel changed, as if recorded on another kernel or boot. WHAT: bid (flip
# the [kernel.kallsyms] build id), nobid (rename that build id entry away),
# mmap (move the kernel MMAP, perf's "[kernel.kallsyms]_text" at pgoff = the
# address of _text, by 16 MiB), samples (move every kernel address of the
# samples' call chains by as much: with mmap, a reboot with another KASLR offset)
damage_kernel() {
	python3 - "$@" <<-'EOF'
		import struct, sys
		src, dst, what = sys.argv[1], sys.argv[2], sys.argv[3:]
		b = bytearray(open(src, "rb").read())
		X = 16 << 20
		u64 = lambda o: struct.unpack_from("<Q", b, o)[0]
		def put(o, v): struct.pack_into("<Q", b, o, v & (2**64 - 1))
		if "bid" in what or "nobid" in what:
		    notes = open("/sys/kernel/notes", "rb").read()
		    off, kid = 0, None
		    while off + 12 <= len(notes):
		        nsz, dsz, typ = struct.unpack_from("<III", notes, off)
		        name, desc = off + 12, off + 12 + ((nsz + 3) & ~3)
		        if typ == 3 and notes[name:name + 3] == b"GNU":
		            kid = notes[desc:desc + dsz]
		        off = desc + ((dsz + 3) & ~3)
		    at = b.find(kid)
		    assert kid and at > 0 and b.find(kid, at + 1) < 0, "one kernel build id in the file"
		    if "bid" in what:
		        b[at] ^= 0xff
		    else:
		        name = b.find(b"[kernel.kallsyms]\0", at)
		        b[name + 16] = ord("z")
		if "mmap" in what:
		    name = b.find(b"[kernel.kallsyms]_text\0")
		    assert name > 0 and b.find(b"[kernel.kallsyms]_text\0", name + 1) < 0
		    put(name - 24, u64(name - 24) + X)  # start
		    put(name - 16, u64(name - 16) - X)  # len
		    put(name - 8, u64(name - 8) + X)  # pgoff
		if "samples" in what:
		    attr_size, attrs = u64(16), u64(24)
		    st, data, size = u64(attrs + 24), u64(40), u64(48)
		    # the first event's samples (offcpu-time; the other is the side-band's dummy)
		    ids_off, ids_size = u64(attrs + attr_size - 16), u64(attrs + attr_size - 8)
		    ids = {u64(ids_off + i) for i in range(0, ids_size, 8)}
		    assert st & (1 << 16) and ids, "samples with IDENTIFIER"
		    bits = [(1 << 16), 1, 2, 4, 8, 64, 512, 128, 256]  # IDENTIFIER IP TID TIME ADDR ID STREAM CPU PERIOD
		    assert not st & 16, "no READ"
		    off, moved = data, 0
		    while off < data + size:
		        typ, misc, sz = struct.unpack_from("<IHH", b, off)
		        if typ == 9 and st & 32 and u64(off + 8) in ids:
		            p = off + 8 + 8 * sum(1 for x in bits if st & x)
		            if st & 1 and misc & 7 == 1:  # IP, after IDENTIFIER
		                put(off + 16, u64(off + 16) + X)
		            kernel = misc & 7 == 1
		            for i in range(u64(p)):
		                ip = u64(p + 8 + 8 * i)
		                if ip >= 2**64 - 4095:
		                    kernel = ip == 2**64 - 128
		                elif kernel:
		                    put(p + 8 + 8 * i, ip + X)
		                    moved += 1
		        off += sz
		    assert moved, "no kernel address in the samples"
		open(dst, "wb").write(b)
	EOF
}

# kernel_names FOLDED: the distinct kernel frames' names
kernel_names() {
	grep -o '[^;]*_\[k\]' "$1" | sort -u
}

# Kernel frames are named from the running kernel only when it is the
# recording's: another build id, or another KASLR offset without a build id
# to show it is the same kernel, leaves them unresolved with a warning that
# says why; the same kernel at another offset is relocated
test_report_kernel_check() {
	record_truth -o k.data --stacks both -- "$GT" -r truth.txt
	"$OFFCPU" report -i k.data --folded >k.folded 2>k.err || { cat k.err; fail "report failed"; }
	[ ! -s k.err ] || { cat k.err; fail "warnings on the running kernel's own recording"; }
	kernel_names k.folded >k.names
	grep -q 'hrtimer_nanosleep_\[k\]' k.names || { cat k.names; fail "no kernel names in the undamaged file"; }
	grep -q '\[unknown\]_\[k\]' k.names && fail "unresolved kernel frames in the undamaged file"
	for what in bid "mmap samples bid" "mmap nobid"; do
		damage_kernel k.data bad.data $what || fail "cannot damage the file ($what)"
		"$OFFCPU" report -i bad.data --folded >bad.folded 2>bad.err || { cat bad.err; fail "report failed ($what)"; }
		echo "$what:"
		cat bad.err
		[ "$(grep -c warning bad.err)" = 1 ] || fail "not one warning ($what)"
		case $what in
		*nobid) grep -q 'kernel KASLR offset mismatch: _text was at 0x[0-9a-f]* when recorded, at 0x[0-9a-f]* in /proc/kallsyms, and the recording has no kernel build id' bad.err ;;
		*bid) grep -q 'kernel build id mismatch: recorded [0-9a-f]*, the running kernel has [0-9a-f]*' bad.err ;;
		esac || fail "the warning does not say what differs ($what)"
		[ "$(kernel_names bad.folded)" = '[unknown]_[k]' ] || { kernel_names bad.folded | head; fail "kernel names from another kernel ($what)"; }
		grep -q ';gt_sleep_thread;' bad.folded || fail "user frames lost ($what)"
	done
	# a reboot: the same kernel elsewhere is relocated, and named as before
	damage_kernel k.data moved.data mmap samples || fail "cannot move the kernel"
	"$OFFCPU" report -i moved.data --folded >moved.folded 2>moved.err || { cat moved.err; fail "report failed"; }
	cat moved.err
	grep -q 'the kernel was loaded at another address when recorded (KASLR offset: _text at 0x[0-9a-f]* then, 0x[0-9a-f]* in /proc/kallsyms); same build id: kernel frames relocated by -16777216' moved.err ||
		fail "no relocation said"
	cmp k.folded moved.folded || { diff k.folded moved.folded | head; fail "relocated kernel frames differ"; }
	# perf relocates it the same way: the oracle that the file was moved consistently
	perf script -i k.data -F ip,sym 2>/dev/null | awk '{ print $2 }' >k.perf
	perf script -i moved.data -F ip,sym 2>/dev/null | awk '{ print $2 }' >moved.perf
	cmp -s k.perf moved.perf || { diff k.perf moved.perf | head; fail "perf names the moved file's kernel frames otherwise"; }
}

# user_stacks_perf FILE / user_stacks_offcpu FILE: "comm;outer;...;inner count"
# of FILE's samples, user frames only, names without leading underscores,
# symbol versions and glibc's alias prefixes (perf and offcpu pick different
# aliases of one address: clone3, __clone3; write, __GI___libc_write, the
# latter from libc6-dbg's symbols), without perf's [unknown] for a pc outside
# every mapping at the root
user_stacks_perf() {
	perf script -i "$1" -F comm,ip,sym,dso --no-inline 2>/dev/null | awk '
		function flush() { if (have) { s = comm; for (i = n; i >= 1; i--) s = s ";" f[i]; print s }; n = 0; have = 0 }
		/^[^ \t]/ { flush(); comm = $1; have = 1; next }
		NF >= 3 && $1 ~ /^[0-9a-f]+$/ { if ($NF !~ /kernel\.kallsyms/ && !(n > 0 && $2 == "[unknown]")) { sym = $2; sub(/\+0x[0-9a-f]+$/, "", sym); sub(/@.*/, "", sym); sub(/^_+/, "", sym); sub(/^GI_+/, "", sym); sub(/^libc_/, "", sym); f[++n] = sym }; next }
		NF == 0 { flush() }
		END { flush() }' | sort | uniq -c | awk '{ print $2, $1 }'
}
user_stacks_offcpu() {
	"$OFFCPU" report -i "$1" --folded | awk '{ v = $NF; s = substr($0, 1, length($0) - length(v) - 1); n = split(s, a, ";"); o = a[1]
		for (i = 2; i <= n; i++) if (a[i] !~ /_\[k\]$/) { sub(/@.*/, "", a[i]); sub(/^_+/, "", a[i]); sub(/^GI_+/, "", a[i]); sub(/^libc_/, "", a[i]); o = o ";" a[i] }
		t[o] += v } END { for (o in t) print o, t[o] }' | sort
}

# perf record --call-graph dwarf (user registers and a stack copy per sample,
# no user frames in the call chain): offcpu report unwinds the copies with
# libdw as perf report does: the frame-pointer-less workload's functions under
# start_thread, and perf's own stacks for nearly every sample
test_report_perf_dwarf() {
	nofp=$ROOT/$BUILD/tests/gt_nofp
	perf record -q -e sched:sched_switch --call-graph dwarf -o dw.data "$nofp" -r truth.txt >/dev/null 2>perf.err ||
		{ cat perf.err; fail "perf record --call-graph dwarf failed"; }
	"$OFFCPU" report -i dw.data --folded >dw.folded 2>err.txt || { cat err.txt; fail "report failed"; }
	for fn in nf_sleep_block nf_cond_block nf_mutex_block nf_pipe_block nf_epoll_block; do
		grep -q "^nf-[a-z]*;__clone3;start_thread;nf_[a-z]*_thread;$fn[.;]" dw.folded ||
			{ head dw.folded; fail "$fn not under start_thread"; }
	done
	grep -q '^gt_nofp;_start;.*;main;' dw.folded || fail "the main thread's stack is not under main"
	user_stacks_perf dw.data >perf.user
	user_stacks_offcpu dw.data >offcpu.user
	read -r same total < <(awk 'NR == FNR { p[$1] = $2; tot += $2; next }
		{ same += (p[$1] < $2) ? p[$1] : $2 } END { print same + 0, tot + 0 }' perf.user offcpu.user)
	with=$(awk '{ v = $NF; if ($0 ~ /;__clone3;|;_start;/) u += v; t += v } END { printf "%d of %d", u, t }' dw.folded)
	note "perf's user stacks found in offcpu report: $same of $total samples; stacks from a thread's root: $with"
	[ "$total" -gt 20 ] && [ $((same * 100)) -ge $((total * 90)) ] ||
		{ diff perf.user offcpu.user; fail "only $same of $total samples have perf's user stack"; }
}

# peak_rss_kb OUT CMD...: run CMD (its stdin is ours), its output in OUT; prints its peak
# resident memory in KiB: GNU time's %M, else the highest VmHWM read while it runs
peak_rss_kb() {
	local out=$1 pid hwm=0 h
	shift
	if [ -x /usr/bin/time ]; then
		/usr/bin/time -f %M -o rss.txt "$@" >"$out" || return 1
		tail -n 1 rss.txt
		return 0
	fi
	"$@" >"$out" &
	pid=$!
	while h=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) && [ -n "$h" ]; do
		[ "$h" -le "$hwm" ] || hwm=$h
		sleep 0.02
	done
	wait "$pid" || return 1
	echo "$hwm"
}

# A pipe-mode stream of 1,000,000 off-CPU samples (5000 stacks, 40 threads)
# piped into offcpu report -i -, as offcpu record -o - | offcpu report -i -
# would: read as it comes, in bounded memory (under 100 MiB at its peak,
# --folded too), its totals exact, and the same report as of the stream as a file.
test_report_pipe_stream_memory() {
	make -s -C "$ROOT" BUILD="$BUILD" bench-gen >make.log 2>&1 || { cat make.log; fail "cannot build gen-perfdata"; }
	cp "$OFFCPU" target
	gen=$ROOT/$BUILD/bench/gen-perfdata
	"$gen" -p -o - -n 1000000 target 2>gen.txt |
		peak_rss_kb text.txt "$OFFCPU" report -i - >rss.text 2>err.txt || { cat err.txt; fail "report -i - failed"; }
	"$gen" -p -o - -n 1000000 target 2>/dev/null |
		peak_rss_kb folded.txt "$OFFCPU" report -i - --folded >rss.folded 2>>err.txt ||
		{ cat err.txt; fail "report -i - --folded failed"; }
	read -r _ n _ ns _ <gen.txt
	[ "$n" = 1000000 ] || { cat gen.txt; fail "gen-perfdata wrote $n samples"; }
	[ ! -s err.txt ] || { cat err.txt; fail "the report said something"; }
	want=$(awk -v ns="$ns" 'BEGIN { printf "%.3f", ns / 1e6 }')
	grep -qx "# offcpu-time: $want ms off-CPU in 1000000 samples" text.txt ||
		{ head -3 text.txt; fail "text totals: expected $want ms in 1000000 samples"; }
	got=$(awk '{ s += $NF } END { printf "%.0f", s }' folded.txt)
	# each line rounds to the microsecond: 0.5 us at most each
	lines=$(wc -l <folded.txt)
	awk -v g="$got" -v ns="$ns" -v l="$lines" 'BEGIN { d = g * 1000 - ns; if (d < 0) d = -d; exit !(d <= l * 500) }' ||
		fail "folded total $got us, expected $ns ns"
	note "1M-sample pipe: peak $(cat rss.text) KiB (text), $(cat rss.folded) KiB (--folded, $lines lines)"
	[ "$(cat rss.text)" -lt 102400 ] || fail "report -i - peaked at $(cat rss.text) KiB, not under 100 MiB"
	[ "$(cat rss.folded)" -lt 102400 ] || fail "report -i - --folded peaked at $(cat rss.folded) KiB"
	# the same stream, read from a file: the same report
	"$gen" -p -o stream.data -n 1000000 target 2>/dev/null
	"$OFFCPU" report -i stream.data --folded | cmp -s - folded.txt || fail "the stream as a file reports otherwise"
}
