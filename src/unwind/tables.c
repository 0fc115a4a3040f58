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
