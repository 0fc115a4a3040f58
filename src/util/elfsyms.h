/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A symbol file: an ELF64 x86-64 shared object with no code, only function
 * symbols over a .text that holds no bytes (SHT_NOBITS), and a build id.
 * perf reads its symbols as it reads any object's, for the mappings whose
 * file it is (offcpu's named frames: record/named.c). Its .text starts at
 * ELFSYMS_TEXT, where its address and its file offset are the same, so a
 * symbol's address is what a mapping's offset says.
 */
#ifndef OFFCPU_UTIL_ELFSYMS_H
#define OFFCPU_UTIL_ELFSYMS_H

#include <stddef.h>
#include <stdint.h>

#define ELFSYMS_TEXT 0x1000ULL
#define ELFSYMS_BUILD_ID 20

struct elfsym {
	uint64_t addr, size; /* within [ELFSYMS_TEXT, ELFSYMS_TEXT + the text's size) */
	uint32_t name; /* offset of its NUL-ended name in the string table */
	uint32_t pad;
};

/*
 * Write the symbol file of @n symbols @syms (names in @str, @str_len bytes,
 * whose first byte is NUL) over a text of @text_size bytes, with build id
 * @bid, to @fd. Returns 0 or -errno.
 */
int elfsyms__write(int fd, const uint8_t bid[ELFSYMS_BUILD_ID], const struct elfsym *syms,
		   size_t n, const char *str, size_t str_len, uint64_t text_size);

#endif
