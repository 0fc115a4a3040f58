// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include "tables.h"
#include "../util/util.h"

#define X86_RBP 6
#define X86_RSP 7
#define X86_RA 16

int unwind_rules__init(struct unwind_rules *rs)
{
	struct unwind_rule none = { .cfa = OFFCPU_UNW_CFA_NONE, .rbp = OFFCPU_UNW_RBP_UNDEF };
	int created;
	uint64_t *v;

	memset(rs, 0, sizeof(*rs));
	if (grow_array((void **)&rs->v, &rs->cap, 1, sizeof(*rs->v)))
		return -ENOMEM;
	v = hashmap__upsert(&rs->index, &none, sizeof(none), &created);
	if (!v)
		return -ENOMEM;
	rs->v[0] = none;
	rs->nr = 1;
	*v = UNWIND_RULE_NONE;
	return 0;
}

void unwind_rules__free(struct unwind_rules *rs)
{
	free(rs->v);
	hashmap__free(&rs->index);
	memset(rs, 0, sizeof(*rs));
}

static long rule_index(struct unwind_rules *rs, const struct unwind_rule *r)
{
	int created;
	uint64_t *v = hashmap__upsert(&rs->index, r, sizeof(*r), &created);

	if (!v)
		return -ENOMEM;
	if (created) {
		if (grow_array((void **)&rs->v, &rs->cap, rs->nr + 1, sizeof(*rs->v)))
			return -ENOMEM;
		rs->v[rs->nr] = *r;
		*v = rs->nr++;
	}
	return (long)*v;
}

/* cfa = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0): what binutils writes for .plt */
static bool plt_cfa(const Dwarf_Op *ops, size_t n)
{
	size_t i;
	bool rip = false;

	if (n != 9 || ops[0].atom != DW_OP_breg7 || (int64_t)ops[0].number != 8 ||
	    ops[n - 1].atom != DW_OP_plus)
		return false;
	for (i = 1; i < n; i++)
		rip |= ops[i].atom == DW_OP_breg16;
	return rip;
}

/* The rule of one CFI row; CFA_NONE for what the walk cannot follow. */
static struct unwind_rule frame_rule(Dwarf_Frame *f, bool signal)
{
	struct unwind_rule r = { .cfa = OFFCPU_UNW_CFA_NONE, .rbp = OFFCPU_UNW_RBP_UNDEF };
	Dwarf_Op mem[3], *ops;
	size_t n;

	/* rt_sigreturn (glibc's __restore_rt): the registers the signal
	 * interrupted are in the ucontext at rsp, as the kernel saved them */
	if (signal) {
		r.cfa = OFFCPU_UNW_CFA_SIGNAL;
		r.rbp = OFFCPU_UNW_RBP_AT;
		return r;
	}

	if (dwarf_frame_cfa(f, &ops, &n) || !n)
		return r;
	if (n == 1 && ops[0].atom == DW_OP_bregx &&
	    (ops[0].number == X86_RSP || ops[0].number == X86_RBP)) {
		int64_t off = (int64_t)ops[0].number2;

		if (off < INT32_MIN || off > INT32_MAX)
			return r;
		r.cfa = ops[0].number == X86_RSP ? OFFCPU_UNW_CFA_RSP : OFFCPU_UNW_CFA_RBP;
		r.cfa_off = (int32_t)off;
	} else if (plt_cfa(ops, n)) {
		r.cfa = OFFCPU_UNW_CFA_PLT;
	} else {
		return r;
	}
	/* the return address: at CFA - 8, or undefined in the outermost frame */
	if (dwarf_frame_register(f, X86_RA, mem, &ops, &n))
		goto unsupported;
	if (n == 0 && ops == mem) {
		r.outermost = 1;
	} else if (!(n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		     ops[1].atom == DW_OP_plus_uconst && (int64_t)ops[1].number == -8)) {
		goto unsupported;
	}
	/* the caller's rbp, needed where a caller's CFA is rbp-based */
	if (dwarf_frame_register(f, X86_RBP, mem, &ops, &n))
		goto unsupported;
	if (n == 0) {
		r.rbp = ops == NULL ? OFFCPU_UNW_RBP_SAME : OFFCPU_UNW_RBP_UNDEF;
	} else if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		   ops[1].atom == DW_OP_plus_uconst) {
		int64_t off = (int64_t)ops[1].number;

		if (off < INT32_MIN || off > INT32_MAX)
			goto unsupported;
		r.rbp = OFFCPU_UNW_RBP_AT;
		r.rbp_off = (int32_t)off;
	}
	return r;
