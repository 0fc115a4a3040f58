/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ABI shared by the BPF collector and user space: map keys, map values and
 * counters. Plain __u32/__u64 with explicit padding only, because hash keys
 * are compared byte by byte and both sides must agree on every offset.
 */
#ifndef OFFCPU_H
#define OFFCPU_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define OFFCPU_MAX_STACK_DEPTH 127

/* Values of the process filter map. */
#define OFFCPU_FILTER_ACTIVE 1 /* record this process */
#define OFFCPU_FILTER_AT_EXEC 2 /* record it once it execs (a workload being started) */

/* Task states as offcpu names them; bit i of a state mask selects state i. */
enum offcpu_state {
	OFFCPU_STATE_R = 0, /* runnable: preempted or yielded */
	OFFCPU_STATE_S = 1, /* interruptible sleep */
	OFFCPU_STATE_D = 2, /* uninterruptible sleep */
	OFFCPU_STATE_T = 3, /* stopped or traced */
	OFFCPU_STATE_I = 4, /* idle (uninterruptible, not counted in load) */
	OFFCPU_STATE_NR,
};

#define OFFCPU_STATE_MASK(s) (1u << (s))
#define OFFCPU_DEFAULT_STATES (OFFCPU_STATE_MASK(OFFCPU_STATE_S) | OFFCPU_STATE_MASK(OFFCPU_STATE_D))

/*
 * Key of the summed-blocks hash map: one entry per distinct blocked context.
 * Stacks are keys of the user and kernel stack maps: a hash of their frames,
 * checked frame by frame when a stack is stored, so two stacks never share one.
 */
struct offcpu_key {
	__u32 pid; /* thread id */
	__u32 tgid; /* process id */
	__u64 user_stack; /* key in the user stack map; 0: none */
	__u64 kern_stack; /* key in the kernel stack map; 0: none */
	__u64 cgroup_id; /* 0 unless cgroups are recorded */
	__u32 state; /* enum offcpu_state, or OFFCPU_STATE_RUNQ */
	__u32 pad;
	__u64 wakeup; /* --wakers: key in the wakeup map (who woke it); 0: none seen */
	__u64 wait; /* key in the wait map (what it waits on: struct offcpu_wait); 0: none */
};

/*
 * Who woke a block (--wakers), stored in the wakeup map under a hash of it:
 * the key carries only that hash, so the summed map's key stays small for
 * every recording, and equal wakers still sum together.
 */
struct offcpu_wakeup {
	__u32 kind; /* enum offcpu_waker_kind */
	__u32 pid, tgid; /* the task that woke it; 0 for an interrupt */
	__u32 pad;
	__u64 ustack, kstack; /* its stacks when it did (stack map keys) */
	__u64 chain; /* key in the chain map: the waker's name and who woke it */
};

/* A block at or above the threshold, sent to user space as it ends. */
struct offcpu_event {
	__u64 time; /* switch-in: the moment the thread ran again */
	__u64 period; /* blocked ns */
	__u64 runq_ns; /* then, after its wakeup, waiting for a CPU (R recorded) */
	struct offcpu_key key;
	__u32 cpu;
	__u32 pad;
};

struct offcpu_val {
	__u64 total_ns; /* blocked time summed */
	__u64 runq_ns; /* their run queue waits after the wakeup, summed (R recorded) */
	__u64 count; /* number of blocks */
	__u32 last_cpu; /* cpu of the latest switch-in */
	__u32 pad;
};

/*
 * Per-task state between switch-out and switch-in: task storage on tp_btf,
 * a hash keyed by thread id on the raw_tp fallback.
 */
struct offcpu_task {
	__u64 ts; /* switch-out time (CLOCK_MONOTONIC ns), 0 when not tracked */
	__u64 cgroup_id;
	__u64 start_time; /* the task's start time: a reused thread id is another task */
	__u64 user_stack;
	__u64 ran_ns; /* the task's CPU time (sum_exec_runtime) when it blocked */
	__u64 nvcsw; /* its voluntary switches at the last switch-out seen (tp_btf) */
	__u64 stack_lo, stack_hi; /* the user stack mapping its sp was last seen in (table walk) */
	__u32 state;
	__u32 pad;
	__u64 wait; /* what the open block waits on: its key in the wait map; 0: none */
	/* set by the wakeup of the open block (--wakers; or R on a kernel whose types
	 * lack the scheduler's enqueue time, for the run queue split) */
	__u64 wake_ts; /* when it was woken; 0: not yet */
	__u64 wakeup; /* --wakers: who woke it, its key in the wakeup map; 0: none */
	__u64 wake_chain; /* --wakers: that waker's chain, passed on when this task wakes others */
	/* as a waker: the chain of its own last wakeup, and when it ran after it */
	__u64 chain, chain_ts;
	/*
	 * A block already under way when the recording started, noted by the
	 * start iterator: it writes these fields and no others, and only while
	 * open is 0; the task's own next switch (or the end iterator) takes the
	 * block and sets open back to 0. No two programs write one field at once.
	 */
	__u64 open_ts; /* the recording's start */
	__u64 open_ran_ns; /* the task's CPU time when it was seen blocked */
	__u64 open_switches; /* and its context switches (nvcsw + nivcsw) */
	__u64 open_cgroup;
	__u32 open_state;
	__u32 pad2;
	__u64 open_wait; /* what it waits on (the wait map's key); 0: none */
	__u64 open; /* 1: the fields above hold a block (set last; 64 bits: BPF's atomics) */
};

