/* SPDX-License-Identifier: GPL-2.0 */
/*
 * faults.bpf.h - test hooks: faults the tests inject (OFFCPU_FAULT_*
 * environment variables of offcpu record) to reach the paths the kernel
 * takes rarely: a switch-in or a switch-out the kernel does not call this
 * program for (see recover() in switch.bpf.h), and a verifier that refuses
 * a piece of the program (user space must then load it without that piece,
 * and name the fallback). Only in a test build (OFFCPU_TEST_HOOKS: make
 * check builds one); in any other the hooks are constants the compiler
 * leaves out.
 *
 * Needs: common.bpf.h.
 */
#ifndef OFFCPU_FAULTS_BPF_H
#define OFFCPU_FAULTS_BPF_H

#include "common.bpf.h"

#define FAULT_REFUSE_KORC 1
#define FAULT_REFUSE_USER 2
#define FAULT_REFUSE_TP_BTF 4
#define FAULT_REFUSE_TABLES 8
/* a load through a scalar: "invalid mem access", whatever the kernel */
#define REFUSED() (*(volatile __u64 *)bpf_ktime_get_ns())

#ifdef OFFCPU_TEST_HOOKS

/* tests only (OFFCPU_FAULT_SKIP_SWITCH_IN=N): ignore every Nth switch-in of
 * a blocked thread, as the kernel sometimes does, to exercise recover() */
const volatile __u32 fault_skip_in = 0;
__u64 fault_seen;
/* tests only (OFFCPU_FAULT_SKIP_SWITCH_OUT=N): ignore every Nth recorded
 * switch-out, as the kernel sometimes does, to check that it is counted */
const volatile __u32 fault_skip_out = 0;
__u64 fault_seen_out;
/* tests only (OFFCPU_FAULT_REFUSE=korc,user,tp_btf): put code the verifier
 * refuses into a piece of the program, so that user space must load it
 * without that piece (the fallbacks are named, never silent) */
const volatile __u32 fault_refuse = 0;

/* Whether the kernel is to be taken as not calling this program for a
 * recorded switch-out (every fault_skip_out-th): counted as a fault. */
static __always_inline bool fault_skip_switch_out(void)
{
	if (fault_skip_out && ++fault_seen_out % fault_skip_out == 0) {
		count(OFFCPU_CNT_FAULTS);
		return true;
	}
	return false;
}

/* The same for a switch-in of a blocked thread (every fault_skip_in-th). */
static __always_inline bool fault_skip_switch_in(void)
{
	return fault_skip_in && ++fault_seen % fault_skip_in == 0;
}
#else /* a build without test hooks: none */
#define fault_refuse 0
static __always_inline bool fault_skip_switch_out(void)
{
	return false;
}
static __always_inline bool fault_skip_switch_in(void)
{
	return false;
}
#endif

#endif /* OFFCPU_FAULTS_BPF_H */
