// SPDX-License-Identifier: GPL-2.0
/*
 * Loading the BPF program (loader.h): libbpf's log kept for a refusal's
 * cause, what the program asks of this kernel's types, the skeleton's
 * settings, and the configurations tried from the fullest down.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <bpf/btf.h>
#include "loader.h"
#include "record/korc.h"
#include "offcpu.skel.h"
#include "../util/util.h"

/* The BPF object walks kernel stacks itself (korc.bpf.h) on x86-64 only. */
#if defined(__x86_64__)
#define OFFCPU_KORC 1
#endif

/* Python and JavaScript frames in this load (off for the retries without them: try_load1()) */
static bool load_python = true;
static bool load_js = true;

/*
 * libbpf's warnings while a load is attempted, kept (whatever -v says) so
 * that a fallback can name what made the kernel refuse the program.
 */
static struct {
	bool on;
	char *buf;
	size_t len, cap;
} load_log;

static void load_log_add(const char *fmt, va_list ap)
{
	va_list aq;
	int n;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n <= 0 || load_log.len + (size_t)n + 1 > (4u << 20))
		return; /* verifier logs can be long: the cause is near their end, keep 4 MiB */
	if (load_log.len + (size_t)n + 1 > load_log.cap) {
		size_t cap = (load_log.len + (size_t)n + 1) * 2;
		char *b = realloc(load_log.buf, cap);

		if (!b)
			return;
		load_log.buf = b;
		load_log.cap = cap;
	}
	vsnprintf(load_log.buf + load_log.len, load_log.cap - load_log.len, fmt, ap);
	load_log.len += (size_t)n;
}

/*
 * The cause of the last failed load, in one line: a CO-RE relocation libbpf
 * could not resolve, else the verifier's last word before its statistics,
 * else @dflt.
 */
static void load_log_cause(char *out, size_t len, const char *dflt)
{
	char *p, *line, *prev = NULL, *save = NULL;

	snprintf(out, len, "%s", dflt);
	if (!load_log.buf || !load_log.len)
		return;
	p = strstr(load_log.buf, "failed to resolve CO-RE relocation");
	if (p) {
		snprintf(out, len, "%.*s", (int)strcspn(p, "\n"), p);
		return;
	}
	for (line = strtok_r(load_log.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "processed ", 10) == 0 && prev) {
			snprintf(out, len, "verifier: %s", prev);
			return;
		}
		if (*line && strncmp(line, "verification time", 17) != 0)
			prev = line;
	}
}

static void load_log_reset(bool on)
{
	load_log.on = on;
	load_log.len = 0;
	if (load_log.buf)
		load_log.buf[0] = '\0';
	if (!on) {
		free(load_log.buf);
		load_log.buf = NULL;
		load_log.cap = 0;
	}
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (load_log.on && level == LIBBPF_WARN) {
		va_list aq;

		va_copy(aq, ap);
		load_log_add(fmt, aq);
		va_end(aq);
	}
	if (level == LIBBPF_DEBUG && log_verbosity < 2)
		return 0;
	if (level == LIBBPF_INFO && log_verbosity < 1)
		return 0;
	/* libbpf's warnings (verifier log included) only matter with -v: the
	 * caller reports the failure in one line. */
	if (level == LIBBPF_WARN && log_verbosity < 1)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* Whether struct @sname of @btf has a member @mname. */
static bool btf_has_member(const struct btf *btf, const char *sname, const char *mname)
{
	int id = btf__find_by_name_kind(btf, sname, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_member *m;
	int i;

	if (!t)
		return false;
	for (i = 0, m = btf_members(t); i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), mname))
			return true;
	return false;
}

/*
 * What the program asks of this kernel's types: whether sched_switch passes
 * prev_state (5.18+), and whether a task's run queue wait can be read from
 * the scheduler's own account at its switch-in (CONFIG_SCHED_INFO's
 * sched_info.last_queued, on the clock of the run queue reached through
 * CONFIG_FAIR_GROUP_SCHED's se.cfs_rq->rq).
 */
