// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gelf.h>
#include <zlib.h>
#include "debugfile.h"
#include "debuginfo.h"
#include "../util/elf.h"
#include "../util/util.h"

/* The GNU debuglink CRC (zlib's CRC-32) of the whole file at @fd; false when it cannot be read. */
static bool file_crc(int fd, uint32_t *crc)
{
	unsigned char *buf = malloc(1 << 20);
	uLong c = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	ssize_t n = -1;

	while (buf && (n = pread(fd, buf, 1 << 20, off)) > 0) {
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	free(buf);
	*crc = (uint32_t)c;
	return n == 0;
}

/*
 * A debug file at @path for a binary of build id @id: used only when it has
 * that build id (when the binary has one), and, found by the binary's
 * .gnu_debuglink (@crc not NULL), only when its CRC is the one the link
 * gives: a stale or foreign file is never trusted, and a binary without a
 * build id is matched to nothing else.
 */
static Elf *try_debug(const char *bin, const char *path, const uint8_t *id, size_t id_len,
		      const uint32_t *crc, int *fd)
{
	Elf *dbg;
	uint8_t got[20];
	uint32_t c = 0;
	size_t n;

	*fd = -1;
	if (!strcmp(path, bin) || (!id_len && !crc))
		return NULL;
	dbg = elf_open_read(path, fd);
	if (!dbg)
		return NULL;
	n = id_len ? elf_build_id(dbg, got, sizeof(got)) : 0;
	if (id_len && (n != id_len || memcmp(got, id, n))) {
		char a[41], b[41];

		elf_hex(id, id_len, a);
		elf_hex(got, n, b);
		pr_warn("%s is not the debug file of %s: its build id is %s, not %s; not used", path,
			bin, n ? b : "none", a);
		goto refuse;
	}
	if (crc && (!file_crc(*fd, &c) || c != *crc)) {
		pr_warn("%s is not the debug file of %s: its CRC is %08x, its .gnu_debuglink says "
			"%08x; not used", path, bin, c, *crc);
		goto refuse;
	}
	return dbg;
refuse:
	elf_end(dbg);
	close(*fd);
	*fd = -1;
	return NULL;
}

Elf *debugfile__open(const char *bin, Elf *elf, const uint8_t *id, size_t id_len,
		     const char *debug_dir, struct debuginfo *di, bool remote, int *fd)
{
	const char *roots[2] = { debug_dir, "/usr/lib/debug" };
	Elf *dbg;
	char path[4096], h[41];
	GElf_Shdr sh;
	Elf_Scn *scn;
	int r;

	for (r = 0; r < 2 && id_len >= 2; r++) {
		if (!roots[r] || !roots[r][0])
			continue;
		elf_hex(id, id_len, h);
		snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", roots[r], h, h + 2);
		if ((dbg = try_debug(bin, path, id, id_len, NULL, fd)))
			return dbg;
	}
	if (elf && (scn = elf_find_section(elf, ".gnu_debuglink", &sh))) {
		Elf_Data *data = elf_getdata(scn, NULL);
		char dir[4096], *slash;
		const char *name = data && data->d_size ? data->d_buf : NULL;
		size_t len = name ? strnlen(name, data->d_size) : 0, at = (len + 1 + 3) & ~(size_t)3;
		uint32_t crc;
		int i;

		/* a file name (never a path: "../" would lead anywhere) and its CRC */
		if (!name || !len || at + 4 > data->d_size || memchr(name, '/', len) ||
		    !strcmp(name, ".") || !strcmp(name, ".."))
			name = NULL;
		if (name) {
			memcpy(&crc, (const char *)data->d_buf + at, 4);
			snprintf(dir, sizeof(dir), "%s", bin);
			slash = strrchr(dir, '/');
			if (slash)
				*slash = 0;
			for (i = 0; i < 4; i++) {
				const char *root = roots[i - 2 < 0 ? 0 : i - 2];
				int n = i == 0 ? snprintf(path, sizeof(path), "%s/%s", dir, name) :
					i == 1 ? snprintf(path, sizeof(path), "%s/.debug/%s", dir, name) :
					root && root[0] ?
						 snprintf(path, sizeof(path), "%s%s/%s", root, dir, name) :
						 -1;

				if (n > 0 && (size_t)n < sizeof(path) &&
				    (dbg = try_debug(bin, path, id, id_len, &crc, fd)))
					return dbg;
			}
		}
	}
	if (remote && id_len && bin[0] == '/') {
		const char *fetched = debuginfo__fetch(di, id, id_len, bin);

		if (fetched)
			return try_debug(bin, fetched, id, id_len, NULL, fd);
	}
	*fd = -1;
	return NULL;
}

