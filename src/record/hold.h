/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Holding a starting command with ptrace until its unwind tables are loaded
 * (x86-64): at its exec, then at its first system call from outside the
 * dynamic loader. See hold.c for why offcpu dying undoes it.
 */
#ifndef OFFCPU_HOLD_H
#define OFFCPU_HOLD_H

#include <signal.h>
#include <stddef.h>
#include "workload.h"

#if defined(__x86_64__)
/*
 * Seize the command (waiting for its go, not yet exec'd). Returns 0, or
 * -EPERM with why it cannot be held in @why.
 */
int hold__seize(struct workload *w, char *why, size_t len);
/*
 * Once seized and released: hold it, calling @load at each point where its
 * tables are to be loaded, and let it go. Returns 0 once let go, -ECHILD
 * when it ended, -EAGAIN when let go before its exec, or -errno.
 */
int hold__until_loaded(struct workload *w, void (*load)(void *arg, int pid), void *arg,
		       volatile sig_atomic_t *stop);
#endif

#endif
