// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include "ehframe.h"
#include "../util/hashmap.h"
#include "../util/util.h"

#define X86_RBP 6
#define X86_RA 16
#define MAX_REMEMBER 64 /* DW_CFA_remember_state nesting; compilers use 1 or 2 */

/* A cursor over the section: reads past its end set bad and return 0. */
struct cur {
	const uint8_t *base, *p, *end;
	bool bad;
};

static bool need(struct cur *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return false;
	}
	return true;
}

static uint64_t rd_le(struct cur *c, size_t n)
{
	uint64_t v = 0;
	size_t i;

	if (!need(c, n))
		return 0;
	for (i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

static int64_t rd_sle(struct cur *c, size_t n)
{
	uint64_t v = rd_le(c, n);

	if (n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~0ULL << (8 * n);
	return (int64_t)v;
}

static uint64_t rd_uleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;

	for (;;) {
		uint8_t b;

		if (!need(c, 1))
			return 0;
		b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
}

static int64_t rd_sleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b = 0;

	do {
		if (!need(c, 1))
			return 0;
		b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~0ULL << shift;
	return (int64_t)v;
}

/* The value of a pointer's format (the low four bits of an encoding). */
static uint64_t rd_format(struct cur *c, uint8_t enc)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return rd_le(c, 8);
	case DW_EH_PE_uleb128:
		return rd_uleb(c);
	case DW_EH_PE_udata2:
		return rd_le(c, 2);
	case DW_EH_PE_udata4:
		return rd_le(c, 4);
	case DW_EH_PE_sleb128:
		return (uint64_t)rd_sleb(c);
	case DW_EH_PE_sdata2:
		return (uint64_t)rd_sle(c, 2);
	case DW_EH_PE_sdata4:
		return (uint64_t)rd_sle(c, 4);
	}
	c->bad = true;
	return 0;
}

/*
 * A pointer in encoding @enc, the field being at ELF address @addr + its
 * offset in the section. Only what .eh_frame of x86-64 uses: absolute or
 * pc-relative; data-, text- or function-relative and indirect pointers need
 * what the section alone does not say, and make the entry unreadable.
 */
static uint64_t rd_ptr(struct cur *c, uint8_t enc, uint64_t addr)
{
	uint64_t field = addr + (uint64_t)(c->p - c->base);

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect)) {
		c->bad = true;
		return 0;
	}
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		return rd_format(c, enc);
	case DW_EH_PE_pcrel:
		return field + rd_format(c, enc);
	case DW_EH_PE_aligned: {
		size_t mis = (size_t)(field & 7);

		if (mis && need(c, 8 - mis))
			c->p += 8 - mis;
		return rd_le(c, 8);
	}
	}
	c->bad = true;
	return 0;
}

/* @a times @b, wrapping: a hostile factor gives a meaningless offset, which is refused later */
static int64_t scaled(uint64_t a, int64_t b)
{
	return (int64_t)(a * (uint64_t)b);
}

/* The rules of one row, and where a CFA expression is (offsets into the section). */
struct state {
	uint8_t cfa_how;
	uint64_t cfa_reg;
	int64_t cfa_off;
	size_t expr_off, expr_len;
	struct cfi_rule rbp, ra;
};

struct cie {
	bool ok;
	bool signal;
	bool z; /* augmentation data in every FDE */
	uint8_t fde_enc;
	uint64_t code_align;
	int64_t data_align;
	struct state init; /* after the ABI's defaults and the CIE's initial instructions */
};

struct fde {
	uint64_t start, end;
	size_t insn, insn_len; /* its instructions, as offsets into the section */
	size_t cie; /* index into the CIEs */
	size_t order; /* its place in the section: equal starts keep it */
};

