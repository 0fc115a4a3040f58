// SPDX-License-Identifier: GPL-2.0
/* Unwind tables from .eh_frame (issue 13, first piece). No root needed. */
#include <errno.h>
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <time.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include <sys/stat.h>
#include "unit.h"
#include "unwind/ehframe.h"
#include "unwind/tables.h"
#include "util/objread.h"
#include "util/util.h"

/*
 * The reference: offcpu's first table builder (issue 13), on libdw's CFI
 * API, one row at a time from each FDE's start (quadratic in an FDE's rows,
 * hence replaced). The linear reader must give the same table, row for row
 * and rule for rule, on real objects.
 */
#define X86_RBP 6
#define X86_RSP 7
#define X86_RA 16

struct ref_table {
	struct unwind_row *rows;
	size_t nr, cap;
	size_t fdes, unsupported;
	struct unwind_load loads[UNWIND_MAX_LOADS];
	size_t nr_loads;
};

static long ref_rule_index(struct unwind_rules *rs, const struct unwind_rule *r)
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
static bool ref_plt_cfa(const Dwarf_Op *ops, size_t n)
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
static struct unwind_rule ref_frame_rule(Dwarf_Frame *f, bool signal)
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
	} else if (ref_plt_cfa(ops, n)) {
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

static int ref_add_row(struct ref_table *t, uint64_t start, uint32_t rule)
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

static int32_t ref_rd32(const uint8_t *p)
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
static int ref_fde_starts(Elf *elf, uint64_t **out, size_t *nr, char *err, size_t errlen)
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
	count = (uint32_t)ref_rd32(p + 8);
	if (12 + count * 8 > d->d_size) {
		snprintf(err, errlen, ".eh_frame_hdr is shorter than its %zu entries", count);
		return -EINVAL;
	}
	v = malloc((count ? count : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < count; i++)
		v[i] = sh.sh_addr + (int64_t)ref_rd32(p + 12 + i * 8);
	*out = v;
	*nr = count;
	return 0;
bad:
	snprintf(err, errlen, "no .eh_frame_hdr");
	return -ENOENT;
}

/* Record the PT_LOAD segments: where each file offset is in ELF addresses. */
static int ref_read_loads(struct ref_table *t, Elf *elf, const char *name, char *err, size_t errlen)
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

static int ref_build_elf(struct ref_table *t, struct unwind_rules *rs, Elf *elf, const char *name,
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
	e = ref_read_loads(t, elf, name, err, errlen);
	if (e)
		return e;
	e = ref_fde_starts(elf, &starts, &nr, err, errlen);
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
			r = ref_frame_rule(f, signal);
			free(f);
			t->unsupported += r.cfa == OFFCPU_UNW_CFA_NONE;
			k = ref_rule_index(rs, &r);
			e = k < 0 ? (int)k : ref_add_row(t, addr, (uint32_t)k);
			addr = end;
		}
		/* a gap between FDEs (alignment padding): no rule */
		if (!e && addr < bound)
			e = ref_add_row(t, addr, UNWIND_RULE_NONE);
	}
	if (e == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	free(starts);
	dwarf_cfi_end(cfi);
	return e;
}


static int ref_build(struct ref_table *t, struct unwind_rules *rs, const char *path)
{
	char err[256];
	Elf *elf;
	int fd, e;

	memset(t, 0, sizeof(*t));
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	e = ref_build_elf(t, rs, elf, path, err, sizeof(err));
	if (elf)
		elf_end(elf);
	close(fd);
	return e;
}

__attribute__((noinline)) int unwind_test_leaf(int x)
{
	return x * 3 + 1;
}

