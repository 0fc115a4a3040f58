// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <elfutils/libdw.h>
#include <dwarf.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include "symbolizer.h"
#undef ARRAY_SIZE
#include "../util/kallsyms.h"
#include "../util/util.h"
#include "../util/elf.h"
#include "debugfile.h"
#include "ksymtab.h"

struct sym {
	uint64_t addr, size;
	const char *name; /* in the ELF's string data, or owned when demangled */
	bool global, owned;
};

struct load {
	uint64_t off, vaddr, filesz, memsz;
};

struct sym_dso {
	char *path;
	uint8_t build_id[20];
	size_t build_id_len;
	bool loaded, mismatch;
	bool go; /* a Go object (.gopclntab or .note.go.buildid) */
	int fd, dbg_fd;
	void *image; /* [vdso] copy */
	Elf *elf, *dbg;
	Dwarf *dw;
	struct sym *syms;
	size_t nr_syms;
	struct load *loads;
	size_t nr_loads;
	struct sym *dsyms; /* data objects (sym_dso__data()), read on first use */
	size_t nr_dsyms;
	bool dsyms_loaded;
	struct sym_dso *next;
};

struct symbolizer {
	struct symbolizer_opts o;
	struct sym_dso *dsos;
	struct ksymtab k; /* kernel frames */
	char **strs; /* owned strings handed out (source file names) */
	size_t nr_strs;
	struct debuginfo *di; /* debuginfod, when DEBUGINFOD_URLS names a server */
};

struct symbolizer *symbolizer__new(const struct symbolizer_opts *o)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->o = *o;
	ksymtab__init(&s->k, o->kallsyms);
	s->di = debuginfo__new();
	if (!s->di) {
		free(s);
		return NULL;
	}
	elf_version(EV_CURRENT);
	return s;
}

static void dso__free(struct sym_dso *d)
{
	size_t i;

	for (i = 0; i < d->nr_syms; i++)
		if (d->syms[i].owned)
			free((char *)d->syms[i].name);
	free(d->syms);
	free(d->dsyms);
	free(d->loads);
	if (d->dw)
		dwarf_end(d->dw);
	if (d->dbg)
		elf_end(d->dbg);
	if (d->elf)
		elf_end(d->elf);
	if (d->fd >= 0)
		close(d->fd);
	if (d->dbg_fd >= 0)
		close(d->dbg_fd);
	free(d->image);
	free(d->path);
	free(d);
}

void symbolizer__free(struct symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	if (s->o.debuginfod)
		debuginfo__stats(s->di, s->o.debuginfod);
	debuginfo__free(s->di);
	while (s->dsos) {
		struct sym_dso *n = s->dsos->next;

		dso__free(s->dsos);
		s->dsos = n;
	}
	ksymtab__free(&s->k);
	for (i = 0; i < s->nr_strs; i++)
		free(s->strs[i]);
	free(s->strs);
	free(s);
}

char *symbolizer__demangle(const char *name)
{
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}

struct sym_dso *symbolizer__dso(struct symbolizer *s, const char *path, const uint8_t *build_id,
				size_t build_id_len)
{
	struct sym_dso *d;

	if (build_id_len > 20)
		build_id_len = 20;
	for (d = s->dsos; d; d = d->next)
		if (!strcmp(d->path, path) && d->build_id_len == build_id_len &&
		    (!build_id_len || !memcmp(d->build_id, build_id, build_id_len)))
			return d;
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->path = strdup(path);
	if (!d->path) {
		free(d);
		return NULL;
	}
	d->fd = d->dbg_fd = -1;
	if (build_id_len)
		memcpy(d->build_id, build_id, build_id_len);
	d->build_id_len = build_id_len;
	d->next = s->dsos;
	s->dsos = d;
	return d;
}

static bool has_section_type(Elf *elf, uint32_t type)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == type)
			return true;
	return false;
}

static bool has_section(Elf *elf, const char *name)
{
	GElf_Shdr sh;

	return elf_find_section(elf, name, &sh) && sh.sh_type != SHT_NOBITS;
}

