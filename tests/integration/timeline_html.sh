# shellcheck shell=bash
# offcpu report --timeline: one self-contained HTML page of the wakers
# workload (tests/workloads/wakers.c), loaded in headless Chromium (Debian's
# /usr/bin/chromium, driven by playwright-core from npm: tests/browser/):
# nothing fetched, no script error, a lane per thread, a known block's
# stack and waker in its details panel, a window's flame graph.

WAKERS=$ROOT/$BUILD/tests/wakers
BROWSER=$ROOT/$BUILD/browser
HANG=$ROOT/$BUILD/tests/hang
CRITPATH=$ROOT/$BUILD/tests/critpath

# need_browser: node, Chromium and playwright-core (npm ci of tests/browser's
# pinned lock into $BUILD/browser, once per lock file)
need_browser() {
	local v
	command -v node >/dev/null || skip "no node (apt-get install nodejs)"
	command -v npm >/dev/null || skip "no npm (apt-get install npm)"
	# (playwright-core is pinned to the last version that runs on Debian 12's node 18)
	v=$(node -p 'process.versions.node.split(".")[0]')
	[ "$v" -ge 18 ] || skip "node $v: playwright-core $(sed -n 's/.*"playwright-core": "\(.*\)".*/\1/p' "$ROOT/tests/browser/package.json") needs node 18 or newer"
	[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || skip "no chromium (apt-get install chromium)"
	mkdir -p "$BROWSER"
	if ! cmp -s "$ROOT/tests/browser/package-lock.json" "$BROWSER/package-lock.json" ||
		[ ! -d "$BROWSER/node_modules/playwright-core" ]; then
		cp "$ROOT/tests/browser/package.json" "$ROOT/tests/browser/package-lock.json" "$BROWSER/"
		(cd "$BROWSER" && npm ci --no-audit --no-fund) >npm.log 2>&1 ||
			{ cat npm.log; rm -f "$BROWSER/package-lock.json"; skip "npm ci of playwright-core failed (no registry?)"; }
	fi
	cp "$ROOT/tests/browser/timeline.js" "$BROWSER/"
}

# no_network PAGE: nothing the page would load from a network
no_network() {
	! grep -Eio '(src|href|action|url)[[:space:]]*[=(][[:space:]]*["'\'']?[[:space:]]*(https?:)?//[^"'\'' )]*' "$1" ||
		fail "$1 refers to a network resource"
	! grep -Eio 'https?://' "$1" || fail "$1 holds an http(s) address"
	grep -q "Content-Security-Policy\" content=\"default-src 'none'" "$1" || fail "$1 has no CSP forbidding loads"
}

# blocks PAGE: how many blocks the page draws (10 numbers each in its lanes' "b")
blocks() {
	grep -o '"b":\[[^]]*' "$1" | awk -F, '{ if ($0 != "\"b\":[") n += NF } END { print n / 10 }'
}

record_wakers() {
	"$OFFCPU" record --wakers "$@" -o t.data -- "$WAKERS" -r truth.txt 2>rec.err || fail "record failed"
	cat truth.txt
}

# every block streamed, preemptions too (the spinning threads block in no
# other way): the page shows each thread, a known block, its waker
test_timeline_html_wakers() {
	need_browser
	record_wakers --state SDR --off-cpu-thresh 0
	"$OFFCPU" report -i t.data --timeline t.html -v 2>rep.err || { cat rep.err; fail "report --timeline failed"; }
	grep 'timeline:' rep.err
	ls -la t.html
	no_network t.html
	node "$BROWSER/timeline.js" t.html check wakee waker_alpha waker_bravo waker_charlie spin_a spin_b runq_sleeper |
		tee browser.log
	grep -q '^ok$' browser.log || fail "the page in Chromium: $(grep FAIL browser.log)"
	# the clicked block lasted what the workload measured: one of its three waits
	got=$(sed -n "s/^clicking the wakee's \([0-9.]*\) ms .*/\1/p" browser.log)
	want=$(awk '$1 == "by_alpha" { printf "%.3f", $3 / $4 / 1e6 }' truth.txt)
	within 10 "${got:-0}" "$want" || fail "the clicked block lasted $got ms, the workload's waits $want ms each"
	note "$(stat -c %s t.html) bytes, $(sed -n 's/^shown in //p' browser.log) to show, $(sed -n 's/^arrows drawn: //p' browser.log) arrows"
}

