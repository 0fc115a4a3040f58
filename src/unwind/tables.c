// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include "ehframe.h"
#include "tables.h"
#include "../util/objread.h"
#include "../util/util.h"

/* messages name paths: one too long for its buffer is cut, on purpose */
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#define X86_RBP 6
#define X86_RSP 7

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

/* How many bytes the DWARF expression operation @op's operands take at @p; -1 if unknown. */
static int expr_operands(uint8_t op, const uint8_t *p, const uint8_t *end)
{
	const uint8_t *q = p;

	if ((op >= DW_OP_breg0 && op <= DW_OP_breg31) || op == DW_OP_plus_uconst ||
	    op == DW_OP_constu || op == DW_OP_consts) {
		while (q < end && (*q & 0x80))
			q++;
		return q < end ? (int)(q - p) + 1 : -1;
	}
	if (op >= DW_OP_lit0 && op <= DW_OP_lit31)
		return 0;
	switch (op) {
	case DW_OP_and: case DW_OP_ge: case DW_OP_shl: case DW_OP_plus: case DW_OP_minus:
	case DW_OP_mul: case DW_OP_or: case DW_OP_xor: case DW_OP_shr: case DW_OP_lt:
	case DW_OP_gt: case DW_OP_le: case DW_OP_eq: case DW_OP_ne: case DW_OP_deref:
	case DW_OP_dup: case DW_OP_drop: case DW_OP_swap: case DW_OP_neg: case DW_OP_not:
		return 0;
	case DW_OP_const1u: case DW_OP_const1s:
		return 1;
	case DW_OP_const2u: case DW_OP_const2s:
		return 2;
	case DW_OP_const4u: case DW_OP_const4s:
		return 4;
	case DW_OP_const8u: case DW_OP_const8s:
		return 8;
	}
	return -1;
}

/*
 * cfa = rsp + 8 + ((rip & 15) >= 11 ? 8 : 0): what binutils writes for .plt,
 * 9 operations from DW_OP_breg7 8 to DW_OP_plus, rip among them.
 */
static bool plt_cfa(const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	bool rip = false;
	size_t n = 0;
	uint8_t op = 0;

	while (p < end) {
		int k;

		op = *p++;
		k = expr_operands(op, p, end);
		if (k < 0 || (size_t)k > (size_t)(end - p))
			return false;
		if (n == 0 && !(op == DW_OP_breg7 && k == 1 && p[0] == 8))
			return false;
		rip |= op == DW_OP_breg16;
		p += k;
		n++;
	}
	return n == 9 && op == DW_OP_plus && rip;
}

static bool fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* The rule of one CFI row; CFA_NONE for what the walk cannot follow. */
static struct unwind_rule frame_rule(const struct cfi_row *row)
{
	struct unwind_rule r = { .cfa = OFFCPU_UNW_CFA_NONE, .rbp = OFFCPU_UNW_RBP_UNDEF },
			   none = r;

	/* rt_sigreturn (glibc's __restore_rt): the registers the signal
	 * interrupted are in the ucontext at rsp, as the kernel saved them */
	if (row->signal) {
		r.cfa = OFFCPU_UNW_CFA_SIGNAL;
		r.rbp = OFFCPU_UNW_RBP_AT;
		return r;
	}
	if (row->cfa_how == CFI_CFA_REG && (row->cfa_reg == X86_RSP || row->cfa_reg == X86_RBP)) {
		if (!fits32(row->cfa_off))
			return none;
		r.cfa = row->cfa_reg == X86_RSP ? OFFCPU_UNW_CFA_RSP : OFFCPU_UNW_CFA_RBP;
		r.cfa_off = (int32_t)row->cfa_off;
	} else if (row->cfa_how == CFI_CFA_EXPR && plt_cfa(row->expr, row->expr_len)) {
		r.cfa = OFFCPU_UNW_CFA_PLT;
	} else {
		return none;
	}
	/* the return address: at CFA - 8, or undefined in the outermost frame */
	if (row->ra.how == CFI_REG_UNDEF)
		r.outermost = 1;
	else if (!(row->ra.how == CFI_REG_OFFSET && row->ra.off == -8))
		return none;
	/* the caller's rbp, needed where a caller's CFA is rbp-based */
	if (row->rbp.how == CFI_REG_SAME) {
		r.rbp = OFFCPU_UNW_RBP_SAME;
	} else if (row->rbp.how == CFI_REG_OFFSET) {
		if (!fits32(row->rbp.off))
			return none;
		r.rbp = OFFCPU_UNW_RBP_AT;
		r.rbp_off = (int32_t)row->rbp.off;
	}
	return r;
}