/* The debug file of @d (debugfile.h), with @remote from debuginfod too. */
static void open_debug(struct symbolizer *s, struct sym_dso *d, const uint8_t *id, size_t id_len,
		       bool remote)
{
	d->dbg = debugfile__open(d->path, d->elf, id, id_len, s->o.debug_dir, s->di, remote,
				 &d->dbg_fd);
}

/* The functions of @elf's section of @type into @arr (or with @objects its data objects). */
static void add_syms_to(struct sym **arr, size_t *nr, Elf *elf, uint32_t type, size_t *cap,
			bool objects)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;
			int t;

			if (!gelf_getsym(data, (int)i, &sym))
				break;
			t = GELF_ST_TYPE(sym.st_info);
			if ((objects ? t != STT_OBJECT : (t != STT_FUNC && t != STT_GNU_IFUNC)) ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (grow_array((void **)arr, cap, *nr + 1, sizeof(**arr)))
				return;
			(*arr)[(*nr)++] = (struct sym){
				.addr = sym.st_value,
				.size = sym.st_size,
				.name = name,
				.global = GELF_ST_BIND(sym.st_info) != STB_LOCAL,
			};
		}
	}
}

static void add_syms(struct sym_dso *d, Elf *elf, uint32_t type, size_t *cap)
{
	add_syms_to(&d->syms, &d->nr_syms, elf, type, cap, false);
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* globals first, then longer sizes, so the dedup keeps the best name */
	if (x->global != y->global)
		return x->global ? -1 : 1;
	return (x->size < y->size) - (x->size > y->size);
}

static void load_phdrs(struct sym_dso *d)
{
	size_t n, i;

	if (elf_getphdrnum(d->elf, &n) || !n)
		return;
	d->loads = calloc(n, sizeof(*d->loads));
	if (!d->loads)
		return;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(d->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			d->loads[d->nr_loads++] =
				(struct load){ ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz };
	}
}

static Elf *open_vdso(struct sym_dso *d)
{
	const uint8_t *base = (const void *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const void *)base;
	size_t size;

	if (!base || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return NULL;
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (size > (1 << 24))
		return NULL;
	d->image = malloc(size);
	if (!d->image)
		return NULL;
	memcpy(d->image, base, size);
	return elf_memory(d->image, size);
}

/* A program, not a library: an executable, or a PIE (an interpreter, no soname). */
static bool is_program(Elf *elf)
{
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	bool interp = false;
	size_t n, i;

	if (!gelf_getehdr(elf, &eh))
		return false;
	if (eh.e_type == ET_EXEC)
		return true;
	if (eh.e_type != ET_DYN || elf_getphdrnum(elf, &n))
		return false;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP)
			interp = true;
	}
	while (interp && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Dyn dyn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		for (i = 0; i < sh.sh_size / sh.sh_entsize && gelf_getdyn(data, (int)i, &dyn); i++)
			if (dyn.d_tag == DT_SONAME)
				return false;
	}
	return interp;
}

/*
 * A stripped program's entry point is its _start: named so, over the first
 * range its unwind table (.eh_frame) describes from there (glibc's _start
 * is one row), when no symbol covers it. Stacks of stripped programs then
 * end in _start as those of others do.
 */
static void add_entry(struct sym_dso *d, size_t *cap)
{
	Dwarf_CFI *cfi;
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr start, end;
	GElf_Ehdr eh;
	size_t i;

	if (!d->elf || !gelf_getehdr(d->elf, &eh) || !eh.e_entry || !is_program(d->elf))
		return;
	i = last_at_or_below(d->syms, d->nr_syms, addr, eh.e_entry);
	if (i != SIZE_MAX && (d->syms[i].addr == eh.e_entry ||
			      eh.e_entry - d->syms[i].addr < d->syms[i].size))
		return;
	cfi = dwarf_getcfi_elf(d->elf);
	if (!cfi)
		return;
	if (!dwarf_cfi_addrframe(cfi, eh.e_entry, &frame) &&
	    dwarf_frame_info(frame, &start, &end, NULL) >= 0 && start == eh.e_entry &&
	    end > start && !grow_array((void **)&d->syms, cap, d->nr_syms + 1, sizeof(*d->syms))) {
		d->syms[d->nr_syms++] = (struct sym){ .addr = start, .size = end - start, .name = "_start" };
		qsort(d->syms, d->nr_syms, sizeof(*d->syms), cmp_sym);
	}
	free(frame);
	dwarf_cfi_end(cfi);
}

