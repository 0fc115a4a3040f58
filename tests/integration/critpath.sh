# shellcheck shell=bash
# report --critical-path: what a wait was really waiting for, against the
# clocks of a workload whose chains are known by construction
# (tests/workloads/critpath.c), and on a real server (postgres under
# pgbench) every root's wait charged exactly once.

CRITPATH=$ROOT/$BUILD/tests/critpath
PGBIN=/usr/lib/postgresql/15/bin

# truth LABEL: the ns the workload measured for LABEL
truth() {
	awk -v l="$1" '$1 == l { print $3 }' truth.txt
}

# path_ns FOLDED REGEX: ns (from µs) of the folded lines matching REGEX
path_ns() {
	RE=$2 awk '$0 ~ ENVIRON["RE"] { s += $NF } END { printf "%.0f", s * 1000 }' "$1"
}

# check_near PCT GOT WANT WHAT
check_near() {
	within "$1" "$2" "$3" || fail "$4: $(($2 / 1000)) us on the path, the workload measured $(($3 / 1000)) us (more than $1% apart)"
	figures="$figures $4 $(($2 / 1000000))/$(($3 / 1000000)) ms,"
}

# conserved TEXT: every root line of the table charged what it waited
conserved() {
	grep -q '^# root ' "$1" || fail "no root in the critical path"
	! grep -q 'NOT CONSERVED' "$1" || { grep 'NOT CONSERVED' "$1"; fail "a root's wait was not charged exactly once"; }
	awk '/^# root / { w = $5; c = $(NF - 1); if (w != c) bad = 1 } END { exit bad }' "$1" ||
		fail "a root's waited and charged times differ"
}

# the ground truth: the chain through the worker and the mutex's holder, the
# timer behind a waker, the reads an interrupt ends
test_critpath_ground_truth() {
	local total own want
	figures=
	record_truth --critical-path -o cp.data -- "$CRITPATH" -r truth.txt -d .
	cat truth.txt
	grep -q 'wakeups of recorded blocks: [1-9]' rec.err || fail "no wakers recorded"
	for root in req_chain req_timer; do
		"$OFFCPU" report -i cp.data --critical-path --comm $root >$root.txt 2>$root.err ||
			{ cat $root.err; fail "report --critical-path --comm $root failed"; }
		"$OFFCPU" report -i cp.data --critical-path --comm $root --folded >$root.folded ||
			fail "report --critical-path --folded failed"
		cat $root.txt $root.err
		conserved $root.txt
		! grep -q 'warning' $root.err || fail "a warning on a recording made with --critical-path"
		# the path sums to the root's wait: its read, and what the root waited on
		# its own outside it (preempted in its write, or anywhere on a loaded
		# machine); within the read, its wait for a CPU after the answer counts
		total=$(path_ns $root.folded '.')
		own=$(grep -v ';get_byte;read' $root.folded | path_ns /dev/stdin "^$root;$root;\\[(preempted|runqueue)\\];")
		check_near 1 $((total - own)) "$(truth $root)" "$root: the path"
	done
	check_near 5 "$(path_ns req_chain.folded '^req_chain;\[timer\];\[S\];.*;holder_sleep;')" \
		"$(truth holder_sleep)" "the holder's sleep"
	check_near 5 "$(path_ns req_chain.folded '^req_chain;holder;\[running[^]]*\];.*;holder_compute;')" \
		"$(truth holder_cpu)" "the holder's compute"
	check_near 5 "$(path_ns req_chain.folded '^req_chain;worker;\[running[^]]*\];.*;worker_compute;')" \
		"$(truth worker_cpu)" "the worker's compute"
	check_near 5 "$(path_ns req_timer.folded '^req_timer;\[timer\];\[S\];.*;napper_sleep;')" \
		"$(truth napper_sleep)" "the napper's sleep"
	# the reads in D: charged to the disk's interrupt with the reader's stack
	if [ -z "$(truth req_irq)" ]; then
		note "no O_DIRECT here: the chain through an interrupt not checked"
	else
		"$OFFCPU" report -i cp.data --critical-path --comm req_irq >req_irq.txt || fail "report failed"
		"$OFFCPU" report -i cp.data --critical-path --comm req_irq --folded >req_irq.folded || fail "report failed"
		cat req_irq.txt
		conserved req_irq.txt
		got=$(path_ns req_irq.folded '^req_irq;\[(irq|softirq:[A-Z_]+|tasklet)\];\[D\];.*;reader_read;')
		[ "$got" -gt 0 ] || fail "no D wait of the reader charged to an interrupt"
		# all the reader's D time is on the path, by whatever ended each read: an
		# interrupt, or on a loaded machine the kernel thread its work was
		# deferred to (ksoftirqd, a kworker), whose run is then the path's
		want=$("$OFFCPU" report -i cp.data --comm reader --states --folded | path_ns /dev/stdin '^\[D\];')
		got=$(path_ns req_irq.folded '^req_irq;[^;]*;\[D[],].*;reader_read;')
		got=$((got + $(path_ns req_irq.folded '^req_irq;(ksoftirqd|kworker)[^;]*;')))
		# (the reader may begin its first read before the requester blocks to wait
		# for its answer, when the requester is preempted in its write: that part
		# precedes the root's wait, and is on no path of it)
		[ "$got" -le "$want" ] || fail "the reader's D waits: $got ns on the path, more than the $want ns it had"
		check_near 10 "$got" "$want" "the reader's D waits"
		total=$(path_ns req_irq.folded '.')
		own=$(grep -v ';get_byte;read' req_irq.folded | path_ns /dev/stdin '^req_irq;req_irq;\[(preempted|runqueue)\];')
		check_near 1 $((total - own)) "$(truth req_irq)" "req_irq: the path"
		figures="$figures $((got / 1000000)) ms of D ended by interrupts"
	fi
	# the flame graph, and its roots in a browser-free check: one root tower
	"$OFFCPU" report -i cp.data --critical-path --comm req_chain --svg cp.svg || fail "--svg failed"
	grep -q 'holder_sleep' cp.svg || fail "the SVG has no holder_sleep"
	note "$figures"
}

