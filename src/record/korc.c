// SPDX-License-Identifier: GPL-2.0
/*
 * korc.c - user-space side of korc: find the kernel addresses the BPF
 * unwinder needs in /proc/kallsyms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include <bpf/btf.h>
#include "korc.h"
#include "../util/kallsyms.h"

/* sizeof(struct orc_entry) on x86-64 (s16, s16, 16 bits of bitfields, packed) */
#define KORC_ORC_ENTRY_SIZE 6
/* THREAD_SIZE of x86-64 without KASAN; the BPF side checks it per task */
#define KORC_THREAD_SIZE 16384
#define KORC_MAX_SLOTS 127

struct want {
	const char *name;
	size_t off;		/* offsetof(struct korc_syms, field) */
	int required;
};

#define W(n, f, r) { n, __builtin_offsetof(struct korc_syms, f), r }
static const struct want wants[] = {
	W("_stext", stext, 1),
	W("_etext", etext, 1),
	W("__start_orc_unwind_ip", orc_ip_start, 1),
	W("__stop_orc_unwind_ip", orc_ip_stop, 1),
	W("__start_orc_unwind", orc_start, 1),
	W("__stop_orc_unwind", orc_stop, 1),
	W("__sched_text_start", sched_start, 1),
	W("__sched_text_end", sched_end, 1),
	W("__lock_text_start", lock_start, 1),
	W("__lock_text_end", lock_end, 1),
	/* required, but ret_from_fork stands in for it (see below) */
	W("ret_from_fork_asm", ret_from_fork_asm, 0),
	W("return_to_handler", return_to_handler, 0),
	W("arch_rethook_trampoline", rethook_tramp, 0),
	W("__kretprobe_trampoline", kretprobe_tramp, 0),
};
#undef W
#define NWANTS (sizeof(wants) / sizeof(wants[0]))

static int fail(struct korc_syms *out, char *errbuf, size_t errlen, const char *fmt, const char *arg)
{
	memset(out, 0, sizeof(*out));
	if (errbuf && errlen)
		snprintf(errbuf, errlen, fmt, arg);
	return -1;
}

struct kscan {
	struct korc_syms *out;
	int found[NWANTS];
	/* older kernels (6.1) enter a new task at ret_from_fork itself; newer
	 * ones renamed that ret_from_fork_asm, and ret_from_fork is the C
	 * function it calls */
	unsigned long long ret_from_fork;
};

static int scan(const struct ksym_line *l, void *arg)
{
	struct kscan *k = arg;
	const char *name = l->name;
	size_t i;

	if (l->module)
		return 0; /* a module's symbol: never wanted */
	if (name[0] != '_' && name[0] != 'r' && name[0] != 'a')
		return 0; /* no wanted name starts otherwise */
	if (!k->ret_from_fork && strcmp(name, "ret_from_fork") == 0)
		k->ret_from_fork = l->addr;
	for (i = 0; i < NWANTS; i++) {
		if (!k->found[i] && strcmp(name, wants[i].name) == 0) {
			*(__u64 *)((char *)k->out + wants[i].off) = l->addr;
			k->found[i] = 1;
		}
	}
	return 0;
}

int korc_read_syms_err(struct korc_syms *out, uint64_t max_depth, char *errbuf, size_t errlen)
{
	struct kscan k = { .out = out };
	int *found = k.found, e;
	unsigned long long ret_from_fork;
	size_t i;

	memset(out, 0, sizeof(*out));
	e = kallsyms__foreach(NULL, scan, &k);
	if (e < 0)
		return fail(out, errbuf, errlen, "cannot open /proc/kallsyms: %s", strerror(-e));
	ret_from_fork = k.ret_from_fork;

	if (!out->ret_from_fork_asm)
		out->ret_from_fork_asm = ret_from_fork;
	if (!out->ret_from_fork_asm)
		return fail(out, errbuf, errlen, "kallsyms: %s missing or zero (not root, kptr_restrict?)",
			    "ret_from_fork_asm (or ret_from_fork)");
	for (i = 0; i < NWANTS; i++) {
		__u64 v = *(__u64 *)((char *)out + wants[i].off);

		if (wants[i].required && (!found[i] || v == 0))
			return fail(out, errbuf, errlen,
				    "kallsyms: %s missing or zero (not root, kptr_restrict, or no ORC unwinder?)",
				    wants[i].name);
	}
	if (out->etext <= out->stext || out->orc_ip_stop <= out->orc_ip_start ||
	    (out->orc_ip_stop - out->orc_ip_start) % 4 != 0)
		return fail(out, errbuf, errlen, "%s", "kallsyms: inconsistent text/ORC bounds");
	out->nr_orc = (out->orc_ip_stop - out->orc_ip_start) / 4;
	if (out->orc_stop - out->orc_start != out->nr_orc * KORC_ORC_ENTRY_SIZE)
		return fail(out, errbuf, errlen, "%s", "kallsyms: ORC ip and entry tables differ in length");

	/* bpf_get_task_stack() walks at most min(127, perf_event_max_stack) frames */
	out->max_depth = max_depth < KORC_MAX_SLOTS ? max_depth : KORC_MAX_SLOTS;
	out->thread_size = KORC_THREAD_SIZE;
	out->enabled = 1;
	return 0;
}

int korc_check_btf(const char *btf_path, char *errbuf, size_t errlen)
{
	struct btf *btf = btf_path ? btf__parse(btf_path, NULL) : btf__load_vmlinux_btf();
	const struct btf_member *m;
	const struct btf_type *t;
	int id, i, have_signal = 0, have_end = 0, ret = -1;

	if (!btf) {
		snprintf(errbuf, errlen, "cannot read the kernel's BTF");
		return -1;
	}
	id = btf__find_by_name_kind(btf, "orc_entry", BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	if (!t) {
		snprintf(errbuf, errlen, "the kernel's BTF has no struct orc_entry (no ORC unwinder?)");
		goto out;
	}
	for (i = 0, m = btf_members(t); i < btf_vlen(t); i++, m++) {
		const char *name = btf__name_by_offset(btf, m->name_off);

		have_signal |= name && strcmp(name, "signal") == 0;
		have_end |= name && strcmp(name, "end") == 0;
	}
	if (t->size != KORC_ORC_ENTRY_SIZE || have_signal == have_end) {
		snprintf(errbuf, errlen, "struct orc_entry has a layout korc does not know (%u bytes, %s)",
			 t->size, have_signal ? "signal and end" : "neither signal nor end");
		goto out;
	}
	ret = 0;
out:
	btf__free(btf);
	return ret;
}
