# shellcheck shell=bash
# offcpu record --push (doc/push.md): every interval's profiles sent to a
# receiver on 127.0.0.1 (tests/integration/push_receiver.py) that stores
# what it is sent. OTLP requests are decoded by protoc against the official
# field numbers (otlp_profiles_subset.proto) and held to the profiling
# group's conformance rules (push_check.py); Pyroscope's pprof by go tool
# pprof -raw. The ground-truth workload's threads are held to their own
# clocks (2%), with their states and wakers. A backend down, then up, gets
# every interval from the spool, none twice; one that never answers costs
# the recording nothing, and every drop is said.

RECEIVER=$ROOT/tests/integration/push_receiver.py
CHECK=$ROOT/tests/integration/push_check.py
# Debian's python3, with python3-protobuf (install-deps --check)
PB_PYTHON=/usr/bin/python3

need_otlp_tools() {
	command -v protoc >/dev/null || skip "protoc not installed (make deps)"
	"$PB_PYTHON" -c 'import google.protobuf' 2>/dev/null || skip "python3-protobuf not installed (make deps)"
	protoc --proto_path="$ROOT/tests/integration" --python_out=. otlp_profiles_subset.proto ||
		fail "protoc cannot compile otlp_profiles_subset.proto"
}

# start_receiver NAME [ARGS]: the receiver storing into NAME/; sets RPORT
start_receiver() {
	local name=$1 i
	shift
	python3 "$RECEIVER" --dir "$name" --port-file "$name.port" "$@" 2>"$name.log" &
	echo $! >>receivers.pid
	for ((i = 0; i < 100; i++)); do
		[ -s "$name.port" ] && break
		sleep 0.1
	done
	[ -s "$name.port" ] || fail "the receiver did not start"
	RPORT=$(cat "$name.port")
}

stop_receivers() {
	[ -f receivers.pid ] && kill $(cat receivers.pid) 2>/dev/null
	rm -f receivers.pid
}

# push_gt ARGS...: the ground-truth workload (-s $GT_SCALE) recorded with
# -p --wakers ARGS; made again when the recorder reports that it lost time.
# Its summary in rec.err; GT_PID its pid.
push_gt() {
	local try gp rp
	for try in 1 2 3; do
		rm -f go truth.txt
		"$GT" -r truth.txt -w go -s "${GT_SCALE:-1}" &
		gp=$!
		GT_PID=$gp
		[ -z "${GT_CGROUP:-}" ] || echo "$gp" >"$GT_CGROUP/cgroup.procs" || fail "cannot move the workload"
		"$OFFCPU" record -p "$gp" --wakers "$@" 2>rec.err &
		rp=$!
		wait_for_line rec.err "recording" 10 || { kill $gp $rp; cat rec.err; fail "offcpu did not start"; }
		touch go
		wait $gp || fail "the workload failed"
		wait $rp || { cat rec.err; fail "offcpu record --push $* failed"; }
		lost_time rec.err || return 0
		[ -z "${PUSH_RETRY_CLEAN:-}" ] || $PUSH_RETRY_CLEAN
	done
	fail "three recordings in a row reported losses"
}

# sent_count: the requests the recorder says it sent
sent_count() {
	sed -nE 's/^offcpu: push: [0-9]+ intervals to .*: ([0-9]+) requests sent.*/\1/p' rec.err
}