unsupported:
	r = (struct unwind_rule){ .cfa = OFFCPU_UNW_CFA_NONE, .rbp = OFFCPU_UNW_RBP_UNDEF };
	return r;
}

static int add_row(struct unwind_table *t, uint64_t start, uint32_t rule)
{
	if (t->nr && t->rows[t->nr - 1].rule == rule)
		return 0; /* the same rule goes on */
	if (t->nr && t->rows[t->nr - 1].start == start) {
		t->rows[t->nr - 1].rule = rule;
		return 0;
	}
	if (grow_array((void **)&t->rows, &t->cap, t->nr + 1, sizeof(*t->rows)))
		return -ENOMEM;
	t->rows[t->nr++] = (struct unwind_row){ .start = start, .rule = rule };
	return 0;
}

static int32_t rd32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

/*
 * The initial locations of every FDE, from .eh_frame_hdr's sorted search
 * table (libdw lists no FDEs): version 1, datarel|sdata4 entries, as in every
 * Debian object tried.
 */
static int fde_starts(Elf *elf, uint64_t **out, size_t *nr, char *err, size_t errlen)
{
	size_t shstrndx, i, count;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	const uint8_t *p;
	uint64_t *v;

	if (elf_getshdrstrndx(elf, &shstrndx))
		goto bad;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame_hdr"))
			break;
	}
	if (!scn || !(d = elf_getdata(scn, NULL)) || d->d_size < 12)
		goto bad;
	p = d->d_buf;
	/* version, eh_frame_ptr encoding, fde_count encoding (udata4), table encoding */
	if (p[0] != 1 || p[2] != (DW_EH_PE_udata4) ||
	    p[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || (p[1] & 0x0f) != DW_EH_PE_sdata4) {
		snprintf(err, errlen, ".eh_frame_hdr has encodings offcpu does not read (%#x %#x %#x)",
			 p[1], p[2], p[3]);
		return -ENOTSUP;
	}
	count = (uint32_t)rd32(p + 8);
	if (12 + count * 8 > d->d_size) {
		snprintf(err, errlen, ".eh_frame_hdr is shorter than its %zu entries", count);
		return -EINVAL;
	}
	v = malloc((count ? count : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < count; i++)
		v[i] = sh.sh_addr + (int64_t)rd32(p + 12 + i * 8);
	*out = v;
	*nr = count;
	return 0;
bad:
	snprintf(err, errlen, "no .eh_frame_hdr");
	return -ENOENT;
}

/* Record the PT_LOAD segments: where each file offset is in ELF addresses. */
static int read_loads(struct unwind_table *t, Elf *elf, const char *name, char *err, size_t errlen)
{
	size_t n, i;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &n)) {
		snprintf(err, errlen, "%s: no program headers", name);
		return -EINVAL;
	}
	for (i = 0; i < n && t->nr_loads < UNWIND_MAX_LOADS; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		t->loads[t->nr_loads++] = (struct unwind_load){ .offset = ph.p_offset,
								.vaddr = ph.p_vaddr,
								.filesz = ph.p_filesz };
	}
	if (!t->nr_loads) {
		snprintf(err, errlen, "%s: no loadable segment", name);
		return -EINVAL;
	}
	return 0;
}