/* The index of @r among the table's own rules, added if new; -E2BIG over budget. */
static long local_rule(struct unwind_table *t, const struct unwind_rule *r, size_t max)
{
	int created;
	uint64_t *v = hashmap__upsert(&t->rule_index, r, sizeof(*r), &created);

	if (!v)
		return -ENOMEM;
	if (created) {
		if (max && t->nr_rules >= max)
			return -E2BIG;
		if (grow_array((void **)&t->rules, &t->cap_rules, t->nr_rules + 1, sizeof(*t->rules)))
			return -ENOMEM;
		t->rules[t->nr_rules] = *r;
		*v = t->nr_rules++;
	}
	return (long)*v;
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

struct build {
	struct unwind_table *t;
	const struct unwind_budget *b;
	uint64_t t0;
	size_t calls;
	char *err;
	size_t errlen;
	const char *name;
};

static int on_row(void *arg, uint64_t start, const struct cfi_row *row)
{
	struct build *bd = arg;
	struct unwind_table *t = bd->t;
	const struct unwind_budget *b = bd->b;
	long k = UNWIND_RULE_NONE;

	if (b && !(++bd->calls & 1023)) {
		if (b->cancel && b->cancel(b->arg)) {
			snprintf(bd->err, bd->errlen, "%s: cancelled", bd->name);
			return -ECANCELED;
		}
		if (b->max_ns && now_ns() - bd->t0 > b->max_ns) {
			snprintf(bd->err, bd->errlen, "%s: over its time budget (%.1f s)", bd->name,
				 (double)b->max_ns / 1e9);
			return -ETIME;
		}
	}
	if (row) {
		struct unwind_rule r = frame_rule(row);

		t->unsupported += r.cfa == OFFCPU_UNW_CFA_NONE;
		k = local_rule(t, &r, b ? b->max_rules : 0);
		if (k == -E2BIG) {
			snprintf(bd->err, bd->errlen, "%s: over its budget of %zu distinct unwind rules",
				 bd->name, b->max_rules);
			return -E2BIG;
		}
		if (k < 0)
			return (int)k;
	}
	if (add_row(t, start, (uint32_t)k))
		return -ENOMEM;
	if (b && b->max_rows && t->nr > b->max_rows) {
		snprintf(bd->err, bd->errlen, "%s: over its budget of %zu unwind rows", bd->name,
			 b->max_rows);
		return -E2BIG;
	}
	return 0;
}

/* Record the PT_LOAD segments: where each file offset is in ELF addresses. */
static int read_loads(struct unwind_table *t, const struct elfobj *o, const char *name, char *err,
		      size_t errlen)
{
	size_t i;

	for (i = 0; i < o->nph && t->nr_loads < UNWIND_MAX_LOADS; i++) {
		const Elf64_Phdr *ph = &o->ph[i];

		if (ph->p_type != PT_LOAD)
			continue;
		t->loads[t->nr_loads++] = (struct unwind_load){ .offset = ph->p_offset,
								.vaddr = ph->p_vaddr,
								.filesz = ph->p_filesz };
	}
	if (!t->nr_loads) {
		snprintf(err, errlen, "%s: no loadable segment", name);
		return -EINVAL;
	}
	return 0;
}

/*
 * Code that keeps frame pointers (runtime.md, "Go" and "JIT code"):
 * - Go: an object with .note.go.buildid or .gopclntab. Its ABI keeps frame
 *   pointers, and its own code has no CFI (cgo's C code has): every address
 *   without a rule gets OFFCPU_UNW_CFA_FP, the object's unwind method, and
 *   the functions a goroutine or thread starts in (runtime.goexit,
 *   runtime.mstart, runtime.rt0_go, from .symtab where there is one) are
 *   outermost: a new thread's rbp is its creator's, not 0. runtime.mcall,
 *   where a goroutine hands its thread to the scheduler, keeps the
 *   goroutine's rbp: the walk ends there (OFFCPU_UNW_GO_SWITCH) unless the
 *   thread waits in runtime.stoplockedm for the goroutine locked to it
 *   (OFFCPU_UNW_GO_LOCKED), which is the one waiting.
 * - V8's embedded builtins (Builtins_* in node's .text, no CFI): their
 *   range gets OFFCPU_UNW_CFA_FP_CHECKED where it has no rule. Where the
 *   object has no .symtab to find them by (Debian's libnode, stripped) but
 *   exports V8's layout (v8dbg_off_fp_function), they are the one large
 *   range of its code that no FDE covers (1.4 MiB in libnode.so.108, the
 *   next 204 bytes): the largest such range, if over V8_GAP_MIN and
 *   V8_GAP_RATIO times the next.
 */
#define FP_RULE(kind, last) { .cfa = (kind), .rbp = OFFCPU_UNW_RBP_AT, .outermost = (last), \
			      .cfa_off = 16, .rbp_off = -16 }