# decode_otlp DIR: every request protoc decodes with the official numbers,
# conformant (push_check.py); its findings in checked.txt
decode_otlp() {
	local b n=0
	for b in "$1"/*.body; do
		[ -e "$b" ] || continue
		n=$((n + 1))
		zcat "$b" | protoc --proto_path="$ROOT/tests/integration" \
			--decode=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest \
			otlp_profiles_subset.proto >typed.txt 2>typed.err ||
			{ cat typed.err; fail "protoc cannot decode $b as an ExportProfilesServiceRequest"; }
		! grep -nE '^ *[0-9]+(:| \{)' typed.txt | head -5 | grep . ||
			fail "$b: fields the official protos do not have (by number above)"
	done
	"$PB_PYTHON" "$CHECK" otlp . "$1" >checked.txt 2>check.err || { cat check.err; fail "conformance rules broken"; }
	echo "$n requests decoded by protoc and conformant"
}

# totals CHECKED: "tid ns" of the samples push_check.py listed
totals() {
	awk -F'\t' '$1 == "sample" { s[$2] += $7 } END { for (t in s) print t, s[t] }' "$1"
}

# share CHECKED TID FIELD VALUE: the thread's ns whose FIELD (5 waker, 6 waker
# function, 4 state) is VALUE, and its ns in all
share() {
	awk -F'\t' -v t="$2" -v f="$3" -v v="$4" '$1 == "sample" && $2 == t { all += $7; if ($f == v) got += $7 }
		END { printf "%.0f %.0f\n", got, all }' "$1"
}

# no interval twice: no profile id twice, no window twice (a window may
# reach a little into the one before: a block read just after a file began
# can have ended just before, and is stamped with its end)
check_once() {
	local dup
	dup=$(awk -F'\t' '$1 == "profile" { print $2 }' checked.txt | sort | uniq -d)
	[ -z "$dup" ] || fail "profiles received twice: $dup"
	dup=$(awk -F'\t' '$1 == "request" { print $4 }' checked.txt | sort | uniq -d)
	[ -z "$dup" ] || fail "two requests of the interval that began at $dup"
}

# the threads' waits, states and wakers against the workload's clocks
check_gt_attributes() {
	local tid got all
	tid=$(awk '$1 == "gt-pipe" { print $2 }' truth.txt)
	read -r got all < <(share checked.txt "$tid" 6 gt_feed_thread)
	echo "gt-pipe: woken in gt_feed_thread for $((got / 1000000)) of $((all / 1000000)) ms"
	[ $((got * 100)) -ge $((all * 95)) ] || fail "gt-pipe's waits not attributed to gt-feed's gt_feed_thread"
	read -r got all < <(share checked.txt "$tid" 5 gt-feed)
	[ $((got * 100)) -ge $((all * 95)) ] || fail "gt-pipe's waker is not gt-feed"
	tid=$(awk '$1 == "gt-cond" { print $2 }' truth.txt)
	read -r got all < <(share checked.txt "$tid" 6 gt_signal_thread)
	echo "gt-cond: woken in gt_signal_thread for $((got / 1000000)) of $((all / 1000000)) ms"
	[ $((got * 100)) -ge $((all * 95)) ] || fail "gt-cond's waits not attributed to gt-signal's gt_signal_thread"
	tid=$(awk '$1 == "gt-sleep" { print $2 }' truth.txt)
	read -r got all < <(share checked.txt "$tid" 5 "[timer]")
	[ $((got * 100)) -ge $((all * 95)) ] || fail "gt-sleep's sleeps not woken by [timer]"
	read -r got all < <(share checked.txt "$tid" 4 S)
	[ "$got" = "$all" ] || fail "gt-sleep's waits not all in state S"
	awk -F'\t' -v t="$tid" '$1 == "sample" && $2 == t && $3 == "gt-sleep" && $8 ~ /^clock_nanosleep.*;gt_sleep_block;gt_sleep_thread;/ { f = 1 } END { exit !f }' checked.txt ||
		fail "gt-sleep's stack is not clock_nanosleep...gt_sleep_block;gt_sleep_thread, leaf first"
}

# OTLP: conformant requests, the workload's threads within 2% with their
# states and wakers, the resource's attributes, every interval once
test_push_otlp_ground_truth() {
	need_otlp_tools
	trap stop_receivers EXIT
	start_receiver recv
	PUSH_RETRY_CLEAN="rm -f recv/*" GT_SCALE=2 push_gt --push "http://127.0.0.1:$RPORT" \
		--push-interval 1s --push-label env=test
	grep 'push' rec.err
	decode_otlp recv
	[ "$(ls recv/*.body | wc -l)" = "$(sent_count)" ] || fail "the receiver has $(ls recv/*.body | wc -l) requests, the recorder sent $(sent_count)"
	grep -q '^offcpu: push: nothing dropped' rec.err || fail "push dropped something"
	check_once
	totals checked.txt >push.tot
	check_threads truth.txt push.tot 2
	check_gt_attributes
	# the resource: the host, the process, its service (the semantic conventions'
	# default here), and --push-label
	awk -F'\t' -v p="$GT_PID" -v h="$(hostname)" '$1 == "resource" && $2 == p { a[$3] = $4 }
		END { exit !(a["host.name"] == h && a["process.pid"] == p && a["env"] == "test" &&
			     a["process.executable.name"] == "groundtruth" &&
			     a["service.name"] == "unknown_service:groundtruth") }' checked.txt ||
		{ grep resource checked.txt | head -20; fail "the resource lacks its host, process, service or label"; }
	note "$(wc -l <push.tot) threads within 2% over $(sent_count) requests, states and wakers as attributes"
}

# Pyroscope: every push a pprof go tool pprof -raw reads, the same totals,
# labels in the application name, no pid or tid
test_push_pyroscope() {
	local b sum
	trap stop_receivers EXIT
	command -v go >/dev/null || skip "go not installed (make deps)"
	start_receiver recv
	PUSH_RETRY_CLEAN="rm -f recv/*" GT_SCALE=2 push_gt --push "http://127.0.0.1:$RPORT" \
		--push-format pyroscope --push-interval 1s --push-label env=test
	grep 'push' rec.err
	[ "$(ls recv/*.body | wc -l)" = "$(sent_count)" ] || fail "the receiver has $(ls recv/*.body | wc -l) requests, the recorder sent $(sent_count)"
	: >raw.txt
	for b in recv/*.body; do
		"$PB_PYTHON" -c 'import json, sys; m = json.load(open(sys.argv[1])); print(m["path"]); print(m["query"])' \
			"${b%.body}.json" >req.txt
		[ "$(sed -n 1p req.txt)" = /ingest ] || fail "posted to $(sed -n 1p req.txt)"
		"$PB_PYTHON" -c 'import sys, urllib.parse; q = urllib.parse.parse_qs(open(sys.argv[1]).read().split("\n")[1]); print(q["name"][0]); print(int(q["from"][0]) <= int(q["until"][0]), q["format"][0])' \
			req.txt >q.txt || fail "no name, from, until in $(sed -n 2p req.txt)"
		cat q.txt
		grep -qx "groundtruth{host_name=$(hostname),process_executable_name=groundtruth,env=test}" q.txt ||
			fail "the application name is not groundtruth{host_name=...,process_executable_name=groundtruth,env=test}"
		grep -qx 'True pprof' q.txt || fail "from after until, or not format=pprof"
		HOME=$PWD GOCACHE=$PWD/.gocache go tool pprof -raw "$b" >>raw.txt 2>raw.err ||
			{ cat raw.err; fail "go tool pprof cannot read $b"; }
	done
	grep -q 'offcpu/nanoseconds' raw.txt || fail "no offcpu/nanoseconds sample type"
	! grep -qE '(^|[ {])(pid|tid):' raw.txt || fail "a pid or tid label: a series for each"
	# "  VALUE COUNT: locations" then its labels
	awk '/^ +[0-9]+ +[0-9]+:/ { v = $1; next }
		v { for (i = 1; i <= NF; i++) if ($i ~ /^thread_name:\[/) { s[substr($i, 14, length($i) - 14)] += v; v = 0 } }
		END { for (t in s) print t, s[t] }' raw.txt >byname.txt
	awk 'NR == FNR { n[$1] = $2; next } { print $2, ($1 in n) ? n[$1] : 0 }' byname.txt truth.txt >push.tot
	check_threads truth.txt push.tot 2
	grep -q 'linux_sched_waker_function:\[gt_feed_thread\] linux_sched_waker_thread_name:\[gt-feed\] thread_name:\[gt-pipe\]' raw.txt ||
		fail "gt-pipe's samples lack their waker"
	grep -q 'linux_sched_state:\[S\]' raw.txt || fail "no state label"
	note "$(sent_count) pprof pushes read by go tool pprof, $(wc -l <push.tot) threads within 2%"
}

# the backend down for 30 s, then up: every interval arrives, from the spool, none twice
test_push_spool_outage() {
	need_otlp_tools
	trap stop_receivers EXIT
	start_receiver recv --down 30
	# the workload outlasts the outage by a few seconds (-s 33: 33 s)
	GT_SCALE=33 push_gt --push "http://127.0.0.1:$RPORT" --push-interval 2s --push-spool spool \
		--push-timeout 1s
	grep 'push' rec.err
	grep -q 'did not take a request' rec.err || fail "the outage was not said"
	grep -q 'takes requests again' rec.err || fail "the recovery was not said"
	# every request that went to the spool came out of it (intervals with no
	# block ending in them send nothing: how many do depends on the machine)
	sed -nE 's/.* ([0-9]+) of them from the spool.*/\1/p' rec.err >spooled
	sed -nE 's/^offcpu: push: ([0-9]+) requests went to the spool; 0 wait there now.*/\1/p' rec.err >went
	[ -s went ] && [ "$(cat spooled)" = "$(cat went)" ] && [ "$(cat went)" -ge 3 ] ||
		fail "$(cat went) requests went to the spool, $(cat spooled) came out of it"
	decode_otlp recv
	[ "$(ls recv/*.body | wc -l)" = "$(sent_count)" ] || fail "the receiver has $(ls recv/*.body | wc -l) requests, the recorder sent $(sent_count)"
	[ -z "$(ls spool)" ] || fail "requests left in the spool: $(ls spool)"
	grep -q '^offcpu: push: nothing dropped' rec.err || fail "push dropped something"
	check_once
	totals checked.txt >push.tot
	check_threads truth.txt push.tot 2
	note "30 s down: $(sent_count) requests, $(cat spooled) from the spool, none twice, every thread within 2%"
}