static void kernel_types(const char *btf_path, bool *prev_state, bool *queued_clock,
			 uint64_t *stack_size, char *stack_why, size_t why_len)
{
	struct btf *btf = btf_path ? btf__parse(btf_path, NULL) : btf__load_vmlinux_btf();
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	const struct btf_type *t;
	bool kasan;
	int id;

	*prev_state = *queued_clock = false;
	/*
	 * A task's kernel stack size (THREAD_SIZE), for telling a wakeup in a
	 * task's context from one in an interrupt's: the program reads it from
	 * a task's stack area (CONFIG_VMAP_STACK, Debian's kernels). Without
	 * one in the kernel's types it is guessed: x86-64 has 4 pages, twice
	 * that with KASAN (whose generic mode, x86-64's only one, gives tasks a
	 * kasan_depth); other architectures have 16 KiB (32 with KASAN) or a
	 * page if larger.
	 */
	*stack_size = 16384;
	snprintf(stack_why, why_len, "its types cannot be read");
	if (!btf)
		return;
	if (!btf_has_member(btf, "task_struct", "stack_vm_area")) {
		kasan = btf_has_member(btf, "task_struct", "kasan_depth");
#if defined(__x86_64__)
		*stack_size = (page << 2) << kasan;
#else
		*stack_size = 16384ULL << kasan;
		if (*stack_size < page)
			*stack_size = page;
#endif
		snprintf(stack_why, why_len, "its types have no stack_vm_area (no VMAP_STACK)%s",
			 kasan ? "; KASAN" : "");
	} else {
		stack_why[0] = '\0';
	}
	id = btf__find_by_name_kind(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	if (t)
		t = btf__type_by_id(btf, t->type); /* pointer */
	if (t && btf_is_ptr(t))
		t = btf__type_by_id(btf, t->type); /* func proto: (void *, preempt, prev, next[, prev_state]) */
	if (t && btf_is_func_proto(t))
		*prev_state = btf_vlen(t) >= 5;
	*queued_clock = btf_has_member(btf, "task_struct", "sched_info") &&
			btf_has_member(btf, "sched_info", "last_queued") &&
			btf_has_member(btf, "sched_entity", "cfs_rq") &&
			btf_has_member(btf, "cfs_rq", "rq") && btf_has_member(btf, "rq", "clock");
	btf__free(btf);
}

/* A number from /proc/sys, or @dflt if it cannot be read. */
static uint64_t sysctl_u64(const char *path, uint64_t dflt)
{
	unsigned long long v;
	FILE *f = fopen(path, "r");

	if (!f)
		return dflt;
	if (fscanf(f, "%llu", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

/* Open the skeleton for one attempt: @raw_tp or tp_btf, with or without the
 * ORC kernel stack walker (@korc, whose addresses are in @syms) and the user
 * stack walker (@user_walker). */
static struct offcpu_bpf *open_skel(const struct collector_opts *o, bool raw_tp, bool korc,
				    const struct korc_syms *syms, bool user_walker, bool tables,
				    char *stack_why, size_t stack_why_len)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = o->btf_path);
	struct offcpu_bpf *skel;
	int ncpus = libbpf_num_possible_cpus();
	bool prev_state, queued_clock;
	uint64_t stack_size;

	skel = offcpu_bpf__open_opts(&oo);
	if (!skel)
		return NULL;
	skel->rodata->filter_tgid = o->filter_tgid || o->nr_tgids > 0;
	skel->rodata->filter_tid = o->nr_tids > 0;
	skel->rodata->filter_cpu = o->nr_cpus > 0;
	skel->rodata->filter_cgroup = o->cgroup_fd >= 0;
	skel->rodata->follow_forks = o->follow_forks;
	skel->rodata->skip_tgid = (uint32_t)getpid(); /* offcpu never records itself */
	skel->bss->open_cgroup_id = o->cgroup_id;
	skel->bss->open_cgroup_level = o->cgroup_level;
	skel->rodata->record_cgroup = o->record_cgroup;
	skel->rodata->user_stacks = o->user_stacks;
	skel->rodata->kernel_stacks = o->kernel_stacks;
	skel->rodata->verify_stacks = o->verify_stacks;
	/* no shortcut for the user stack walk if unreadable */
	skel->rodata->user_min_addr = sysctl_u64("/proc/sys/vm/mmap_min_addr", 0);
	/* the kernel's helpers store at most this many frames (fixed while
	 * anything that takes call chains is loaded, as this is) */
	skel->rodata->user_max_depth = (uint32_t)sysctl_u64("/proc/sys/kernel/perf_event_max_stack",
							    OFFCPU_MAX_STACK_DEPTH);
#ifdef OFFCPU_TEST_HOOKS
	/* fault injection for the tests: see fault_skip_in in the BPF program */
	if (test_hook("FAULT_SKIP_SWITCH_IN") || test_hook("FAULT_SKIP_SWITCH_OUT"))
		pr_warn("TEST FAULT INJECTION: context switches are ignored on purpose "
			"(OFFCPU_FAULT_SKIP_SWITCH_IN/OUT): this recording is not complete");
	if (test_hook("FAULT_REFUSE")) {
		const char *v = test_hook("FAULT_REFUSE");
		static bool warned;

		if (!warned)
			pr_warn("TEST FAULT INJECTION: the verifier is made to refuse %s "
				"(OFFCPU_FAULT_REFUSE)", v);
		warned = true;
		/* korc, user, tp_btf: the verifier refuses that piece (tests) */
		skel->rodata->fault_refuse = (strstr(v, "korc") ? 1 : 0) | (strstr(v, "user") ? 2 : 0) |
					     (strstr(v, "tp_btf") ? 4 : 0) | (strstr(v, "tables") ? 8 : 0);
	}
	if (test_hook("FAULT_SKIP_SWITCH_IN"))
		skel->rodata->fault_skip_in = (uint32_t)strtoul(test_hook("FAULT_SKIP_SWITCH_IN"), NULL, 10);
	if (test_hook("FAULT_SKIP_SWITCH_OUT"))
		skel->rodata->fault_skip_out = (uint32_t)strtoul(test_hook("FAULT_SKIP_SWITCH_OUT"), NULL, 10);
	if (test_hook("UNWIND_COPY")) /* bench: bytes of stack copied */
		skel->rodata->unwind_copy = (uint32_t)strtoul(test_hook("UNWIND_COPY"), NULL, 0);
#endif
	skel->rodata->user_walker = user_walker;
	skel->rodata->unwind_tables = user_walker && tables;
	/* unused maps take one element: the rows are what costs */
	bpf_map__set_max_entries(skel->maps.unw_rows, user_walker && tables ? o->unwind_rows : 1);
	if (!(user_walker && tables)) {
		bpf_map__set_max_entries(skel->maps.unw_rules, 1);
		bpf_map__set_max_entries(skel->maps.unw_objs, 1);
		bpf_map__set_max_entries(skel->maps.unw_procs, 1);
		bpf_map__set_max_entries(skel->maps.unw_req, 1);
		bpf_map__set_max_entries(skel->maps.unw_copy, 1);
		bpf_map__set_max_entries(skel->maps.unw_cache, 1);
	}
	if (!(user_walker && tables && o->verify_stacks))
		bpf_map__set_max_entries(skel->maps.unw_verify, (uint32_t)sysconf(_SC_PAGESIZE));
	skel->rodata->snap_start = skel->rodata->defer_walks =
		user_walker && tables && o->user_space_stacks;
	if (!skel->rodata->snap_start)
		bpf_map__set_max_entries(skel->maps.snaps, (uint32_t)sysconf(_SC_PAGESIZE));
#ifdef OFFCPU_KORC
	if (korc) {
		skel->rodata->korc_syms = *syms;
		/* the ORC cache is per CPU, 16 bytes an entry: 16384 entries a CPU
		 * up to 32 CPUs, then fewer, 8 MiB in all, but 1024 at least */
		skel->rodata->korc_syms.cache_bits = 14;
		while (ncpus > 0 && skel->rodata->korc_syms.cache_bits > 10 &&
		       (16ULL << skel->rodata->korc_syms.cache_bits) * (uint64_t)ncpus > (8ULL << 20))
			skel->rodata->korc_syms.cache_bits--;
		bpf_map__set_max_entries(skel->maps.korc_orc_cache,
					 1u << skel->rodata->korc_syms.cache_bits);
	} else {
		/* walker off (korc_syms.enabled == 0): its cache is not used */
		bpf_map__set_max_entries(skel->maps.korc_orc_cache, 1);
	}
#endif
	skel->rodata->state_mask = o->state_mask;
	kernel_types(o->btf_path, &prev_state, &queued_clock, &stack_size, stack_why,
		     stack_why_len);
	skel->rodata->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	skel->rodata->thread_size_guess = stack_size;
	skel->rodata->has_prev_state = prev_state;
	skel->rodata->thresh_ns = o->thresh_ns;
	skel->rodata->transport = o->transport;
	skel->rodata->wakeup_bytes = o->buffer_bytes / 4;
	if (o->max_entries) {
		bpf_map__set_max_entries(skel->maps.summed_a, o->max_entries);
		bpf_map__set_max_entries(skel->maps.summed_b, o->max_entries);
		bpf_map__set_max_entries(skel->maps.ustacks, o->max_entries);
		bpf_map__set_max_entries(skel->maps.kstacks, o->max_entries);
	}
	if (!o->nr_tgids && !o->filter_tgid && !o->follow_forks)
		bpf_map__set_max_entries(skel->maps.tgid_filter, 1);
	if (!o->nr_tids)
		bpf_map__set_max_entries(skel->maps.tid_filter, 1);
	if (o->transport == OFFCPU_TRANSPORT_RINGBUF)
		bpf_map__set_max_entries(skel->maps.events, (uint32_t)o->buffer_bytes);
	else
		bpf_map__set_max_entries(skel->maps.events, 4096); /* unused */
	if (!o->kernel_stacks)
		bpf_map__set_max_entries(skel->maps.kstacks, 1);
	if (!o->user_stacks)
		bpf_map__set_max_entries(skel->maps.ustacks, 1);
	if (ncpus > 0)
		bpf_map__set_max_entries(skel->maps.cpu_filter, (uint32_t)ncpus);
	/* Python frames (python.bpf.h): with user stacks, on tp_btf, unless --no-python */
	skel->rodata->python_frames = load_python && o->python_frames && o->user_stacks && !raw_tp;
	if (!skel->rodata->python_frames) {
		bpf_map__set_max_entries(skel->maps.py_procs, 1);
		bpf_map__set_max_entries(skel->maps.py_codes, 1);
		bpf_map__set_max_entries(skel->maps.py_events, (uint32_t)sysconf(_SC_PAGESIZE));
	}
	/* JavaScript frames (v8.bpf.h): with the table walk (x86-64), unless --no-js */
#ifdef OFFCPU_KORC
	skel->rodata->js_frames = load_js && o->js_frames && o->user_stacks && user_walker && tables &&
				  !raw_tp;
#endif
	if (!skel->rodata->js_frames) {
		bpf_map__set_max_entries(skel->maps.v8_procs, 1);
		bpf_map__set_max_entries(skel->maps.v8_funcs, 1);
		bpf_map__set_max_entries(skel->maps.v8_cache, 1);
		bpf_map__set_max_entries(skel->maps.v8_events, (uint32_t)sysconf(_SC_PAGESIZE));
	}
	bpf_program__set_autoload(skel->progs.on_switch, !raw_tp);
	bpf_program__set_autoload(skel->progs.on_fork, !raw_tp);
	bpf_program__set_autoload(skel->progs.on_switch_raw, raw_tp);
	bpf_program__set_autoload(skel->progs.on_fork_raw, raw_tp);
	bpf_program__set_autoload(skel->progs.on_exit_raw, raw_tp);
	bpf_program__set_autoload(skel->progs.on_exec, !raw_tp);
	bpf_program__set_autoload(skel->progs.on_exec_raw, raw_tp);
	bpf_program__set_autoload(skel->progs.open_blocks, !raw_tp);
	bpf_program__set_autoload(skel->progs.open_blocks_raw, raw_tp);
	/* wakeups: tp_btf only (task storage); the run queue split with R */
	skel->rodata->runq_split = !raw_tp && (o->state_mask & OFFCPU_STATE_MASK(OFFCPU_STATE_R));
	/* the split from the scheduler's own enqueue time where the kernel's
	 * types allow: no program at each wakeup (OFFCPU_TEST_RUNQ=wakeup
	 * stamps the wakeups instead, for the tests to compare) */
	skel->rodata->runq_queued = queued_clock && !test_hook_is(test_hook("TEST_RUNQ"), "wakeup");
	skel->rodata->record_wakers = !raw_tp && o->wakers;
	bpf_program__set_autoload(skel->progs.on_waking,
				  (skel->rodata->runq_split && !skel->rodata->runq_queued) ||
					  skel->rodata->record_wakers);
	bpf_program__set_autoload(skel->progs.on_softirq_entry, skel->rodata->record_wakers);
	bpf_program__set_autoload(skel->progs.on_softirq_exit, skel->rodata->record_wakers);
	bpf_program__set_autoload(skel->progs.on_hrtimer_entry, skel->rodata->record_wakers);
	bpf_program__set_autoload(skel->progs.on_hrtimer_exit, skel->rodata->record_wakers);
	bpf_program__set_autoload(skel->progs.on_irq_entry, skel->rodata->record_wakers);
	bpf_program__set_autoload(skel->progs.on_irq_exit, skel->rodata->record_wakers);
	/* wait objects (waits.bpf.h): tp_btf only (task registers, typed task pointers) */
	skel->rodata->record_waits = !raw_tp && o->wait_objects;
	skel->rodata->iter_waits = !raw_tp && (o->wait_objects || o->iter_waits);
	if (skel->rodata->record_waits) {
		/* preallocated: a store at a switch-out allocates nothing */
		bpf_map__set_max_entries(skel->maps.waits, o->max_entries ?: 16384);
	} else if (skel->rodata->iter_waits) {
		/* only the iterators store: one object per thread blocked at the start or
		 * the end, allocated as they come rather than held for every recording */
		bpf_map__set_map_flags(skel->maps.waits, BPF_F_NO_PREALLOC);
		bpf_map__set_max_entries(skel->maps.waits, 1 << 17);
	}
	if (!o->wakers)
		bpf_map__set_max_entries(skel->maps.chains, 1);
	else
		bpf_map__set_max_entries(skel->maps.wakeups, o->max_entries ?: 16384);
	if (o->transport == OFFCPU_TRANSPORT_RINGBUF)
		bpf_map__set_max_entries(skel->maps.perf_events, 1);
	if (!raw_tp)
		bpf_map__set_max_entries(skel->maps.tasks, 1); /* task storage instead */
	/* with tables, a fork of a new process forgets mappings left under its id */
	if (!o->follow_forks && !(user_walker && tables && !raw_tp))
		bpf_program__set_autoload(skel->progs.on_fork, false);
	if (!o->follow_forks) {
		bpf_program__set_autoload(skel->progs.on_fork_raw, false);
	}
	/* the unused per-task store of the other path costs nothing but a map */
	return skel;
}

/* Append one fallback to l->fallbacks. */
static void add_fallback(struct loaded *l, const char *what, const char *why)
{
	size_t len = strlen(l->fallbacks);

	snprintf(l->fallbacks + len, sizeof(l->fallbacks) - len, "%s%s (%s)", len ? "; " : "", what,
		 why);
}

/* Log what the kernel's verifier checked of each loaded program. */
static void log_verified(struct loaded *l)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, l->skel->obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
			pr_info("verified %s: %u instructions processed, %u loaded",
				bpf_program__name(p), info.verified_insns,
				info.xlated_prog_len / 8);
	}
}