/* Who woke a thread, in its chain: names[0] woke it, names[i] woke names[i-1]
 * shortly before that (OFFCPU_CHAIN_NS); comms or [timer], [irq], [softirq:X]. */
#define OFFCPU_CHAIN_HOPS 4
#define OFFCPU_CHAIN_NS 10000000ULL
struct offcpu_chain {
	__u32 nr;
	__u32 pad;
	char names[OFFCPU_CHAIN_HOPS][16];
};

/* The wait after a wakeup, until the thread runs: a state of its own. */
#define OFFCPU_STATE_RUNQ 5
#define OFFCPU_STATES_ALL 6

/* What woke a thread. */
enum offcpu_waker_kind {
	OFFCPU_WAKER_NONE = 0,
	OFFCPU_WAKER_TASK = 1, /* a task, in its own context */
	OFFCPU_WAKER_TIMER = 2, /* an hrtimer's expiry: "[timer]" */
	OFFCPU_WAKER_IRQ = 3, /* another hard interrupt: "[irq]" */
	OFFCPU_WAKER_SOFTIRQ = 4, /* a soft interrupt: "[softirq:NET_RX]" ... */
};

/*
 * The user stack key of a block already under way when the recording started:
 * its stack was taken before offcpu ran, so it is not known. Stack keys are
 * never this value.
 */
#define OFFCPU_STACK_UNKNOWN (~0ULL)

/* What the open-blocks iterator does (open_mode). */
enum offcpu_open_mode {
	OFFCPU_OPEN_START = 1, /* threads of the targets blocked now: their block begins now */
	OFFCPU_OPEN_END = 2, /* blocks under way now end now */
};

/* How blocks at or above the threshold reach user space. */
enum offcpu_transport {
	OFFCPU_TRANSPORT_RINGBUF = 0, /* one BPF ring buffer shared by all cpus */
	OFFCPU_TRANSPORT_PERFBUF = 1, /* a perf event array, one buffer per cpu */
};

/* Indexes of the per-cpu counter array. */
enum offcpu_counter {
	OFFCPU_CNT_BLOCKS = 0, /* blocks that passed the filters and ended, lost or kept */
	OFFCPU_CNT_DROP_MAP_FULL, /* blocks lost: summed map and output buffer full */
	OFFCPU_CNT_STACK_FAIL, /* blocks kept without a user stack */
	OFFCPU_CNT_KSTACK_FAIL, /* blocks kept without a kernel stack (recovered ones aside) */
	OFFCPU_CNT_NO_STORAGE, /* blocks missed: no per-task storage */
	OFFCPU_CNT_FILTER_FULL, /* children not followed: filter map full */
	OFFCPU_CNT_UNPAIRED, /* blocks lost: a thread blocked again before its switch-in was seen */
	OFFCPU_CNT_RECOVERED, /* blocks whose switch-in the kernel skipped, recovered from CPU time */
	OFFCPU_CNT_MISSED_OUT, /* blocks lost: the kernel skipped the program at their switch-out */
	OFFCPU_CNT_FAULTS, /* tests: switch-outs ignored on purpose (OFFCPU_FAULT_SKIP_SWITCH_OUT) */
	OFFCPU_CNT_STREAMED, /* blocks sent to user space one by one */
	OFFCPU_CNT_OUTPUT_FULL, /* long blocks summed instead: output buffer full */
	OFFCPU_CNT_VERIFIED, /* --verify-stacks: stacks compared with the kernel's helpers */
	OFFCPU_CNT_VERIFY_USER_BAD, /* --verify-stacks: user stacks that differed */
	OFFCPU_CNT_VERIFY_KERNEL_BAD, /* --verify-stacks: kernel stacks that differed */
	OFFCPU_CNT_USER_HELPER, /* user stacks the kernel's helper walked (not offcpu's walk) */
	OFFCPU_CNT_KERNEL_HELPER, /* kernel stacks the kernel's helper walked (not offcpu's walk) */
	OFFCPU_CNT_UNW_REQUESTS, /* table walk: processes or mappings asked of user space */
	OFFCPU_CNT_UNW_COPY_FAIL, /* table walk: stack copies that failed (words read one by one) */
	OFFCPU_CNT_UNW_VERIFY_LOST, /* --verify-stacks: table walks not sent to the oracle (buffer full) */
	OFFCPU_CNT_OPEN_START, /* blocks already under way when the recording started */
	OFFCPU_CNT_OPEN_START_NS, /* their time, counted from the start */
	OFFCPU_CNT_OPEN_END, /* blocks still under way when the recording ended */
	OFFCPU_CNT_OPEN_END_NS, /* their time, counted to the end */
	OFFCPU_CNT_WAKEUPS, /* wakeups of recorded blocked threads seen */
	OFFCPU_CNT_WAKER_IRQ, /* of them, from an interrupt */
	OFFCPU_CNT_CHAIN_FULL, /* wakers whose chain could not be stored (chain map full) */
	OFFCPU_CNT_WAKEUP_FULL, /* wakeups whose waker could not be stored (wakeup map full) */
	OFFCPU_CNT_RUNQ, /* blocks split at their wakeup */
	OFFCPU_CNT_RUNQ_NS, /* the run queue wait split off */
	OFFCPU_CNT_OPEN_LOST, /* blocks under way at the start lost: run before they were noted */
	/* the time of the blocks counted above, and of some losses among them */
	OFFCPU_CNT_BLOCKS_NS, /* of OFFCPU_CNT_BLOCKS (their run queue wait included) */
	OFFCPU_CNT_DROP_MAP_FULL_NS,
	OFFCPU_CNT_STACK_FAIL_NS,
	OFFCPU_CNT_KSTACK_FAIL_NS,
	OFFCPU_CNT_OUTPUT_FULL_NS,
	OFFCPU_CNT_SUMMED_FULL, /* short blocks streamed instead: summed map full */
	OFFCPU_CNT_SUMMED_FULL_NS,
	OFFCPU_CNT_WAKER_STACK_FAIL, /* --wakers: wakers kept without a stack (stack map full?) */
	OFFCPU_CNT_DEFERRED, /* table walks sent to user space to finish (no table yet) */
	OFFCPU_CNT_SNAP_LOST, /* walks or threads at the start not sent: snaps buffer full */
	OFFCPU_CNT_UNW_END, /* table walk: blocks whose walk ended for reason 0; + reason: the others */
	OFFCPU_CNT_NR = OFFCPU_CNT_UNW_END + 16,
};