struct walk {
	const uint8_t *data;
	size_t size;
	uint64_t addr;
	struct cie *cies;
	size_t nr_cies, cap_cies;
	struct hashmap cie_at; /* section offset -> index */
	struct fde *fdes;
	size_t nr_fdes, cap_fdes;
	ehframe_row_fn fn;
	void *arg;
	struct ehframe_stats *st;
};

/* Where an entry's content starts and ends; false at the terminator or when it does not fit. */
static bool entry_bounds(const struct walk *w, size_t off, struct cur *c, size_t *id_size)
{
	uint64_t len;

	c->base = w->data;
	c->p = w->data + off;
	c->end = w->data + w->size;
	c->bad = false;
	len = rd_le(c, 4);
	*id_size = 4;
	if (len == 0xffffffffULL) {
		len = rd_le(c, 8);
		*id_size = 8;
	}
	if (c->bad || len == 0 || len > (uint64_t)(c->end - c->p))
		return false;
	c->end = c->p + len;
	return true;
}

static void set_reg(struct state *s, uint64_t reg, struct cfi_rule r)
{
	if (reg == X86_RBP)
		s->rbp = r;
	else if (reg == X86_RA)
		s->ra = r;
}

static const struct cfi_rule rule_undef = { CFI_REG_UNDEF, 0 }, rule_same = { CFI_REG_SAME, 0 },
			     rule_other = { CFI_REG_OTHER, 0 };

/* The caller of run() is told at each new row. */
struct rows {
	struct walk *w;
	uint64_t loc, end, bound;
	bool signal; /* the CIE's */
	int ret; /* the callback's, once non-zero */
};

static void emit(struct rows *rs, uint64_t at, const struct state *s)
{
	struct cfi_row row;

	if (rs->ret || at >= rs->bound || at >= rs->end)
		return;
	if (!s) {
		rs->ret = rs->w->fn(rs->w->arg, at, NULL);
		return;
	}
	row = (struct cfi_row){ .cfa_how = s->cfa_how, .cfa_reg = s->cfa_reg, .cfa_off = s->cfa_off,
				.rbp = s->rbp, .ra = s->ra, .signal = rs->signal };
	if (s->cfa_how == CFI_CFA_EXPR) {
		row.expr = rs->w->data + s->expr_off;
		row.expr_len = s->expr_len;
	}
	rs->ret = rs->w->fn(rs->w->arg, at, &row);
}

/*
 * Move a row's start @delta bytes on: the row it ends is handed out. 1 when
 * the rest is past the FDE or behind the next one, 0 to go on.
 */
static int advance(struct rows *rs, const struct state *s, uint64_t delta)
{
	if (!delta)
		return 0;
	if (delta > UINT64_MAX - rs->loc)
		return 1;
	emit(rs, rs->loc, s);
	rs->loc += delta;
	return rs->loc >= rs->end || rs->loc >= rs->bound;
}

/*
 * Run the CFA instructions in @c from state @s. With @rs (an FDE), each
 * advance hands out the row it ends; without (a CIE's initial
 * instructions), an advance is an error. @init is the CIE's state, for
 * DW_CFA_restore. Returns false on anything malformed.
 */
static bool run(struct cur *c, struct state *s, const struct cie *cie, const struct state *init,
		struct rows *rs, size_t *ops)
{
	struct state stack[MAX_REMEMBER];
	size_t depth = 0;

