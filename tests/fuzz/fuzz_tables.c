// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the unwind table builder (src/unwind/tables.c over
 * ehframe.c and objread.c): the objects it reads belong to other users. The
 * first byte chooses what the rest is:
 *   even: an .eh_frame section, put into a minimal ELF image (so that the
 *         fuzzer reaches the CFI reader without having to make an ELF file);
 *   odd:  a whole ELF image.
 * The table is built within a budget, merged into a rule set, and every row
 * and rule read back. Build: make fuzz; run: tests/integration/hostile.sh.
 */
#include <elf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "unwind/tables.h"

#define EH_AT 0x200

/* Ehdr, one PT_LOAD, the section at EH_AT, then .shstrtab and three section headers. */
static uint8_t *wrap(const uint8_t *eh, size_t n, size_t *len)
{
	static const char names[] = "\0.eh_frame\0.shstrtab";
	size_t names_at = EH_AT + n, sh_at = (names_at + sizeof(names) + 7) & ~(size_t)7;
	uint8_t *m = calloc(1, sh_at + 3 * sizeof(Elf64_Shdr));
	Elf64_Ehdr e = { .e_ident = { 0x7f, 'E', 'L', 'F', ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
			 .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			 .e_phoff = sizeof(Elf64_Ehdr), .e_shoff = sh_at,
			 .e_ehsize = sizeof(Elf64_Ehdr), .e_phentsize = sizeof(Elf64_Phdr),
			 .e_phnum = 1, .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 3,
			 .e_shstrndx = 2 };
	Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_align = 4096,
			  .p_filesz = sh_at, .p_memsz = sh_at };
	Elf64_Shdr sh[3] = {
		{ 0 },
		{ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC, .sh_addr = EH_AT,
		  .sh_offset = EH_AT, .sh_size = n, .sh_addralign = 8 },
		{ .sh_name = 11, .sh_type = SHT_STRTAB, .sh_offset = names_at,
		  .sh_size = sizeof(names), .sh_addralign = 1 },
	};

	if (!m)
		return NULL;
	memcpy(m, &e, sizeof(e));
	memcpy(m + sizeof(e), &ph, sizeof(ph));
	memcpy(m + EH_AT, eh, n);
	memcpy(m + names_at, names, sizeof(names));
	memcpy(m + sh_at, sh, sizeof(sh));
	*len = sh_at + sizeof(sh);
	return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_budget b = { .max_rows = 1 << 20, .max_rules = 4096, .max_bytes = 1 << 20 };
	struct unwind_rules rs;
	struct unwind_table t;
	uint8_t *img = NULL;
	const uint8_t *p;
	size_t len, i;
	uint64_t sum = 0, bias;
	char err[256];

	if (!size)
		return 0;
	if (data[0] & 1) {
		p = data + 1;
		len = size - 1;
	} else {
		img = wrap(data + 1, size - 1, &len);
		if (!img)
			return 0;
		p = img;
	}
	if (unwind_rules__init(&rs))
		abort();
	if (unwind_table__build_mem(&t, p, len, "fuzz", &b, err, sizeof(err)) == 0) {
		if (unwind_rules__merge(&rs, &t, 16384, 0, NULL) == 0) {
			for (i = 0; i < t.nr; i++) {
				const struct unwind_rule *r = unwind_table__rule(&t, &rs, &t.rows[i]);

				if (!r || (i && t.rows[i].start <= t.rows[i - 1].start))
					abort(); /* rows sorted, every rule there */
				sum += r->cfa + (uint64_t)r->cfa_off + t.rows[i].start;
			}
		}
		if (t.nr && unwind_table__find(&t, t.rows[t.nr - 1].start) != &t.rows[t.nr - 1])
			abort();
		if (!unwind_table__bias(&t, 0x400000, 0, &bias))
			sum += bias;
		unwind_table__free(&t);
	}
	(void)sum;
	unwind_rules__free(&rs);
	free(img);
	return 0;
}