/*
 * User stacks from unwind tables (--unwind=tables, x86-64, tp_btf).
 *
 * User space builds a table for each object from its .eh_frame: sorted rows,
 * each the start of an address range (the object's own ELF addresses) and the
 * index of its rule in one rule array shared by all objects. All objects'
 * rows sit in one array; an object is a slice of it. A process is a sorted
 * list of its executable mappings, each naming its object.
 */
#define OFFCPU_UNW_MAPS 256 /* executable mappings per process */
#define OFFCPU_UNW_RULES 16384
#define OFFCPU_UNW_OBJS 8192
#define OFFCPU_UNW_PROCS 4096 /* processes with tables at once */
#define OFFCPU_UNW_OBJ_PENDING 0xffffffffu
/* a request for a process's mappings: when (CLOCK_MONOTONIC ns), | this bit after an exec */
#define OFFCPU_UNW_REQ_EXEC (1ULL << 63)
#define OFFCPU_UNW_MAX_ROWS (1u << 24) /* the row search takes 24 steps at most */
#define OFFCPU_UNW_COPY 8192 /* bytes of user stack copied at most, from sp */

enum offcpu_unw_cfa {
	OFFCPU_UNW_CFA_RSP, /* CFA = rsp + cfa_off */
	OFFCPU_UNW_CFA_RBP, /* CFA = rbp + cfa_off */
	OFFCPU_UNW_CFA_PLT, /* a PLT entry: CFA = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0) */
	OFFCPU_UNW_CFA_NONE, /* no rule: the walk ends */
	OFFCPU_UNW_CFA_SIGNAL, /* a signal frame: registers saved in the ucontext at rsp */
	/* code whose ABI keeps frame pointers, its unwind method (Go): CFA = rbp + 16,
	 * rbp saved at CFA - 16; rbp 0 ends the chain (the outermost frame). rbp may
	 * point to another stack than rsp's (Go switches stacks and keeps rbp) */
	OFFCPU_UNW_CFA_FP,
	/* code that keeps frame pointers without CFI (V8's builtins): one frame
	 * pointer step, taken only if plausible (rbp 8-aligned, above rsp and within
	 * its stack, the return address in an executable mapping), else no rule */
	OFFCPU_UNW_CFA_FP_CHECKED,
};

enum offcpu_unw_rbp {
	OFFCPU_UNW_RBP_SAME, /* unchanged */
	OFFCPU_UNW_RBP_AT, /* saved at CFA + rbp_off */
	OFFCPU_UNW_RBP_UNDEF,
};

/* what a rule's code is to the walk besides its rule (struct offcpu_unw_rule.outermost) */
enum offcpu_unw_outer {
	OFFCPU_UNW_INNER = 0,
	OFFCPU_UNW_OUTERMOST = 1, /* no caller: _start, clone3, start_thread, runtime.goexit */
	/* Go's switch from a goroutine's stack to its thread's scheduler (runtime.mcall):
	 * the walk ends there (OFFCPU_UNW_GO_SCHED) unless it passed OFFCPU_UNW_GO_LOCKED */
	OFFCPU_UNW_GO_SWITCH = 2,
	/* Go's thread waiting for the goroutine locked to it (runtime.stoplockedm): the
	 * goroutine beyond the switch is the one waiting */
	OFFCPU_UNW_GO_LOCKED = 3,
};

struct offcpu_unw_rule {
	__u8 cfa; /* enum offcpu_unw_cfa */
	__u8 rbp; /* enum offcpu_unw_rbp */
	__u8 outermost; /* enum offcpu_unw_outer */
	__u8 pad;
	__s32 cfa_off;
	__s32 rbp_off;
	__u32 pad2; /* 16 bytes: an array's element stride */
};

struct offcpu_unw_row {
	__u32 start; /* ELF address where the range begins */
	__u32 rule; /* index into the rule array */
};

struct offcpu_unw_obj {
	__u32 first; /* its first row */
	__u32 nr; /* its rows; 0: no table */
};

struct offcpu_unw_map {
	__u64 start, end; /* the mapping's addresses */
	__u64 bias; /* address - bias = ELF address in the object */
	__u32 obj; /* index into the object array; 0: no table (JIT, no .eh_frame);
		    * OFFCPU_UNW_OBJ_PENDING: its table is being built */
	__u32 pad;
};

