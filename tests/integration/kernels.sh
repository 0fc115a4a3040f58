# The kernel matrix (root): Debian 12's own kernels, booted under QEMU (TCG)
# with an initramfs holding offcpu and the ground-truth workload
# (tests/vm/), must give what the build machine's kernel gives: the tp_btf
# program loads with both of offcpu's stack walkers (no fallback), kernel
# stacks are recorded, every stack matches the kernel's helpers, and every
# thread's off-CPU time in its blocking function is within 5% of what it
# measured (the time it did not run in its calls). Kernels are
# fetched with apt-get download and cached (tests/vm/fetch-kernel.sh).
# shellcheck shell=bash

# vm_run SERIES: boot the newest SERIES kernel; its results in ./<name> files
vm_run() {
	local series=$1 vmlinuz rc
	vmlinuz=$("$ROOT/tests/vm/fetch-kernel.sh" "$series" 2>fetch.err); rc=$?
	[ $rc -eq 77 ] && skip "no $series kernel: $(tail -n 1 fetch.err)"
	[ $rc -eq 0 ] || { cat fetch.err; fail "fetching the $series kernel failed"; }
	echo "kernel: $vmlinuz"
	"$ROOT/tests/vm/make-initramfs.sh" initrd.gz 2>mk.err; rc=$?
	[ $rc -eq 77 ] && skip "$(tail -n 1 mk.err)"
	[ $rc -eq 0 ] || { cat mk.err; fail "building the initramfs failed"; }
	local start=$SECONDS try
	# A guest takes 10-20 s alone, 60-70 s with six at once on two host
	# CPUs, more beside other jobs: it is never stopped for being slow, only
	# when it stalls (boot.sh: a minute without output). A guest that
	# stalls anyway (seen before boot.sh passed no_timer_check, and once in
	# its early boot, with two CPU-bound jobs on the host) is booted once
	# more, and that is said.
	for try in 1 2; do
		"$ROOT/tests/vm/boot.sh" "$vmlinuz" initrd.gz console.log 60 2>boot.err; rc=$?
		[ $rc -eq 77 ] && skip "$(tail -n 1 boot.err)"
		echo "guest ran for $((SECONDS - start)) s (QEMU exit $rc)"
		grep -q "^@@done: " console.log && break
		cat boot.err
		tr -d '\r' <console.log | grep -v "^@@" | tail -n 30
		guest_oops console.log
		[ $try = 2 ] || note "the $series guest did not finish (try $try): booted again"
		start=$SECONDS
	done
	# "@@NAME: LINE" -> LINE appended to ./NAME
	# (the firmware's escape sequences may precede the first one)
	tr -d '\r' <console.log | awk '{ i = index($0, "@@"); if (!i) next; s = substr($0, i)
		if (s !~ /^@@[a-z0-9.]+: /) next
		name = substr(s, 3, index(s, ":") - 3); sub(/^@@[a-z0-9.]+: /, "", s); print s > name }'
	[ -s done ] || { cat boot.err; tail -n 40 console.log; guest_oops console.log; fail "the guest did not finish"; }
	[ -z "$(guest_oops console.log)" ] || { guest_oops console.log; fail "the guest kernel reported a fault"; }
}

# guest_oops LOG: the guest kernel's first oops, panic or lockup report in
# LOG, whole and said first (a hang's cause is otherwise scrolled away)
guest_oops() {
	tr -d '\r' <"$1" | grep -v "^@@" | awk '
		/Oops:|BUG:|Kernel panic|soft lockup|hung_task|rcu_.*stall/ && !n { n = 1; print "the guest kernel reported:" }
		n && n++ <= 60 { print "    " $0 }'
}