static void test_own_binary(void)
{
	struct unwind_rules rs;
	struct unwind_table t;
	const struct unwind_row *row;
	const struct unwind_rule *r;
	char err[256];
	Dl_info info;
	uint64_t vaddr;

	CHECK(unwind_rules__init(&rs) == 0);
	CHECK(dladdr((void *)unwind_test_leaf, &info) && info.dli_fname);
	CHECK(unwind_table__build(&t, "/proc/self/exe", NULL, err, sizeof(err)) == 0);
	CHECK(unwind_rules__merge(&rs, &t, 0, 0, NULL) == 0);
	/* a PIE's ELF addresses start at 0: the load base is all there is to take away */
	vaddr = (uint64_t)(uintptr_t)unwind_test_leaf - (uint64_t)(uintptr_t)info.dli_fbase;
	row = unwind_table__find(&t, vaddr);
	CHECK(row != NULL);
	if (row) {
		r = &rs.v[row->rule];
		/* at a function's first instruction the CFA is rsp + 8, rbp untouched */
		CHECK(r->cfa == OFFCPU_UNW_CFA_RSP && r->cfa_off == 8 && r->rbp == OFFCPU_UNW_RBP_SAME &&
		      !r->outermost);
	}
	CHECK(t.fdes > 100 && t.nr >= t.fdes);
	for (size_t i = 1; i < t.nr; i++)
		CHECK(t.rows[i].start > t.rows[i - 1].start && t.rows[i].rule < rs.nr);
	unwind_table__free(&t);
	unwind_rules__free(&rs);
}

/* Debian's libc: every FDE read, the rules few and shared, entries rsp + 8 */
static void test_libc(void)
{
	static const char *const paths[] = { "/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6" };
	struct unwind_rules rs;
	struct unwind_table t;
	size_t i, outermost = 0, followable = 0;
	char err[256];
	int e = -1;

	CHECK(unwind_rules__init(&rs) == 0);
	for (i = 0; i < 2 && e; i++)
		e = unwind_table__build(&t, paths[i], NULL, err, sizeof(err));
	CHECK(e == 0);
	if (e) {
		fprintf(stderr, "  %s\n", err);
		unwind_rules__free(&rs);
		return;
	}
	CHECK(unwind_rules__merge(&rs, &t, 0, 0, NULL) == 0);
	CHECK(t.fdes > 1000);
	CHECK(rs.nr < 2000); /* a few hundred distinct rules (302 counted by hand) */
	for (i = 0; i < t.nr; i++) {
		const struct unwind_rule *r = &rs.v[t.rows[i].rule];

		outermost += r->outermost;
		followable += r->cfa != OFFCPU_UNW_CFA_NONE;
	}
	CHECK(outermost > 0); /* clone3, start_thread: the walk's natural end */
	CHECK(followable * 100 > t.nr * 85); /* the rest: gaps between functions */
	CHECK(t.unsupported * 1000 < t.nr); /* signal trampolines and the like */
	unwind_table__free(&t);
	CHECK(unwind_table__build(&t, "/nonexistent", NULL, err, sizeof(err)) == -ENOENT);
	/* not a regular file: refused before it is opened for reading */
	CHECK(unwind_table__build(&t, "/dev/null", NULL, err, sizeof(err)) == -EINVAL);
	unwind_rules__free(&rs);
}

static void on_signal(int sig)
{
	(void)sig;
}

/* libc's rt_sigreturn trampoline gets the signal-frame rule, found at pc - 1 too */
static void test_signal_frame(void)
{
	struct unwind_rules rs;
	struct unwind_table t;
	const struct unwind_row *row;
	struct sigaction sa = { .sa_handler = on_signal };
	/* the kernel's struct sigaction: handler, flags (SA_RESTORER 0x04000000), restorer, mask */
	struct { void *handler; unsigned long flags; void *restorer; uint64_t mask; } ks = { 0 };
	void *restore;
	Dl_info info;
	char err[256];
	uint64_t vaddr;

	/* libc does not export its rt_sigreturn trampoline (__restore_rt), but
	 * it gives it to the kernel with every handler: ask the kernel */
	CHECK(sigaction(SIGUSR2, &sa, NULL) == 0);
	CHECK(syscall(SYS_rt_sigaction, SIGUSR2, NULL, &ks, 8) == 0);
	signal(SIGUSR2, SIG_DFL);
	restore = ks.restorer;
	CHECK((ks.flags & 0x04000000) && restore && dladdr(restore, &info) && info.dli_fname);
	if (!restore || !dladdr(restore, &info) || !info.dli_fname)
		return;
	CHECK(unwind_rules__init(&rs) == 0);
	CHECK(unwind_table__build(&t, info.dli_fname, NULL, err, sizeof(err)) == 0);
	CHECK(unwind_rules__merge(&rs, &t, 0, 0, NULL) == 0);
	vaddr = (uint64_t)(uintptr_t)restore - (uint64_t)(uintptr_t)info.dli_fbase;
	row = unwind_table__find(&t, vaddr - 1); /* a return address's lookup */
	CHECK(row && rs.v[row->rule].cfa == OFFCPU_UNW_CFA_SIGNAL);
	row = unwind_table__find(&t, vaddr);
	CHECK(row && rs.v[row->rule].cfa == OFFCPU_UNW_CFA_SIGNAL);
	unwind_table__free(&t);
	unwind_rules__free(&rs);
}