/* the object of an anonymous executable mapping (JIT code, which keeps frame
 * pointers): walked by OFFCPU_UNW_CFA_FP_CHECKED's step, else as object 0 */
#define OFFCPU_UNW_OBJ_JIT 0xfffffffeu

struct offcpu_unw_proc {
	__u32 nr;
	__u32 pad;
	struct offcpu_unw_map maps[OFFCPU_UNW_MAPS]; /* sorted by start, disjoint */
};

/*
 * How a table walk ended. Where it did not reach the outermost frame, the
 * stack ends with a mark frame, an address below any mapping, that carries
 * the reason and the index of the frame where tables stopped:
 * OFFCPU_UNW_MARK | at << 4 | reason. NO_PROC, NO_MAPPING, NO_TABLE and
 * BUILDING go on by frame pointers from that frame.
 */
enum offcpu_unw_end {
	OFFCPU_UNW_COMPLETE = 0, /* reached the outermost frame */
	OFFCPU_UNW_NO_PROC, /* the process's mappings were not loaded yet */
	OFFCPU_UNW_NO_MAPPING, /* the pc is in no mapping known yet */
	OFFCPU_UNW_NO_TABLE, /* the object has no table (no .eh_frame, JIT code, memory full) */
	OFFCPU_UNW_NO_RULE, /* the table has no rule for the pc */
	OFFCPU_UNW_BAD_FRAME, /* the CFA or the return address is impossible */
	OFFCPU_UNW_READ_FAULT, /* the stack could not be read */
	OFFCPU_UNW_DEPTH, /* more frames than a stack holds */
	OFFCPU_UNW_BUILDING, /* the object's table was being built */
	/* at Go's stack switch to the scheduler (runtime.mcall) of a thread that
	 * waits for no goroutine of its own: the frames beyond are the goroutine
	 * that last ran there, which waits elsewhere if at all (not a failure) */
	OFFCPU_UNW_GO_SCHED,
	OFFCPU_UNW_END_NR,
	/* not a walk's end: the block began before the recording (OFFCPU_STACK_UNKNOWN) */
	OFFCPU_UNW_BEFORE_START = 15,
};

/*
 * Stacks finished in user space (src/record/userstacks.c), through the snaps
 * ring buffer:
 *   OFFCPU_SNAP_START: a thread of the targets blocked when the recording
 *     began (the start iterator): its user registers, its switch count and
 *     when its block began; user space reads its stack while it sleeps.
 *   OFFCPU_SNAP_DEFER: a table walk that met code with no table yet (its
 *     process not loaded, a mapping not known, a table being built): its
 *     registers and stack copy, unwound in user space. The walk's stack
 *     carries OFFCPU_UNW_DEFER_LO + id, below any mapping, before its mark.
 */
enum {
	OFFCPU_SNAP_START = 1,
	OFFCPU_SNAP_DEFER = 2,
};

/* registers in DWARF order (0-16): rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip */
#define OFFCPU_SNAP_REGS 17
#define OFFCPU_UNW_DEFER_LO 0x1000ULL
#define OFFCPU_UNW_DEFER_HI 0x10000ULL /* vm.mmap_min_addr's default: nothing maps below */
#define OFFCPU_UNW_IS_DEFER(ip) ((ip) >= OFFCPU_UNW_DEFER_LO && (ip) < OFFCPU_UNW_DEFER_HI)

struct offcpu_snap {
	__u32 kind; /* OFFCPU_SNAP_* */
	__u32 tgid, tid;
	__u32 id; /* DEFER: the walk's, as in its stack */
	__u64 switches; /* START: nvcsw + nivcsw when it was seen blocked */
	__u64 began; /* START: when its block began (CLOCK_MONOTONIC ns); 0: not known */
	__u64 regs[OFFCPU_SNAP_REGS];
	__u64 orig_ax; /* the system call it waits in; -1: not in one (preempted) */
	__u64 fsbase; /* START: its thread pointer (x86-64), where its thread-specific data is */
	__u32 state; /* START: enum offcpu_state; DEFER: where the walk stopped (enum offcpu_unw_end) */
	__u32 copy_len; /* DEFER: bytes of stack from rsp */
};

struct offcpu_snap_defer {
	struct offcpu_snap h;
	__u8 stack[OFFCPU_UNW_COPY];
};

/* --verify-stacks with tables: a walk and what it walked, for the DWARF oracle */
struct offcpu_unw_sample {
	__u32 tgid, tid;
	__u64 ip, sp, bp; /* the user registers */
	__u32 nr; /* frames in ips, the mark included */
	__u32 copy_len; /* bytes of stack from sp */
	__u64 ips[OFFCPU_MAX_STACK_DEPTH];
	__u8 stack[OFFCPU_UNW_COPY];
};

#define OFFCPU_UNW_MARK 0x800ULL
#define OFFCPU_UNW_IS_MARK(ip) (((ip) & ~0x7ffULL) == OFFCPU_UNW_MARK)
#define OFFCPU_UNW_MARK_OF(reason, at) (OFFCPU_UNW_MARK | ((__u64)(at) << 4) | (reason))
#define OFFCPU_UNW_MARK_REASON(ip) ((unsigned)((ip) & 0xf))
#define OFFCPU_UNW_MARK_AT(ip) ((unsigned)(((ip) >> 4) & 0x7f))