# check_functions TRUTH FN TOT PCT: each thread of TRUTH (COMM TID NS CALLS)
# has within PCT% of NS in its blocking function (FN: "COMM NS"), and at
# least that in all (TOT: "TID NS")
check_functions() {
	local truth=$1 fn=$2 tot=$3 pct=$4 bad=0 comm tid ns calls got all
	[ -s "$truth" ] || fail "no ground truth in $truth"
	while read -r comm tid ns calls; do
		got=$(awk -v c="$comm" '$1 == c { print $2 }' "$fn")
		all=$(awk -v t="$tid" '$1 == t { print $2 }' "$tot")
		got=${got:-0} all=${all:-0}
		if within "$pct" "$got" "$ns" && [ $((all + 1000000)) -ge "$got" ]; then
			echo "  $comm/$tid: blocked $((ns / 1000000)) ms, recorded $((got / 1000000)) ms in its function, $((all / 1000000)) ms in all"
		else
			echo "  $comm/$tid: blocked $((ns / 1000000)) ms, recorded $((got / 1000000)) ms in its function (off by more than $pct%), $((all / 1000000)) ms in all" >&2
			bad=1
		fi
	done <"$truth"
	[ $bad = 0 ] || fail "per-thread times differ from ground truth"
}

# vm_check SERIES: the checks on the files vm_run left
vm_check() {
	local series=$1 kernel insns line n ubad kbad uhelp khelp
	kernel=$(cat kernel)
	case $kernel in "$series".*) ;; *) fail "booted $kernel, not a $series kernel" ;; esac
	# instructions the verifier processed, per configuration
	note "kernel $kernel: verifier instructions processed:$(awk '{ n = $1; $1 = ""; printf " %s%s,", n, $0 }' verifier | sed 's/,$//')"
	! grep -q '^?' verifier || fail "no verifier figure for a configuration"
	cat both.err | grep -v '^libbpf' | grep -v '^[0-9]*: \|^;' | head -n 40
	[ "$(cat both.rc)" = 0 ] || fail "record --stacks both --verify-stacks failed on $kernel"
	[ "$(cat sys.rc)" = 0 ] || { cat sys.err; fail "record -a --stacks both failed on $kernel"; }
	grep -q "attached with tp_btf" both.err || fail "not attached with tp_btf on $kernel"
	grep -q "recording (tp_btf)" sys.err || { cat sys.err; fail "the start line does not say tp_btf"; }
	! grep -h FALLBACK both.err sys.err || fail "a fallback was taken on $kernel"
	[ "$(cat all.rc)" = 0 ] || { cat all.err; fail "record -a --verify-stacks failed on $kernel"; }
	cat all.err
	! grep -h FALLBACK all.err || fail "a fallback was taken on $kernel"
	# every stack compared with the kernel's helpers: none differs, and
	# offcpu's walks (not the helpers) walked them; the workload's, and the
	# whole system's in every state
	local verified=0
	for rec in both all; do
		line=$(grep "verified .* stacks" $rec.err) || fail "no verification line"
		read -r n ubad kbad uhelp khelp < <(echo "$line" |
			sed -E 's/.*verified ([0-9]+) stacks.*: ([0-9]+) user and ([0-9]+) kernel stacks differed; the helpers walked ([0-9]+) user and ([0-9]+) kernel.*/\1 \2 \3 \4 \5/')
		[ "$n" -ge 40 ] || fail "$rec: only $n stacks compared"
		[ "$ubad" -eq 0 ] && [ "$kbad" -eq 0 ] || fail "$rec: $ubad user and $kbad kernel stacks differ from the helpers'"
		[ $((uhelp + khelp)) -le $((n / 20)) ] || fail "$rec: the helpers walked $uhelp + $khelp of $n stacks"
		verified=$((verified + n))
	done
	n=$verified
	# kernel frames under the workload's own
	cat both.folded
	grep -q 'gt_sleep_thread;.*hrtimer_nanosleep_\[k\]' both.folded &&
		grep -q 'gt_pipe_thread;.*pipe_read_\[k\]' both.folded ||
		fail "kernel frames missing under the workload's stacks"
	# each thread's time in its blocking function (gt_*_block), read by
	# offcpu report in the guest, against what it measured; and no thread
	# has less time than that (its other blocks: a page fault that waited
	# for the memory map's lock while the host held the vCPU of the thread
	# that had it, 80 ms once)
	for rec in both sys; do
		awk '!/^#/ && NF == 3 { printf "%s %.0f\n", $3, $1 * 1e6 }' $rec.tid >$rec.tot
		awk '{ c = $0; sub(/;.*/, "", c); if ($0 ~ /;gt_[a-z]+_block;/) s[c] += $NF }
			END { for (c in s) printf "%s %.0f\n", c, s[c] * 1000 }' $rec.folded >$rec.fn
		echo "$rec:"
		check_functions $rec.truth $rec.fn $rec.tot 5
	done
	# who woke each wait, and the run queue split: loads and attributes here too
	[ "$(cat why.rc)" = 0 ] || { cat why.err; fail "record --wakers --state SDR failed on $kernel"; }
	! grep FALLBACK why.err || fail "a fallback was taken with --wakers on $kernel"
	grep "wakeups of recorded blocks" why.err || fail "no wakeup seen on $kernel"
	cat why.folded why.state
	why_check why.truth why.folded why.state
	# what the waits waited on, and the deadlock of a hung process
	[ "$(cat locks.rc)" = 0 ] || { cat locks.err; fail "record --wait-objects failed on $kernel"; }
	! grep FALLBACK locks.err || fail "a fallback was taken with --wait-objects on $kernel"
	cat locks.txt
	locks_check locks.truth locks.txt
	grep -q "peer: lk-writer/$(cat writer.txt) in .*lk_write_pipe" pipe.txt ||
		fail "the pipe's peer is not lk-writer in lk_write_pipe on $kernel"
	[ "$(cat abba.rc)" = 0 ] || { cat abba.err; fail "record -p of the ABBA workload failed on $kernel"; }
	sed -n '1,/^$/p' abba.report
	deadlock_check abba.txt abba.report
	note "kernel $kernel: ground truth within 5%, $n stacks verified, no fallback; wakers: $why_figures; wait objects: $locks_figures; $deadlock_figures"
}