#define SYMS_MAX (64ULL << 20) /* bytes of .symtab or .strtab read at most */

/* Give [@lo, @hi) rule @rule (@hi UINT64_MAX: no end): where it has none (@only_none), or everywhere. */
static int overlay(struct unwind_table *t, uint64_t lo, uint64_t hi, uint32_t rule, bool only_none)
{
	struct unwind_row *old = t->rows;
	size_t nr = t->nr, i = 0, j = 0;
	uint32_t cur = UNWIND_RULE_NONE; /* before the first row: none */
	uint64_t cuts[2] = { lo, hi };
	int e = 0;

	t->rows = NULL;
	t->nr = t->cap = 0;
	/* the rows' starts and the range's ends, in order; the rule at each */
	while ((i < nr || j < 2) && !e) {
		uint64_t at;
		uint32_t r;

		if (j < 2 && cuts[j] == UINT64_MAX) {
			j++; /* no end */
			continue;
		}
		if (j < 2 && (i >= nr || cuts[j] <= old[i].start)) {
			at = cuts[j++];
			if (i < nr && old[i].start == at)
				cur = old[i++].rule;
		} else {
			at = old[i].start;
			cur = old[i++].rule;
		}
		r = cur;
		if (at >= lo && at < hi && (!only_none || cur == UNWIND_RULE_NONE))
			r = rule;
		e = add_row(t, at, r);
	}
	free(old);
	return e;
}

struct sym_scan {
	uint64_t v8_lo, v8_hi; /* Builtins_* */
	uint64_t top[8][3]; /* Go's functions the walk treats apart: start, end, enum offcpu_unw_outer */
	size_t nr_top;
};

/* What Go function @n is to the walk (enum offcpu_unw_outer; OFFCPU_UNW_INNER: nothing apart). */
static int go_top(const char *n)
{
	static const struct {
		const char *name;
		int outer;
	} tops[] = {
		{ "runtime.goexit", OFFCPU_UNW_OUTERMOST },
		{ "runtime.mstart", OFFCPU_UNW_OUTERMOST },
		{ "runtime.rt0_go", OFFCPU_UNW_OUTERMOST },
		{ "runtime.mcall", OFFCPU_UNW_GO_SWITCH },
		{ "runtime.stoplockedm", OFFCPU_UNW_GO_LOCKED },
	};
	size_t i, k;

	for (i = 0; i < ARRAY_SIZE(tops); i++) {
		k = strlen(tops[i].name);
		if (!strncmp(n, tops[i].name, k) && (!n[k] || !strcmp(n + k, ".abi0")))
			return tops[i].outer;
	}
	return OFFCPU_UNW_INNER;
}