# short blocks summed (the default threshold), preemptions and on-CPU
# samples: summed totals are per-interval bands with their own stacks, never
# instants, samples are ticks; the page loads clean
test_timeline_html_summed() {
	need_browser
	record_wakers --state SDR -F 499
	"$OFFCPU" report -i t.data --timeline t.html -v 2>rep.err || { cat rep.err; fail "report --timeline failed"; }
	cat rep.err
	grep -q 'summed totals, [1-9][0-9]* on-CPU samples' rep.err || fail "no on-CPU samples as ticks"
	perf script -i t.data -F event 2>/dev/null | grep -c offcpu-time: || true
	grep -q '"u":\[[0-9]' t.html || fail "no summed totals in the page"
	no_network t.html
	node "$BROWSER/timeline.js" t.html summed wakee waker_alpha spin_a | tee browser.log
	grep -q '^ok$' browser.log || fail "the page in Chromium: $(grep FAIL browser.log)"
}

# --comm, --tid, --time choose the samples; - writes stdout; a planted symlink is refused
test_timeline_html_filters() {
	local wakee lanes
	record_wakers --off-cpu-thresh 0
	"$OFFCPU" report -i t.data --timeline - --comm waker_alpha >c.html || fail "--timeline - failed"
	lanes=$(grep -o '"tid":[0-9]*' c.html | sort -u | wc -l)
	[ "$lanes" = 1 ] || fail "--comm waker_alpha: $lanes lanes"
	wakee=$(awk '$1 == "by_alpha" { print $2 }' truth.txt)
	"$OFFCPU" report -i t.data --timeline t.html --tid "$wakee" || fail "--tid failed"
	[ "$(grep -o '"tid":[0-9]*' t.html | sort -u)" = "\"tid\":$wakee" ] || fail "--tid $wakee: other lanes"
	# --time: the second half of the recording, fewer blocks, each ending in it
	"$OFFCPU" report -i t.data --timeline all.html || fail "report failed"
	half=$(sed -n 's/^"t0": \([0-9]*\), "span": \([0-9]*\),.*/\1 \2/p' all.html | awk '{ printf "%.6f", ($1 + $2 / 2) / 1e9 }')
	"$OFFCPU" report -i t.data --timeline w.html --time "$half," || fail "--time $half, failed"
	all=$(blocks all.html)
	win=$(blocks w.html)
	echo "blocks: $all in all, $win from $half s on"
	[ "$win" -gt 0 ] && [ "$win" -lt "$all" ] || fail "--time $half,: $win of $all blocks"
	ln -s /etc/passwd link.html
	"$OFFCPU" report -i t.data --timeline link.html 2>err.txt && fail "--timeline wrote through a symlink"
	cat err.txt
	[ "$(readlink link.html)" = /etc/passwd ] || fail "the symlink was replaced"
	"$OFFCPU" report -i t.data --timeline - --folded >/dev/null 2>err.txt && fail "two outputs on stdout accepted"
	grep -q 'standard output' err.txt || fail "no message for two outputs on stdout"
	"$OFFCPU" report --help | tr -s ' \n' '  ' | grep -q -- '--timeline app.html' || fail "--help has no --timeline example"
}

# a command named like markup is text in the page, never markup or script
test_timeline_html_names_escaped() {
	cp /bin/sleep "./<b>\"x&<script>'"
	"$OFFCPU" record -o n.data -- "./<b>\"x&<script>'" 0.2 2>rec.err || fail "record failed"
	"$OFFCPU" report -i n.data --timeline n.html || fail "report --timeline failed"
	grep -o '"str": {[^}]*}' n.html | head -c 300; echo
	! grep -q '<b>\|<script>'"'"'' n.html || fail "the command's name is markup in the page"
	grep -q '\\u003cb\\u003e\\"x\\u0026\\u003cscript\\u003e' n.html || fail "the name is not in the page's data, escaped"
	if command -v node >/dev/null && [ -d "$BROWSER/node_modules/playwright-core" ]; then
		cp "$ROOT/tests/browser/timeline.js" "$BROWSER/"
		node "$BROWSER/timeline.js" n.html load '<b>"x&<script>'"'" | tee browser.log
		grep -q '^ok$' browser.log || fail "the page in Chromium: $(grep FAIL browser.log)"
	fi
}