struct bias_arg {
	const char *name;
	uint64_t start, end, pgoff;
	bool found;
};

/* the executable mapping of the object at @name, from this process's maps */
static void find_text(struct bias_arg *a)
{
	char line[512], perms[8], path[256];
	unsigned long long s, e, off;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		path[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &s, &e, perms, &off, path) >= 4 &&
		    perms[2] == 'x' && strstr(path, a->name)) {
			a->start = s;
			a->end = e;
			a->pgoff = off;
			a->found = true;
			break;
		}
	}
	if (f)
		fclose(f);
}

/* a mapping's bias takes an address to the object's ELF address: libc and the vDSO */
static void test_bias_and_vdso(void)
{
	struct unwind_rules rs;
	struct unwind_table t;
	struct bias_arg a = { .name = "libc.so.6" };
	uint64_t bias, vdso = getauxval(AT_SYSINFO_EHDR);
	void *fn = dlsym(RTLD_DEFAULT, "nanosleep");
	const struct unwind_row *row;
	Dl_info info;
	char err[256];

	CHECK(unwind_rules__init(&rs) == 0);
	find_text(&a);
	CHECK(a.found && fn && dladdr(fn, &info));
	if (a.found && fn && dladdr(fn, &info)) {
		CHECK(unwind_table__build(&t, info.dli_fname, NULL, err, sizeof(err)) == 0);
		CHECK(unwind_rules__merge(&rs, &t, 0, 0, NULL) == 0);
		CHECK(unwind_table__bias(&t, a.start, a.pgoff, &bias) == 0);
		/* a shared object's ELF addresses are offsets from its load base */
		CHECK(bias == (uint64_t)(uintptr_t)info.dli_fbase);
		row = unwind_table__find(&t, (uint64_t)(uintptr_t)fn - bias);
		CHECK(row && rs.v[row->rule].cfa == OFFCPU_UNW_CFA_RSP && rs.v[row->rule].cfa_off == 8);
		CHECK(unwind_table__bias(&t, a.start, 1ULL << 40, &bias) == -ENOENT);
		unwind_table__free(&t);
	}
	/* the vDSO, from memory: a table, the first row at or below its functions */
	if (vdso) {
		struct bias_arg v = { .name = "[vdso]" };

		find_text(&v);
		CHECK(v.found);
		CHECK(unwind_table__build_mem(&t, (const void *)vdso, v.end - v.start, "[vdso]", NULL,
					      err, sizeof(err)) == 0);
		CHECK(t.fdes > 0 && t.nr > 0);
		CHECK(unwind_table__bias(&t, v.start, 0, &bias) == 0 && bias == vdso);
		unwind_table__free(&t);
	}
	CHECK(unwind_table__build_mem(&t, "not an elf", 10, "junk", NULL, err, sizeof(err)) < 0);
	unwind_rules__free(&rs);
}


