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
		followable += r->cfa != OFFCPU_UNW_CFA_NONE;
	}
	CHECK(outermost > 0); /* clone3, start_thread: the walk's natural end */
	CHECK(followable * 100 > t.nr * 85); /* the rest: gaps between functions */
	CHECK(t.unsupported * 1000 < t.nr); /* signal trampolines and the like */
	unwind_table__free(&t);
	CHECK(unwind_table__build(&t, &rs, "/nonexistent", err, sizeof(err)) == -ENOENT);
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
	CHECK(unwind_table__build(&t, &rs, info.dli_fname, err, sizeof(err)) == 0);
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
		CHECK(unwind_table__build(&t, &rs, info.dli_fname, err, sizeof(err)) == 0);
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
		CHECK(unwind_table__build_mem(&t, &rs, (const void *)vdso, v.end - v.start, "[vdso]", err,
					      sizeof(err)) == 0);
		CHECK(t.fdes > 0 && t.nr > 0);
		CHECK(unwind_table__bias(&t, v.start, 0, &bias) == 0 && bias == vdso);
		unwind_table__free(&t);
	}
	CHECK(unwind_table__build_mem(&t, &rs, "not an elf", 10, "junk", err, sizeof(err)) < 0);
	unwind_rules__free(&rs);
}

const struct unit_test unwind_tests[] = {
	{ "unwind: the signal trampoline's rule", test_signal_frame },
	{ "unwind: a mapping's bias, the vDSO's table", test_bias_and_vdso },
	{ "unwind: the unit binary's own table", test_own_binary },
	{ "unwind: libc's table", test_libc },
	{ 0 },
};