/* Try to load the skeleton for one configuration; on failure, its cause. */
static int try_load1_as(struct loaded *l, const struct collector_opts *o, bool korc,
			const struct korc_syms *syms, bool user_walker, bool tables, char *cause,
			size_t len)
{
	int err;

	l->skel = open_skel(o, l->raw_tp, korc, syms, user_walker, tables, l->stack_guess,
			    sizeof(l->stack_guess));
	if (!l->skel) {
		err = -errno;
		snprintf(cause, len, "cannot open the BPF object: %s", strerror(-err));
		return err;
	}
	load_log_reset(true);
	err = offcpu_bpf__load(l->skel);
	if (err)
		load_log_cause(cause, len, strerror(-err));
	load_log_reset(false);
	if (!err)
		return 0;
	offcpu_bpf__destroy(l->skel);
	l->skel = NULL;
	return err;
}

/* The same; where it does not load with Python frames, without them (named
 * as a fallback) rather than without anything else. */
static int try_load1(struct loaded *l, const struct collector_opts *o, bool korc,
		     const struct korc_syms *syms, bool user_walker, bool tables, char *cause,
		     size_t len)
{
	char what[400];
	int err;

	load_python = load_js = true;
	err = try_load1_as(l, o, korc, syms, user_walker, tables, cause, len);
	if (!err || err == -EPERM || !o->user_stacks || l->raw_tp)
		return err;
	if (o->js_frames && user_walker && tables) {
		snprintf(what, sizeof(what), "it did not load: %.320s", cause);
		load_js = false;
		err = try_load1_as(l, o, korc, syms, user_walker, tables, cause, len);
		if (!err) {
			load_js = true;
			add_fallback(l, "JavaScript frames are off", what);
			return 0;
		}
		if (err == -EPERM) {
			load_js = true;
			return err;
		}
	}
	if (!o->python_frames) {
		load_js = true;
		return err;
	}
	snprintf(what, sizeof(what), "it did not load: %.320s", cause);
	load_python = false;
	err = try_load1_as(l, o, korc, syms, user_walker, tables, cause, len);
	load_python = load_js = true;
	if (!err)
		add_fallback(l, o->js_frames && user_walker && tables ?
				     "Python and JavaScript frames are off" : "Python frames are off",
			     what);
	return err;
}

