/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one reader of /proc/kallsyms ("addr type name[\t[module]]"), for the
 * recorder (the kernel's _text, ORC tables) and the report (kernel symbols).
 * Parsed by hand: 200,000 lines, and sscanf took longer than the kernel
 * took to print them.
 */
#ifndef OFFCPU_UTIL_KALLSYMS_H
#define OFFCPU_UTIL_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksym_line {
	uint64_t addr; /* 0 for everyone when kptr_restrict hides addresses */
	char type; /* t, T, d, D, ... */
	const char *name;
	const char *module; /* NULL for the kernel itself */
};

/*
 * Call @fn for every line of @path (NULL: /proc/kallsyms). Stops early when
 * @fn returns non-zero and returns that; 0 at the end; -errno when @path
 * cannot be read.
 */
int kallsyms__foreach(const char *path, int (*fn)(const struct ksym_line *l, void *arg), void *arg);

/*
 * The running kernel's build id from /sys/kernel/notes (the recorder writes it
 * for [kernel.kallsyms]; the report checks a recording against it). Returns
 * its length or -errno.
 */
int kernel_build_id(uint8_t *id, size_t cap);

#endif
