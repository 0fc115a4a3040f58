// SPDX-License-Identifier: GPL-2.0
/* A symbol file perf reads (elfsyms.h). */
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elfsyms.h"

static const char shstr[] = "\0.note.gnu.build-id\0.text\0.symtab\0.strtab\0.shstrtab";
enum { SH_NOTE = 1, SH_TEXT = 20, SH_SYMTAB = 26, SH_STRTAB = 34, SH_SHSTRTAB = 42 };

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int elfsyms__write(int fd, const uint8_t bid[ELFSYMS_BUILD_ID], const struct elfsym *syms,
		   size_t n, const char *str, size_t str_len, uint64_t text_size)
{
	struct {
		Elf64_Nhdr h;
		char name[4];
		uint8_t desc[ELFSYMS_BUILD_ID];
	} note = { { 4, ELFSYMS_BUILD_ID, NT_GNU_BUILD_ID }, "GNU", { 0 } };
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph[2] = { { 0 } };
	Elf64_Shdr sh[6] = { { 0 } };
	const uint64_t note_off = sizeof(eh) + sizeof(ph);
	const uint64_t sym_off = (note_off + sizeof(note) + 7) & ~7ULL;
	const uint64_t sym_size = (n + 1) * sizeof(Elf64_Sym);
	const uint64_t str_off = sym_off + sym_size;
	const uint64_t shstr_off = str_off + str_len;
	const uint64_t sh_off = (shstr_off + sizeof(shstr) + 7) & ~7ULL;
	static const char zeros[8];
	Elf64_Sym *st;
	size_t i;
	int err;

	if (!str_len || str[0])
		return -EINVAL;
	memcpy(note.desc, bid, ELFSYMS_BUILD_ID);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_shoff = sh_off;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 2;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 6;
	eh.e_shstrndx = 5;
	/* one mapping: the text is where its file offset says (no bytes behind it) */
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0,
			      .p_vaddr = 0, .p_paddr = 0, .p_filesz = note_off + sizeof(note),
			      .p_memsz = ELFSYMS_TEXT + text_size, .p_align = 0x1000 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_NOTE, .p_flags = PF_R, .p_offset = note_off,
			      .p_vaddr = note_off, .p_paddr = note_off, .p_filesz = sizeof(note),
			      .p_memsz = sizeof(note), .p_align = 4 };
	sh[1] = (Elf64_Shdr){ .sh_name = SH_NOTE, .sh_type = SHT_NOTE, .sh_flags = SHF_ALLOC,
			      .sh_addr = note_off, .sh_offset = note_off, .sh_size = sizeof(note),
			      .sh_addralign = 4 };
	sh[2] = (Elf64_Shdr){ .sh_name = SH_TEXT, .sh_type = SHT_NOBITS,
			      .sh_flags = SHF_ALLOC | SHF_EXECINSTR, .sh_addr = ELFSYMS_TEXT,
			      .sh_offset = ELFSYMS_TEXT, .sh_size = text_size, .sh_addralign = 16 };
	sh[3] = (Elf64_Shdr){ .sh_name = SH_SYMTAB, .sh_type = SHT_SYMTAB, .sh_offset = sym_off,
			      .sh_size = sym_size, .sh_link = 4, .sh_info = 1, .sh_addralign = 8,
			      .sh_entsize = sizeof(Elf64_Sym) };
	sh[4] = (Elf64_Shdr){ .sh_name = SH_STRTAB, .sh_type = SHT_STRTAB, .sh_offset = str_off,
			      .sh_size = str_len, .sh_addralign = 1 };
	sh[5] = (Elf64_Shdr){ .sh_name = SH_SHSTRTAB, .sh_type = SHT_STRTAB,
			      .sh_offset = shstr_off, .sh_size = sizeof(shstr), .sh_addralign = 1 };
	st = calloc(n + 1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		st[i + 1].st_name = syms[i].name;
		st[i + 1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		st[i + 1].st_shndx = 2;
		st[i + 1].st_value = syms[i].addr;
		st[i + 1].st_size = syms[i].size;
	}
	err = write_all(fd, &eh, sizeof(eh));
	err = err ?: write_all(fd, ph, sizeof(ph));
	err = err ?: write_all(fd, &note, sizeof(note));
	err = err ?: write_all(fd, zeros, sym_off - (note_off + sizeof(note)));
	err = err ?: write_all(fd, st, sym_size);
	err = err ?: write_all(fd, str, str_len);
	err = err ?: write_all(fd, shstr, sizeof(shstr));
	err = err ?: write_all(fd, zeros, sh_off - (shstr_off + sizeof(shstr)));
	err = err ?: write_all(fd, sh, sizeof(sh));
	free(st);
	return err;
}
