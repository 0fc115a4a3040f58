// SPDX-License-Identifier: GPL-2.0
/* Unwind tables from .eh_frame (issue 13, first piece). No root needed. */
#include <errno.h>
#include <dlfcn.h>
#include <stdlib.h>
#include "unit.h"
#include "unwind/tables.h"

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
	CHECK(unwind_table__build(&t, &rs, "/proc/self/exe", err, sizeof(err)) == 0);
	/* a PIE's ELF addresses start at 0: the load base is all there is to take away */
	vaddr = (uint64_t)(uintptr_t)unwind_test_leaf - (uint64_t)(uintptr_t)info.dli_fbase;
	row = unwind_table__find(&t, vaddr);
	CHECK(row != NULL);
	if (row) {
		r = &rs.v[row->rule];
		/* at a function's first instruction the CFA is rsp + 8, rbp untouched */
		CHECK(r->cfa == UNWIND_CFA_RSP && r->cfa_off == 8 && r->rbp == UNWIND_RBP_SAME &&
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
		e = unwind_table__build(&t, &rs, paths[i], err, sizeof(err));
	CHECK(e == 0);
	if (e) {
		fprintf(stderr, "  %s\n", err);
		unwind_rules__free(&rs);
		return;
	}
	CHECK(t.fdes > 1000);
	CHECK(rs.nr < 2000); /* a few hundred distinct rules (302 counted by hand) */
	for (i = 0; i < t.nr; i++) {
		const struct unwind_rule *r = &rs.v[t.rows[i].rule];

		outermost += r->outermost;
		followable += r->cfa != UNWIND_CFA_NONE;
	}
	CHECK(outermost > 0); /* clone3, start_thread: the walk's natural end */
	CHECK(followable * 100 > t.nr * 85); /* the rest: gaps between functions */
	CHECK(t.unsupported * 1000 < t.nr); /* signal trampolines and the like */
	unwind_table__free(&t);
	CHECK(unwind_table__build(&t, &rs, "/nonexistent", err, sizeof(err)) == -ENOENT);
	unwind_rules__free(&rs);
}

const struct unit_test unwind_tests[] = {
	{ "unwind: the unit binary's own table", test_own_binary },
	{ "unwind: libc's table", test_libc },
	{ 0 },
};