# a backend that accepts and never answers: the recording is unaffected,
# the drops are said; with a spool every interval is kept, its totals right
test_push_hung_backend() {
	local n kept all empty
	need_otlp_tools
	trap stop_receivers EXIT
	start_receiver recv --mode hang
	GT_SCALE=2 push_gt --push "http://127.0.0.1:$RPORT" --push-interval 1s --push-timeout 1s
	grep 'push\|lost' rec.err
	! lost_time rec.err || fail "the recording lost time"
	n=$(grep -c 'push: dropped the profiles of' rec.err)
	sed -nE 's/^offcpu: push: ([0-9]+) intervals to .* ([0-9]+) intervals without off-CPU time$/\1 \2/p' rec.err >ivl
	read -r all empty <ivl
	echo "$all intervals, $empty without off-CPU time, $n drops said"
	[ "$n" -eq $((all - empty)) ] || fail "$n drops said for $((all - empty)) intervals with profiles"
	grep -q "WARNING: 0 intervals not read and $n requests dropped" rec.err || fail "the summary does not count the drops"
	# the same with a spool: every interval kept, the workload's totals in it
	PUSH_RETRY_CLEAN="rm -rf spool" GT_SCALE=2 push_gt --push "http://127.0.0.1:$RPORT" \
		--push-interval 1s --push-timeout 1s --push-spool spool
	grep 'push' rec.err
	grep -q '^offcpu: push: nothing dropped' rec.err || fail "dropped with a spool"
	"$PB_PYTHON" "$CHECK" spool . spool >checked.txt 2>check.err || { cat check.err; fail "the spool's requests are not conformant"; }
	totals checked.txt >push.tot
	check_threads truth.txt push.tot 2
	kept=$(ls spool | wc -l)
	# the next run sends what this one kept, before its own
	start_receiver recv2
	push_gt --push "http://127.0.0.1:$RPORT" --push-interval 1s --push-spool spool
	grep 'push' rec.err
	grep -q "push: $kept requests an earlier run left in spool will be sent" rec.err || fail "the spool of the run before is not said"
	[ -z "$(ls spool)" ] || fail "requests left in the spool: $(ls spool)"
	decode_otlp recv2
	[ "$(ls recv2/*.body | wc -l)" = "$(sent_count)" ] && [ "$(sent_count)" -gt "$kept" ] ||
		fail "the receiver has $(ls recv2/*.body | wc -l) requests, the recorder sent $(sent_count), $kept of them spooled before"
	note "a backend that never answers: $n drops said, no loss; with a spool, $kept requests kept, within 2%, sent by the next run"
}

