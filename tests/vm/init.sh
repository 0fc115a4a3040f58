#!/bin/busybox sh
# /init of the kernel matrix's initramfs (tests/vm/make-initramfs.sh): runs
# offcpu against the ground-truth workload on the booted kernel and prints
# every result on the serial console as "@@NAME: LINE", which the host
# (tests/integration/kernels.sh) parses and checks; then powers off.
/bin/busybox --install -s /bin
export PATH=/bin:/vm
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo 1 >/proc/sys/kernel/printk
ifconfig lo 127.0.0.1 up 2>/dev/null # the locks workload's loopback socket
cd /tmp
# the host's watchdog (tests/vm/boot.sh) sees the guest go on by this beat
# on the second serial port, however long a step is quiet on the console
(while :; do echo beat; sleep 2; done) >/dev/ttyS1 2>/dev/null &

say() { echo "@@$1: $2"; }
emit() { for f in "$@"; do [ -e "$f" ] && sed "s/^/@@$f: /" "$f"; done; }

echo # the firmware's escape sequences end the line before
say kernel "$(uname -r)"
say btf "$(ls -la /sys/kernel/btf/vmlinux 2>&1)"

# 0. what the verifier processes of the switch program, per configuration
# (--wait-objects: from section 5's recording)
for opts in "--stacks user" "--stacks both" "--stacks both --verify-stacks" "--raw-tp"; do
	n=$(offcpu record -v -q $opts -o v.data -- true 2>&1 |
		sed -n 's/.*verified on_switch[a-z_]*: \([0-9]*\) instructions processed.*/\1/p')
	say verifier "${n:-?} $opts"
done

# 1. a workload, both stacks, every stack checked against the kernel's helpers
# (R too, here and in 2: what the workload measures is the time its threads
# did not run in their calls, preemptions included, which a guest whose host
# is busy has many of)
timeout 120 offcpu record -v --stacks both --verify-stacks --state S,D,R -o both.data -- /vm/groundtruth -r both.truth 2>both.err
say both.rc $?
offcpu report -i both.data -s tid -e offcpu-time >both.tid 2>&1
offcpu report -i both.data --folded >both.folded 2>&1
emit both.err both.truth both.tid both.folded

# 2. the whole system, both stacks, without -v: the start line and the summary
# must name any fallback by themselves
timeout 120 offcpu record -a --stacks both --state S,D,R -o sys.data 2>sys.err &
rec=$!
# (however long the verifier takes here: timeout bounds the recorder)
while ! grep -q recording sys.err && kill -0 $rec 2>/dev/null; do
	sleep 0.1
done
/vm/groundtruth -w go -r sys.truth &
gt=$!
touch go
wait $gt
kill -INT $rec
wait $rec
say sys.rc $?
offcpu report -i sys.data -s tid -e offcpu-time >sys.tid 2>&1
offcpu report -i sys.data --folded -e offcpu-time >sys.folded 2>&1
emit sys.err sys.truth sys.tid sys.folded

# 3. the whole system, every state, under varied load: every stack checked
# against the kernel's helpers (entry, interrupt and exception frames too)
timeout 120 offcpu record -a --verify-stacks --stacks both --state S,D,R,T,I -o all.data 2>all.err &
rec=$!
# (however long the verifier takes here: timeout bounds the recorder)
while ! grep -q recording all.err && kill -0 $rec 2>/dev/null; do
	sleep 0.1
done
/vm/groundtruth -r all.truth >/dev/null &
gt=$!
for j in 1 2 3; do
	find / -xdev >/dev/null 2>&1
	cat /proc/[0-9]*/stat >/dev/null 2>&1
	dd if=/dev/zero of=/tmp/dd.bin bs=64k count=100 2>/dev/null
	sh -c 'i=0; while [ $i -lt 2000 ]; do i=$((i + 1)); done' &
	sh -c 'i=0; while [ $i -lt 2000 ]; do i=$((i + 1)); done'
	wait $!
	echo | cat | cat | wc -l >/dev/null
done
wait $gt
kill -INT $rec
wait $rec
say all.rc $?
emit all.err

# 4. why: who woke each wait, states and the run queue, on the wakers workload
timeout 120 offcpu record --wakers --state SDR --stacks both -o why.data -- /vm/wakers -r why.truth 2>why.err
say why.rc $?
offcpu report -i why.data --wakers --folded >why.folded 2>&1
offcpu report -i why.data --folded --states >why.state 2>&1
emit why.err why.truth why.folded why.state

# 5. what each wait waited on (a mutex, a pipe, a socket), and a deadlock
# found by attaching to a hung process
timeout 120 offcpu record -v --wait-objects --wakers -o locks.data -- /vm/locks -r locks.truth 2>locks.err
say locks.rc $?
n=$(sed -n 's/.*verified on_switch: \([0-9]*\) instructions processed.*/\1/p' locks.err)
say verifier "${n:-?} --wait-objects"
offcpu report -i locks.data --locks >locks.txt 2>&1
emit locks.err locks.truth locks.txt
rm -f abba.txt
/vm/abba -r abba.txt &
ab=$!
i=0
while ! grep -q ready abba.txt 2>/dev/null && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
timeout 60 offcpu record -p $ab -d 1 -o abba.data 2>abba.err
say abba.rc $?
offcpu report -i abba.data >abba.report 2>&1
kill $ab
emit abba.txt abba.err abba.report

say done ok
poweroff -f || reboot -f