# the demo's workload (scripts/demo.sh: groundtruth) as doc/timeline.png shows
# it: a screenshot at $BUILD/timeline.png, from which doc/timeline.png is taken
test_timeline_html_demo_screenshot() {
	need_browser
	"$OFFCPU" record --wakers --state SDR --off-cpu-thresh 0 -o demo.data -- "$ROOT/$BUILD/tests/groundtruth" -r demo.truth 2>rec.err ||
		fail "record failed"
	"$OFFCPU" report -i demo.data --timeline demo.html || fail "report --timeline failed"
	node "$BROWSER/timeline.js" demo.html shot "$ROOT/$BUILD/timeline.png" | tee browser.log
	! grep -q FAIL browser.log || fail "the page in Chromium: $(grep FAIL browser.log)"
	[ "$(head -c 8 "$ROOT/$BUILD/timeline.png" | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] ||
		fail "no PNG screenshot"
	note "screenshot: $ROOT/$BUILD/timeline.png"
}

# page_totals PAGE: "lanes drawn merged drawn_ns merged_ns max_lane_items", read from its data
page_totals() {
	node -e '
		const s = require("fs").readFileSync(process.argv[1], "utf8");
		const a = s.indexOf("var DATA = ") + 11, b = s.indexOf(";\n</script>", a);
		const D = JSON.parse(s.slice(a, b));
		let drawn = 0, merged = 0, dns = 0, mns = 0, most = 0;
		for (const l of D.lanes) {
			drawn += l.b.length / 10; merged += l.merged; mns += l.merged_ns;
			for (let i = 1; i < l.b.length; i += 10) dns += l.b[i];
			most = Math.max(most, l.b.length / 10 + l.g.length / 9 + l.u.length / 7);
		}
		console.log(D.lanes.length, drawn, merged, dns, mns, most);
	' "$1"
}

# bounded: 300,000 blocks in 4 threads (bench/gen-perfdata) give at most
# TIMELINE_LANE_CAP items a thread; what is not drawn is merged, and the
# page's blocks and merged totals hold all the time the report counts
test_timeline_html_bounded() {
	local cap totals want
	command -v node >/dev/null || skip "no node (apt-get install nodejs)"
	make -s -C "$ROOT" BUILD="$BUILD" bench-gen >/dev/null 2>&1 || skip "cannot build bench/gen-perfdata"
	cp "$OFFCPU" target
	"$ROOT/$BUILD/bench/gen-perfdata" -o big.data -n 300000 -t 4 "$PWD/target" 2>/dev/null || fail "gen-perfdata failed"
	"$OFFCPU" report -i big.data --timeline big.html -v 2>rep.err || { cat rep.err; fail "report --timeline failed"; }
	grep 'timeline:' rep.err
	ls -la big.html
	cap=$(sed -n 's/^#define TIMELINE_LANE_CAP \([0-9]*\)$/\1/p' "$ROOT/src/report/timeline.h")
	totals=$(page_totals big.html)
	echo "lanes drawn merged drawn_ns merged_ns max_lane_items: $totals (cap $cap)"
	read -r lanes drawn merged dns mns most <<<"$totals"
	[ "$lanes" = 4 ] || fail "$lanes lanes for 4 threads"
	[ "$most" -le "$cap" ] || fail "a lane holds $most items, over $cap"
	[ $((drawn + merged)) = 300000 ] || fail "$drawn drawn and $merged merged of 300000 blocks"
	[ "$merged" -gt 0 ] || fail "nothing merged"
	grep -q 'are merged into per-interval totals' big.html || fail "the page does not say what it merged"
	want=$("$OFFCPU" report -i big.data -s pid | awk '!/^#/ && NF >= 2 { s += $1 } END { printf "%.0f", s * 1e6 }')
	within 0.01 $((dns + mns)) "$want" || fail "the page holds $((dns + mns)) ns, the report $want"
	note "300,000 blocks: $drawn drawn, $merged merged, $(stat -c %s big.html) bytes"
}

# a hung program recorded with -p: each hung thread one block from when it
# began waiting (before the recording, hatched) to the recording's end, not
# summed short blocks; a click on its part before the recording says since when
test_timeline_html_hang() {
	local pid n i
	need_browser
	"$HANG" -r hang.txt &
	pid=$!
	# shellcheck disable=SC2064
	trap "kill $pid 2>/dev/null" EXIT
	for ((i = 0, n = 0; i < 100 && n < 7; i++)); do
		[ ! -f hang.txt ] || n=$(wc -l <hang.txt)
		sleep 0.05
	done
	[ "$n" -ge 7 ] || fail "hang did not block its 7 threads"
	sleep 1
	"$OFFCPU" record -p "$pid" -d 1 -o hang.data 2>rec.err || fail "record failed"
	kill "$pid"
	"$OFFCPU" report -i hang.data --timeline hang.html -v 2>rep.err || { cat rep.err; fail "report --timeline failed"; }
	grep 'timeline:' rep.err
	node "$BROWSER/timeline.js" hang.html hang hang.txt | tee browser.log
	grep -q '^ok$' browser.log || fail "the page in Chromium: $(grep FAIL browser.log)"
}

# the critical path of a clicked block, drawn across the lanes: the
# request's wait through the worker to the holder's timer-ended sleep, as
# the workload measured it; the path sums to the block
test_timeline_html_critical_path() {
	local got want figures t
	need_browser
	"$OFFCPU" record --critical-path -o cp.data -- "$CRITPATH" -r truth.txt -d . 2>rec.err || fail "record failed"
	cat truth.txt
	"$OFFCPU" report -i cp.data --timeline cp.html 2>rep.err || { cat rep.err; fail "report --timeline failed"; }
	node "$BROWSER/timeline.js" cp.html path req_chain | tee browser.log
	grep -q '^ok$' browser.log || fail "the page in Chromium: $(grep FAIL browser.log)"
	got=$(awk '$1 == "PATH" && $2 == "holder" && $4 == "woken_by_[timer]" { s += $5 } END { printf "%.0f", s }' browser.log)
	want=$(awk '$1 == "holder_sleep" { print $3 }' truth.txt)
	within 5 "$got" "$want" || fail "the holder's sleep: $((got / 1000000)) ms on the page's path, it slept $((want / 1000000)) ms"
	figures="the holder's sleep $((got / 1000000))/$((want / 1000000)) ms"
	# the holder's and the worker's computes are on it, however the machine shared their CPUs
	for t in holder:holder_cpu worker:worker_cpu; do
		got=$(awk -v c="${t%%:*}" '$1 == "PATH" && $2 == c && $4 != "woken_by_[timer]" { s += $5 } END { printf "%.0f", s }' browser.log)
		want=$(awk -v l="${t##*:}" '$1 == l { print $3 }' truth.txt)
		[ "$got" -ge $((want * 95 / 100)) ] || fail "${t%%:*}: $((got / 1000000)) ms on the path, it computed $((want / 1000000)) ms"
		figures="$figures, ${t%%:*} $((got / 1000000)) ms (computed $((want / 1000000)))"
	done
	note "on the page's path: $figures"
}

# The page's scripts are files of the tree (src/report/timeline/), embedded at
# build time; their unit tests run in node, without a browser
# (tests/browser/timeline_units.test.js): the fields the scripts read are the
# ones timeline.c declares (DATA.layout), a page offcpu wrote reads back in
# that layout, and the page's critical path charges each block's whole length
# once, on a recording with paths across threads.
test_timeline_js_units() {
	local v
	command -v node >/dev/null || skip "no node (apt-get install nodejs)"
	v=$(node -p 'process.versions.node.split(".")[0]')
	[ "$v" -ge 18 ] || skip "node $v: node --test needs node 18 or newer"
	record_truth --critical-path -o cp.data -- "$CRITPATH" -r truth.txt -d .
	"$OFFCPU" report -i cp.data --timeline cp.html || fail "report --timeline failed"
	TIMELINE_HTML=$PWD/cp.html node --test "$ROOT/tests/browser/timeline_units.test.js" >units.log 2>&1
	local rc=$?
	grep -E '^# (tests|pass|fail|skipped)' units.log
	[ $rc = 0 ] || { grep -B2 -A20 '^not ok' units.log | head -60; fail "the page's unit tests failed"; }
	grep -q '^# fail 0$' units.log && grep -q '^# skipped 0$' units.log && grep -Eq '^# pass [1-9]' units.log ||
		fail "the page's unit tests did not all run"
}
