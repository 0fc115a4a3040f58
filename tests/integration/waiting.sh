# Integration tests of the threads already waiting when a recording begins
# (issue 22): offcpu record -p of a stuck process writes an offcpu-before
# sample per blocked thread; offcpu report lists them first, each in its own
# function, with how long and since when; perf reads them as an event of
# their own. Each test_* runs in its own temporary directory.
# shellcheck shell=bash

HANG=$ROOT/$BUILD/tests/hang

# A perf.data written by hand with offcpu's writer: offcpu-time and
# offcpu-before samples of three threads of the generator itself (its own
# functions, mapped where they run, so that perf resolves them too).
#   gen-alpha  45 s before the start (T0 = 1000 s), still waiting 2 s later
#   gen-bravo  10 s before, woken 1.5 s into the recording (streamed)
#   gen-charlie no wait before: 300 ms during the recording
write_generator() {
	cat >gen.c <<-'EOF'
		#include <fcntl.h>
		#include <stdio.h>
		#include <stdlib.h>
		#include <string.h>
		#include <unistd.h>
		#include <sys/mman.h>
		#include "perfdata/writer.h"
		#include "perfdata/sample.h"

		#define SEC 1000000000ULL
		#define T0 (1000 * SEC)
		#define SAMPLE_TYPE (OFFCPU_SAMPLE_TYPE | PERF_SAMPLE_WEIGHT)

		static struct perf_writer *w;
		static char buf[8192];
		static unsigned pid;

		int main(int argc, char **argv);

		__attribute__((noinline)) int gen_wait_alpha(int x) { return x * 3 + 1; }
		__attribute__((noinline)) int gen_wait_bravo(int x) { return x * 5 + 2; }
		__attribute__((noinline)) int gen_wait_charlie(int x) { return x * 7 + 3; }

		static void sideband(size_t body, unsigned type, unsigned tid, unsigned long long time)
		{
			struct perf_event_header *h = (void *)buf;
			struct perf_sample id = { .pid = pid, .tid = tid, .time = time, .id = 7 };

			body = (body + 7) & ~7UL;
			perf_sample_id__encode(SAMPLE_TYPE, &id, buf + body);
			h->type = type;
			h->misc = PERF_RECORD_MISC_USER;
			h->size = (unsigned short)(body + perf_sample_id__size(SAMPLE_TYPE));
			if (perf_writer__write(w, h))
				exit(1);
		}

		static void comm(unsigned tid, const char *name)
		{
			memset(buf, 0, sizeof(buf));
			*(unsigned *)(buf + 8) = pid;
			*(unsigned *)(buf + 12) = tid;
			strcpy(buf + 16, name);
			sideband(16 + strlen(name) + 1, PERF_RECORD_COMM, tid, 1);
		}

		/* the executable mapping of this program, as /proc/self/maps has it */
		static void mmap2(void)
		{
			FILE *f = fopen("/proc/self/maps", "r");
			char line[4096], path[4096];
			unsigned long long start, end, pgoff, fn = (unsigned long long)&gen_wait_alpha;

			while (f && fgets(line, sizeof(line), f)) {
				if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &start, &end, &pgoff, path) != 4 ||
				    fn < start || fn >= end)
					continue;
				memset(buf, 0, sizeof(buf));
				*(unsigned *)(buf + 8) = pid;
				*(unsigned *)(buf + 12) = pid;
				*(unsigned long long *)(buf + 16) = start;
				*(unsigned long long *)(buf + 24) = end - start;
				*(unsigned long long *)(buf + 32) = pgoff;
				*(unsigned *)(buf + 64) = PROT_READ | PROT_EXEC;
				strcpy(buf + 72, path);
				sideband(72 + strlen(path) + 1, PERF_RECORD_MMAP2, pid, 2);
				fclose(f);
				return;
			}
			exit(1);
		}

		static void sample(uint64_t id, unsigned tid, uint64_t time, uint64_t period, unsigned state,
				   void *fn)
		{
			uint64_t ips[3] = { PERF_CONTEXT_USER, (uint64_t)fn + 1, (uint64_t)&main + 1 };
			struct perf_sample s = { .id = id, .pid = pid, .tid = tid, .time = time,
						 .period = period, .weight = state + 1, .ip = ips[1],
						 .nr_ips = 3, .ips = ips };
			int size = perf_sample__encode(SAMPLE_TYPE, &s, buf, sizeof(buf));

			if (size < 0 || perf_writer__write(w, (void *)buf))
				exit(1);
		}

		int main(int argc, char **argv)
		{
			static const struct perf_event_header round = { PERF_RECORD_FINISHED_ROUND, 0, 8 };
			struct perf_event_attr attr = { 0 };
			uint64_t id = 7, bid = 9;
			int fd = argc > 1 ? open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;

			if (fd < 0 || !(w = perf_writer__new(fd)))
				return 1;
			pid = (unsigned)getpid();
			attr.size = PERFDATA_ATTR_SIZE;
			attr.type = PERF_TYPE_SOFTWARE;
			attr.config = PERF_COUNT_SW_BPF_OUTPUT;
			attr.sample_type = SAMPLE_TYPE;
			attr.sample_id_all = 1;
			if (perf_writer__add_event(w, &attr, OFFCPU_EVENT_NAME, &id, 1) ||
			    perf_writer__add_event(w, &attr, "offcpu-before", &bid, 1))
				return 1;
			comm(pid, "gen");
			comm(pid + 1, "gen-alpha");
			comm(pid + 2, "gen-bravo");
			comm(pid + 3, "gen-charlie");
			mmap2();
			/* S is state 1 */
			sample(9, pid + 1, T0, 45 * SEC, 1, gen_wait_alpha);
			sample(9, pid + 2, T0, 10 * SEC, 1, gen_wait_bravo);
			sample(7, pid + 2, T0 + 1500000000, 1500000000, 1, gen_wait_bravo);
			sample(7, pid + 3, T0 + 1700000000, 300000000, 1, gen_wait_charlie);
			if (perf_writer__write(w, &round))
				return 1;
			/* the last drain, 5 ms after the end: the wait under way all along */
			sample(7, pid + 1, T0 + 2 * SEC + 5000000, 2 * SEC, 1, gen_wait_alpha);
			if (perf_writer__write(w, &round) || perf_writer__finish(w))
				return 1;
			perf_writer__free(w);
			return close(fd);
		}
	EOF
	gcc -O1 -g -fno-omit-frame-pointer -fno-inline -I"$ROOT/src" gen.c "$ROOT/src/perfdata/writer.c" \
		"$ROOT/src/perfdata/sample.c" "$ROOT/src/util/util.c" -o gen -lelf 2>gcc.err ||
		{ cat gcc.err; fail "cannot build the generator"; }
	./gen gen.data || fail "the generator failed"
}

