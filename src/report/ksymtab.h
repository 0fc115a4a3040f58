/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel symbols for report (ksymtab.c): kallsyms, read on first use,
 * checked against the recording's kernel; a recording of another kernel
 * gets no names, one of the same kernel loaded elsewhere (KASLR) is
 * relocated.
 */
#ifndef OFFCPU_REPORT_KSYMTAB_H
#define OFFCPU_REPORT_KSYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ksym;

struct ksymtab {
	const char *kallsyms; /* --kallsyms FILE; NULL: /proc/kallsyms */
	struct ksym *ksyms;
	size_t nr;
	bool loaded;
	/* the recording's kernel, and what the check of kallsyms against it found */
	char ref_sym[64];
	uint64_t ref_addr;
	uint8_t build_id[20];
	size_t build_id_len;
	bool other; /* another kernel: no names */
	int64_t shift; /* add to a recorded address to look it up (KASLR) */
	char **modules;
	size_t nr_modules;
};

void ksymtab__init(struct ksymtab *k, const char *kallsyms);
void ksymtab__free(struct ksymtab *k);
/* The recording's kernel MMAP: its reference symbol and where it was. */
void ksymtab__ref(struct ksymtab *k, const char *ref_sym, uint64_t ref_addr);
/* The recording's kernel build id. */
void ksymtab__build_id(struct ksymtab *k, const uint8_t *id, size_t len);
/* The name of kernel address @addr (NULL: none) and its module ("[kernel.kallsyms]" or "[MOD]"). */
const char *ksymtab__find(struct ksymtab *k, uint64_t addr, const char **module);

#endif
