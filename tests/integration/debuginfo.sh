# Stripped programs (issue 24): a frame without a symbol keeps its object and
# offset (prog+0x1195), each its own, and the report says how much time such
# frames hold; a debug file names them, found by build id under --debug-dir
# or fetched from a debuginfod server (a local one here), also for --lines.
# Held to the program's own clocks: 300 ms in a, 200 ms in b.
# shellcheck shell=bash

# dbg_prog: build ./prog (stripped) and prog.debug (its debug file, objcopy
# --only-keep-debug) from static functions a and b that sleep, record it
# into f.data with the time it measured in truth.txt; sets BUILDID
dbg_prog() {
	cat >prog.c <<-'EOF'
	#include <stdio.h>
	#include <time.h>
	static long long now(void)
	{
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		return t.tv_sec * 1000000000LL + t.tv_nsec;
	}
	static __attribute__((noinline)) void nap(long ms)
	{
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		nanosleep(&ts, 0);
		__asm__ volatile("" ::: "memory");
	}
	static __attribute__((noinline)) void a(void) { nap(300); __asm__ volatile(""); }
	static __attribute__((noinline)) void b(void) { nap(200); __asm__ volatile(""); }
	int main(int argc, char **argv)
	{
		long long t0 = now(), t1, t2;
		FILE *f;
		a();
		t1 = now();
		b();
		t2 = now();
		if (argc > 1 && (f = fopen(argv[1], "w"))) {
			fprintf(f, "a %lld\nb %lld\n", t1 - t0, t2 - t1);
			fclose(f);
		}
		return 0;
	}
	EOF
	gcc -O1 -g -fno-inline -o prog.full prog.c || fail "cannot compile"
	objcopy --only-keep-debug prog.full prog.debug || fail "objcopy --only-keep-debug failed"
	objcopy --strip-all prog.full prog || fail "objcopy --strip-all failed"
	! readelf -S prog | grep -q "\.symtab" || fail "prog kept its symbols"
	BUILDID=$(readelf -n prog | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
	[ ${#BUILDID} -ge 4 ] || fail "prog has no build id"
	record_truth -o f.data -- ./prog truth.txt
	[ -s truth.txt ] || fail "the program wrote no ground truth"
}

# dbg_report ARGS...: offcpu report -i f.data ARGS, stdout in rep.out, stderr in rep.err
dbg_report() {
	"$OFFCPU" report -i f.data "$@" >rep.out 2>rep.err || { cat rep.err; fail "report $* failed"; }
}

# dbg_truth_check FOLDED: the time under a and under b against the program's clocks, within 5%
dbg_truth_check() {
	local fn want got
	for fn in a b; do
		want=$(awk -v f="$fn" '$1 == f { print $2 }' truth.txt)
		got=$(awk -v f="$fn" 'index($0, ";main;" f ";nap;") { s += $NF } END { printf "%.0f", s * 1000 }' "$1")
		if within 5 "$got" "$want"; then
			echo "  $fn: slept $((want / 1000000)) ms, $((got / 1000000)) ms under $fn"
		else
			cat "$1"
			fail "$fn: slept $((want / 1000000)) ms, $((got / 1000000)) ms under $fn"
		fi
	done
}

# No debug info: the program's frames are prog+0xOFFSET, distinct, the
# offsets name the right functions (addr2line on the unstripped build: file
# offset and ELF address agree in a PIE's text), and the report says how much
# time has unnamed frames and what would name them.
test_debuginfo_stripped_unnamed() {
	local names n off fn
	unset DEBUGINFOD_URLS
	dbg_prog
	dbg_report --folded
	cat rep.out rep.err
	grep -q ';_start;' rep.out || fail "the stripped program's entry is not named _start"
	names=$(grep -o 'prog+0x[0-9a-f]*' rep.out | sort -u)
	n=$(wc -l <<<"$names")
	[ "$n" -eq 5 ] || fail "$n distinct prog+0x frames, 5 expected (main's two calls, a's, b's, nap's)"
	for fn in a b; do
		# the frame below nap's in each stack is the function that called it;
		# its sleep is the one closest to what the program measured (300 and
		# 200 ms asked; on a busy machine the wait for a CPU after the
		# wakeup adds to either), within 5%
		off=$(awk -v w="$(awk -v f=$fn '$1 == f { print $2 / 1e3 }' truth.txt)" '{ n = split($0, s, ";")
			for (i = 1; i < n; i++) if (s[i] ~ /^prog\+0x/ && s[i + 1] ~ /^prog\+0x/ && s[i + 2] ~ /^prog\+0x/) {
				d = $NF - w; if (d < 0) d = -d
				if (d < w / 20 && (best == "" || d < bd)) { bd = d; best = s[i + 1]; sub(/^prog\+/, "", best) } } }
			END { print best }' rep.out)
		[ -n "$off" ] || fail "no stack of $fn's sleep with three prog frames"
		[ "$(addr2line -f -e prog.full "$off" | head -n 1)" = "$fn" ] ||
			fail "prog+$off is $(addr2line -f -e prog.full "$off" | head -n 1), not $fn"
	done
	grep -q "^offcpu: .* frames in 100.0% of the off-CPU time have no symbol, in \(.*, \)\?prog[,:].*-dbgsym.*DEBUGINFOD_URLS" rep.err ||
		fail "no line saying which frames have no symbol and what would name them"
	[ "$(grep -c 'no symbol' rep.err)" = 1 ] || fail "the unnamed frames said more than once"
	# every output keeps them apart
	dbg_report --pprof f.pb.gz --svg f.svg
	zcat f.pb.gz | grep -qa 'prog+0x' || fail "no prog+0x frame in pprof"
	[ "$(grep -o 'prog+0x[0-9a-f]*' f.svg | sort -u | wc -l)" -eq 5 ] || fail "the flame graph merges unnamed frames"
	note "stripped: $(tr '\n' ' ' <<<"$names")"
}

# A debug file under --debug-dir DIR/.build-id/xx/yyyy.debug names the static
# functions, with their time; one with another build id is refused.
test_debuginfo_debug_dir() {
	local d
	unset DEBUGINFOD_URLS
	dbg_prog
	d=dbg/.build-id/${BUILDID:0:2}
	mkdir -p "$d" || fail "mkdir"
	# another build's debug file at this build id's place: not trusted
	sed 's/nap(300)/nap(301)/' prog.c >other.c && gcc -O1 -g -fno-inline -o other other.c || fail "cannot compile"
	objcopy --only-keep-debug other "$d/${BUILDID:2}.debug" || fail "objcopy"
	dbg_report --folded --debug-dir "$PWD/dbg"
	grep -q "is not the debug file of .*prog: its build id is" rep.err || { cat rep.err; fail "a debug file of another build was not refused"; }
	grep -q ';main;a;' rep.out && fail "a debug file of another build was used"
	cp prog.debug "$d/${BUILDID:2}.debug" || fail "cp"
	dbg_report --folded --debug-dir "$PWD/dbg"
	cat rep.out rep.err
	grep -q ';main;a;nap;' rep.out && grep -q ';main;b;nap;' rep.out || fail "a, b and nap not named by the debug file"
	grep -q 'prog+0x' rep.out && fail "prog frames left unnamed"
	grep -q 'no symbol, in \(.*, \)\?prog[,:]' rep.err && fail "prog still listed as without symbols"
	dbg_truth_check rep.out
	dbg_report --lines --debug-dir "$PWD/dbg"
	grep -q "a  (prog $PWD/prog.c:[0-9]*)" rep.out || { cat rep.out; fail "--lines: no source line for a"; }
}

# dbg_server DIR: a debuginfod serving DIR on 127.0.0.1, killed when the test
# ends; sets DBG_URL once it serves BUILDID (within 30 s)
dbg_server() {
	local try i port
	command -v debuginfod >/dev/null && command -v debuginfod-find >/dev/null ||
		skip "debuginfod is not installed (Debian: debuginfod)"
	for try in 1 2 3; do
		port=$((20000 + RANDOM % 20000))
		debuginfod -F "$1" -p "$port" -d "$PWD/dfd.$try.sqlite" >dfd.log 2>&1 &
		DBG_PID=$!
		trap 'kill $DBG_PID 2>/dev/null; wait $DBG_PID 2>/dev/null' EXIT
		for ((i = 0; i < 150; i++)); do
			kill -0 $DBG_PID 2>/dev/null || break
			# (a fresh cache each time: the client remembers a miss for 10 minutes)
			if DEBUGINFOD_URLS=http://127.0.0.1:$port DEBUGINFOD_CACHE_PATH=$PWD/probe.$try.$i \
				timeout 10 debuginfod-find debuginfo "$BUILDID" >/dev/null 2>&1; then
				DBG_URL=http://127.0.0.1:$port
				echo "debuginfod on port $port served $BUILDID after $((i / 5)).$((i % 5 * 2)) s"
				return 0
			fi
			sleep 0.2
		done
		kill $DBG_PID 2>/dev/null
		wait $DBG_PID 2>/dev/null
		cat dfd.log
	done
	fail "debuginfod never served the debug file"
}

# A debuginfod server names the static functions, with their time, and
# --lines uses its DWARF; each build id is asked for once per report (the
# server's log), then read from the client's cache.
test_debuginfo_debuginfod() {
	local gets t0 t1
	command -v debuginfod >/dev/null || skip "debuginfod is not installed (Debian: debuginfod)"
	dbg_prog
	mkdir srv && cp prog.debug srv/ || fail "cp"
	dbg_server srv
	export DEBUGINFOD_URLS=$DBG_URL DEBUGINFOD_CACHE_PATH=$PWD/cache
	gets=$(grep -c "GET /buildid/$BUILDID/debuginfo 200" dfd.log)
	t0=$(date +%s%N)
	dbg_report --folded -v
	t1=$(date +%s%N)
	cat rep.out rep.err
	grep -q "debug info for $PWD/prog from debuginfod" rep.err || fail "no fetch said (-v)"
	grep -q ';main;a;nap;' rep.out && grep -q ';main;b;nap;' rep.out || fail "a, b and nap not named through debuginfod"
	grep -q 'prog+0x' rep.out && fail "prog frames left unnamed"
	dbg_truth_check rep.out
	[ "$(grep -c "GET /buildid/$BUILDID/debuginfo 200" dfd.log)" = $((gets + 1)) ] ||
		{ cat dfd.log; fail "the report did not ask for $BUILDID exactly once"; }
	# --lines: the fetched file's DWARF, from the client's cache (no new request)
	dbg_report --lines
	grep -q "a  (prog $PWD/prog.c:[0-9]*)" rep.out || { cat rep.out; fail "--lines: no source line for a"; }
	[ "$(grep -c "GET /buildid/$BUILDID/debuginfo 200" dfd.log)" = $((gets + 1)) ] ||
		fail "the cached debug file was fetched again"
	note "debuginfod: fetched and named in $(((t1 - t0) / 1000000)) ms"
}

# A server that never answers costs one bounded wait, said while it lasts
# and when it ends, then no more fetches: the frames keep their offsets, and
# the server was connected to once (it counts the connections when it is
# told to end, the queued ones too).
test_debuginfo_debuginfod_unresponsive() {
	local port t0 t1 conns
	command -v python3 >/dev/null || skip "python3 is not installed"
	dbg_prog
	# accepts connections, never answers; says its port once it listens
	mkfifo port.fifo || fail "mkfifo"
	python3 -c 'import os, signal, socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64); c = []
def end(*_):
	s.setblocking(False)
	try:
		while True: c.append(s.accept()[0])
	except BlockingIOError:
		pass
	with open(sys.argv[1], "w") as f: f.write("%d\n" % len(c))
	os._exit(0)
signal.signal(signal.SIGTERM, end)
print(s.getsockname()[1], flush=True)
while True: c.append(s.accept()[0])' "$PWD/conns.txt" >port.fifo &
	DBG_HANG=$!
	trap 'kill $DBG_HANG 2>/dev/null; wait $DBG_HANG 2>/dev/null' EXIT
	read -r port <port.fifo
	[ -n "$port" ] || fail "the server that never answers did not start"
	t0=$(date +%s%N)
	DEBUGINFOD_URLS=http://127.0.0.1:$port DEBUGINFOD_CACHE_PATH=$PWD/cache DEBUGINFOD_TIMEOUT=2 \
		DEBUGINFOD_RETRY_LIMIT=0 dbg_report --folded
	t1=$(date +%s%N)
	kill -TERM $DBG_HANG && wait $DBG_HANG
	conns=$(cat conns.txt 2>/dev/null)
	cat rep.err
	grep -q "fetching debug info for $PWD/prog from debuginfod" rep.err || fail "a slow fetch was not said"
	grep -q "no debug info for $PWD/prog after [0-9.]* s: .*no more fetches" rep.err || fail "the failed fetch was not said with its wait"
	grep -q 'prog+0x' rep.out || fail "frames not named by their offsets"
	[ "$conns" = 1 ] || fail "the report connected ${conns:-an unknown number of} times to the server that never answers, once expected"
	note "unresponsive debuginfod: one connection; the report took $(((t1 - t0) / 1000000)) ms (DEBUGINFOD_TIMEOUT=2)"
}

# .gnu_debuglink, a name the binary's owner writes (issue 35): a name with a
# directory part ("../") led root's report to another file and its symbols,
# and the CRC was never checked, so a binary without a build id trusted any
# ELF file of that name. Only a file name is followed now, and only to a file
# whose CRC is the link's; the binary here has no build id.
test_debuginfo_debuglink_checked() {
	local crc
	command -v python3 >/dev/null || skip "python3 is not installed"
	dbg_prog
	# the same program without a build id, and a root-only debug file whose
	# functions are named otherwise (at the same addresses)
	gcc -O1 -g -fno-inline -Wl,--build-id=none -o nobid.full prog.c || fail "cannot compile"
	sed 's/\<a(/secret_a(/g; s/\<b(/secret_b(/g' prog.c >secret.c
	gcc -O1 -g -fno-inline -Wl,--build-id=none -o secret.full secret.c || fail "cannot compile"
	mkdir -m 700 rootonly
	objcopy --only-keep-debug secret.full rootonly/x.debug && chmod 600 rootonly/x.debug || fail "objcopy"
	objcopy --only-keep-debug nobid.full nobid.debug || fail "objcopy"
	objcopy --strip-all nobid.full nobid || fail "strip"
	readelf -n nobid | grep -q 'Build ID' && fail "nobid has a build id"
	record_truth -o f.data -- ./nobid truth.txt
	# a link to the right file, with its CRC: used
	objcopy --add-gnu-debuglink=nobid.debug nobid nobid.linked || fail "objcopy --add-gnu-debuglink"
	cp nobid.linked nobid
	dbg_report --folded
	grep -q ';main;a;nap;' rep.out || { cat rep.out rep.err; fail "the checked debug link was not used"; }
	# the same name, another file (the secret's): its CRC is not the link's
	cp rootonly/x.debug nobid.debug
	dbg_report --folded
	cat rep.err
	grep -q 'secret_' rep.out && fail "a debug file of another CRC was used"
	grep -q "nobid.debug is not the debug file of $PWD/nobid: its CRC is" rep.err || fail "the CRC refusal was not said"
	# a link whose name leads elsewhere, with the right CRC of what it leads to
	crc=$(python3 -c 'import sys, zlib; print("%08x" % zlib.crc32(open(sys.argv[1], "rb").read()))' rootonly/x.debug)
	python3 -c 'import struct, sys
name = sys.argv[1].encode() + b"\0"
name += b"\0" * (-len(name) % 4)
open("link.bin", "wb").write(name + struct.pack("<I", int(sys.argv[2], 16)))' "../$(basename "$PWD")/rootonly/x.debug" "$crc"
	objcopy --strip-all nobid.full nobid.bare || fail "strip"
	objcopy --add-section .gnu_debuglink=link.bin nobid.bare nobid || fail "objcopy --add-section"
	readelf -p .gnu_debuglink nobid | grep -q 'rootonly/x.debug' || fail "the crafted link is not there"
	dbg_report --folded
	grep -q 'secret_' rep.out && { cat rep.out; fail "a debug link with a directory part was followed"; }
	grep -q 'nobid+0x' rep.out || fail "the frames are not left by their offsets"
}

# A debuginfod server that answers with a file larger than any debug file
# should be (2 GiB announced, sent slowly): refused at once by offcpu's
# default DEBUGINFOD_MAXSIZE, said, nothing of it cached.
test_debuginfo_debuginfod_size() {
	local port t0 t1
	command -v python3 >/dev/null || skip "python3 is not installed"
	dbg_prog
	port=$((20000 + RANDOM % 20000))
	python3 -c 'import socket, sys, threading, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
open("huge.ready", "w").close()
def serve(c):
    try:
        c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2147483648\r\nContent-Type: application/octet-stream\r\n\r\n")
        while True:
            c.sendall(b"\0" * 65536)
            time.sleep(0.05)
    except OSError:
        pass
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()' "$port" &
	DBG_HUGE=$!
	trap 'kill $DBG_HUGE 2>/dev/null; wait $DBG_HUGE 2>/dev/null' EXIT
	for _ in $(seq 200); do [ -e huge.ready ] && break; sleep 0.05; done
	[ -e huge.ready ] || fail "the server did not start"
	t0=$(date +%s%N)
	DEBUGINFOD_URLS=http://127.0.0.1:$port DEBUGINFOD_CACHE_PATH=$PWD/cache dbg_report --folded
	t1=$(date +%s%N)
	cat rep.err
	grep -q "no debug info for $PWD/prog after [0-9.]* s: larger than DEBUGINFOD_MAXSIZE" rep.err ||
		fail "the refusal was not said"
	[ -z "$(find cache -type f -size +1M 2>/dev/null)" ] || fail "a large answer was cached"
	grep -q 'prog+0x' rep.out || fail "frames not named by their offsets"
	note "a 2 GiB debuginfod answer: refused in $(((t1 - t0) / 1000000)) ms"
}