test_kernel_6_1() {
	vm_run 6.1
	vm_check 6.1
}

test_kernel_6_12() {
	vm_run 6.12
	vm_check 6.12
}

# the build machine's kernel, for comparison (its other checks are the rest
# of the integration tests)
test_kernel_build_machine() {
	local opts n figures=
	# the configurations the guests measure (tests/vm/init.sh)
	for opts in "--stacks user" "--stacks both" "--stacks both --verify-stacks" "--raw-tp" "--wait-objects"; do
		"$OFFCPU" record -v -q $opts -o v.data -- true 2>rec.err || { cat rec.err; fail "record $opts failed"; }
		! grep FALLBACK rec.err || fail "a fallback was taken"
		n=$(sed -nE 's/.*verified on_switch[a-z_]*: ([0-9]+) instructions processed.*/\1/p' rec.err)
		[ -n "$n" ] || { cat rec.err; fail "no verifier figure for $opts"; }
		figures="$figures $n $opts,"
	done
	note "kernel $(uname -r): verifier instructions processed:${figures%,}"
}

# A piece of the program a kernel's verifier refuses falls back alone, and
# says so without -v at the start and in the summary: here the verifier is
# made to refuse one piece at a time (test-only fault injection).
test_kernel_fallbacks_named() {
	local piece
	for piece in korc user; do
		OFFCPU_FAULT_REFUSE=$piece record_truth --stacks both --verify-stacks -o f.data -- "$GT" -r truth.txt
		cat rec.err
		[ "$(grep -c "FALLBACK: .*stack walker is off.*verifier: .*invalid mem access" rec.err)" = 2 ] ||
			fail "refused $piece: the fallback is not named at the start and in the summary"
		grep -q "FALLBACK: the $( [ $piece = korc ] && echo ORC kernel || echo user) stack walker is off" rec.err ||
			fail "refused $piece: another piece named"
		[ "$(grep -c "stack walker is off" rec.err)" = 2 ] || fail "refused $piece: more than it fell back"
		grep -q "0 user and 0 kernel stacks differed" rec.err || fail "stacks differ from the helpers'"
		per_tid_perf f.data >perf.tot
		check_threads truth.txt perf.tot 5
		perf script -i f.data -F ip,sym 2>/dev/null | grep -q pipe_read || fail "no kernel frames"
	done
	# the table walk refused: frame pointers walk user stacks, and that is said
	OFFCPU_FAULT_REFUSE=tables record_truth -o f.data -- "$GT" -r truth.txt
	cat rec.err
	[ "$(grep -c "FALLBACK: the unwind table walk is off, user stacks follow frame pointers.*verifier: .*invalid mem access" rec.err)" = 2 ] ||
		fail "refused tables: the fallback is not named at the start and in the summary"
	! grep -q "stack walker is off\|user stacks by unwind tables" rec.err || fail "refused tables: more than it fell back"
	per_tid_perf f.data >perf.tot
	check_threads truth.txt perf.tot 5
	# without tp_btf: kernel stacks are refused in one line, user stacks go through raw_tp
	OFFCPU_FAULT_REFUSE=tp_btf "$OFFCPU" record --stacks both -o f.data -- true 2>rec.err && fail "recorded without tp_btf"
	cat rec.err
	grep -q "kernel stacks need tp_btf/sched_switch, which did not load: verifier:" rec.err || fail "no reason given"
	OFFCPU_FAULT_REFUSE=tp_btf "$OFFCPU" record -a -d 0.5 -o f.data 2>rec.err || { cat rec.err; fail "raw_tp fallback failed"; }
	cat rec.err
	sed -n 2,3p rec.err | grep -q "FALLBACK: raw_tp" || fail "raw_tp not named next to the start line"
	# in the summary, after the file is written (the lines after it vary:
	# losses on a busy machine, perf maps of the machine's JIT processes)
	sed -n '/wrote f.data/,$p' rec.err | grep -q "FALLBACK: raw_tp" || fail "raw_tp not named in the summary"
}