# perf report and perf script read a file with both events; offcpu report
# lists the waits since before the recording and counts offcpu-time alone
test_waiting_hand_made_file() {
	command -v perf >/dev/null || skip "perf not installed"
	command -v gcc >/dev/null || skip "gcc not installed"
	write_generator
	perf report -i gen.data --stdio >perf.txt 2>perf.err || { cat perf.err; fail "perf report failed"; }
	grep "of event" perf.txt
	grep -q "of event 'offcpu-time'" perf.txt || fail "perf report does not show offcpu-time"
	grep -q "of event 'offcpu-before'" perf.txt || fail "perf report does not show offcpu-before"
	grep -q "gen_wait_alpha" perf.txt || fail "perf report does not resolve the waits' functions"
	perf script -i gen.data -F comm,tid,event,period >script.txt 2>script.err ||
		{ cat script.err; fail "perf script failed"; }
	cat script.txt
	grep -Eq '^ *gen-alpha +[0-9]+ +45000000000 +offcpu-before:' script.txt ||
		fail "perf script does not show gen-alpha's offcpu-before sample"
	grep -Eq '^ *gen-bravo +[0-9]+ +1500000000 +offcpu-time:' script.txt ||
		fail "perf script does not show gen-bravo's offcpu-time sample"
	[ "$(grep -c 'offcpu-before:' script.txt)" = 2 ] || fail "perf script does not show 2 offcpu-before samples"

	"$OFFCPU" report -i gen.data >gen.txt 2>gen.err || { cat gen.err; fail "offcpu report failed"; }
	cat gen.txt
	grep -q '^# threads waiting since before the recording began, longest first: 2$' gen.txt ||
		fail "no section of the threads waiting since before the recording"
	grep -Eq '^  gen-alpha +[0-9]+/[0-9]+  S  waiting in gen_wait_alpha for at least 47\.000 s \(since 45\.000 s before the recording; still waiting at its end\)$' gen.txt ||
		fail "gen-alpha is not said to wait in gen_wait_alpha for at least 47 s"
	grep -Eq '^  gen-bravo +[0-9]+/[0-9]+  S  waited in gen_wait_bravo for 11\.500 s in all \(since 10\.000 s before the recording; it ended 1\.500 s into the recording\)$' gen.txt ||
		fail "gen-bravo is not said to have waited 11.5 s in all"
	grep -q 'gen-charlie.*waiting in' gen.txt && fail "gen-charlie did not wait before the recording"
	# totals: offcpu-time's 3.8 s alone, in the table, the folded stacks and json
	grep -q '^# offcpu-time: 3800\.000 ms off-CPU in 3 samples$' gen.txt || fail "the text total is not offcpu-time's"
	grep -q '^# offcpu-before' gen.txt && fail "offcpu-before has a table of its own"
	"$OFFCPU" report -i gen.data --folded >gen.folded || fail "folded failed"
	awk '{ s += $NF } END { exit !(s == 3800000) }' gen.folded || { cat gen.folded; fail "folded total is not 3800000 us"; }
	"$OFFCPU" report -i gen.data --json >gen.json || fail "json failed"
	python3 - <<-'EOF' || fail "json: totals or before_waits wrong"
		import json
		d = json.load(open("gen.json"))
		ev = {e["name"]: e for e in d["events"]}
		assert ev["offcpu-time"]["value"] == 3800000000, ev
		assert not [r for r in d["rows"] if r["event"] != "offcpu-time"]
		w = {b["comm"]: b for b in d["before_waits"]}
		assert sorted(w) == ["gen-alpha", "gen-bravo"], w
		assert w["gen-alpha"]["total_ns"] == 47000000000 and w["gen-alpha"]["bound"] == "at_least"
		assert w["gen-bravo"]["end"] == "ended" and w["gen-bravo"]["during_ns"] == 1500000000
		assert w["gen-alpha"]["function"] == "gen_wait_alpha"
	EOF
	# --event offcpu-before: its own table and flame graph
	"$OFFCPU" report -i gen.data -e offcpu-before --folded >before.folded || fail "folded -e offcpu-before failed"
	cat before.folded
	awk '{ s += $NF } END { exit !(s == 55000000) }' before.folded || fail "folded -e offcpu-before is not 55 s"
	"$OFFCPU" report -i gen.data --no-before >nb.txt || fail "--no-before failed"
	grep -q 'waiting since before' nb.txt && fail "--no-before shows the section"
	return 0
}