static void dso__load(struct symbolizer *s, struct sym_dso *d)
{
	uint8_t id[20];
	size_t id_len = 0, cap = 0, i, k;
	char a[41], b[41];

	d->loaded = true;
	if (!strcmp(d->path, "[vdso]"))
		d->elf = open_vdso(d);
	else if (d->path[0] && d->path[0] != '[' && strncmp(d->path, "//", 2))
		d->elf = elf_open_read(d->path, &d->fd); /* not [heap], //anon, ... */
	if (d->elf)
		id_len = elf_build_id(d->elf, id, sizeof(id));
	if (d->elf && d->build_id_len && id_len &&
	    (id_len != d->build_id_len || memcmp(id, d->build_id, id_len))) {
		elf_hex(d->build_id, d->build_id_len, a);
		elf_hex(id, id_len, b);
		/* the binary changed since the recording: its debug file may still be there */
		elf_end(d->elf);
		d->elf = NULL;
		open_debug(s, d, d->build_id, d->build_id_len, true);
		if (!d->dbg) {
			pr_warn("build id mismatch for %s: recorded %s, the file on disk has %s; "
				"its frames are left unresolved", d->path, a, b);
			d->mismatch = true;
			return;
		}
		pr_info("%s changed since the recording; using its debug file", d->path);
	}
	if (d->elf)
		load_phdrs(d);
	if (d->elf)
		d->go = elf_find_section(d->elf, ".gopclntab", &(GElf_Shdr){ 0 }) ||
			elf_find_section(d->elf, ".note.go.buildid", &(GElf_Shdr){ 0 });
	/*
	 * A debug file on this machine is looked for whenever it may help; a
	 * fetch only when it names what the binary cannot: its local functions
	 * (no .symtab: stripped), or with --lines its source lines (no DWARF).
	 */
	if (!d->dbg && (!d->elf || !has_section_type(d->elf, SHT_SYMTAB) || s->o.lines))
		open_debug(s, d, id_len ? id : d->build_id, id_len ? id_len : d->build_id_len,
			   !d->elf || !has_section_type(d->elf, SHT_SYMTAB) ||
				   (s->o.lines && !has_section(d->elf, ".debug_info")));
	if (d->dbg) {
		add_syms(d, d->dbg, SHT_SYMTAB, &cap);
	}
	if (d->elf) {
		if (!d->nr_syms)
			add_syms(d, d->elf, SHT_SYMTAB, &cap);
		add_syms(d, d->elf, SHT_DYNSYM, &cap);
	}
	if (!d->elf && d->dbg) {
		/* mismatch rescued by the debug file: its program headers describe the layout */
		size_t n, j;

		if (!elf_getphdrnum(d->dbg, &n) && n && (d->loads = calloc(n, sizeof(*d->loads))))
			for (j = 0; j < n; j++) {
				GElf_Phdr ph;

				if (gelf_getphdr(d->dbg, (int)j, &ph) && ph.p_type == PT_LOAD)
					d->loads[d->nr_loads++] = (struct load){
						ph.p_offset, ph.p_vaddr, ph.p_filesz, ph.p_memsz
					};
			}
	}
	if (d->nr_syms)
		qsort(d->syms, d->nr_syms, sizeof(*d->syms), cmp_sym);
	for (i = 0, k = 0; i < d->nr_syms; i++)
		if (!k || d->syms[k - 1].addr != d->syms[i].addr)
			d->syms[k++] = d->syms[i];
	d->nr_syms = k;
	add_entry(d, &cap);
	if (s->o.lines)
		d->dw = dwarf_begin_elf(d->dbg ? d->dbg : d->elf, DWARF_C_READ, NULL);
}

