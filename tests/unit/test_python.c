// SPDX-License-Identifier: GPL-2.0
/* CPython's layouts and line tables, as offcpu reads them (src/record/pylayout.c). No root needed. */
#include <stdint.h>
#include "unit.h"
#include "record/pylayout.h"

/*
 * The same function compiled by each version (co_firstlineno 2), and the
 * line co_lines() gives each of its code units (-1: none), printed by
 * CPython 3.10.13 and 3.12.1 themselves:
 *
 *   def f(a, b):
 *       x = 0
 *       for i in range(a):
 *           if i % 2:
 *               x += i
 *           else:
 *               x -= b
 *       try:
 *           y = 1 / a
 *       except ZeroDivisionError:
 *           y = 0
 *       return (x,
 *               y)
 */
static const uint8_t lt310[] = { 0x04, 0x01, 0x0c, 0x01, 0x08, 0x01, 0x0a, 0x01, 0x0a, 0x02, 0x02,
				 0x01, 0x0a, 0x01, 0x02, 0x03, 0x02, 0x01, 0x04, 0xff, 0x0c, 0xfe,
				 0x06, 0x01, 0x02, 0x01, 0x02, 0x01, 0x04, 0xff, 0x02, 0xfe };
static const int lines310[] = { 3,  3,  4,  4,  4,  4,  4,  4,  5,  5,  5,  5,  6,  6,  6,  6,
				6,  8,  8,  8,  8,  8,  9,  10, 10, 10, 10, 10, 13, 14, 13, 13,
				11, 11, 11, 11, 11, 11, 12, 12, 12, 13, 14, 13, 13, 11 };
static const uint8_t lt312[] = {
	0x80, 0x00, 0xd8, 0x08, 0x09, 0x80, 0x41, 0xdc, 0x0d, 0x12, 0x90, 0x31, 0x8b, 0x58, 0xf2,
	0x00, 0x04, 0x05, 0x13, 0x88, 0x01, 0xd8, 0x0b, 0x0c, 0x88, 0x71, 0x8a, 0x35, 0xd8, 0x0c,
	0x0d, 0x90, 0x11, 0x89, 0x46, 0x89, 0x41, 0xe0, 0x0c, 0x0d, 0x90, 0x11, 0x89, 0x46, 0x89,
	0x41, 0xf0, 0x09, 0x04, 0x05, 0x13, 0xf0, 0x0a, 0x03, 0x05, 0x0e, 0xd8, 0x0c, 0x0d, 0x90,
	0x01, 0x89, 0x45, 0x88, 0x01, 0xf0, 0x06, 0x00, 0x0d, 0x0e, 0xd8, 0x0c, 0x0d, 0xf0, 0x03,
	0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f, 0xf8, 0xf4, 0x05, 0x00, 0x0c, 0x1d, 0xf2,
	0x00, 0x01, 0x05, 0x0e, 0xd8, 0x0c, 0x0d, 0x89, 0x01, 0xd8, 0x0c, 0x0d, 0xd8, 0x0c, 0x0d,
	0xf0, 0x03, 0x01, 0x0c, 0x0f, 0xf0, 0x00, 0x01, 0x05, 0x0f, 0xf0, 0x05, 0x01, 0x05, 0x0e,
	0xfa
};
static const int lines312[] = { 2,  3,  3,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,  4,
				5,  5,  5,  5,  5,  6,  6,  6,  6,  6,  6,  8,  8,  8,  8,  8,  8,
				4,  9,  10, 10, 10, 10, 10, 13, 14, 13, 13, -1, 11, 11, 11, 11, 11,
				11, 11, 11, 12, 12, 12, 13, 14, 13, 13, 11, -1, -1, -1 };

static void check_lines(unsigned minor, const uint8_t *lt, size_t n, const int *lines, size_t nl)
{
	size_t i;

	for (i = 0; i < nl; i++) {
		int want = lines[i] < 0 ? 2 : lines[i]; /* no line: the first */

		if (pylayout__line(minor, lt, n, 2, (int)i) != want) {
			fprintf(stderr, "  3.%u: code unit %zu: line %d, not %d\n", minor, i,
				pylayout__line(minor, lt, n, 2, (int)i), want);
			unit_failures++;
		}
	}
	/* no instruction yet, past the table, a table cut short: the first line */
	CHECK(pylayout__line(minor, lt, n, 2, -1) == 2);
	CHECK(pylayout__line(minor, lt, n, 2, (int)nl + 100) == 2);
	CHECK(pylayout__line(minor, lt, 0, 2, 5) == 2);
}

static void test_line_tables(void)
{
	check_lines(10, lt310, sizeof(lt310), lines310, sizeof(lines310) / sizeof(lines310[0]));
	check_lines(12, lt312, sizeof(lt312), lines312, sizeof(lines312) / sizeof(lines312[0]));
	/* 3.11 and 3.13 share 3.12's format */
	CHECK(pylayout__line(11, lt312, sizeof(lt312), 2, 22) == 6);
	CHECK(pylayout__line(13, lt312, sizeof(lt312), 2, 22) == 6);
	/* a table whose last entry is cut: what is there is read, never past it */
	CHECK(pylayout__line(12, lt312, 15, 2, 12) == 4);
	CHECK(pylayout__line(10, lt310, 3, 2, 1) == 3);
}

/* every version's windows hold its fields, each read within its window */
static void test_layouts(void)
{
	struct offcpu_py_layout l;
	uint32_t tss, code_size, str_size;
	unsigned minor;

	for (minor = PYLAYOUT_MIN; minor <= PYLAYOUT_MAX; minor++) {
		CHECK(!pylayout__get(minor, &l, &tss, &code_size, &str_size));
		CHECK(l.minor == minor);
		CHECK(l.frame_len > 0 && l.frame_len <= OFFCPU_PY_FRAME_WIN);
		CHECK(l.code_len > 0 && l.code_len <= OFFCPU_PY_CODE_WIN);
		CHECK(l.frame_code + 8 <= l.frame_len && l.frame_previous + 8 <= l.frame_len);
		CHECK(l.frame_instr + (minor == 10 ? 4 : 8) <= l.frame_len);
		CHECK(l.frame_flag == OFFCPU_PY_NONE || l.frame_flag < l.frame_len);
		CHECK(l.code_firstlineno + 4 <= l.code_len && l.code_filename + 8 <= l.code_len &&
		      l.code_qualname + 8 <= l.code_len && l.code_linetable + 8 <= l.code_len);
		CHECK(tss > 0 && code_size > 0 && str_size > 0);
		CHECK((minor == 10) == (l.code_instr == OFFCPU_PY_NONE));
		CHECK((minor >= 12) == (l.frames == OFFCPU_PY_FRAMES_OWNER));
	}
	CHECK(pylayout__get(9, &l, &tss, &code_size, &str_size) < 0);
	CHECK(pylayout__get(14, &l, &tss, &code_size, &str_size) < 0);
	/* what each version checks its object against */
	pylayout__get(11, &l, &tss, &code_size, &str_size);
	CHECK(tss == 592 && code_size == 184 && str_size == 80);
	pylayout__get(13, &l, &tss, &code_size, &str_size);
	CHECK(tss == 2160 && code_size == 200 && str_size == 64 && l.cframe_frame == OFFCPU_PY_NONE);
}

const struct unit_test python_tests[] = {
	{ "python: line tables of 3.10 and 3.11+", test_line_tables },
	{ "python: layouts of 3.10 to 3.13", test_layouts },
	{ 0 },
};
