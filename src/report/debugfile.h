/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A binary's separate debug file, for the symbolizer: by build id under a
 * debug directory (--debug-dir's, then /usr/lib/debug), by its
 * .gnu_debuglink next to the binary, in its .debug/ and under a debug
 * directory, and last from debuginfod (debuginfo.h). A file is used only
 * when it has the binary's build id (when the binary has one) and, found by
 * the debug link, only when its CRC is the one the link gives: a stale or
 * foreign file is never trusted (said on stderr), and a binary without a
 * build id is matched to nothing else.
 */
#ifndef OFFCPU_REPORT_DEBUGFILE_H
#define OFFCPU_REPORT_DEBUGFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <libelf.h>

struct debuginfo;

/*
 * The debug file of the binary at @path (@elf: the binary itself, NULL when
 * it could not be read or is not the recorded one), of build id @id
 * (@id_len 0: none known); under @debug_dir first (NULL: none), from @di's
 * servers only with @remote. Returns it open, its descriptor in *@fd, or
 * NULL (*@fd -1).
 */
Elf *debugfile__open(const char *path, Elf *elf, const uint8_t *id, size_t id_len,
		     const char *debug_dir, struct debuginfo *di, bool remote, int *fd);

#endif