# a cgroup's service and container on the resource, one profile for the cgroup
test_push_cgroup_service() {
	local root cg id
	need_otlp_tools
	trap 'stop_receivers; rmdir "$cg" "$(dirname "$cg")" "$(dirname "$(dirname "$cg")")" 2>/dev/null' EXIT
	root=$(cgroup2_root)
	[ -n "$root" ] || skip "no cgroup v2 mount"
	id=$(printf '%064x' $$)
	cg=$root/offcpu-push-$$.slice/offcpu-fake.service/docker-$id.scope
	mkdir -p "$cg" || fail "cannot create $cg"
	start_receiver recv
	PUSH_RETRY_CLEAN="rm -f recv/*" GT_CGROUP=$cg push_gt --push "http://127.0.0.1:$RPORT" \
		--push-interval 1s --push-by cgroup -G "offcpu-push-$$.slice"
	grep 'push' rec.err
	decode_otlp recv
	awk -F'\t' '$1 == "resource" { a[$3] = $4 } END { for (k in a) print k "=" a[k] }' checked.txt | sort >res.txt
	cat res.txt
	grep -qx 'service.name=offcpu-fake' res.txt || fail "service.name is not offcpu-fake, the cgroup's .service"
	grep -qx "container.id=$id" res.txt || fail "container.id is not the docker scope's"
	grep -qx "linux.cgroup.path=/offcpu-push-$$.slice/offcpu-fake.service/docker-$id.scope" res.txt ||
		fail "no linux.cgroup.path"
	! grep -q '^process.pid=' res.txt || fail "by cgroup, the resource names a process"
	[ "$(awk -F'\t' '$1 == "request" && $3 != 1' checked.txt | wc -l)" = 0 ] || fail "more than one profile for one cgroup"
	totals checked.txt >push.tot
	check_threads truth.txt push.tot 2
}

