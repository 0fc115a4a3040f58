/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KORC_H
#define KORC_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "korc_abi.h"

/*
 * Fill *out from /proc/kallsyms; @max_depth is kernel.perf_event_max_stack
 * (the helper stores at most that many frames, and never more than 127).
 * Returns 0 and out->enabled = 1 when everything korc needs was found;
 * otherwise returns -1 with out->enabled = 0 (korc_task_stack() will then
 * always ask for the bpf_get_task_stack() fallback) and, if errbuf is not
 * NULL, a human-readable reason in errbuf.
 */
int korc_read_syms_err(struct korc_syms *out, uint64_t max_depth, char *errbuf, size_t errlen);

/*
 * Check that the kernel's struct orc_entry (in the BTF at @btf_path, or the
 * running kernel's) has one of the two layouts korc.bpf.h decodes: with a
 * "signal" bit (6.4 and later) or an "end" bit (before). Returns 0, or -1
 * with the reason in errbuf: then the walker must stay off.
 */
int korc_check_btf(const char *btf_path, char *errbuf, size_t errlen);

#endif /* KORC_H */