/*
 * Named frames: code no ELF object names (a Python function, JIT code).
 *
 * A Python frame in a user stack is an address of its own range, one
 * OFFCPU_PYFRAME_SIZE slot per interned (process, code object):
 * OFFCPU_PYFRAME_LO + id * OFFCPU_PYFRAME_SIZE, above 2^56 (the top of
 * 5-level user space) and below the kernel's half, so no mapping ever holds
 * it. JIT code keeps its real addresses.
 *
 * Names reach the file as MMAP2 records of the process (prot r-x, private,
 * pgoff 0) over the named range, written before the first sample that uses
 * them: "[py] QUALNAME (FILE:LINE)" over a Python frame's slot, "[jit] NAME"
 * over a perf map entry's code (/tmp/perf-PID.map). perf reads them as
 * mappings without a file and shows the name as the frame's object; offcpu
 * report names the frame with it.
 */
#define OFFCPU_PYFRAME_LO 0x0100000000000000ULL
#define OFFCPU_PYFRAME_SIZE 16ULL
#define OFFCPU_PYFRAME_MAX (1ULL << 24) /* ids: of each process, its own address space */
#define OFFCPU_PYFRAME_HI (OFFCPU_PYFRAME_LO + OFFCPU_PYFRAME_MAX * OFFCPU_PYFRAME_SIZE)
#define OFFCPU_IS_PYFRAME(ip) ((ip) >= OFFCPU_PYFRAME_LO && (ip) < OFFCPU_PYFRAME_HI)
#define OFFCPU_PYFRAME_OF(id) (OFFCPU_PYFRAME_LO + (__u64)(id) * OFFCPU_PYFRAME_SIZE)
#define OFFCPU_NAMED_PY "[py] "
#define OFFCPU_NAMED_JIT "[jit] "
/*
 * For perf, each named record is followed by one over the same range that
 * maps the symbol file beside the recording (.FILE.names, or names in the
 * directory of --threads: src/record/named.h), at the offset of the frame's
 * symbol, with the symbol file's build id: perf names the frame from it.
 * offcpu report reads the named records and skips these.
 */
#define OFFCPU_NAMES_FILE "names"

/*
 * Python frames (src/bpf/python.bpf.h, src/record/python.c; --no-python
 * turns them off). User space tells the program which processes run a known
 * CPython (py_procs: tgid -> struct offcpu_py_proc); the program asks it
 * about a process it has not seen (an OFFCPU_PY_EV_PROC event). At a switch-out
 * and at a waker's wakeup of such a process, the thread's Python frames are
 * walked from its thread state (glibc's TSS slot of _PyRuntime's key) and
 * appended to its user stack, innermost first, after the native frames (and
 * the walk's mark): OFFCPU_PYFRAME_OF(id), | OFFCPU_PY_ENTRY for a frame
 * that entered its C-level _PyEval_EvalFrameDefault. A (code object,
 * instruction) is named once per process, when first seen (an
 * OFFCPU_PY_EV_NAME event, read while the process lives, with the code
 * object's line table for its line); id 0 is a frame that could not be named.
 * User space splices each group of Python frames into the native stack
 * inside the _PyEval_EvalFrameDefault frame that runs it.
 */
#define OFFCPU_PY_FRAMES 32 /* Python frames walked per stack at most */
#define OFFCPU_PY_ENTRY 1ULL
#define OFFCPU_PY_NAME_LEN 128
#define OFFCPU_PY_FILE_LEN 256

#define OFFCPU_PY_LINETABLE 1024 /* bytes of a co_linetable sent at most */
/* glibc x86-64: struct pthread (at fsbase).specific_1stblock, 16-byte {seq, data} slots */
#define OFFCPU_GLIBC_TSS_SLOTS 784

enum offcpu_py_state {
	OFFCPU_PY_PENDING = 0, /* asked of user space */
	OFFCPU_PY_NONE = 1, /* not a CPython offcpu reads */
	OFFCPU_PY_READ = 2, /* a CPython whose layout is the entry's */
};

/*
 * Where a CPython keeps what a frame's name needs: offsets in bytes, chosen
 * by user space from the version the process's interpreter carries
 * (src/record/pylayout.h, checked against each version's DWARF). A frame is
 * read as one window of its bytes, a code object to be named as another;
 * the fields' offsets are within them.
 */
#define OFFCPU_PY_NONE 0xffffu /* a field the version does not have */
#define OFFCPU_PY_FRAME_WIN 80 /* bytes of a frame read at once, at most */
#define OFFCPU_PY_CODE_WIN 96 /* bytes of a code object read to name it, at most */

/* How a C-level _PyEval_EvalFrameDefault call's Python frames are told apart. */
enum offcpu_py_frames {
	OFFCPU_PY_FRAMES_OWN = 1, /* 3.10: each frame runs in a call of its own */
	OFFCPU_PY_FRAMES_IS_ENTRY = 2, /* 3.11: frame_flag (a byte) set: the frame that entered it */
	/* 3.12, 3.13: frame_flag is the frame's owner; a frame owned by the C
	 * stack (owner == cstack) is the call's own, not a Python function: the
	 * frame before it entered the call */
	OFFCPU_PY_FRAMES_OWNER = 3,
};