# hang_check BINARY: the hang workload's threads, waiting since 2 s before a
# 2 s recording (-p): at least 95% of each one's time during the recording
# under its own function, and every one listed, in its own function, still
# waiting at the end, for (start - when it said it blocked) + 2 s within 50 ms
hang_check() {
	local bin=$1 pid n i t0 bad=0 comm tid ns fn line got want state
	rm -f hang.txt
	"$bin" -r hang.txt &
	pid=$!
	# shellcheck disable=SC2064
	trap "kill $pid 2>/dev/null" EXIT
	n=0
	for ((i = 0; i < 100; i++)); do
		[ ! -f hang.txt ] || n=$(wc -l <hang.txt)
		[ "$n" -ge 7 ] && break
		sleep 0.05
	done
	[ "$n" -ge 7 ] || fail "hang did not block its 7 threads"
	sleep 2
	"$OFFCPU" record -p "$pid" -d 2 -o w.data 2>rec.err || fail "record failed"
	kill "$pid"
	cat rec.err
	perf script -i w.data -F event,time 2>/dev/null >script.txt
	grep -q 'offcpu-before:' script.txt || fail "no offcpu-before sample in the recording"
	# the recording's start: the offcpu-before samples' time (perf prints seconds, to the us)
	t0=$(awk '/offcpu-before:/ { sub(":", "", $1); printf "%.0f", $1 * 1e9; exit }' script.txt)
	"$OFFCPU" report -i w.data >w.txt 2>w.err || { cat w.err; fail "report failed"; }
	sed -n '1,/^$/p' w.txt
	while read -r comm tid ns fn; do
		line=$(grep -E "^  $comm +[0-9]+/$tid  " w.txt)
		[ -n "$line" ] || { echo "  $comm/$tid: not listed" >&2; bad=1; continue; }
		state=S
		[ "$comm" = hang-foxtrot ] && state=D
		if ! grep -Eq "/$tid  $state  waiting in $fn for at least [0-9.]+ s \(.*; still waiting at its end\)$" <<<"$line"; then
			echo "  $comm/$tid: not in $fn in state $state, still waiting at the end: $line" >&2
			bad=1
			continue
		fi
		got=$(sed -E 's/.* for at least ([0-9.]+) s .*/\1/' <<<"$line")
		want=$((t0 - ns + 2000000000))
		# its time during the recording, under its own function
		"$OFFCPU" report -i w.data --tid "$tid" --folded >t.folded 2>/dev/null
		if ! awk -v f=";$fn" '{ all += $NF; if (index($0, f ";") || index($0, f " ")) own += $NF } END { exit !(all >= 1900000 && own * 100 >= all * 95) }' t.folded; then
			echo "  $comm/$tid: less than 95% of its 2 s under $fn:" >&2
			cat t.folded >&2
			bad=1
			continue
		fi
		if awk -v g="$got" -v w="$want" 'BEGIN { d = g * 1e9 - w; if (d < 0) d = -d; exit !(d <= 50e6) }'; then
			echo "  $comm/$tid: in $fn for $got s, blocked $((want / 1000000)) ms before the end"
		else
			echo "  $comm/$tid: in $fn for $got s, but blocked $((want / 1000000)) ms before the end" >&2
			bad=1
		fi
	done <hang.txt
	[ $bad = 0 ] || fail "the threads waiting since before the recording are not all listed right"
}

test_waiting_hang() {
	command -v perf >/dev/null || skip "perf not installed"
	hang_check "$HANG"
}

# the same without frame pointers anywhere: the stacks come from unwind tables
test_waiting_hang_nofp() {
	command -v perf >/dev/null || skip "perf not installed"
	gcc -O2 -g -fomit-frame-pointer -Wall -Wextra -pthread "$ROOT/tests/workloads/hang.c" -o hang_nofp 2>gcc.err ||
		{ cat gcc.err; fail "cannot build hang without frame pointers"; }
	hang_check ./hang_nofp
}