# a recording without wakers and with short blocks summed: the path is not
# shorter, the unknown parts are charged as such, and stderr says how to record them
test_critpath_unknown() {
	record_truth --off-cpu-thresh 100 -o plain.data -- "$CRITPATH" -r truth.txt -d .
	"$OFFCPU" report -i plain.data --critical-path --comm req_chain >plain.txt 2>plain.err ||
		{ cat plain.err; fail "report --critical-path failed"; }
	cat plain.txt plain.err
	conserved plain.txt
	grep -q 'waker not recorded' plain.txt || fail "the waits without wakers are not said to be so"
	grep -q 'record --wakers' plain.err || fail "no advice to record --wakers"
	# the long waits streamed with their wakers, the short ones summed, no samples
	"$OFFCPU" record --wakers --off-cpu-thresh 100 -o summed.data -- "$CRITPATH" -r truth.txt -d . 2>rec.err ||
		fail "record failed"
	"$OFFCPU" report -i summed.data --critical-path --comm req_chain >summed.txt 2>summed.err ||
		fail "report --critical-path failed"
	cat summed.txt summed.err
	conserved summed.txt
	grep -q 'off-cpu-thresh 0' summed.err || fail "no advice to record --off-cpu-thresh 0"
	grep -q 'unknown: summed' summed.txt || fail "the summed part is not charged as unknown"
	# every block, no on-CPU samples: the runs have the stacks they ended in
	"$OFFCPU" record --wakers --state S,D,R --off-cpu-thresh 0 -o nosamples.data -- "$CRITPATH" -r truth.txt -d . \
		2>rec.err || fail "record failed"
	"$OFFCPU" report -i nosamples.data --critical-path --comm req_chain >nosamples.txt 2>nosamples.err ||
		fail "report --critical-path failed"
	"$OFFCPU" report -i nosamples.data --critical-path --comm req_chain --folded >nosamples.folded 2>/dev/null ||
		fail "report --critical-path --folded failed"
	cat nosamples.txt nosamples.err
	conserved nosamples.txt
	grep -q 'no on-CPU samples' nosamples.err || fail "no word on the missing on-CPU samples"
	grep -q '^req_chain;holder;\[running, not sampled\];.*holder_compute' nosamples.folded ||
		fail "the holder's run is not shown with the stack it ended in"
}

# options: roots needed, outputs that do not combine
test_critpath_options() {
	"$OFFCPU" record -o o.data -- /bin/true 2>/dev/null || fail "record failed"
	"$OFFCPU" report -i o.data --critical-path 2>err.txt
	[ $? = 2 ] || fail "--critical-path without roots: not a usage error"
	grep -q -- '--tid, --pid or --comm' err.txt || fail "no message naming the roots' options"
	for o in --json "--timeline x.html" "--perfetto x.pf" --wakers "--sort comm"; do
		# shellcheck disable=SC2086
		"$OFFCPU" report -i o.data --critical-path --comm true $o 2>err.txt
		[ $? = 2 ] || fail "--critical-path with $o: not a usage error"
	done
	"$OFFCPU" report -i o.data --critical-path --comm nosuch >none.txt || fail "no root: an error"
	grep -q 'no wait of the roots' none.txt || fail "no root: not said"
	"$OFFCPU" record --help | grep -q -- '--critical-path' || fail "record --help has no --critical-path"
}

