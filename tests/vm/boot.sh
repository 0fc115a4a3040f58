#!/usr/bin/env bash
# boot.sh VMLINUZ INITRD LOG [STALL]: boot a kernel under QEMU (TCG: nested
# KVM fails on these machines) with the initramfs as its root and the serial
# console in LOG; returns when the guest powers off, or fails when the guest
# stalls: STALL seconds (default 60) without a byte on its console (the
# kernel's boot messages) or its second serial port (LOG.beat: a line every
# 2 s from the guest's init, tests/vm/init.sh). A guest that goes on is never
# stopped for being slow: on a busy host it can take minutes. VM_APPEND adds
# to the kernel command line (NAME=VALUE words reach the guest's init as
# environment variables).
set -uo pipefail
kernel=${1:?usage: boot.sh VMLINUZ INITRD LOG [STALL]}
initrd=${2:?} log=${3:?} stall=${4:-60}
# no_timer_check: on a busy host the kernel's boot-time check of the 8254
# timer can miss its ticks under TCG ("MP-BIOS bug: 8254 timer not connected
# to IO-APIC"); the guest then hung in 1 of 4 boots run at once, and in none
# of 18 with the check off.
# thread=single: one host thread runs both vCPUs in turn. With a thread per
# vCPU (MTTCG, QEMU 7.2), a vCPU now and then ran a stale translation of
# kernel text another vCPU had just patched (the int3 of a tracepoint's
# static key being switched as offcpu attaches and detaches): the guest
# died with "Oops: int3" at the patched site (try_to_wake_up, __schedule)
# in 2 of 21 boots run three at once, or hung when the oops hit a task
# holding the run queue lock; in none of 45 boots with thread=single.
# loglevel=6: the boot's messages show its progress (and where a stall
# was); the guest's init lowers it before its own output.
command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 missing" >&2; exit 77; }
: >"$log"
: >"$log.beat"
rm -f "$log.stalled"
qemu-system-x86_64 -accel tcg,thread=single -cpu max -smp 2 -m 1G \
	-nographic -no-reboot -nodefaults -serial file:"$log" -serial file:"$log.beat" -monitor none \
	-kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyS0 panic=-1 loglevel=6 no_timer_check rdinit=/init ${VM_APPEND:-}" </dev/null &
qemu=$!
# the watchdog: QEMU is not its child, so it is gone once boot.sh reaped it
(
	size=0 quiet=0
	while sleep 1 && kill -0 $qemu 2>/dev/null; do
		now=$(($(stat -c %s "$log") + $(stat -c %s "$log.beat")))
		if [ "$now" != "$size" ]; then
			size=$now quiet=0
		elif ((++quiet >= stall)); then
			: >"$log.stalled"
			kill $qemu
			sleep 5
			kill -9 $qemu 2>/dev/null
			exit 0
		fi
	done
) &
watchdog=$!
wait $qemu
rc=$?
kill $watchdog 2>/dev/null
wait $watchdog 2>/dev/null
if [ -e "$log.stalled" ]; then
	rm -f "$log.stalled"
	echo "the guest stalled: nothing on its serial ports for $stall s" >&2
	exit 1
fi
exit $rc