	while (c->p < c->end && !c->bad && !(rs && rs->ret)) {
		uint8_t op = *c->p++, low = op & 0x3f;
		uint64_t reg, units = 0, to;
		int64_t off;

		++*ops;
		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			units = low;
			goto advance_units;
		case DW_CFA_offset:
			off = scaled(rd_uleb(c), cie->data_align);
			set_reg(s, low, (struct cfi_rule){ CFI_REG_OFFSET, off });
			continue;
		case DW_CFA_restore:
			set_reg(s, low, low == X86_RBP ? init->rbp : init->ra);
			continue;
		}
		switch (op) {
		case DW_CFA_nop:
			continue;
		case DW_CFA_set_loc:
			if (!rs)
				return false;
			to = rd_ptr(c, cie->fde_enc, rs->w->addr);
			if (c->bad || to < rs->loc)
				return false;
			if (advance(rs, s, to - rs->loc))
				return true;
			continue;
		case DW_CFA_advance_loc1:
			units = rd_le(c, 1);
			goto advance_units;
		case DW_CFA_advance_loc2:
			units = rd_le(c, 2);
			goto advance_units;
		case DW_CFA_advance_loc4:
			units = rd_le(c, 4);
			goto advance_units;
		case DW_CFA_offset_extended:
			reg = rd_uleb(c);
			off = scaled(rd_uleb(c), cie->data_align);
			set_reg(s, reg, (struct cfi_rule){ CFI_REG_OFFSET, off });
			continue;
		case DW_CFA_offset_extended_sf:
			reg = rd_uleb(c);
			off = scaled((uint64_t)rd_sleb(c), cie->data_align);
			set_reg(s, reg, (struct cfi_rule){ CFI_REG_OFFSET, off });
			continue;
		case DW_CFA_GNU_negative_offset_extended:
			reg = rd_uleb(c);
			off = scaled(-rd_uleb(c), cie->data_align);
			set_reg(s, reg, (struct cfi_rule){ CFI_REG_OFFSET, off });
			continue;
		case DW_CFA_restore_extended:
			reg = rd_uleb(c);
			set_reg(s, reg, reg == X86_RBP ? init->rbp : init->ra);
			continue;
		case DW_CFA_undefined:
			set_reg(s, rd_uleb(c), rule_undef);
			continue;
		case DW_CFA_same_value:
			set_reg(s, rd_uleb(c), rule_same);
			continue;
		case DW_CFA_register:
			reg = rd_uleb(c);
			rd_uleb(c);
			set_reg(s, reg, rule_other);
			continue;
		case DW_CFA_val_offset:
			reg = rd_uleb(c);
			rd_uleb(c);
			set_reg(s, reg, rule_other);
			continue;
		case DW_CFA_val_offset_sf:
			reg = rd_uleb(c);
			rd_sleb(c);
			set_reg(s, reg, rule_other);
			continue;
		case DW_CFA_expression:
		case DW_CFA_val_expression: {
			uint64_t len;

			reg = rd_uleb(c);
			len = rd_uleb(c);
			if (!need(c, len))
				return false;
			c->p += len;
			set_reg(s, reg, rule_other);
			continue;
		}
		case DW_CFA_remember_state:
			if (depth == MAX_REMEMBER)
				return false;
			stack[depth++] = *s;
			continue;
		case DW_CFA_restore_state:
			/* the whole row comes back, the CFA's rule with it (libdw, gcc) */
			if (!depth)
				return false;
			*s = stack[--depth];
			continue;
		case DW_CFA_def_cfa:
			s->cfa_how = CFI_CFA_REG;
			s->cfa_reg = rd_uleb(c);
			s->cfa_off = (int64_t)rd_uleb(c);
			continue;
		case DW_CFA_def_cfa_sf:
			s->cfa_how = CFI_CFA_REG;
			s->cfa_reg = rd_uleb(c);
			s->cfa_off = scaled((uint64_t)rd_sleb(c), cie->data_align);
			continue;
		case DW_CFA_def_cfa_register:
			if (s->cfa_how != CFI_CFA_REG)
				return false;
			s->cfa_reg = rd_uleb(c);
			continue;
		case DW_CFA_def_cfa_offset:
			if (s->cfa_how != CFI_CFA_REG)
				return false;
			s->cfa_off = (int64_t)rd_uleb(c);
			continue;
		case DW_CFA_def_cfa_offset_sf:
			if (s->cfa_how != CFI_CFA_REG)
				return false;
			s->cfa_off = scaled((uint64_t)rd_sleb(c), cie->data_align);
			continue;
		case DW_CFA_def_cfa_expression: {
			uint64_t len = rd_uleb(c);

			if (!need(c, len))
				return false;
			s->cfa_how = CFI_CFA_EXPR;
			s->expr_off = (size_t)(c->p - c->base);
			s->expr_len = (size_t)len;
			c->p += len;
			continue;
		}
		case DW_CFA_GNU_args_size:
			rd_uleb(c);
			continue;
		default:
			return false; /* not an x86-64 instruction */
		}
advance_units:
		if (!rs || c->bad)
			return false;
		if (cie->code_align && units > UINT64_MAX / cie->code_align)
			return false;
		if (advance(rs, s, units * cie->code_align))
			return true;
	}
	return !c->bad;
}