# The BPF object builds for arm64 (against the BTF of Debian 12's arm64
# kernel): without the x86-64-only pieces, the ORC kernel stack walker and
# the frame-pointer user walk; the kernel's helpers walk both stacks there.
test_kernel_bpf_builds_for_arm64() {
	local h rc
	h=$("$ROOT/tests/vm/arm64-vmlinux.sh" 2>fetch.err); rc=$?
	[ $rc -eq 77 ] && skip "no arm64 vmlinux.h: $(tail -n 1 fetch.err)"
	[ $rc -eq 0 ] || { cat fetch.err; fail "arm64-vmlinux.sh failed"; }
	mkdir -p inc && cp "$h" inc/vmlinux.h
	clang -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_arm64 -Iinc -I"$ROOT/src" \
		-c "$ROOT/src/bpf/offcpu.bpf.c" -o arm64.bpf.o || fail "the BPF object does not build for arm64"
	llvm-objdump -t arm64.bpf.o >syms.txt
	grep -q ' on_switch$' syms.txt && grep -q ' on_switch_raw$' syms.txt || fail "programs missing"
	! grep -i korc syms.txt || fail "the x86-64 ORC walker is in the arm64 object"
	"$(command -v bpftool || echo /usr/sbin/bpftool)" gen skeleton arm64.bpf.o name offcpu_bpf >arm64.skel.h || fail "no skeleton for arm64"
	note "the BPF object builds for arm64 ($(basename "$(dirname "$h")")): helpers walk both stacks"
}
