#!/usr/bin/env bash
# boot.sh VMLINUZ INITRD LOG [TIMEOUT]: boot a kernel under QEMU (TCG: nested
# KVM fails on these machines) with the initramfs as its root and the serial
# console in LOG; returns when the guest powers off, or fails after TIMEOUT
# seconds (default 240). VM_APPEND adds to the kernel command line (NAME=VALUE
# words reach the guest's init as environment variables).
set -uo pipefail
kernel=${1:?usage: boot.sh VMLINUZ INITRD LOG [TIMEOUT]}
initrd=${2:?} log=${3:?} limit=${4:-240}
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
command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 missing" >&2; exit 77; }
timeout --kill-after=10 "$limit" qemu-system-x86_64 -accel tcg,thread=single -cpu max -smp 2 -m 1G \
	-nographic -no-reboot -nodefaults -serial file:"$log" -monitor none \
	-kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyS0 panic=-1 loglevel=4 no_timer_check rdinit=/init ${VM_APPEND:-}" </dev/null
rc=$?
[ $rc -ne 124 ] && [ $rc -ne 137 ] || { echo "the guest did not power off within $limit s" >&2; exit 1; }
exit $rc