/* Parse the CIE at section offset @off once; its index, or SIZE_MAX. */
static size_t get_cie(struct walk *w, size_t off)
{
	struct cie cie = { 0 };
	struct cur c;
	size_t id_size;
	uint64_t id, *v;
	const char *aug;
	uint8_t version;
	int created;

	v = hashmap__upsert(&w->cie_at, &off, sizeof(off), &created);
	if (!v)
		return SIZE_MAX;
	if (!created)
		return (size_t)*v;
	if (grow_array((void **)&w->cies, &w->cap_cies, w->nr_cies + 1, sizeof(*w->cies)))
		return SIZE_MAX;
	*v = w->nr_cies;
	w->cies[w->nr_cies++] = cie; /* not ok until read whole */
	if (!entry_bounds(w, off, &c, &id_size))
		goto bad;
	id = rd_le(&c, id_size);
	version = (uint8_t)rd_le(&c, 1);
	if (c.bad || id != 0 || (version != 1 && version != 3 && version != 4))
		goto bad;
	aug = (const char *)c.p;
	if (!memchr(aug, 0, (size_t)(c.end - c.p)))
		goto bad;
	c.p += strlen(aug) + 1;
	if (version == 4 && (rd_le(&c, 1) != 8 || rd_le(&c, 1) != 0))
		goto bad; /* address size 8, no segment selector */
	cie.code_align = rd_uleb(&c);
	cie.data_align = rd_sleb(&c);
	if ((version == 1 ? rd_le(&c, 1) : rd_uleb(&c)) != X86_RA)
		goto bad; /* the return address in another register: not x86-64's */
	cie.fde_enc = DW_EH_PE_absptr;
	if (aug[0] == 'z') {
		uint64_t len = rd_uleb(&c);
		const uint8_t *aug_end;
		size_t i;

		cie.z = true;
		if (!need(&c, len))
			goto bad;
		aug_end = c.p + len;
		/* letters after one not known cannot be placed: its data's size is unknown */
		for (i = 1; aug[i] && !c.bad; i++) {
			if (aug[i] == 'R') {
				cie.fde_enc = (uint8_t)rd_le(&c, 1);
			} else if (aug[i] == 'P') {
				uint8_t enc = (uint8_t)rd_le(&c, 1);

				rd_ptr(&c, enc & ~DW_EH_PE_indirect, w->addr);
			} else if (aug[i] == 'L') {
				rd_le(&c, 1);
			} else if (aug[i] == 'S') {
				cie.signal = true;
			} else if (aug[i] != 'B') {
				break;
			}
		}
		if (c.bad || c.p > aug_end)
			goto bad;
		c.p = aug_end;
	} else if (aug[0]) {
		goto bad; /* "eh" and the like: not what any x86-64 compiler writes now */
	}
	/* the ABI's rules for what the CIE leaves unsaid (libdw's for x86-64) */
	cie.init = (struct state){ .cfa_how = CFI_CFA_NONE, .rbp = rule_same, .ra = rule_same };
	if (!run(&c, &cie.init, &cie, &cie.init, NULL, &w->st->ops))
		goto bad;
	cie.ok = true;
	w->cies[*v] = cie;
	return (size_t)*v;
bad:
	w->st->bad++;
	return (size_t)*v;
}

