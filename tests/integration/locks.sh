# shellcheck shell=bash
# What each thread waited on, who held it, and the deadlocks (issue 30):
# record --wait-objects against the locks workload's own clocks
# (tests/workloads/locks.c), report --locks naming the mutex by its symbol,
# its holder and the pipe's and socket's peers; record -p of a process in an
# ABBA deadlock (tests/workloads/abba.c), whose report prints the deadlock;
# perf still reads the files. Each test_* runs in its own temporary directory.

LOCKS=$ROOT/$BUILD/tests/locks
ABBA=$ROOT/$BUILD/tests/abba

# record_locks ARGS...: the locks workload under offcpu record ARGS -o l.data
record_locks() {
	record_truth "$@" -o l.data -- "$LOCKS" -r truth.txt
	cat rec.err truth.txt
	! grep FALLBACK rec.err || fail "a fallback was taken"
}

# report --locks of l.data, checked against the truth (locks_check, lib.sh)
check_locks() {
	"$OFFCPU" report -i l.data --locks >locks.txt 2>report.err || { cat report.err; fail "report --locks failed"; }
	cat locks.txt
	locks_check truth.txt locks.txt
}

# with --wakers: the pipe's writer is who woke its reader, in lk_write_pipe
test_locks_ground_truth() {
	record_locks --wait-objects --wakers
	check_locks
	grep -q "peer: lk-writer/$(cat writer.txt) in .*lk_write_pipe" pipe.txt ||
		fail "the pipe's peer is not lk-writer in lk_write_pipe"
	note "$locks_figures"
}

# without --wakers: the holder from its own wait while it held the mutex,
# the server from its own socket; a pipe's writer that never waits on it is
# not known, and that is said
test_locks_without_wakers() {
	record_locks --wait-objects
	check_locks
	grep -q "peer: not seen (--wakers records who woke the waits)" pipe.txt ||
		fail "the pipe's unknown peer is not said"
}