struct offcpu_py_layout {
	__u8 minor; /* CPython 3.minor: the line table's format */
	__u8 frames; /* enum offcpu_py_frames */
	__u8 cstack; /* OFFCPU_PY_FRAMES_OWNER: FRAME_OWNED_BY_CSTACK */
	/* a code object's identity (its stamp): 1: the hash of the str at
	 * code_stamp (co_name; 3.10, 3.11); 0: the 32 bits at code_stamp
	 * (co_version, one per code object made; 3.12, 3.13) */
	__u8 stamp_str;
	__u16 tstate_frame; /* PyThreadState: its current frame, or the cframe that holds it */
	__u16 cframe_frame; /* _PyCFrame: its current frame; OFFCPU_PY_NONE: tstate_frame is the frame */
	__u16 frame_base, frame_len; /* a frame's window: its bytes frame_base to +frame_len */
	__u16 frame_code, frame_previous; /* in the window: the code object, the caller's frame */
	__u16 frame_instr; /* the instruction it is in: a pointer, or (code_instr NONE) an int index */
	__u16 frame_flag; /* OFFCPU_PY_FRAMES_IS_ENTRY, _OWNER: the byte that tells */
	__u16 code_instr; /* the code object's first instruction; OFFCPU_PY_NONE: none (3.10) */
	__u16 code_stamp;
	__u16 code_base, code_len; /* a code object's window, read to name it */
	__u16 code_firstlineno, code_filename, code_qualname, code_linetable; /* in that window */
	__u16 str_state, str_ascii, str_utf8, str_hash; /* a str's state (bit 6: ascii), chars, utf8 */
	__u16 bytes_size, bytes_data; /* a bytes object's length, its bytes */
};

/* What the program saw of a process (struct offcpu_py_proc.flags). */
#define OFFCPU_PY_F_KEY_BAD 1u /* its thread-state key not one of glibc's first 32 slots */
#define OFFCPU_PY_F_CUT_TOLD 2u /* user space was told it used its last id */

/*
 * Ids are the process's own (its frames' addresses are in its address space):
 * the program hands out next_id + 1, next_id + 2, ... up to max_id, so that no
 * process can use up another's; past max_id its code objects stay unnamed, and
 * the one that went past it first is told (OFFCPU_PY_EV_CUT).
 */
#define OFFCPU_PY_IDS_MAX (1u << 17)
_Static_assert(OFFCPU_PY_IDS_MAX < OFFCPU_PYFRAME_MAX, "ids fit the frames' range");

struct offcpu_py_proc {
	__u32 state; /* enum offcpu_py_state */
	__u32 version; /* Py_Version */
	__u64 tss_key; /* address of _PyRuntime's autoTSSkey */
	__u64 slot; /* the program's: fsbase offset of the key's TSS data, once known; 0: not yet */
	__u64 next_id; /* the last id handed out (the program adds to it: 64 bits for its atomic) */
	__u32 max_id; /* the last it may hand out */
	__u32 flags; /* the program's: OFFCPU_PY_F_* */
	struct offcpu_py_layout l;
};

enum {
	OFFCPU_PY_EV_PROC = 1, /* a process not seen yet: tgid */
	OFFCPU_PY_EV_NAME = 2, /* a code object's name: tgid, id, code, lineno, names */
	OFFCPU_PY_EV_CUT = 3, /* a process used its last id: tgid */
};

struct offcpu_py_event {
	__u32 kind;
	__u32 tgid;
	__u32 id;
	__s32 lineno; /* co_firstlineno */
	__u64 code; /* the code object's address */
	__u64 stamp; /* and its identity (struct offcpu_py_layout) */
	char qualname[OFFCPU_PY_NAME_LEN]; /* NUL-ended, "" when not ASCII or unreadable */
	char filename[OFFCPU_PY_FILE_LEN];
	/* where the frame is: a name is of a (code object, instruction) */
	__s32 lasti; /* the instruction, in code units from the first; -1: none yet */
	__u32 linetable_len; /* bytes of co_linetable in linetable (its first ones) */
	__u8 minor; /* its format: CPython 3.minor's */
	__u8 pad[7];
	__u8 linetable[OFFCPU_PY_LINETABLE];
};

/* The Python part's counters (py_counters, per cpu). */
enum offcpu_py_counter {
	OFFCPU_PY_CNT_WALKS = 0, /* stacks whose Python frames were walked */
	OFFCPU_PY_CNT_FRAMES, /* Python frames appended */
	OFFCPU_PY_CNT_FAULTS, /* walks cut by a read that faulted (memory paged out) */
	OFFCPU_PY_CNT_NO_ROOM, /* walks cut: the stack was full, or the frame bound reached */
	OFFCPU_PY_CNT_NAMES, /* code objects named */
	OFFCPU_PY_CNT_NAME_LOST, /* code objects left unnamed: map or buffer full, its ids used up */
	OFFCPU_PY_CNT_NO_TSTATE, /* walks of a thread with no thread state (not running Python) */
	OFFCPU_PY_CNT_NR,
};

/*
 * JavaScript frames of V8 (node; src/bpf/v8.bpf.h, src/record/v8.c; --no-js
 * turns them off). Where the table walk steps through code that keeps frame
 * pointers without a rule (V8's builtins, JIT code), it notes the frame's
 * frame pointer; after the walk, each such frame of a process whose V8 told
 * offcpu its layout (the v8dbg_* symbols node exports) that is a JavaScript
 * frame (a context at fp + fp_context, a JSFunction at fp + fp_function) is
 * named by its SharedFunctionInfo: the frame's pc in the stack is replaced by
 * OFFCPU_JSFRAME_OF(id), an address of its own range as Python's frames
 * ("Named frames" above). A (process, SharedFunctionInfo, its name or scope
 * info) is named once, when first seen (an OFFCPU_V8_EV_NAME event, its
 * function and script names read then, while the process lives); id 0 is a
 * frame that could not be named (left as it was).
 */