/* One configuration; with the user walker, by tables if asked, else (or if
 * the kernel refuses them) by frame pointers, the fallback named. */
static int try_load(struct loaded *l, const struct collector_opts *o, bool korc,
		    const struct korc_syms *syms, bool user_walker, char *cause, size_t len)
{
	char why[320];
	int err;

	l->tables = false;
	if (user_walker && o->unwind_tables && !l->raw_tp) {
		err = try_load1(l, o, korc, syms, true, true, why, sizeof(why));
		if (!err) {
			l->tables = true;
			return 0;
		}
		if (err == -EPERM) {
			snprintf(cause, len, "%s", why);
			return err;
		}
		pr_info("the program did not load with the unwind table walk: %s", why);
		err = try_load1(l, o, korc, syms, true, false, cause, len);
		if (!err) {
			char what[400];

			snprintf(what, sizeof(what), "it did not load: %.320s", why);
			add_fallback(l, "the unwind table walk is off, user stacks follow frame pointers "
					"(--unwind=fp)", what);
		}
		return err;
	}
	return try_load1(l, o, korc, syms, user_walker, false, cause, len);
}

/*
 * Load the program, giving up as little as a kernel makes necessary: a
 * kernel whose verifier or BTF refuses offcpu's ORC kernel stack walker or
 * its user stack walker loses only that walker (the kernel's helper walks
 * instead); tp_btf is given up for raw_tp (user stacks only) only when it
 * loads with neither. The configurations are tried from the fullest down,
 * and each piece left out is kept in l->fallbacks with the cause that the
 * configuration with only it added back failed with.
 */