/* Every object of a list that exists here: the linear reader's table equals the reference's. */
static void test_same_as_libdw(void)
{
	static const char *const paths[] = {
		"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2",
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/bin/python3.11",
		"/usr/lib/x86_64-linux-gnu/libdw.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1",
		"/usr/bin/bash", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/proc/self/exe",
	};
	size_t i, compared = 0, rows = 0;

	for (i = 0; i < ARRAY_SIZE(paths); i++) {
		struct unwind_rules rs, rrs;
		struct unwind_table t;
		struct ref_table rt;
		char err[256];
		size_t k, differ = 0;

		if (access(paths[i], R_OK))
			continue;
		CHECK(unwind_rules__init(&rs) == 0 && unwind_rules__init(&rrs) == 0);
		CHECK(ref_build(&rt, &rrs, paths[i]) == 0);
		CHECK(unwind_table__build(&t, paths[i], NULL, err, sizeof(err)) == 0);
		CHECK(unwind_rules__merge(&rs, &t, 0, 0, NULL) == 0);
		CHECK(t.nr == rt.nr && t.fdes == rt.fdes && t.unsupported == rt.unsupported);
		for (k = 0; k < t.nr && k < rt.nr; k++)
			differ += t.rows[k].start != rt.rows[k].start ||
				  memcmp(&rs.v[t.rows[k].rule], &rrs.v[rt.rows[k].rule],
					 sizeof(struct unwind_rule));
		CHECK(differ == 0);
		if (differ || t.nr != rt.nr)
			fprintf(stderr, "  %s: %zu rows against libdw's %zu, %zu differ\n", paths[i],
				t.nr, rt.nr, differ);
		compared++;
		rows += t.nr;
		free(rt.rows);
		unwind_table__free(&t);
		unwind_rules__free(&rs);
		unwind_rules__free(&rrs);
	}
	CHECK(compared >= 3 && rows > 50000);
}

/*
 * A minimal ELF64 x86-64 image around an .eh_frame: one PT_LOAD, sections
 * .eh_frame (at ELF address 0x100, its file offset) and .shstrtab.
 */
struct img {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct img *m, const void *d, size_t n)
{
	if (m->len + n > m->cap) {
		m->cap = (m->len + n) * 2;
		m->p = realloc(m->p, m->cap);
	}
	memcpy(m->p + m->len, d, n);
	m->len += n;
}

static void put8(struct img *m, uint8_t v)
{
	put(m, &v, 1);
}

static void put32(struct img *m, uint32_t v)
{
	put(m, &v, 4);
}

static void putuleb(struct img *m, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;

		v >>= 7;
		put8(m, b | (v ? 0x80 : 0));
	} while (v);
}

#define EH_ADDR 0x100
#define CODE_ADDR 0x10000