#define OFFCPU_JSFRAME_LO 0x0200000000000000ULL
#define OFFCPU_JSFRAME_SIZE 16ULL
#define OFFCPU_JSFRAME_MAX (1ULL << 24)
#define OFFCPU_JSFRAME_HI (OFFCPU_JSFRAME_LO + OFFCPU_JSFRAME_MAX * OFFCPU_JSFRAME_SIZE)
#define OFFCPU_IS_JSFRAME(ip) ((ip) >= OFFCPU_JSFRAME_LO && (ip) < OFFCPU_JSFRAME_HI)
#define OFFCPU_JSFRAME_OF(id) (OFFCPU_JSFRAME_LO + (__u64)(id) * OFFCPU_JSFRAME_SIZE)
#define OFFCPU_NAMED_JS "[js] "
/* a named frame of any kind (Python, JavaScript): above every user mapping */
#define OFFCPU_IS_NAMED_FRAME(ip) (OFFCPU_IS_PYFRAME(ip) || OFFCPU_IS_JSFRAME(ip))
#define OFFCPU_V8_FRAMES 32 /* frames noted per walk at most (the innermost) */
#define OFFCPU_V8_NAME_LEN 256 /* two pieces of 127 characters at most (a cons string's) */
#define OFFCPU_V8_FILE_LEN 256
#define OFFCPU_V8_SCOPE_SLOTS 16 /* slots of a ScopeInfo looked at for its function's name */
#define OFFCPU_V8_IDS_MAX (1u << 17)
_Static_assert(OFFCPU_V8_IDS_MAX < OFFCPU_JSFRAME_MAX, "ids fit the frames' range");

enum offcpu_v8_state {
	OFFCPU_V8_PENDING = 0, /* asked of user space */
	OFFCPU_V8_NONE = 1, /* no V8 whose layout offcpu knows */
	OFFCPU_V8_ON = 2, /* its layout is below */
};

/* A process's V8 layout, from its v8dbg_* symbols (offsets in bytes, types as V8 numbers them). */
struct offcpu_v8_proc {
	__u32 state; /* enum offcpu_v8_state */
	__u32 max_id; /* the last id it may hand out */
	__u64 next_id; /* the last id handed out (the program adds to it) */
	__s16 fp_function, fp_context; /* off_fp_function, off_fp_context */
	__u16 fn_shared; /* JSFunction.shared */
	__u16 obj_map, map_type; /* HeapObject.map, Map.instance_type */
	__u16 sfi_name, sfi_script; /* SharedFunctionInfo.name_or_scope_info, script_or_debug_info */
	__u16 script_name; /* Script.name */
	__u16 str_len, str_chars, thin_actual; /* String.length, SeqOneByteString.chars, ThinString.actual */
	__u16 cons_first, cons_second; /* ConsString.first, .second */
	__u16 scope_data; /* where a ScopeInfo's slots begin */
	__u16 type_sfi, type_scope, type_script; /* instance types */
	__u16 first_nonstring; /* FirstNonstringType */
	__u8 repr_mask, repr_seq, repr_thin, repr_cons; /* string representations */
	__u8 enc_mask, enc_one; /* string encoding */
	__u8 scope_first, scope_nlocals; /* ScopeInfo slot indexes: first variable, context locals */
};

enum {
	OFFCPU_V8_EV_PROC = 1, /* a process not seen yet: tgid */
	OFFCPU_V8_EV_NAME = 2, /* a function's name: tgid, id, sfi, names */
	OFFCPU_V8_EV_CUT = 3, /* a process used its last id: tgid */
};

struct offcpu_v8_event {
	__u32 kind;
	__u32 tgid;
	__u32 id;
	__s32 start; /* the function's start in its script's source (characters); -1: not known */
	__u64 sfi; /* the SharedFunctionInfo (tagged) */
	char name[OFFCPU_V8_NAME_LEN]; /* NUL-ended, "" when anonymous or not read */
	char file[OFFCPU_V8_FILE_LEN]; /* its script's name, "" when none */
	__u64 slots[OFFCPU_V8_SCOPE_SLOTS]; /* (the program's scratch) */
	__u64 tmp[3]; /* (the program's scratch) */
};

/* The JavaScript part's counters (v8_counters, per cpu). */
enum offcpu_v8_counter {
	OFFCPU_V8_CNT_WALKS = 0, /* stacks with frames looked at */
	OFFCPU_V8_CNT_FRAMES, /* frames named */
	OFFCPU_V8_CNT_OTHER, /* frames looked at that are no JavaScript function's (stubs, exits) */
	OFFCPU_V8_CNT_FAULTS, /* frames not named: a read faulted */
	OFFCPU_V8_CNT_NAMES, /* functions named */
	OFFCPU_V8_CNT_NAME_LOST, /* functions left unnamed: map or buffer full, ids used up */
	OFFCPU_V8_CNT_NR,
};