#define V8_GAP_MIN (256u << 10)
#define V8_GAP_RATIO 8

/* Whether @o's dynamic symbols hold V8's layout (it embeds V8: libnode). */
static bool v8_embedder(const struct elfobj *o)
{
	const Elf64_Shdr *ds = NULL, *ss;
	Elf64_Sym *syms = NULL;
	char *str = NULL;
	bool found = false;
	size_t i, n;

	for (i = 0; i < o->nsh; i++)
		if (o->sh[i].sh_type == SHT_DYNSYM) {
			ds = &o->sh[i];
			break;
		}
	if (!ds || ds->sh_link >= o->nsh || ds->sh_entsize != sizeof(Elf64_Sym))
		return false;
	ss = &o->sh[ds->sh_link];
	syms = elfobj__read(o, ds->sh_offset, ds->sh_size, SYMS_MAX);
	str = elfobj__read(o, ss->sh_offset, ss->sh_size, SYMS_MAX);
	if (syms && str && ss->sh_size) {
		str[ss->sh_size - 1] = 0;
		n = ds->sh_size / sizeof(*syms);
		for (i = 0; i < n && !found; i++)
			found = syms[i].st_name < ss->sh_size && syms[i].st_shndx != SHN_UNDEF &&
				!strcmp(str + syms[i].st_name, "v8dbg_off_fp_function");
	}
	free(syms);
	free(str);
	return found;
}

/* The largest range no FDE covers between two that are, into [*@lo, *@hi), if it stands out. */
static bool v8_gap(const struct unwind_table *t, uint64_t *lo, uint64_t *hi)
{
	uint64_t best = 0, next = 0, len;
	size_t i;

	for (i = 0; i + 1 < t->nr; i++) {
		if (t->rows[i].rule != UNWIND_RULE_NONE || !i)
			continue;
		len = t->rows[i + 1].start - t->rows[i].start;
		if (len > best) {
			next = best;
			best = len;
			*lo = t->rows[i].start;
			*hi = t->rows[i + 1].start;
		} else if (len > next) {
			next = len;
		}
	}
	return best >= V8_GAP_MIN && best >= V8_GAP_RATIO * next;
}

/* Read .symtab for what @go and V8 need; an object without one has none. */
static void scan_syms(const struct elfobj *o, bool go, struct sym_scan *ss)
{
	const Elf64_Shdr *sym = elfobj__section(o, ".symtab"), *str = elfobj__section(o, ".strtab");
	Elf64_Sym *syms = NULL;
	char *names = NULL;
	size_t i, n;

	memset(ss, 0, sizeof(*ss));
	if (!sym || !str || sym->sh_type != SHT_SYMTAB || str->sh_type != SHT_STRTAB ||
	    !str->sh_size)
		return;
	syms = elfobj__read(o, sym->sh_offset, sym->sh_size, SYMS_MAX);
	names = elfobj__read(o, str->sh_offset, str->sh_size, SYMS_MAX);
	if (!syms || !names)
		goto out;
	names[str->sh_size - 1] = 0;
	n = sym->sh_size / sizeof(*syms);
	for (i = 0; i < n; i++) {
		const Elf64_Sym *s = &syms[i];
		const char *nm;

		if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || !s->st_value || !s->st_size ||
		    s->st_name >= str->sh_size)
			continue;
		nm = names + s->st_name;
		if (go) {
			int outer = go_top(nm);

			if (ss->nr_top < ARRAY_SIZE(ss->top) && outer != OFFCPU_UNW_INNER) {
				ss->top[ss->nr_top][0] = s->st_value;
				ss->top[ss->nr_top][1] = s->st_value + s->st_size;
				ss->top[ss->nr_top++][2] = (uint64_t)outer;
			}
		} else if (!strncmp(nm, "Builtins_", 9)) {
			if (!ss->v8_lo || s->st_value < ss->v8_lo)
				ss->v8_lo = s->st_value;
			if (s->st_value + s->st_size > ss->v8_hi)
				ss->v8_hi = s->st_value + s->st_size;
		}
	}