static uint64_t to_vaddr(const struct sym_dso *d, uint64_t off)
{
	size_t i;

	for (i = 0; i < d->nr_loads; i++)
		if (off >= d->loads[i].off && off - d->loads[i].off < d->loads[i].filesz)
			return off - d->loads[i].off + d->loads[i].vaddr;
	if (d->nr_loads)
		return off - d->loads[0].off + d->loads[0].vaddr;
	return off;
}

static struct sym *find_sym(struct sym_dso *d, uint64_t a)
{
	size_t i = last_at_or_below(d->syms, d->nr_syms, addr, a);
	struct sym *sy;

	if (i == SIZE_MAX)
		return NULL;
	sy = &d->syms[i];
	if (sy->size && a - sy->addr >= sy->size)
		return NULL;
	return sy;
}

static const char *keep(struct symbolizer *s, const char *str)
{
	char **n;
	size_t i;

	if (!str)
		return NULL;
	for (i = s->nr_strs; i-- > 0 && i + 64 > s->nr_strs;)
		if (!strcmp(s->strs[i], str))
			return s->strs[i];
	n = realloc(s->strs, (s->nr_strs + 1) * sizeof(*n));
	if (!n)
		return NULL;
	s->strs = n;
	n[s->nr_strs] = strdup(str);
	return n[s->nr_strs] ? n[s->nr_strs++] : NULL;
}

/* Source paths relative to the compilation directory are made absolute. */
static const char *keep_path(struct symbolizer *s, const char *dir, const char *file)
{
	char buf[4096];

	if (!file || file[0] == '/' || !dir)
		return keep(s, file);
	snprintf(buf, sizeof(buf), "%s/%s", dir, file);
	return keep(s, buf);
}

static const char *sym_name(struct symbolizer *s, struct sym *sy)
{
	if (s->o.demangle && !sy->owned) {
		char *dm = symbolizer__demangle(sy->name);

		if (dm) {
			sy->name = dm;
			sy->owned = true;
		}
	}
	return sy->name;
}

/* Source lines and inlined frames at @a, innermost first; the last is the function. */
static int resolve_lines(struct symbolizer *s, struct sym_dso *d, uint64_t a,
			 const char *fn, struct sym_frame *out, int max)
{
	Dwarf_Die cu, *scopes = NULL;
	Dwarf_Line *line;
	Dwarf_Files *files = NULL;
	const char *file = NULL, *comp_dir;
	Dwarf_Attribute cat;
	int lineno = 0, n = 0, nscopes, i;

	if (!d->dw || !dwarf_addrdie(d->dw, a, &cu))
		return 0;
	line = dwarf_getsrc_die(&cu, a);
	if (line) {
		file = dwarf_linesrc(line, NULL, NULL);
		dwarf_lineno(line, &lineno);
	}
	dwarf_getsrcfiles(&cu, &files, NULL);
	comp_dir = dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &cat));
	nscopes = dwarf_getscopes(&cu, a, &scopes);
	for (i = 0; i < nscopes && n < max - 1; i++) {
		Dwarf_Attribute at;
		Dwarf_Word w;
		const char *name;

		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		name = dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_name, &at));
		out[n++] = (struct sym_frame){ .name = keep(s, name ? name : "[inlined]"),
					       .file = keep_path(s, comp_dir, file),
					       .line = (uint32_t)lineno, .inlined = true };
		file = NULL;
		lineno = 0;
		if (files && dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &at), &w) == 0)
			file = dwarf_filesrc(files, w, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &at), &w) == 0)
			lineno = (int)w;
	}
	free(scopes);
	out[n++] = (struct sym_frame){ .name = fn, .file = keep_path(s, comp_dir, file),
				       .line = (uint32_t)lineno };
	return n;
}