/*
 * What a block waits on (src/bpf/waits.bpf.h): the object of the system call
 * the thread sleeps in, read from its registers at the system call's entry
 * (the task's pt_regs): for futex waits the user address, and the words
 * there (a glibc mutex's owner: OFFCPU_GLIBC_MUTEX_OWNER); for waits on a
 * file descriptor what the descriptor is. Read at the switch-out with
 * --wait-objects, and always by the start and end iterators for the blocks
 * under way then (whose user memory user space reads: flags AT_START,
 * AT_END). Stored in the wait map under a hash of it, which the key carries
 * (offcpu_key.wait): blocks on different objects are summed apart. Every
 * block still under way at the end gets one (kind NONE when its system call
 * is not one described, syscall ~0 when in none): its summed entry is then
 * its own, the report's list of the threads still waiting. Facts,
 * not conclusions: the report tells a mutex from a condition variable by
 * the waiting stack, and an owner is a hint it checks against the threads
 * of the process.
 */
enum offcpu_wait_kind {
	OFFCPU_WAIT_NONE = 0, /* no object described (AT_END only): the system call alone */
	OFFCPU_WAIT_FUTEX = 1, /* futex, futex_waitv: addr */
	OFFCPU_WAIT_FD = 2, /* a system call on a file descriptor: fd and its file */
};

/* What a descriptor is (offcpu_wait.file), from its inode's mode. */
enum offcpu_wait_file {
	OFFCPU_FILE_NONE = 0, /* no descriptor read (poll on none, not open, unreadable) */
	OFFCPU_FILE_PIPE = 1, /* a pipe or fifo: ino pairs its ends */
	OFFCPU_FILE_SOCKET = 2, /* sock_* fields */
	OFFCPU_FILE_REG = 3, /* a regular file: name, ino, dev */
	OFFCPU_FILE_CHR = 4,
	OFFCPU_FILE_BLK = 5,
	OFFCPU_FILE_DIR = 6,
	OFFCPU_FILE_ANON = 7, /* an anonymous inode: name says which ("[eventfd]", "[timerfd]",
			       * "[signalfd]", "[eventpoll]", ...) */
	OFFCPU_FILE_OTHER = 8,
};

/* offcpu_wait.flags */
#define OFFCPU_WAIT_WORDS 1u /* words hold the memory at addr, read at the switch-out */
#define OFFCPU_WAIT_AT_START 2u /* noted by the start iterator (words: user space reads them) */
#define OFFCPU_WAIT_AT_END 4u /* noted by the end iterator (words: user space reads them) */
#define OFFCPU_WAIT_HEAP 8u /* addr is in the process's brk heap */
#define OFFCPU_WAIT_STACK 16u /* addr is in the waiting thread's own stack mapping */
#define OFFCPU_WAIT_EPOLL 32u /* epoll_wait: fd is the epoll's; the file fields describe the
			       * one descriptor it watches, else the epoll itself */
#define OFFCPU_WAIT_FILE_LOCK 64u /* flock, fcntl(F_SETLKW): a lock on the file */

/* glibc x86-64 (2.36, checked against libc6-dbg's DWARF: tests/integration/locks.sh):
 * struct __pthread_mutex_s, words at a mutex's address (its futex word) */
#define OFFCPU_GLIBC_MUTEX_LOCK 0 /* int __lock */
#define OFFCPU_GLIBC_MUTEX_OWNER 2 /* int __owner: the holder's thread id (byte 8) */
#define OFFCPU_GLIBC_MUTEX_KIND 4 /* int __kind (byte 16) */
#define OFFCPU_WAIT_NR_WORDS 6

#define OFFCPU_WAIT_NAME 32

struct offcpu_wait {
	__u32 kind; /* enum offcpu_wait_kind */
	__u32 flags; /* OFFCPU_WAIT_* */
	__u32 tgid; /* whose memory or descriptor table */
	__u32 syscall; /* the x86-64 system call number */
	__u64 addr; /* FUTEX: the user address (futex_waitv: the first); 0 unknown */
	__u32 words[OFFCPU_WAIT_NR_WORDS]; /* FUTEX with OFFCPU_WAIT_WORDS: 24 bytes at addr */
	__u32 futex_op; /* FUTEX: the futex operation (futex_waitv: how many futexes) */
	__s32 fd; /* FD: the descriptor (poll, select: the first); -1 unknown */
	__u32 nfds; /* poll, select: how many descriptors; 0 otherwise */
	__u32 file; /* enum offcpu_wait_file */
	__u32 mode; /* the inode's i_mode */
	__u32 dev; /* its super block's s_dev (major << 20 | minor) */
	__u64 ino; /* its inode number */
	/* SOCKET */
	__u16 sock_family, sock_type, sock_protocol, sock_state;
	__u16 sock_lport, sock_rport; /* host order */
	__u32 pad;
	__u8 sock_laddr[16], sock_raddr[16]; /* AF_INET: the first 4 bytes */
	__u64 sock_peer_ino; /* AF_UNIX: the inode of the peer's socket; 0 none */
	char name[OFFCPU_WAIT_NAME]; /* the file's dentry name (REG, ANON, ...), NUL-padded */
};

/* The wait part's counters (wait_counters, per cpu). */
enum offcpu_wait_counter {
	OFFCPU_WAIT_CNT_SEEN = 0, /* blocks whose wait object was looked for */
	OFFCPU_WAIT_CNT_FOUND, /* of them, in a system call offcpu describes */
	OFFCPU_WAIT_CNT_FULL, /* objects not kept: the wait map was full */
	OFFCPU_WAIT_CNT_FAULT, /* user memory that could not be read (not resident) */
	OFFCPU_WAIT_CNT_NR,
};

#endif /* OFFCPU_H */
