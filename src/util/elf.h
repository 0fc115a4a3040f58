/* SPDX-License-Identifier: GPL-2.0 */
/* ELF facts both the recorder and the symbolizer need. */
#ifndef OFFCPU_UTIL_ELF_H
#define OFFCPU_UTIL_ELF_H

#include <stddef.h>
#include <stdint.h>
#include <gelf.h>
#include <libelf.h>

/* The GNU build id note of @elf into @out (at most @cap bytes); its length, 0 if none. */
size_t elf_build_id(Elf *elf, uint8_t *out, size_t cap);
/*
 * The same for the file at @path, opened only if it is a regular file and
 * read without mapping it (objread.h): its length, 0 if none, or -errno.
 */
int elf_build_id_path(const char *path, uint8_t *out, size_t cap);

/*
 * The ELF file at @path, read rather than mapped (a truncation under a
 * mapping is a SIGBUS) and opened as objread.h opens another user's file
 * (never a fifo or a device); *@fd its descriptor, -1 and NULL when it is
 * none.
 */
Elf *elf_open_read(const char *path, int *fd);
/* The section of @elf named @name, its header in @out; NULL when none. */
Elf_Scn *elf_find_section(Elf *elf, const char *name, GElf_Shdr *out);
/* @id's @n bytes as hex into @out (2 * @n + 1 bytes). */
void elf_hex(const uint8_t *id, size_t n, char *out);

#endif