static int load(struct loaded *l, const struct collector_opts *o, char *msg, size_t len)
{
	struct korc_syms syms = { 0 };
	/* cause[korc][user walker] of each configuration that failed */
	char cause[2][2][320] = { { "", "" }, { "", "" } }, korc_pre[256] = "", why[400];
	bool can_korc = false, can_user = !l->raw_tp && o->user_stacks;
	int err = -EINVAL, k, u, i;

#ifdef OFFCPU_KORC
	if (o->kernel_stacks && !l->raw_tp) {
		uint64_t depth = sysctl_u64("/proc/sys/kernel/perf_event_max_stack",
					    OFFCPU_MAX_STACK_DEPTH);

		/* without the kernel's addresses or a known orc_entry layout
		 * every kernel stack is the helper's */
		if (korc_check_btf(o->btf_path, korc_pre, sizeof(korc_pre)) == 0 &&
		    korc_read_syms_err(&syms, depth, korc_pre, sizeof(korc_pre)) == 0)
			can_korc = true;
	}
#else
	if (o->kernel_stacks)
		pr_info("kernel stacks are walked by the kernel's helper (no BPF walker for this architecture)");
#endif
	/* (korc, user walker): both, without korc, without the user walker, neither */
	for (i = 0; i < 4; i++) {
		k = !(i & 1);
		u = !(i & 2);
		if ((k && !can_korc) || (!u && !can_user) || (!k && !u && !can_korc && !can_user))
			continue;
		err = try_load(l, o, k, &syms, u, cause[k][u], sizeof(cause[k][u]));
		if (!err || err == -EPERM)
			break;
		pr_info("the program did not load%s%s: %s", k ? " with the ORC kernel stack walker" : "",
			u && can_user ? (k ? " and the user stack walker" : " with the user stack walker") : "",
			cause[k][u]);
	}
	if (!err) {
		l->korc = k;
		l->user_walker = !l->raw_tp && u;
		if (o->kernel_stacks && !l->raw_tp && !k) {
			if (can_korc)
				snprintf(why, sizeof(why), "it did not load: %.320s", cause[1][u]);
			else
				snprintf(why, sizeof(why), "%s", korc_pre);
#ifdef OFFCPU_KORC
			add_fallback(l, "the ORC kernel stack walker is off, the kernel's helper walks "
					"kernel stacks", why);
#endif
		}
		if (can_user && !u) {
			snprintf(why, sizeof(why), "it did not load: %.320s", cause[k][1]);
			add_fallback(l, "the user stack walker is off, the kernel's helper walks user stacks",
				     why);
		}
		log_verified(l);
		return 0;
	}
	/* what the fullest configuration failed with says the most */
	for (i = 0; i < 4 && !cause[!(i & 1)][!(i & 2)][0]; i++)
		;
	snprintf(why, sizeof(why), "%.320s", i < 4 ? cause[!(i & 1)][!(i & 2)] : strerror(-err));
	if (err == -EPERM || l->raw_tp) {
		snprintf(msg, len, "failed to load BPF programs: %s%s", why,
			 log_verbosity ? "" : " (run with -v for the verifier log)");
		return err;
	}
	if (o->kernel_stacks) {
		/* the raw_tp fallback cannot read kernel stacks: never drop them silently */
		snprintf(msg, len, "kernel stacks need tp_btf/sched_switch, which did not load: %s%s",
			 why, log_verbosity ? "" : " (run with -v for the verifier log)");
		return err;
	}
	pr_info("tp_btf/sched_switch did not load (%s); falling back to raw_tp", why);
	l->raw_tp = true;
	err = try_load(l, o, false, &syms, true, cause[0][0], sizeof(cause[0][0]));
	if (err) {
		snprintf(msg, len, "failed to load BPF programs: %s%s", cause[0][0],
			 log_verbosity ? "" : " (run with -v for the verifier log)");
		return err;
	}
	add_fallback(l, o->wakers || (o->state_mask & OFFCPU_STATE_MASK(OFFCPU_STATE_R)) ?
				(o->wait_objects ?
					 "raw_tp: tp_btf/sched_switch did not load, the kernel's helper "
					 "walks user stacks, wakeups are not seen (no wakers, no run "
					 "queue split), and no wait object is read" :
					 "raw_tp: tp_btf/sched_switch did not load, the kernel's helper "
					 "walks user stacks, and wakeups are not seen (no wakers, no run "
					 "queue split)") :
			     o->wait_objects ?
				"raw_tp: tp_btf/sched_switch did not load, the kernel's helper walks user "
				"stacks, and no wait object is read" :
				"raw_tp: tp_btf/sched_switch did not load, the kernel's helper walks user "
				"stacks", why);
	log_verified(l);
	return 0;
}

int loader__load(struct loaded *l, const struct collector_opts *o, char *msg, size_t len)
{
	int err;

	libbpf_set_print(libbpf_log);
	l->skel = NULL;
	l->korc = l->user_walker = l->tables = false;
	l->fallbacks[0] = l->stack_guess[0] = msg[0] = '\0';
	err = load(l, o, msg, len);
	if (err && !msg[0])
		snprintf(msg, len, "failed to load BPF programs: %s", strerror(-err));
	return err;
}
