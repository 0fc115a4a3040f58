// SPDX-License-Identifier: GPL-2.0
/*
 * Kernel frames' names: kallsyms (the running kernel's, or --kallsyms FILE),
 * read once on first use and checked against the recording's kernel (its
 * build id, and the address of the kernel MMAP's reference symbol).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ksymtab.h"
#include "../util/kallsyms.h"
#include "../util/util.h"

struct ksym {
	uint64_t addr;
	char *name;
	const char *module; /* "[MOD]", NULL for the kernel itself */
};

void ksymtab__init(struct ksymtab *s, const char *kallsyms)
{
	memset(s, 0, sizeof(*s));
	s->kallsyms = kallsyms;
}

void ksymtab__free(struct ksymtab *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		free(s->ksyms[i].name);
	free(s->ksyms);
	for (i = 0; i < s->nr_modules; i++)
		free(s->modules[i]);
	free(s->modules);
}

static void hex(const uint8_t *id, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	out[2 * n] = 0;
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

static const char *module_name(struct ksymtab *s, const char *m)
{
	size_t i;
	char **n;

	for (i = 0; i < s->nr_modules; i++)
		if (!strcmp(s->modules[i], m))
			return s->modules[i];
	n = realloc(s->modules, (s->nr_modules + 1) * sizeof(*n));
	if (!n)
		return NULL;
	s->modules = n;
	if (asprintf(&n[s->nr_modules], "[%s]", m) < 0)
		return NULL;
	return n[s->nr_modules++];
}

struct kload {
	struct ksymtab *s;
	size_t cap;
	bool nonzero;
};

static int add_ksym(const struct ksym_line *l, void *arg)
{
	struct kload *k = arg;
	struct ksymtab *s = k->s;
	char t = l->type;

	if (t != 't' && t != 'T' && t != 'w' && t != 'W')
		return 0;
	if (grow_array((void **)&s->ksyms, &k->cap, s->nr + 1, sizeof(*s->ksyms)))
		return -ENOMEM;
	s->ksyms[s->nr].addr = l->addr;
	s->ksyms[s->nr].name = strdup(l->name);
	s->ksyms[s->nr].module = l->module ? module_name(s, l->module) : NULL;
	if (!s->ksyms[s->nr].name || (l->module && !s->ksyms[s->nr].module))
		return -ENOMEM;
	k->nonzero |= l->addr != 0;
	s->nr++;
	return 0;
}

void ksymtab__ref(struct ksymtab *s, const char *ref_sym, uint64_t ref_addr)
{
	snprintf(s->ref_sym, sizeof(s->ref_sym), "%s", ref_sym);
	s->ref_addr = ref_addr;
}

void ksymtab__build_id(struct ksymtab *s, const uint8_t *id, size_t len)
{
	s->build_id_len = len > sizeof(s->build_id) ? sizeof(s->build_id) : len;
	memcpy(s->build_id, id, s->build_id_len);
}

/*
 * Is the recording's kernel the one whose kallsyms were read? Its build id
 * against the running kernel's (not for --kallsyms FILE: that names the
 * kernel), then the address of the kernel MMAP's reference symbol: another
 * address with the same build id is the same kernel after a reboot (KASLR),
 * relocated; anything else is another kernel, whose frames are not named.
 */
static void check_kernel(struct ksymtab *s, const char *path)
{
	uint8_t id[20];
	int len = s->kallsyms ? -ENOENT : kernel_build_id(id, sizeof(id));
	bool same_id = len > 0 && s->build_id_len == (size_t)len &&
		       !memcmp(id, s->build_id, (size_t)len);
	char a[41], b[41];
	size_t i;

	if (len > 0 && s->build_id_len && !same_id) {
		hex(s->build_id, s->build_id_len, a);
		hex(id, (size_t)len, b);
		pr_warn("kernel build id mismatch: recorded %s, the running kernel has %s; kernel frames "
			"are left unresolved (--kallsyms FILE names the recorded kernel's symbols)", a, b);
		s->other = true;
		return;
	}
	if (!s->ref_sym[0] || !s->ref_addr)
		return;
	for (i = 0; i < s->nr; i++)
		if (!s->ksyms[i].module && !strcmp(s->ksyms[i].name, s->ref_sym))
			break;
	if (i == s->nr || !s->ksyms[i].addr || s->ksyms[i].addr == s->ref_addr)
		return;
	if (same_id) {
		s->shift = (int64_t)(s->ksyms[i].addr - s->ref_addr);
		pr_warn("the kernel was loaded at another address when recorded (KASLR offset: %s at "
			"%#llx then, %#llx in %s); same build id: kernel frames relocated by %+lld",
			s->ref_sym, (unsigned long long)s->ref_addr,
			(unsigned long long)s->ksyms[i].addr, path, (long long)s->shift);
		return;
	}
	pr_warn("kernel KASLR offset mismatch: %s was at %#llx when recorded, at %#llx in %s, and %s; "
		"kernel frames are left unresolved", s->ref_sym, (unsigned long long)s->ref_addr,
		(unsigned long long)s->ksyms[i].addr, path,
		s->kallsyms ? "--kallsyms names no build id" :
		!s->build_id_len ? "the recording has no kernel build id" :
				    "the running kernel's build id is unknown");
	s->other = true;
}

static void load_kallsyms(struct ksymtab *s)
{
	const char *path = s->kallsyms ? s->kallsyms : "/proc/kallsyms";
	struct kload k = { s, 0, false };
	int err;

	s->loaded = true;
	err = kallsyms__foreach(path, add_ksym, &k);
	if (err && err != -ENOMEM) {
		pr_warn("cannot read kernel symbols from %s: %s", path, strerror(-err));
		return;
	}
	if (!k.nonzero && s->nr)
		pr_warn("%s shows no addresses (kptr_restrict): kernel frames stay unresolved", path);
	if (s->nr)
		qsort(s->ksyms, s->nr, sizeof(*s->ksyms), cmp_ksym);
	if (k.nonzero)
		check_kernel(s, path);
}

const char *ksymtab__find(struct ksymtab *s, uint64_t addr, const char **module)
{
	size_t i;

	if (!s->loaded)
		load_kallsyms(s);
	*module = "[kernel.kallsyms]";
	if (s->other)
		return NULL;
	i = last_at_or_below(s->ksyms, s->nr, addr, addr + (uint64_t)s->shift);
	if (i == SIZE_MAX || !s->ksyms[i].addr || (s->shift && s->ksyms[i].module))
		return NULL; /* modules are placed apart from the kernel: not relocated */
	*module = s->ksyms[i].module ? s->ksyms[i].module : "[kernel.kallsyms]";
	return s->ksyms[i].name;
}
