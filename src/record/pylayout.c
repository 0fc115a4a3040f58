// SPDX-License-Identifier: GPL-2.0
/* The CPython layouts offcpu reads, and their line tables (pylayout.h). */
#include <errno.h>
#include <string.h>
#include "pylayout.h"

/* A window of an object: from the first field's 8-aligned start to the end of the last. */
static void window(uint16_t *base, uint16_t *len, const unsigned *offs, const unsigned *sizes,
		   size_t n)
{
	unsigned lo = ~0u, hi = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (offs[i] == OFFCPU_PY_NONE)
			continue;
		if (offs[i] < lo)
			lo = offs[i];
		if (offs[i] + sizes[i] > hi)
			hi = offs[i] + sizes[i];
	}
	lo &= ~7u;
	*base = (uint16_t)lo;
	*len = (uint16_t)(hi - lo);
}

/* @off's place in a window from @base (NONE stays NONE). */
static uint16_t in(unsigned off, uint16_t base)
{
	return off == OFFCPU_PY_NONE ? OFFCPU_PY_NONE : (uint16_t)(off - base);
}

#define LAYOUT(V, TSTATE, CFRAME, FCODE, FPREV, FINSTR, FINSTR_SIZE, FFLAG, FRAMES, CSTACK,      \
	       CINSTR, STAMP, STAMP_STR, QUALNAME)                                                   \
	do {                                                                                         \
		unsigned fo[] = { FCODE, FPREV, FINSTR, FFLAG }, fs[] = { 8, 8, FINSTR_SIZE, 1 };    \
		unsigned co[] = { OFFCPU_PY##V##_CODE_FIRSTLINENO, OFFCPU_PY##V##_CODE_FILENAME,     \
				  QUALNAME, OFFCPU_PY##V##_CODE_LINETABLE },                          \
			 cs[] = { 4, 8, 8, 8 };                                                      \
		*l = (struct offcpu_py_layout){                                                      \
			.minor = minor,                                                              \
			.frames = FRAMES,                                                            \
			.cstack = CSTACK,                                                            \
			.stamp_str = STAMP_STR,                                                      \
			.tstate_frame = TSTATE,                                                      \
			.cframe_frame = CFRAME,                                                      \
			.code_instr = CINSTR,                                                        \
			.code_stamp = STAMP,                                                         \
			.str_state = OFFCPU_PY##V##_STR_STATE,                                       \
			.str_ascii = OFFCPU_PY##V##_STR_ASCII,                                       \
			.str_utf8 = OFFCPU_PY##V##_STR_UTF8,                                         \
			.str_hash = OFFCPU_PY##V##_STR_HASH,                                         \
			.bytes_size = OFFCPU_PY##V##_BYTES_SIZE,                                     \
			.bytes_data = OFFCPU_PY##V##_BYTES_DATA,                                     \
		};                                                                                   \
		window(&l->frame_base, &l->frame_len, fo, fs, 4);                                    \
		l->frame_code = in(FCODE, l->frame_base);                                            \
		l->frame_previous = in(FPREV, l->frame_base);                                        \
		l->frame_instr = in(FINSTR, l->frame_base);                                          \
		l->frame_flag = in(FFLAG, l->frame_base);                                            \
		window(&l->code_base, &l->code_len, co, cs, 4);                                      \
		l->code_firstlineno = in(OFFCPU_PY##V##_CODE_FIRSTLINENO, l->code_base);             \
		l->code_filename = in(OFFCPU_PY##V##_CODE_FILENAME, l->code_base);                   \
		l->code_qualname = in(QUALNAME, l->code_base);                                       \
		l->code_linetable = in(OFFCPU_PY##V##_CODE_LINETABLE, l->code_base);                 \
		*tss = OFFCPU_PY##V##_RUNTIME_TSS;                                                   \
		*str_size = OFFCPU_PY##V##_STR_SIZE;                                                 \
	} while (0)

int pylayout__get(unsigned minor, struct offcpu_py_layout *l, uint32_t *tss, uint32_t *code_size,
		  uint32_t *str_size)
{
	switch (minor) {
	case 10:
		LAYOUT(310, OFFCPU_PY310_TSTATE_FRAME, OFFCPU_PY_NONE, OFFCPU_PY310_FRAME_CODE,
		       OFFCPU_PY310_FRAME_BACK, OFFCPU_PY310_FRAME_LASTI, 4, OFFCPU_PY_NONE,
		       OFFCPU_PY_FRAMES_OWN, 0, OFFCPU_PY_NONE, OFFCPU_PY310_CODE_NAME, 1,
		       OFFCPU_PY310_CODE_NAME);
		*code_size = OFFCPU_PY310_CODE_SIZE;
		return 0;
	case 11:
		LAYOUT(311, OFFCPU_PY311_TSTATE_CFRAME, OFFCPU_PY311_CFRAME_CURRENT,
		       OFFCPU_PY311_FRAME_CODE, OFFCPU_PY311_FRAME_PREVIOUS,
		       OFFCPU_PY311_FRAME_PREV_INSTR, 8, OFFCPU_PY311_FRAME_IS_ENTRY,
		       OFFCPU_PY_FRAMES_IS_ENTRY, 0, OFFCPU_PY311_CODE_CODE, OFFCPU_PY311_CODE_NAME,
		       1, OFFCPU_PY311_CODE_QUALNAME);
		*code_size = OFFCPU_PY311_CODE_CODE;
		return 0;
	case 12:
		LAYOUT(312, OFFCPU_PY312_TSTATE_CFRAME, OFFCPU_PY312_CFRAME_CURRENT,
		       OFFCPU_PY312_FRAME_CODE, OFFCPU_PY312_FRAME_PREVIOUS,
		       OFFCPU_PY312_FRAME_PREV_INSTR, 8, OFFCPU_PY312_FRAME_OWNER,
		       OFFCPU_PY_FRAMES_OWNER, OFFCPU_PY312_OWNED_BY_CSTACK, OFFCPU_PY312_CODE_CODE,
		       OFFCPU_PY312_CODE_VERSION, 0, OFFCPU_PY312_CODE_QUALNAME);
		*code_size = OFFCPU_PY312_CODE_CODE;
		return 0;
	case 13:
		LAYOUT(313, OFFCPU_PY313_TSTATE_FRAME, OFFCPU_PY_NONE, OFFCPU_PY313_FRAME_CODE,
		       OFFCPU_PY313_FRAME_PREVIOUS, OFFCPU_PY313_FRAME_INSTR_PTR, 8,
		       OFFCPU_PY313_FRAME_OWNER, OFFCPU_PY_FRAMES_OWNER, OFFCPU_PY313_OWNED_BY_CSTACK,
		       OFFCPU_PY313_CODE_CODE, OFFCPU_PY313_CODE_VERSION, 0,
		       OFFCPU_PY313_CODE_QUALNAME);
		*code_size = OFFCPU_PY313_CODE_CODE;
		return 0;
	}
	return -ENOENT;
}

_Static_assert(OFFCPU_PY310_FRAME_LASTI + 4 - (OFFCPU_PY310_FRAME_BACK & ~7) <= OFFCPU_PY_FRAME_WIN,
	       "3.10's frame window");
_Static_assert(OFFCPU_PY310_CODE_LINETABLE + 8 - (OFFCPU_PY310_CODE_FIRSTLINENO & ~7) <=
		       OFFCPU_PY_CODE_WIN,
	       "3.10's code window");
_Static_assert(OFFCPU_PY312_CODE_LINETABLE + 8 - (OFFCPU_PY312_CODE_FIRSTLINENO & ~7) <=
		       OFFCPU_PY_CODE_WIN,
	       "3.12's code window");

/* A varint of a 3.11 line table at @p (6 bits a byte, bit 6: more): its value; @p moves past it. */
static unsigned lt_varint(const uint8_t *lt, size_t n, size_t *p)
{
	unsigned v = 0, shift = 0;
	uint8_t b;

	do {
		if (*p >= n || shift > 24)
			return v;
		b = lt[(*p)++];
		v |= (unsigned)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

/*
 * CPython 3.11's line table (Objects/locations.md): entries of a first byte
 * (bit 7 set; bits 3-6 the kind, bits 0-2 the code units covered - 1) and
 * the kind's bytes; kinds 13 and 14 carry the line's change as a signed
 * varint, 10-12 a change of 0-2, 15 has no line, the others keep it.
 */
static int lt_line_311(const uint8_t *lt, size_t n, int first, int lasti)
{
	int line = first, addr = 0;
	size_t p = 0;

	while (p < n) {
		uint8_t b = lt[p++];
		int kind = (b >> 3) & 15, len = (b & 7) + 1;
		unsigned u;

		if (!(b & 0x80))
			continue; /* (not an entry's first byte) */
		if (kind == 13 || kind == 14) {
			u = lt_varint(lt, n, &p);
			line += (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
		} else if (kind >= 10 && kind <= 12) {
			line += kind - 10;
		}
		if (lasti < addr + len)
			return kind == 15 || line <= 0 ? first : line;
		addr += len;
		while (p < n && !(lt[p] & 0x80))
			p++;
	}
	return first;
}

/*
 * CPython 3.10's line table (Objects/lnotab_notes.txt): pairs of a byte
 * count (unsigned) and a line change (signed; -128: the range has no line),
 * each a range of bytecode from the end of the one before; empty ranges
 * only move the line. Offsets are in bytes, two a code unit.
 */
static int lt_line_310(const uint8_t *lt, size_t n, int first, int lasti)
{
	int line = first, end = 0, at = lasti * 2;
	size_t p;

	for (p = 0; p + 1 < n; p += 2) {
		int start = end, delta = (int8_t)lt[p + 1];

		end += lt[p];
		if (delta != -128)
			line += delta;
		if (at >= start && at < end)
			return delta == -128 || line <= 0 ? first : line;
	}
	return first;
}

int pylayout__line(unsigned minor, const uint8_t *lt, size_t n, int first, int lasti)
{
	if (lasti < 0)
		return first;
	return minor == 10 ? lt_line_310(lt, n, first, lasti) : lt_line_311(lt, n, first, lasti);
}