out:
	free(syms);
	free(names);
}

/* The frame-pointer rules of Go's code or V8's builtins, over what .eh_frame gave. */
static int fp_rows(struct unwind_table *t, const struct elfobj *o, bool go, const char *name,
		   const struct unwind_budget *b, char *err, size_t errlen)
{
	struct unwind_rule fp = FP_RULE(OFFCPU_UNW_CFA_FP, OFFCPU_UNW_INNER),
			   checked = FP_RULE(OFFCPU_UNW_CFA_FP_CHECKED, OFFCPU_UNW_INNER);
	struct sym_scan ss;
	uint64_t lo = 0, hi = 0;
	long k, kt;
	size_t i;
	int e = 0;

	scan_syms(o, go, &ss);
	if (go) {
		k = local_rule(t, &fp, 0);
		if (k < 0)
			e = -ENOMEM;
		if (!e)
			e = overlay(t, 0, UINT64_MAX, (uint32_t)k, true);
		for (i = 0; i < ss.nr_top && !e; i++) {
			struct unwind_rule top = FP_RULE(OFFCPU_UNW_CFA_FP, (uint8_t)ss.top[i][2]);

			kt = local_rule(t, &top, 0);
			e = kt < 0 ? (int)kt : overlay(t, ss.top[i][0], ss.top[i][1], (uint32_t)kt, false);
		}
		t->fp = true;
	} else if (ss.v8_hi > ss.v8_lo) {
		k = local_rule(t, &checked, 0);
		e = k < 0 ? (int)k : overlay(t, ss.v8_lo, ss.v8_hi, (uint32_t)k, true);
	} else if (!elfobj__section(o, ".symtab") && v8_gap(t, &lo, &hi) && v8_embedder(o)) {
		k = local_rule(t, &checked, 0);
		e = k < 0 ? (int)k : overlay(t, lo, hi, (uint32_t)k, true);
	}
	if (e)
		snprintf(err, errlen, "out of memory");
	else if (b && b->max_rows && t->nr > b->max_rows) {
		snprintf(err, errlen, "%s: over its budget of %zu unwind rows", name, b->max_rows);
		e = -E2BIG;
	}
	return e;
}

static bool is_go(const struct elfobj *o)
{
	return elfobj__section(o, ".note.go.buildid") || elfobj__section(o, ".gopclntab");
}