/* Read the FDE whose content @c holds (its CIE pointer at @id_at). */
static int add_fde(struct walk *w, struct cur *c, size_t id_at, uint64_t id)
{
	struct fde f = { .order = w->nr_fdes };
	struct cie *cie;
	uint64_t range;

	if (id > id_at)
		goto bad;
	f.cie = get_cie(w, id_at - (size_t)id);
	if (f.cie == SIZE_MAX)
		return -ENOMEM;
	cie = &w->cies[f.cie];
	if (!cie->ok)
		goto bad;
	f.start = rd_ptr(c, cie->fde_enc, w->addr);
	range = rd_format(c, cie->fde_enc);
	if (c->bad)
		goto bad;
	if (!range)
		return 0; /* covers nothing (a discarded function) */
	if (range > UINT64_MAX - f.start)
		goto bad;
	f.end = f.start + range;
	if (cie->z) {
		/* the FDE's augmentation data (its LSDA): skipped by its length */
		uint64_t len = rd_uleb(c);

		if (!need(c, len))
			goto bad;
		c->p += len;
	}
	f.insn = (size_t)(c->p - w->data);
	f.insn_len = (size_t)(c->end - c->p);
	if (grow_array((void **)&w->fdes, &w->cap_fdes, w->nr_fdes + 1, sizeof(*w->fdes)))
		return -ENOMEM;
	w->fdes[w->nr_fdes++] = f;
	return 0;
bad:
	w->st->bad++;
	return 0;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

int ehframe__walk(const uint8_t *data, size_t size, uint64_t addr, ehframe_row_fn fn, void *arg,
		  struct ehframe_stats *st)
{
	struct walk w = { .data = data, .size = size, .addr = addr, .fn = fn, .arg = arg, .st = st };
	size_t off = 0, i;
	int err = 0;

	memset(st, 0, sizeof(*st));
	while (off < size && !err) {
		struct cur c;
		size_t id_size, id_at;
		uint64_t id;

		if (!entry_bounds(&w, off, &c, &id_size))
			break; /* the terminator, or an entry that does not fit */
		id_at = (size_t)(c.p - data);
		id = rd_le(&c, id_size);
		if (!c.bad && id)
			err = add_fde(&w, &c, id_at, id);
		off = (size_t)(c.end - data);
	}
	if (w.nr_fdes)
		qsort(w.fdes, w.nr_fdes, sizeof(*w.fdes), cmp_fde);
	for (i = 0; i < w.nr_fdes && !err; i++) {
		const struct fde *f = &w.fdes[i];
		const struct cie *cie = &w.cies[f->cie];
		struct rows rs = { .w = &w, .loc = f->start, .end = f->end, .bound = UINT64_MAX,
				   .signal = cie->signal };
		struct state s = cie->init;
		struct cur c = { data, data + f->insn, data + f->insn + f->insn_len, false };
		size_t j;

		if (i && f->start == w.fdes[i - 1].start)
			continue; /* the first of equal starts is the one */
		for (j = i + 1; j < w.nr_fdes; j++)
			if (w.fdes[j].start > f->start) {
				rs.bound = w.fdes[j].start;
				break;
			}
		st->fdes++;
		if (!run(&c, &s, cie, &cie->init, &rs, &st->ops)) {
			/* what cannot be read has no rule, up to the FDE's end */
			st->bad++;
			emit(&rs, rs.loc, NULL);
		} else {
			emit(&rs, rs.loc, &s);
		}
		/* a gap before the next FDE (alignment padding): no rule */
		rs.end = UINT64_MAX;
		if (f->end < rs.bound)
			emit(&rs, f->end, NULL);
		err = rs.ret;
	}
	free(w.fdes);
	free(w.cies);
	hashmap__free(&w.cie_at);
	return err;
}
