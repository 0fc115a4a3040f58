// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <gelf.h>
#include "elf.h"
#include "objread.h"

size_t elf_build_id(Elf *elf, uint8_t *out, size_t cap)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t off = 0, next, name_off, desc_off;
		GElf_Nhdr nh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)data->d_buf + name_off, "GNU", 4) && nh.n_descsz) {
				size_t n = nh.n_descsz > cap ? cap : nh.n_descsz;

				memcpy(out, (char *)data->d_buf + desc_off, n);
				return n;
			}
			off = next;
		}
	}
	return 0;
}

int elf_build_id_path(const char *path, uint8_t *out, size_t cap)
{
	struct elfobj o;
	int e;

	/* another user's file: a regular file only, read without mapping it */
	e = elfobj__open(&o, path, NULL, 0);
	if (e)
		return e;
	e = (int)elfobj__build_id(&o, out, cap);
	elfobj__close(&o);
	return e;
}

Elf *elf_open_read(const char *path, int *fd)
{
	Elf *elf;

	*fd = objread_open(path, NULL);
	if (*fd < 0) {
		*fd = -1;
		return NULL;
	}
	elf = elf_begin(*fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(*fd);
		*fd = -1;
		return NULL;
	}
	return elf;
}

Elf_Scn *elf_find_section(Elf *elf, const char *name, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, out))
			continue;
		n = elf_strptr(elf, shstrndx, out->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

void elf_hex(const uint8_t *id, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * n] = 0;
}