static int build_elf(struct unwind_table *t, struct unwind_rules *rs, Elf *elf, const char *name,
		     char *err, size_t errlen)
{
	uint64_t *starts = NULL;
	size_t nr = 0, i;
	Dwarf_CFI *cfi = NULL;
	GElf_Ehdr eh;
	int e = 0;

	if (!elf || !gelf_getehdr(elf, &eh)) {
		snprintf(err, errlen, "%s is not an ELF file", name);
		return -EINVAL;
	}
	if (eh.e_machine != EM_X86_64) {
		snprintf(err, errlen, "%s is not x86-64", name);
		return -ENOTSUP;
	}
	e = read_loads(t, elf, name, err, errlen);
	if (e)
		return e;
	e = fde_starts(elf, &starts, &nr, err, errlen);
	if (e)
		return e;
	cfi = dwarf_getcfi_elf(elf);
	if (!cfi) {
		snprintf(err, errlen, "%s: no usable .eh_frame: %s", name, dwarf_errmsg(-1));
		free(starts);
		return -EINVAL;
	}
	for (i = 0; i < nr && !e; i++) {
		uint64_t addr = starts[i], bound = i + 1 < nr ? starts[i + 1] : UINT64_MAX;

		if (i && starts[i] <= starts[i - 1])
			continue; /* the table is sorted: a repeat adds nothing */
		t->fdes++;
		while (addr < bound && !e) {
			Dwarf_Frame *f = NULL;
			Dwarf_Addr s, end;
			struct unwind_rule r;
			bool signal;
			long k;

			if (dwarf_cfi_addrframe(cfi, addr, &f) || !f)
				break; /* past the end of this FDE */
			if (dwarf_frame_info(f, &s, &end, &signal) < 0 || end <= addr) {
				free(f);
				break;
			}
			r = frame_rule(f, signal);
			free(f);
			t->unsupported += r.cfa == OFFCPU_UNW_CFA_NONE;
			k = rule_index(rs, &r);
			e = k < 0 ? (int)k : add_row(t, addr, (uint32_t)k);
			addr = end;
		}
		/* a gap between FDEs (alignment padding): no rule */
		if (!e && addr < bound)
			e = add_row(t, addr, UNWIND_RULE_NONE);
	}
	if (e == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	free(starts);
	dwarf_cfi_end(cfi);
	return e;
}

int unwind_table__build(struct unwind_table *t, struct unwind_rules *rs, const char *path,
			char *err, size_t errlen)
{
	Elf *elf;
	int fd, e;

	memset(t, 0, sizeof(*t));
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(-e));
		return e;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	e = build_elf(t, rs, elf, path, err, errlen);
	if (elf)
		elf_end(elf);
	close(fd);
	if (e)
		unwind_table__free(t);
	return e;
}

int unwind_table__build_mem(struct unwind_table *t, struct unwind_rules *rs, const void *image,
			    size_t size, const char *name, char *err, size_t errlen)
{
	Elf *elf;
	int e;

	memset(t, 0, sizeof(*t));
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, size);
	e = build_elf(t, rs, elf, name, err, errlen);
	if (elf)
		elf_end(elf);
	if (e)
		unwind_table__free(t);
	return e;
}

int unwind_table__bias(const struct unwind_table *t, uint64_t start, uint64_t pgoff,
		       uint64_t *bias)
{
	const struct unwind_load *l = NULL;
	size_t i;

	/* the segment mapped from this offset (the loader maps a segment from
	 * its offset rounded down to a page), else the one holding it */
	for (i = 0; i < t->nr_loads && !l; i++)
		if ((t->loads[i].offset & ~4095ULL) == pgoff)
			l = &t->loads[i];
	for (i = 0; i < t->nr_loads && !l; i++)
		if (pgoff >= t->loads[i].offset && pgoff < t->loads[i].offset + t->loads[i].filesz)
			l = &t->loads[i];
	if (!l)
		return -ENOENT;
	/* file offset x is at start + x - pgoff, and at ELF address x - offset + vaddr */
	*bias = start - pgoff + l->offset - l->vaddr;
	return 0;
}

const struct unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t addr)
{
	size_t i = last_at_or_below(t->rows, t->nr, start, addr);

	return i == SIZE_MAX ? NULL : &t->rows[i];
}

void unwind_table__free(struct unwind_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