bool sym_dso__go(const struct sym_dso *d)
{
	return d->go;
}

int sym_dso__resolve(struct symbolizer *s, struct sym_dso *d, uint64_t file_off, bool ret,
		     struct sym_frame *out, int max)
{
	struct sym *sy;
	uint64_t a;
	int n;

	if (!d || max < 1)
		return 0;
	if (!d->loaded)
		dso__load(s, d);
	if (d->mismatch)
		return 0;
	a = to_vaddr(d, file_off);
	/* a return address: look up the call before it (a noreturn call may end its caller) */
	sy = find_sym(d, ret && a ? a - 1 : a);
	if (sy && ret && a)
		a--;
	else if (!sy && ret && (sy = find_sym(d, a)) && sy->addr != a)
		sy = NULL; /* but a "return" to a function's first byte is to a signal
			      trampoline (glibc's __restore_rt): named as perf names it */
	if (!sy)
		return 0;
	/* code without DWARF (crt1.o's _start) is named from its symbol */
	if (s->o.lines && d->dw && (n = resolve_lines(s, d, a, sym_name(s, sy), out, max)) > 0)
		return n;
	out[0] = (struct sym_frame){ .name = sym_name(s, sy) };
	return 1;
}

const char *sym_dso__data(struct symbolizer *s, struct sym_dso *d, uint64_t map_start,
			  uint64_t map_pgoff, uint64_t addr, uint64_t *vaddr, uint64_t *off)
{
	size_t cap = 0, i, k;
	struct sym *sy;
	uint64_t v;

	if (!d)
		return NULL;
	if (!d->loaded)
		dso__load(s, d);
	if (d->mismatch || !d->nr_loads)
		return NULL;
	/* the object's own address: its segments keep their distances when mapped */
	v = addr - map_start + to_vaddr(d, map_pgoff);
	for (i = 0; i < d->nr_loads && v - d->loads[i].vaddr >= d->loads[i].memsz; i++)
		;
	if (i == d->nr_loads)
		return NULL;
	*vaddr = v;
	if (!d->dsyms_loaded) {
		d->dsyms_loaded = true;
		if (d->dbg)
			add_syms_to(&d->dsyms, &d->nr_dsyms, d->dbg, SHT_SYMTAB, &cap, true);
		if (d->elf && !d->nr_dsyms)
			add_syms_to(&d->dsyms, &d->nr_dsyms, d->elf, SHT_SYMTAB, &cap, true);
		if (d->elf)
			add_syms_to(&d->dsyms, &d->nr_dsyms, d->elf, SHT_DYNSYM, &cap, true);
		if (d->nr_dsyms)
			qsort(d->dsyms, d->nr_dsyms, sizeof(*d->dsyms), cmp_sym);
		for (i = 0, k = 0; i < d->nr_dsyms; i++)
			if (!k || d->dsyms[k - 1].addr != d->dsyms[i].addr)
				d->dsyms[k++] = d->dsyms[i];
		d->nr_dsyms = k;
	}
	i = last_at_or_below(d->dsyms, d->nr_dsyms, addr, v);
	if (i == SIZE_MAX)
		return "";
	sy = &d->dsyms[i];
	if (v - sy->addr >= (sy->size ? sy->size : 1))
		return "";
	*off = v - sy->addr;
	return sym_name(s, sy);
}

void symbolizer__kernel_mmap(struct symbolizer *s, const char *ref_sym, uint64_t ref_addr)
{
	ksymtab__ref(&s->k, ref_sym, ref_addr);
}

void symbolizer__kernel_build_id(struct symbolizer *s, const uint8_t *id, size_t len)
{
	ksymtab__build_id(&s->k, id, len);
}

const char *symbolizer__kernel(struct symbolizer *s, uint64_t addr, const char **module)
{
	return ksymtab__find(&s->k, addr, module);
}