# -a until SIGTERM: every process's profile conformant, the last interval
# sent; each interval's request split in many (at 2 KiB here, 4 MiB for real:
# a quiet machine's second of -a is 5 KiB gzip'ed), every part with a
# dictionary of its own
test_push_system_wide_sigterm() {
	local rp all empty n dup
	need_otlp_tools
	trap stop_receivers EXIT
	start_receiver recv
	OFFCPU_TEST_PUSH_MAX_REQUEST=2048 "$OFFCPU" record -a --wakers --push "http://127.0.0.1:$RPORT" \
		--push-interval 1s 2>rec.err &
	rp=$!
	wait_for_line rec.err "recording" 10 || { kill $rp; cat rec.err; fail "offcpu did not start"; }
	sleep 3
	kill -TERM $rp
	wait $rp || { cat rec.err; fail "offcpu record -a --push did not end cleanly on SIGTERM"; }
	grep 'push' rec.err
	decode_otlp recv
	[ "$(ls recv/*.body | wc -l)" = "$(sent_count)" ] || fail "the receiver has $(ls recv/*.body | wc -l) requests, the recorder sent $(sent_count)"
	# every interval, the last one cut by SIGTERM too
	sed -nE 's/^offcpu: push: ([0-9]+) intervals to .* ([0-9]+) intervals without off-CPU time$/\1 \2/p' rec.err >ivl
	read -r all empty <ivl
	[ "$all" -ge 2 ] && [ "$(sent_count)" -gt $((all - empty)) ] ||
		fail "$all intervals ($empty without off-CPU time), $(sent_count) requests: none split"
	# the parts of an interval share its window; no profile twice
	dup=$(awk -F'\t' '$1 == "profile" { print $2 }' checked.txt | sort | uniq -d)
	[ -z "$dup" ] || fail "profiles received twice: $dup"
	[ "$(awk -F'\t' '$1 == "request" { print $4 }' checked.txt | sort -u | wc -l)" = $((all - empty)) ] ||
		fail "the requests' windows are not the $((all - empty)) intervals'"
	n=$(awk -F'\t' '$1 == "profile"' checked.txt | wc -l)
	[ "$n" -gt 5 ] || fail "only $n process profiles system-wide"
	note "-a, SIGTERM after 3 s: $all intervals split in $(sent_count) requests at 2 KiB, $n process profiles, conformant"
}