# as_pg CMD...: CMD as the postgres user, in PGDIR (the test's directory is root's alone)
as_pg() {
	(cd "$PGDIR" && setpriv --reuid=postgres --regid=postgres --init-groups -- "$@")
}

# pg_up: a postgres of its own in PGDIR, on a Unix socket there only (no TCP)
pg_up() {
	chown postgres: "$PGDIR"
	as_pg "$PGBIN/initdb" -D "$PGDIR/db" -A trust >initdb.log 2>&1 || { cat initdb.log; fail "initdb failed"; }
	as_pg "$PGBIN/pg_ctl" -D "$PGDIR/db" -w -l "$PGDIR/pg.log" \
		-o "-c listen_addresses='' -k $PGDIR -c shared_buffers=32MB -c fsync=off" start >/dev/null ||
		{ cat "$PGDIR/pg.log"; fail "postgres did not start"; }
	as_pg "$PGBIN/pgbench" -h "$PGDIR" -i -s 1 postgres >init.log 2>&1 || { cat init.log; fail "pgbench -i failed"; }
}

pg_down() {
	as_pg "$PGBIN/pg_ctl" -D "$PGDIR/db" -m fast stop >/dev/null 2>&1
	rm -rf "$PGDIR"
}

# postgres under pgbench, both recorded: every root (each backend) charged
# exactly what it waited, which is what report counts for its thread; the
# path goes into the client and back
test_critpath_conservation_postgres() {
	local pm pgb bg roots
	[ -x "$PGBIN/postgres" ] && [ -x "$PGBIN/pgbench" ] ||
		skip "no postgres 15 (scripts/install-deps.sh --check installs postgresql-15)"
	id postgres >/dev/null 2>&1 || skip "no postgres user"
	PGDIR=$(mktemp -d /tmp/offcpu-pg.XXXXXX)
	trap pg_down EXIT
	pg_up
	pm=$(head -1 "$PGDIR/db/postmaster.pid")
	as_pg "$PGBIN/pgbench" -h "$PGDIR" -c 4 -j 2 -T 4 postgres >pgbench.log 2>&1 &
	bg=$!
	sleep 0.5
	pgb=$(pgrep -u postgres -x pgbench | head -1)
	[ -n "$pgb" ] || { cat pgbench.log; fail "pgbench is not running"; }
	# the postmaster, the backends it forked for pgbench's connections, pgbench
	"$OFFCPU" record --critical-path -p "$pm,$(pgrep -d, -P "$pm"),$pgb" -d 2 -o pg.data 2>rec.err ||
		{ cat rec.err; fail "record failed"; }
	wait $bg || { cat pgbench.log; fail "pgbench failed"; }
	tail -3 rec.err
	"$OFFCPU" report -i pg.data --critical-path --comm postgres >pg.txt 2>pg.err ||
		{ cat pg.err; fail "report --critical-path failed"; }
	head -30 pg.txt
	cat pg.err
	conserved pg.txt
	roots=$(grep -c '^# root ' pg.txt)
	[ "$roots" -ge 4 ] || fail "$roots roots: the backends are not all there"
	# each root's wait is its thread's off-CPU time as report counts it
	"$OFFCPU" report -i pg.data --comm postgres -s tid -e offcpu-time |
		awk '!/^#/ && NF == 3 { printf "%s %.3f\n", $3, $1 }' | sort >tids.txt
	awk '/^# root / { split($3, a, "/"); sub(":", "", a[3]); printf "%s %.3f\n", a[3], $5 }' pg.txt | sort >roots.txt
	join tids.txt roots.txt | awk '{ d = $2 - $3; if (d < 0) d = -d; if (d > 0.002) { print "tid " $1 ": " $2 " ms in report, " $3 " on the path"; bad = 1 } } END { exit bad }' ||
		fail "a root's waited time is not its thread's off-CPU time"
	[ "$(wc -l <roots.txt)" = "$(join tids.txt roots.txt | wc -l)" ] || fail "roots without their thread's total"
	grep -q 'pgbench/' pg.txt || fail "the path never reaches the client"
	note "$roots roots: $(sed -n 's/^# critical path of [0-9]* root threads: //p' pg.txt); $(grep -o '[0-9.]*%  pgbench/[0-9]*' pg.txt | head -1) in pgbench"
}
