/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Loading the BPF program: the fullest configuration this kernel's verifier
 * and types accept, each piece given up named with its cause.
 */
#ifndef OFFCPU_LOADER_H
#define OFFCPU_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include "collector.h"

struct offcpu_bpf;

struct loaded {
	struct offcpu_bpf *skel; /* loaded, not attached */
	bool raw_tp; /* in: raw_tp only (--raw-tp); out: whether raw_tp it is */
	/* which of offcpu's own stack walkers the loaded program uses */
	bool korc, user_walker, tables;
	/* the walkers and programs that fell back, and why ("" when none) */
	char fallbacks[768];
	/* why the kernel's stack size is guessed ("": the program reads it) */
	char stack_guess[160];
};

/*
 * Open and load the program for @o into @l (whose raw_tp says whether only
 * raw_tp may be tried). Returns 0, or -errno with @msg saying why; prints
 * only -v's information and libbpf's log at -v.
 */
int loader__load(struct loaded *l, const struct collector_opts *o, char *msg, size_t len);

#endif