# --sort object groups the table by what was waited on; perf reads the
# file: offcpu-wait samples with the mutex's address, the same offcpu-time
# totals per thread, and perf report shows the new event
test_locks_sort_object_and_perf() {
	command -v perf >/dev/null || skip "perf not installed"
	record_locks --wait-objects
	"$OFFCPU" report -i l.data --sort comm,object >sort.txt || fail "--sort comm,object failed"
	cat sort.txt
	grep -Eq '^ +[0-9.]+ +[0-9.]+%  lk-waiter1 +mutex lk_mutex \(locks\)' sort.txt ||
		fail "--sort object does not name lk-waiter1's mutex"
	grep -Eq '  lk-reader +pipe pipe:\[' sort.txt || fail "--sort object does not name the pipe"
	addr=$("$OFFCPU" report -i l.data --locks | sed -nE 's/.* mutex +lk_mutex \(locks\) at (0x[0-9a-f]+) .*/\1/p')
	[ -n "$addr" ] || fail "no mutex address in --locks"
	perf script -i l.data -F tid,event,period,addr 2>perf.err >script.txt || { cat perf.err; fail "perf script failed"; }
	! grep -qi 'error\|unexpected\|failed' perf.err || { cat perf.err; fail "perf script complained"; }
	[ "$(awk -v a="${addr#0x}" '$3 == "offcpu-wait:" && $4 == a' script.txt | wc -l)" -ge 2 ] ||
		{ head -30 script.txt; fail "perf script -F addr does not show the mutex's address on 2 offcpu-wait samples"; }
	awk '$3 == "offcpu-time:" { s[$1] += $2 } END { for (t in s) print t, s[t] }' script.txt | sort >perf.tot
	per_tid_offcpu l.data | sort >offcpu.tot
	join perf.tot offcpu.tot | awk '{ d = $2 - $3; if (d < 0) d = -d; if (d > 1000 + $2 / 1000) { print; bad = 1 } } END { exit bad }' ||
		fail "perf and offcpu report disagree on per-thread totals"
	perf report -i l.data --stdio --sort comm 2>&1 | grep -q "of event 'offcpu-wait'" ||
		fail "perf report does not show offcpu-wait"
	# pprof: an object label, which go tool pprof reads
	if command -v go >/dev/null; then
		"$OFFCPU" report -i l.data --pprof l.pb.gz || fail "--pprof failed"
		go tool pprof -tags l.pb.gz 2>/dev/null >tags.txt
		sed -n '/object:/,/^$/p' tags.txt
		grep -Eq '^ +[0-9.]+m?s \([ 0-9.]+%\): mutex lk_mutex \(locks\)$' tags.txt ||
			fail "go tool pprof shows no object label of lk_mutex"
	fi
}

# start_abba: the ABBA workload, deadlocked; its pid in $abba, its threads in dl.txt
start_abba() {
	rm -f dl.txt
	"$ABBA" -r dl.txt &
	abba=$!
	# shellcheck disable=SC2064
	trap "kill $abba 2>/dev/null" EXIT
	wait_for_line dl.txt '^ready$' 10 || fail "the ABBA workload did not deadlock"
	cat dl.txt
}

# record -p of a deadlocked process, without options: one deadlock: line
# with both threads, their stacks and both mutexes; the third thread's
# chain into it; --fail-on-deadlock's exit status
test_locks_deadlock() {
	local b
	start_abba
	b=$(awk '$1 == "dl-bravo" { print $2 }' dl.txt)
	"$OFFCPU" record -p "$abba" -d 1 -o d.data 2>rec.err || { cat rec.err; fail "record -p failed"; }
	"$OFFCPU" report -i d.data >d.txt 2>d.err || { cat d.err; fail "report failed"; }
	sed -n '1,/^$/p' d.txt
	deadlock_check dl.txt d.txt
	"$OFFCPU" report -i d.data --fail-on-deadlock >/dev/null 2>fail.err
	[ $? = 3 ] || { cat fail.err; fail "--fail-on-deadlock did not exit 3"; }
	"$OFFCPU" report -i d.data --fail-on-deadlock --folded >/dev/null 2>&1
	[ $? = 3 ] || fail "--fail-on-deadlock with --folded did not exit 3"
	# the same file's --locks: the iterators' objects, with their owners
	"$OFFCPU" report -i d.data --locks >dl-locks.txt || fail "report --locks failed"
	grep -q "only the waits under way at the recording's start and end" dl-locks.txt ||
		fail "--locks does not say the objects are only the iterators'"
	grep -A3 ' mutex *dl_mutex_b (abba)' dl-locks.txt | grep -q "held by: dl-bravo/$b" ||
		fail "--locks does not name dl_mutex_b's holder"
	note "$deadlock_figures"
}

# no deadlock, no exit status: the locks workload's recording
test_locks_no_deadlock() {
	record_locks --wait-objects
	"$OFFCPU" report -i l.data --fail-on-deadlock >r.txt 2>r.err || fail "--fail-on-deadlock failed without a deadlock"
	! grep -q '^deadlock:' r.txt || fail "a deadlock where there is none"
	# --locks needs objects: a file of perf record's kind has none
	"$OFFCPU" record -o plain.data -- sleep 0.1 2>/dev/null || fail "record failed"
	"$OFFCPU" report -i plain.data --locks >/dev/null 2>locks.err && fail "--locks without wait objects succeeded"
	grep -q "record it with offcpu record --wait-objects" locks.err || { cat locks.err; fail "--locks does not say what is missing"; }
}

# an owner id that is not a thread of the process is only a hint: said to be
# unknown, never taken for a thread (a mutex whose memory names thread 4000000)
test_locks_owner_not_a_thread() {
	cat >fake.c <<-'EOF'
		#include <pthread.h>
		#include <stdio.h>
		#include <string.h>
		static pthread_mutex_t fake_mutex = PTHREAD_MUTEX_INITIALIZER;
		int main(void)
		{
			int *w = (int *)&fake_mutex;
			w[0] = 2;        /* __lock: locked, with waiters */
			w[2] = 4000000;  /* __owner: no thread of this process */
			printf("blocking\n");
			fflush(stdout);
			pthread_mutex_lock(&fake_mutex);
			return 0;
		}
	EOF
	gcc -O1 -g -pthread fake.c -o fake 2>gcc.err || { cat gcc.err; fail "cannot build the test program"; }
	./fake >fake.out &
	local pid=$!
	# shellcheck disable=SC2064
	trap "kill $pid 2>/dev/null" EXIT
	wait_for_line fake.out blocking 5 || fail "the test program did not start"
	sleep 0.2
	"$OFFCPU" record -p "$pid" -d 0.5 -o f.data 2>rec.err || { cat rec.err; fail "record failed"; }
	"$OFFCPU" report -i f.data >f.txt || fail "report failed"
	sed -n '1,/^$/p' f.txt
	grep -q "fake/$pid .*waiting in main .*mutex fake_mutex (fake), held by an unknown thread (its memory names 4000000, no thread of the process)" f.txt ||
		fail "the bogus owner is not said to be unknown"
	! grep -q "held by [^ ]*/4000000" f.txt || fail "the bogus owner is taken for a thread"
}

# glibc's mutex layout as offcpu reads it (src/offcpu.h: __lock at byte 0,
# __owner at 8, __kind at 16) is the one in glibc's own debug info
test_locks_glibc_layout() {
	command -v gdb >/dev/null || skip "gdb not installed"
	local libc
	libc=$(ldd "$LOCKS" | awk '$1 ~ /^libc\.so/ { print $3 }')
	gdb -batch -ex 'ptype /o struct __pthread_mutex_s' "$libc" >ptype.txt 2>&1
	cat ptype.txt
	grep -q '__owner' ptype.txt || skip "no debug info for $libc (libc6-dbg)"
	grep -Eq '^/\* +0 +\| +4 \*/ +int __lock;' ptype.txt || fail "__lock is not at byte 0"
	grep -Eq '^/\* +8 +\| +4 \*/ +int __owner;' ptype.txt || fail "__owner is not at byte 8"
	grep -Eq '^/\* +16 +\| +4 \*/ +int __kind;' ptype.txt || fail "__kind is not at byte 16"
	grep -q 'OFFCPU_GLIBC_MUTEX_OWNER 2 ' "$ROOT/src/offcpu.h" &&
		grep -q 'OFFCPU_GLIBC_MUTEX_LOCK 0 ' "$ROOT/src/offcpu.h" &&
		grep -q 'OFFCPU_GLIBC_MUTEX_KIND 4 ' "$ROOT/src/offcpu.h" ||
		fail "offcpu.h's word indexes are not bytes 0, 8, 16"
}