/* A CIE (zR, pcrel sdata4; CFA rsp + 8, return address at CFA - 8) and one FDE holding @insn. */
static void eh_frame(struct img *eh, const struct img *insn, uint32_t range)
{
	size_t len_at, fde_at;
	uint32_t len;

	put32(eh, 0); /* length, patched */
	put32(eh, 0); /* a CIE */
	put8(eh, 1);
	put(eh, "zR", 3);
	putuleb(eh, 1); /* code alignment */
	put8(eh, 0x78); /* data alignment -8 */
	put8(eh, 16); /* return address register */
	putuleb(eh, 1);
	put8(eh, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
	put8(eh, DW_CFA_def_cfa);
	putuleb(eh, 7);
	putuleb(eh, 8);
	put8(eh, DW_CFA_offset | 16);
	putuleb(eh, 1);
	len = (uint32_t)eh->len - 4;
	memcpy(eh->p, &len, 4);
	fde_at = eh->len;
	put32(eh, 0);
	put32(eh, (uint32_t)(fde_at + 4)); /* back to the CIE at 0 */
	len_at = eh->len;
	put32(eh, (uint32_t)(CODE_ADDR - (EH_ADDR + len_at))); /* pc-relative start */
	put32(eh, range);
	putuleb(eh, 0); /* no augmentation data */
	put(eh, insn->p, insn->len);
	len = (uint32_t)(eh->len - fde_at - 4);
	memcpy(eh->p + fde_at, &len, 4);
	put32(eh, 0); /* the terminator */
}

static void elf_around(struct img *m, const struct img *eh)
{
	static const char names[] = "\0.eh_frame\0.shstrtab";
	Elf64_Ehdr e = { .e_ident = { 0x7f, 'E', 'L', 'F', ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
			 .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			 .e_phoff = sizeof(Elf64_Ehdr), .e_ehsize = sizeof(Elf64_Ehdr),
			 .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1,
			 .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 3, .e_shstrndx = 2 };
	Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_align = 4096 };
	Elf64_Shdr sh[3] = { { 0 } };
	size_t names_at;

	m->len = 0;
	put(m, &e, sizeof(e));
	put(m, &ph, sizeof(ph));
	while (m->len < EH_ADDR)
		put8(m, 0);
	put(m, eh->p, eh->len);
	names_at = m->len;
	put(m, names, sizeof(names));
	while (m->len % 8)
		put8(m, 0);
	sh[1] = (Elf64_Shdr){ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
			      .sh_addr = EH_ADDR, .sh_offset = EH_ADDR, .sh_size = eh->len,
			      .sh_addralign = 8 };
	sh[2] = (Elf64_Shdr){ .sh_name = 11, .sh_type = SHT_STRTAB, .sh_offset = names_at,
			      .sh_size = sizeof(names), .sh_addralign = 1 };
	e.e_shoff = m->len;
	put(m, sh, sizeof(sh));
	ph.p_filesz = ph.p_memsz = m->len;
	memcpy(m->p, &e, sizeof(e));
	memcpy(m->p + sizeof(e), &ph, sizeof(ph));
}

/* @n rows in one FDE, alternating two rules (or each its own, @distinct) */
static void many_rows(struct img *m, size_t n, bool distinct)
{
	struct img insn = { 0 }, eh = { 0 };
	size_t i;

	for (i = 0; i < n; i++) {
		put8(&insn, DW_CFA_advance_loc | 1);
		put8(&insn, DW_CFA_def_cfa_offset);
		putuleb(&insn, distinct ? 16 + 8 * i : (i & 1) ? 8 : 16);
	}
	eh_frame(&eh, &insn, (uint32_t)n + 1);
	elf_around(m, &eh);
	free(insn.p);
	free(eh.p);
}

static int on_any(void *arg, uint64_t start, const struct cfi_row *row)
{
	(void)start;
	(void)row;
	++*(size_t *)arg;
	return 0;
}

/* An FDE of 50,000 rows: each instruction runs once (libdw's way: 1.25e9 times) */
static void test_linear(void)
{
	struct img m = { 0 };
	struct unwind_table t;
	struct ehframe_stats st;
	struct elfobj o;
	char err[256];
	const Elf64_Shdr *sec;
	uint8_t *data;
	size_t calls = 0;

	many_rows(&m, 50000, false);
	CHECK(elfobj__open_mem(&o, m.p, m.len, err, sizeof(err)) == 0);
	sec = elfobj__section(&o, ".eh_frame");
	CHECK(sec != NULL);
	if (sec) {
		data = elfobj__read(&o, sec->sh_offset, sec->sh_size, 1 << 24);
		CHECK(data && ehframe__walk(data, sec->sh_size, sec->sh_addr, on_any, &calls, &st) == 0);
		/* the CIE's 2, the FDE's 2 per row: linear in the section */
		CHECK_EQ_U64(st.ops, 2 + 2 * 50000);
		CHECK(st.fdes == 1 && st.bad == 0);
		CHECK(calls >= 50000 && calls <= 50002);
		free(data);
	}
	elfobj__close(&o);
	CHECK(unwind_table__build_mem(&t, m.p, m.len, "quadratic", NULL, err, sizeof(err)) == 0);
	/* the first row, one a row, no rule past the FDE; rules NONE, rsp + 8, rsp + 16 */
	CHECK(t.nr == 50002 && t.nr_rules == 3);
	if (t.nr > 2)
		CHECK(t.rows[0].start == CODE_ADDR && t.rows[1].start == CODE_ADDR + 1);
	unwind_table__free(&t);
	free(m.p);
}

static bool cancel_now(void *arg)
{
	return ++*(int *)arg > 2;
}

/* 20,000 distinct rules in one object: over its budget, nothing taken from the shared set */
static void test_budgets(void)
{
	struct unwind_budget b = { .max_rules = 2048 };
	struct unwind_rules rs;
	struct unwind_table t;
	struct img m = { 0 };
	char err[256];
	int asked = 0;

	many_rows(&m, 20000, true);
	CHECK(unwind_rules__init(&rs) == 0);
	CHECK(unwind_table__build_mem(&t, m.p, m.len, "rules", &b, err, sizeof(err)) == -E2BIG);
	CHECK(strstr(err, "2048 distinct unwind rules") != NULL);
	CHECK(rs.nr == 1);
	CHECK(unwind_table__build_mem(&t, m.p, m.len, "rules", NULL, err, sizeof(err)) == 0);
	CHECK(t.nr_rules == 20002); /* NONE, rsp + 8, and 20,000 more */
	/* the shared set takes it whole or not at all */
	CHECK(unwind_rules__merge(&rs, &t, 16384, 0, NULL) == -ENOSPC && rs.nr == 1 && !t.merged);
	CHECK(unwind_rules__merge(&rs, &t, 0, 4096, NULL) == -EDQUOT && rs.nr == 1 && !t.merged);
	{
		size_t added = 0;

		CHECK(unwind_rules__merge(&rs, &t, 0, 0, &added) == 0 && rs.nr == 20002 && t.merged);
		CHECK_EQ_U64(added, 20001); /* NONE was there */
	}
	unwind_table__free(&t);
	b = (struct unwind_budget){ .max_rows = 1000 };
	CHECK(unwind_table__build_mem(&t, m.p, m.len, "rows", &b, err, sizeof(err)) == -E2BIG);
	CHECK(strstr(err, "1000 unwind rows") != NULL);
	b = (struct unwind_budget){ .cancel = cancel_now, .arg = &asked };
	CHECK(unwind_table__build_mem(&t, m.p, m.len, "cancel", &b, err, sizeof(err)) == -ECANCELED);
	b = (struct unwind_budget){ .max_bytes = 1000 };
	CHECK(unwind_table__build_mem(&t, m.p, m.len, "bytes", &b, err, sizeof(err)) == -E2BIG);
	unwind_rules__free(&rs);
	free(m.p);
}

/* A fifo is refused without waiting for a writer; a truncated object is an error, not a SIGBUS. */
static void test_hostile_files(void)
{
	char dir[] = "/tmp/offcpu-unwind.XXXXXX", fifo[64], half[64], err[256];
	struct unwind_table t;
	struct img m = { 0 };
	struct stat st;
	size_t cut;
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(half, sizeof(half), "%s/half.so", dir);
	CHECK(mkfifo(fifo, 0600) == 0);
	CHECK(objread_open(fifo, &st) == -EINVAL && S_ISFIFO(st.st_mode));
	CHECK(unwind_table__build(&t, fifo, NULL, err, sizeof(err)) == -EINVAL);
	many_rows(&m, 1000, false);
	/* every length short of the whole: an error or a table, never a crash */
	for (cut = 0; cut < m.len; cut += 7) {
		fd = open(half, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		CHECK(fd >= 0 && write(fd, m.p, cut) == (ssize_t)cut);
		close(fd);
		if (unwind_table__build(&t, half, NULL, err, sizeof(err)) == 0)
			unwind_table__free(&t);
	}
	CHECK(unwind_table__build(&t, half, NULL, err, sizeof(err)) < 0);
	unlink(fifo);
	unlink(half);
	rmdir(dir);
	free(m.p);
}

const struct unit_test unwind_tests[] = {
	{ "unwind: the same table as libdw's on real objects", test_same_as_libdw },
	{ "unwind: an FDE of 50,000 rows is read in linear time", test_linear },
	{ "unwind: an object over its budget, a cancelled build", test_budgets },
	{ "unwind: a fifo, truncated objects", test_hostile_files },
	{ "unwind: the signal trampoline's rule", test_signal_frame },
	{ "unwind: a mapping's bias, the vDSO's table", test_bias_and_vdso },
	{ "unwind: the unit binary's own table", test_own_binary },
	{ "unwind: libc's table", test_libc },
	{ 0 },
};