static int build_obj(struct unwind_table *t, const struct elfobj *o, const char *name,
		     const struct unwind_budget *b, char *err, size_t errlen)
{
	struct build bd = { t, b, now_ns(), 0, err, errlen, name };
	struct ehframe_stats st;
	const Elf64_Shdr *sec;
	uint8_t *data;
	int e;

	e = read_loads(t, o, name, err, errlen);
	if (e)
		return e;
	sec = elfobj__section(o, ".eh_frame");
	if (!sec || sec->sh_type == SHT_NOBITS || !sec->sh_size) {
		if (is_go(o))
			return fp_rows(t, o, true, name, b, err, errlen);
		snprintf(err, errlen, "%s: no .eh_frame", name);
		return -ENOENT;
	}
	if (b && b->max_bytes && sec->sh_size > b->max_bytes) {
		snprintf(err, errlen, "%s: its .eh_frame (%llu bytes) is over the budget of %llu",
			 name, (unsigned long long)sec->sh_size, (unsigned long long)b->max_bytes);
		return -E2BIG;
	}
	data = elfobj__read(o, sec->sh_offset, sec->sh_size, ELFOBJ_MAX_READ);
	if (!data) {
		e = -errno;
		snprintf(err, errlen, "%s: cannot read .eh_frame: %s", name,
			 e == -EIO ? "the file shrank while it was read" :
			 e == -EINVAL ? "it lies outside the file" : strerror(-e));
		return e == -EFBIG ? -E2BIG : e;
	}
	/* rule 0 of every table is NONE, as in the shared set */
	{
		struct unwind_rule none = { .cfa = OFFCPU_UNW_CFA_NONE, .rbp = OFFCPU_UNW_RBP_UNDEF };
		long k = local_rule(t, &none, 0);

		if (k < 0) {
			free(data);
			snprintf(err, errlen, "out of memory");
			return (int)k;
		}
	}
	e = ehframe__walk(data, (size_t)sec->sh_size, sec->sh_addr, on_row, &bd, &st);
	free(data);
	t->fdes = st.fdes;
	t->bad = st.bad;
	if (e == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (!e)
		e = fp_rows(t, o, is_go(o), name, b, err, errlen);
	return e;
}

int unwind_table__build(struct unwind_table *t, const char *path, const struct unwind_budget *b,
			char *err, size_t errlen)
{
	struct elfobj o;
	char why[256];
	int e;

	memset(t, 0, sizeof(*t));
	e = elfobj__open(&o, path, why, sizeof(why));
	if (e) {
		snprintf(err, errlen, "%s: %s", path, why);
		return e;
	}
	e = build_obj(t, &o, path, b, err, errlen);
	elfobj__close(&o);
	if (e)
		unwind_table__free(t);
	return e;
}

int unwind_table__build_mem(struct unwind_table *t, const void *image, size_t size,
			    const char *name, const struct unwind_budget *b, char *err,
			    size_t errlen)
{
	struct elfobj o;
	char why[256];
	int e;

	memset(t, 0, sizeof(*t));
	e = elfobj__open_mem(&o, image, size, why, sizeof(why));
	if (e) {
		snprintf(err, errlen, "%s: %s", name, why);
		return e;
	}
	e = build_obj(t, &o, name, b, err, errlen);
	elfobj__close(&o);
	if (e)
		unwind_table__free(t);
	return e;
}

int unwind_rules__merge(struct unwind_rules *rs, struct unwind_table *t, size_t max,
			size_t max_new, size_t *added)
{
	uint32_t *to;
	size_t i, fresh = 0;

	if (added)
		*added = 0;
	if (t->merged)
		return 0;
	for (i = 0; i < t->nr_rules; i++)
		fresh += !hashmap__find(&rs->index, &t->rules[i], sizeof(t->rules[i]));
	if (max && rs->nr + fresh > max)
		return -ENOSPC;
	if (max_new && fresh > max_new)
		return -EDQUOT;
	if (added)
		*added = fresh;
	to = malloc((t->nr_rules ? t->nr_rules : 1) * sizeof(*to));
	if (!to)
		return -ENOMEM;
	for (i = 0; i < t->nr_rules; i++) {
		long k = rule_index(rs, &t->rules[i]);

		if (k < 0) {
			free(to);
			return (int)k;
		}
		to[i] = (uint32_t)k;
	}
	for (i = 0; i < t->nr; i++)
		t->rows[i].rule = to[t->rows[i].rule];
	free(to);
	free(t->rules);
	hashmap__free(&t->rule_index);
	t->rules = NULL;
	t->nr_rules = t->cap_rules = 0;
	t->merged = true;
	return 0;
}

const struct unwind_rule *unwind_table__rule(const struct unwind_table *t,
					     const struct unwind_rules *rs,
					     const struct unwind_row *row)
{
	if (t->merged)
		return row->rule < rs->nr ? &rs->v[row->rule] : NULL;
	return row->rule < t->nr_rules ? &t->rules[row->rule] : NULL;
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
	free(t->rules);
	hashmap__free(&t->rule_index);
	memset(t, 0, sizeof(*t));
}
