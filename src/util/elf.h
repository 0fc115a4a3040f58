/* SPDX-License-Identifier: GPL-2.0 */
/* ELF facts both the recorder and the symbolizer need. */
#ifndef OFFCPU_UTIL_ELF_H
#define OFFCPU_UTIL_ELF_H

#include <stddef.h>
#include <stdint.h>
#include <libelf.h>

/* The GNU build id note of @elf into @out (at most @cap bytes); its length, 0 if none. */
size_t elf_build_id(Elf *elf, uint8_t *out, size_t cap);
/*
 * The same for the file at @path, opened only if it is a regular file and
 * read without mapping it (objread.h): its length, 0 if none, or -errno.
 */
int elf_build_id_path(const char *path, uint8_t *out, size_t cap);

#endif