# strict options, a token, a backend that rejects some profiles, one that refuses
test_push_options_token_refusal() {
	local a
	for a in "--push http://127.0.0.1:1" "--push ftp://h -a" "--push http://u:p@h -a" "--push http://h?x=1 -a" \
		"--push http://h -a -o x.data" "--push http://h -a --switch-output 1s" "--push http://h -a -F 99" \
		"--push http://h -t 1" "--push http://h -a --push-format json" "--push http://h -a --push-interval 0.5s" \
		"--push http://h -a --push-label 1x=y" "--push http://h -a --push-label k=a,b" "--push http://h -a --push-spool-size 1G" \
		"-a --push-spool /tmp" "--push http://h -a --push-by thread" "--push http://h -- true" "--push http://h -a --critical-path"; do
		# shellcheck disable=SC2086
		"$OFFCPU" record $a -d 1 2>err.txt >/dev/null
		[ $? -eq 2 ] || { cat err.txt; fail "offcpu record $a: not exit 2"; }
		head -c 200 err.txt | head -n 1
	done
	echo secret-token >token
	chmod 600 token
	chmod 666 token
	"$OFFCPU" record -a -d 1 --push http://127.0.0.1:1 --push-token-file token 2>err.txt && fail "a token file others may write was taken"
	grep -q 'writable by no one else' err.txt || { cat err.txt; fail "no clear error for the token file"; }
	chmod 600 token
	trap stop_receivers EXIT
	# a backend that takes the requests but rejects some profiles in each (OTLP's
	# partial success): said and counted; the token in every request
	start_receiver recv --mode partial:1
	start_receiver refuse --mode status:400
	PUSH_RETRY_CLEAN="rm -f recv/*" push_gt --push "http://127.0.0.1:$(cat recv.port)" --push-interval 1s \
		--push-token-file token
	grep 'push' rec.err
	grep -h '"authorization": "Bearer secret-token"' recv/*.json >/dev/null || fail "no bearer token sent"
	[ "$(grep -L 'Bearer secret-token' recv/*.json | wc -l)" = 0 ] || fail "a request without the token"
	grep -q 'but rejected 1 of them: test receiver: too old' rec.err || fail "a partial success is not said"
	grep -q 'WARNING: the backend took requests but rejected [1-9][0-9]* profiles' rec.err ||
		fail "rejected profiles not counted"
	! grep -q '^offcpu: push: nothing dropped' rec.err || fail "push says nothing was dropped"
	# a backend that refuses: every drop said with its answer
	push_gt --push "http://127.0.0.1:$(cat refuse.port)" --push-interval 1s
	grep 'push' rec.err
	grep -q 'the backend refused them (HTTP 400: refused by the test receiver' rec.err ||
		fail "the refusal is not said with the backend's answer"
	grep -q 'requests dropped ([1-9][0-9]* of them refused by the backend)' rec.err || fail "refusals not counted"
}

# JavaScript functions of node named in the pushed stacks, located as v8js
test_push_node_names() {
	local sp rp fn
	need_otlp_tools
	command -v node >/dev/null || skip "node is not installed (nodejs)"
	nm -D "$(readlink -f "$(command -v node)")" 2>/dev/null | grep -q ' v8dbg_off_fp_function$' ||
		skip "this node does not export V8's frame layout (v8dbg_* symbols)"
	trap stop_receivers EXIT
	start_receiver recv
	sh -c "while [ ! -e go ]; do sleep 0.05; done; exec node $ROOT/tests/workloads/jitwait.js 3" >truth.txt &
	sp=$!
	"$OFFCPU" record -p "$sp" --push "http://127.0.0.1:$RPORT" --push-interval 1s 2>rec.err &
	rp=$!
	wait_for_line rec.err "recording" 10 || { kill $sp $rp; cat rec.err; fail "offcpu did not start"; }
	touch go
	wait $sp || fail "the workload failed"
	wait $rp || { cat rec.err; fail "offcpu record --push failed"; }
	grep 'push\|JavaScript' rec.err
	decode_otlp recv
	for fn in blockChildAlpha blockChildBravo; do
		awk -F'\t' -v f="$fn" '$1 == "sample" && index($8, ";" f) { found = 1 } END { exit !found }' checked.txt ||
			fail "no pushed stack through the JavaScript function $fn"
	done
	for b in recv/*.body; do
		zcat "$b" | protoc --proto_path="$ROOT/tests/integration" \
			--decode=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest \
			otlp_profiles_subset.proto
	done >typed.txt
	grep -q 'string_value: "v8js"' typed.txt || fail "no location of frame type v8js"
	note "JavaScript functions pushed: blockChildAlpha, blockChildBravo, located as v8js"
}

# Python functions named in the pushed stacks as in a file: each its own
# function (its .py file and line in Function and Line), located as cpython
test_push_python_names() {
	local py=/usr/bin/python3.11 sp rp fn
	need_otlp_tools
	[ -x $py ] || skip "no $py (Debian: python3.11)"
	trap stop_receivers EXIT
	start_receiver recv
	sh -c "while [ ! -e go ]; do sleep 0.05; done; exec $py $ROOT/tests/workloads/py_waits.py -r truth.txt" &
	sp=$!
	"$OFFCPU" record -p "$sp" --wakers --push "http://127.0.0.1:$RPORT" --push-interval 1s 2>rec.err &
	rp=$!
	wait_for_line rec.err "recording" 10 || { kill $sp $rp; cat rec.err; fail "offcpu did not start"; }
	touch go
	wait $sp || fail "the workload failed"
	wait $rp || { cat rec.err; fail "offcpu record --push failed"; }
	grep 'push\|Python' rec.err
	decode_otlp recv
	for fn in sleeper_wait lock_waiter_wait queue_waiter_wait; do
		awk -F'\t' -v f=";$fn;" '$1 == "sample" && index(";" $8 ";", f) { found = 1 } END { exit !found }' checked.txt ||
			fail "no pushed stack through the Python function $fn"
	done
	for b in recv/*.body; do
		zcat "$b" | protoc --proto_path="$ROOT/tests/integration" \
			--decode=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest \
			otlp_profiles_subset.proto
	done >typed.txt
	grep -q 'string_value: "cpython"' typed.txt || fail "no location of frame type cpython"
	grep -q 'string_table: ".*py_waits.py"' typed.txt || fail "the Python functions' file is not in the string table"
	note "Python functions as in a file: sleeper_wait, lock_waiter_wait, queue_waiter_wait"
}
