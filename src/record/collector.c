// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <bpf/btf.h>
#include "collector.h"
#include "record/korc.h"
#include "offcpu.skel.h"
#include "../util/util.h"
#include "../util/hashmap.h"

/* The BPF object walks kernel stacks itself (korc.bpf.h) on x86-64 only. */
#if defined(__x86_64__)
#define OFFCPU_KORC 1
#endif

/*
 * A cached stack: frames innermost first. in_map: the BPF map may hold it
 * (read from it, or used since it was last pruned from it).
 */
struct cached_stack {
	uint32_t nr;
	uint8_t kind; /* 0 user, 1 kernel */
	bool in_map;
	uint64_t id;
	uint64_t ips[];
};

/* Who woke a block, read from the wakeup map. in_map: the map may hold it
 * (read from it, or used since it was last pruned from it). */
struct cached_wakeup {
	uint64_t id;
	bool in_map;
	struct offcpu_wakeup w;
};

struct collector {
	struct offcpu_bpf *skel;
	bool raw_tp;
	/* which of offcpu's own stack walkers the loaded program uses */
	bool korc, user_walker, tables;
	struct collector_unwind_maps unw; /* with tables: the arrays mapped here */
	void *unw_p[3];
	size_t unw_len[3];
	/* the walkers and programs that fell back, and why ("" when none) */
	char fallbacks[768];
	struct ring_buffer *rb;
	struct perf_buffer *pb;
	int (*event_fn)(const struct offcpu_event *e, void *arg);
	void *event_arg;
	int event_err;
	struct hashmap stack_idx; /* (kind, id) -> index into stacks */
	struct cached_stack **stacks;
	size_t nr_stacks, cap_stacks;
	/* stacks used since the last prune: taken out of the BPF maps then */
	size_t *used;
	size_t nr_used, cap_used;
	uint64_t pruned; /* stack map entries deleted */
	int summed_cur; /* the summed map the program adds to: 0 summed_a, 1 summed_b */
	struct hashmap chain_idx; /* --wakers: chain key -> index into chains */
	struct offcpu_chain *chains;
	size_t nr_chains, cap_chains;
	struct hashmap wakeup_idx; /* --wakers: wakeup key -> index into wakeups */
	struct cached_wakeup *wakeups;
	size_t nr_wakeups, cap_wakeups;
	size_t *wused; /* wakeups read or used since the last prune */
	size_t nr_wused, cap_wused;
	uint64_t unknown_wakeups; /* keys naming a waker the map did not hold */
	/* why the kernel's stack size is guessed ("": the program reads it) */
	char stack_guess[160];
};

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
	/* fault injection for the tests: see fault_skip_in in the BPF program */
	if (getenv("OFFCPU_FAULT_SKIP_SWITCH_IN") || getenv("OFFCPU_FAULT_SKIP_SWITCH_OUT"))
		pr_warn("TEST FAULT INJECTION: context switches are ignored on purpose "
			"(OFFCPU_FAULT_SKIP_SWITCH_IN/OUT): this recording is not complete");
	if (getenv("OFFCPU_FAULT_REFUSE")) {
		const char *v = getenv("OFFCPU_FAULT_REFUSE");
		static bool warned;

		if (!warned)
			pr_warn("TEST FAULT INJECTION: the verifier is made to refuse %s "
				"(OFFCPU_FAULT_REFUSE)", v);
		warned = true;
		/* korc, user, tp_btf: the verifier refuses that piece (tests) */
		skel->rodata->fault_refuse = (strstr(v, "korc") ? 1 : 0) | (strstr(v, "user") ? 2 : 0) |
					     (strstr(v, "tp_btf") ? 4 : 0) | (strstr(v, "tables") ? 8 : 0);
	}
	if (getenv("OFFCPU_FAULT_SKIP_SWITCH_IN"))
		skel->rodata->fault_skip_in = (uint32_t)strtoul(getenv("OFFCPU_FAULT_SKIP_SWITCH_IN"), NULL, 10);
	if (getenv("OFFCPU_FAULT_SKIP_SWITCH_OUT"))
		skel->rodata->fault_skip_out = (uint32_t)strtoul(getenv("OFFCPU_FAULT_SKIP_SWITCH_OUT"), NULL, 10);
	skel->rodata->user_walker = user_walker;
	skel->rodata->unwind_tables = user_walker && tables;
	if (getenv("OFFCPU_UNWIND_COPY")) /* bench: bytes of stack copied */
		skel->rodata->unwind_copy = (uint32_t)strtoul(getenv("OFFCPU_UNWIND_COPY"), NULL, 0);
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
	skel->rodata->runq_queued = queued_clock && !(getenv("OFFCPU_TEST_RUNQ") &&
						      !strcmp(getenv("OFFCPU_TEST_RUNQ"), "wakeup"));
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

static int fill_filters(struct collector *c, const struct collector_opts *o)
{
	uint8_t one = OFFCPU_FILTER_ACTIVE;
	size_t i;

	for (i = 0; i < o->nr_tgids; i++)
		if (bpf_map__update_elem(c->skel->maps.tgid_filter, &o->tgids[i], 4, &one, 1, BPF_ANY))
			return -errno;
	for (i = 0; i < o->nr_tids; i++)
		if (bpf_map__update_elem(c->skel->maps.tid_filter, &o->tids[i], 4, &one, 1, BPF_ANY))
			return -errno;
	for (i = 0; i < o->nr_cpus; i++) {
		uint32_t cpu = (uint32_t)o->cpus[i];

		if (bpf_map__update_elem(c->skel->maps.cpu_filter, &cpu, 4, &one, 1, BPF_ANY))
			return -errno;
	}
	if (o->cgroup_fd >= 0) {
		uint32_t zero = 0, fd = (uint32_t)o->cgroup_fd;

		if (bpf_map__update_elem(c->skel->maps.cgroup_filter, &zero, 4, &fd, 4, BPF_ANY))
			return -errno;
	}
	return 0;
}

static int on_ringbuf(void *ctx, void *data, size_t size)
{
	struct collector *c = ctx;

	if (size < sizeof(struct offcpu_event))
		return 0;
	c->event_err = c->event_fn(data, c->event_arg);
	return c->event_err;
}

static void on_perfbuf(void *ctx, int cpu, void *data, __u32 size)
{
	struct collector *c = ctx;

	if (c->event_err || size < sizeof(struct offcpu_event))
		return;
	c->event_err = c->event_fn(data, c->event_arg);
}

static int open_output(struct collector *c, const struct collector_opts *o)
{
	if (o->output_fds) {
		/* the caller owns the events (overwritable rings): just point BPF at them */
		size_t i;

		for (i = 0; i < o->nr_output_fds; i++) {
			uint32_t cpu = (uint32_t)o->output_cpus[i], fd = (uint32_t)o->output_fds[i];

			if (bpf_map__update_elem(c->skel->maps.perf_events, &cpu, 4, &fd, 4, BPF_ANY))
				return -errno;
		}
		return 0;
	}
	if (o->transport == OFFCPU_TRANSPORT_RINGBUF) {
		c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.events), on_ringbuf, c, NULL);
		return c->rb ? 0 : -errno;
	}
	c->pb = perf_buffer__new(bpf_map__fd(c->skel->maps.perf_events),
				 (size_t)(o->buffer_bytes / (uint64_t)sysconf(_SC_PAGESIZE)),
				 on_perfbuf, NULL, c, NULL); /* a full buffer fails the BPF side's output: counted there */
	return c->pb ? 0 : -errno;
}

/* Append one fallback to c->fallbacks. */
static void add_fallback(struct collector *c, const char *what, const char *why)
{
	size_t len = strlen(c->fallbacks);

	snprintf(c->fallbacks + len, sizeof(c->fallbacks) - len, "%s%s (%s)", len ? "; " : "", what,
		 why);
}

/* Log what the kernel's verifier checked of each loaded program. */
static void log_verified(struct collector *c)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, c->skel->obj) {
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
static int try_load1(struct collector *c, const struct collector_opts *o, bool korc,
		     const struct korc_syms *syms, bool user_walker, bool tables, char *cause,
		     size_t len)
{
	int err;

	c->skel = open_skel(o, c->raw_tp, korc, syms, user_walker, tables, c->stack_guess,
			    sizeof(c->stack_guess));
	if (!c->skel) {
		err = -errno;
		snprintf(cause, len, "cannot open the BPF object: %s", strerror(-err));
		return err;
	}
	load_log_reset(true);
	err = offcpu_bpf__load(c->skel);
	if (err)
		load_log_cause(cause, len, strerror(-err));
	load_log_reset(false);
	if (!err)
		return 0;
	offcpu_bpf__destroy(c->skel);
	c->skel = NULL;
	return err;
}

/* One configuration; with the user walker, by tables if asked, else (or if
 * the kernel refuses them) by frame pointers, the fallback named. */
static int try_load(struct collector *c, const struct collector_opts *o, bool korc,
		    const struct korc_syms *syms, bool user_walker, char *cause, size_t len)
{
	char why[320];
	int err;

	c->tables = false;
	if (user_walker && o->unwind_tables && !c->raw_tp) {
		err = try_load1(c, o, korc, syms, true, true, why, sizeof(why));
		if (!err) {
			c->tables = true;
			return 0;
		}
		if (err == -EPERM) {
			snprintf(cause, len, "%s", why);
			return err;
		}
		pr_info("the program did not load with the unwind table walk: %s", why);
		err = try_load1(c, o, korc, syms, true, false, cause, len);
		if (!err) {
			char what[400];

			snprintf(what, sizeof(what), "it did not load: %.320s", why);
			add_fallback(c, "the unwind table walk is off, user stacks follow frame pointers "
					"(--unwind=fp)", what);
		}
		return err;
	}
	return try_load1(c, o, korc, syms, user_walker, false, cause, len);
}

/*
 * Load the collector, giving up as little as a kernel makes necessary: a
 * kernel whose verifier or BTF refuses offcpu's ORC kernel stack walker or
 * its user stack walker loses only that walker (the kernel's helper walks
 * instead); tp_btf is given up for raw_tp (user stacks only) only when it
 * loads with neither. The configurations are tried from the fullest down,
 * and each piece left out is kept in c->fallbacks with the cause that the
 * configuration with only it added back failed with.
 */
static int load(struct collector *c, const struct collector_opts *o, char *msg, size_t len)
{
	struct korc_syms syms = { 0 };
	/* cause[korc][user walker] of each configuration that failed */
	char cause[2][2][320] = { { "", "" }, { "", "" } }, korc_pre[256] = "", why[400];
	bool can_korc = false, can_user = !c->raw_tp && o->user_stacks;
	int err = -EINVAL, k, u, i;

#ifdef OFFCPU_KORC
	if (o->kernel_stacks && !c->raw_tp) {
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
		err = try_load(c, o, k, &syms, u, cause[k][u], sizeof(cause[k][u]));
		if (!err || err == -EPERM)
			break;
		pr_info("the program did not load%s%s: %s", k ? " with the ORC kernel stack walker" : "",
			u && can_user ? (k ? " and the user stack walker" : " with the user stack walker") : "",
			cause[k][u]);
	}
	if (!err) {
		c->korc = k;
		c->user_walker = !c->raw_tp && u;
		if (o->kernel_stacks && !c->raw_tp && !k) {
			if (can_korc)
				snprintf(why, sizeof(why), "it did not load: %.320s", cause[1][u]);
			else
				snprintf(why, sizeof(why), "%s", korc_pre);
#ifdef OFFCPU_KORC
			add_fallback(c, "the ORC kernel stack walker is off, the kernel's helper walks "
					"kernel stacks", why);
#endif
		}
		if (can_user && !u) {
			snprintf(why, sizeof(why), "it did not load: %.320s", cause[k][1]);
			add_fallback(c, "the user stack walker is off, the kernel's helper walks user stacks",
				     why);
		}
		log_verified(c);
		return 0;
	}
	/* what the fullest configuration failed with says the most */
	for (i = 0; i < 4 && !cause[!(i & 1)][!(i & 2)][0]; i++)
		;
	snprintf(why, sizeof(why), "%.320s", i < 4 ? cause[!(i & 1)][!(i & 2)] : strerror(-err));
	if (err == -EPERM || c->raw_tp) {
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
	c->raw_tp = true;
	err = try_load(c, o, false, &syms, true, cause[0][0], sizeof(cause[0][0]));
	if (err) {
		snprintf(msg, len, "failed to load BPF programs: %s%s", cause[0][0],
			 log_verbosity ? "" : " (run with -v for the verifier log)");
		return err;
	}
	add_fallback(c, o->wakers || (o->state_mask & OFFCPU_STATE_MASK(OFFCPU_STATE_R)) ?
				"raw_tp: tp_btf/sched_switch did not load, the kernel's helper walks user "
				"stacks, and wakeups are not seen (no wakers, no run queue split)" :
				"raw_tp: tp_btf/sched_switch did not load, the kernel's helper walks user "
				"stacks", why);
	log_verified(c);
	return 0;
}

/* Map the unwind table arrays into this process: user space fills them in place. */
static int map_unwind(struct collector *c)
{
	struct bpf_map *maps[3] = { c->skel->maps.unw_rows, c->skel->maps.unw_rules,
				    c->skel->maps.unw_objs };
	void **p = c->unw_p;
	int i;

	for (i = 0; i < 3; i++) {
		/* an array's elements are 8-byte aligned: these are 8, 16, 8 bytes */
		size_t pg = (size_t)sysconf(_SC_PAGESIZE);

		c->unw_len[i] = ((size_t)bpf_map__value_size(maps[i]) * bpf_map__max_entries(maps[i]) +
				 pg - 1) / pg * pg;
		p[i] = mmap(NULL, c->unw_len[i], PROT_READ | PROT_WRITE, MAP_SHARED,
			    bpf_map__fd(maps[i]), 0);
		if (p[i] == MAP_FAILED) {
			p[i] = NULL;
			c->unw_len[i] = 0;
			return -errno;
		}
	}
	c->unw = (struct collector_unwind_maps){
		.rows = p[0], .rules = p[1], .objs = p[2],
		.nr_rows = bpf_map__max_entries(maps[0]),
		.nr_rules = bpf_map__max_entries(maps[1]),
		.nr_objs = bpf_map__max_entries(maps[2]),
		.procs_fd = bpf_map__fd(c->skel->maps.unw_procs),
		.req_fd = bpf_map__fd(c->skel->maps.unw_req),
		.verify_fd = bpf_map__fd(c->skel->maps.unw_verify),
		.cache_fd = bpf_map__fd(c->skel->maps.unw_cache),
	};
	return 0;
}

int collector__attach(struct collector *c, char *msg, size_t len)
{
	int err = offcpu_bpf__attach(c->skel);

	if (err)
		snprintf(msg, len, "failed to attach sched_switch: %s", strerror(-err));
	return err;
}

bool collector__unwind_maps(struct collector *c, struct collector_unwind_maps *m)
{
	if (!c->tables || !c->unw.rows)
		return false;
	*m = c->unw;
	return true;
}

struct collector *collector__open(const struct collector_opts *o, char *msg, size_t len)
{
	struct collector *c = calloc(1, sizeof(*c));
	int err;

	if (!c) {
		snprintf(msg, len, "out of memory");
		return NULL;
	}
	libbpf_set_print(libbpf_log);
	c->raw_tp = o->force_raw_tp;
	msg[0] = 0;
	err = load(c, o, msg, len);
	if (err) {
		if (!msg[0])
			snprintf(msg, len, "failed to load BPF programs: %s", strerror(-err));
		goto fail;
	}
	err = c->tables ? map_unwind(c) : 0;
	if (err) {
		snprintf(msg, len, "cannot map the unwind table arrays: %s", strerror(-err));
		goto fail;
	}
	err = fill_filters(c, o);
	if (err) {
		snprintf(msg, len, "failed to fill BPF filter maps: %s", strerror(-err));
		goto fail;
	}
	err = open_output(c, o);
	if (err) {
		snprintf(msg, len, "failed to set up the BPF output buffer: %s", strerror(-err));
		goto fail;
	}
	return c;
fail:
	collector__free(c);
	errno = -err;
	return NULL;
}

int collector__add_workload(struct collector *c, int tgid)
{
	uint8_t at_exec = OFFCPU_FILTER_AT_EXEC;

	if (bpf_map__update_elem(c->skel->maps.tgid_filter, &tgid, 4, &at_exec, 1, BPF_ANY))
		return -errno;
	return 0;
}

bool collector__follows(struct collector *c, int tgid)
{
	uint8_t v = 0;

	return bpf_map__lookup_elem(c->skel->maps.tgid_filter, &tgid, 4, &v, 1, 0) == 0 &&
	       v == OFFCPU_FILTER_ACTIVE;
}

const char *collector__attach_kind(const struct collector *c)
{
	return c->raw_tp ? "raw_tp" : "tp_btf";
}

const char *collector__runq_source(const struct collector *c)
{
	if (!c->skel->rodata->runq_split)
		return NULL;
	return c->skel->rodata->runq_queued ? "the scheduler's enqueue times (sched_info)" :
					      "a sched_waking program's stamps";
}

const char *collector__fallbacks(const struct collector *c)
{
	return c->fallbacks[0] ? c->fallbacks : NULL;
}

void collector__detach(struct collector *c)
{
	if (c && c->skel)
		offcpu_bpf__detach(c->skel);
}

int collector__snaps_fd(const struct collector *c)
{
	return c->skel && !c->raw_tp && c->skel->rodata->snap_start ?
		       bpf_map__fd(c->skel->maps.snaps) : -1;
}

void collector__calibrate(struct collector *c, bool on)
{
	if (c->skel && !c->raw_tp)
		c->skel->bss->calibrate = on;
}

long collector__open_blocks(struct collector *c, enum offcpu_open_mode mode, uint64_t now)
{
	struct bpf_program *prog = c->raw_tp ? c->skel->progs.open_blocks_raw :
					       c->skel->progs.open_blocks;
	struct bpf_link *link;
	char buf[64];
	long n;
	int fd, err = 0;

	c->skel->bss->open_now = now;
	c->skel->bss->open_mode = (uint32_t)mode;
	link = bpf_program__attach_iter(prog, NULL);
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
	} else {
		/* the program prints nothing: reading runs it over every task */
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			;
		if (n < 0)
			err = -errno;
		close(fd);
	}
	bpf_link__destroy(link);
	if (mode == OFFCPU_OPEN_START && c->skel->rodata->record_wakers) {
		uint64_t size = c->skel->bss->thread_size;

		if (size)
			pr_info("kernel stacks are %llu KiB (a task's stack area): a waker on "
				"another stack is an interrupt", (unsigned long long)(size >> 10));
		else
			pr_info("the kernel's stack size is not known (%s): taken as %llu KiB, a "
				"waker beyond it is an interrupt",
				c->stack_guess[0] ? c->stack_guess : "no task had a stack area",
				(unsigned long long)(c->skel->rodata->thread_size_guess >> 10));
	}
	return err;
}

int collector__events_fd(const struct collector *c)
{
	if (c->rb)
		return ring_buffer__epoll_fd(c->rb);
	return c->pb ? perf_buffer__epoll_fd(c->pb) : -1;
}

long collector__consume(struct collector *c, int (*fn)(const struct offcpu_event *e, void *arg),
			void *arg)
{
	long n;

	c->event_fn = fn;
	c->event_arg = arg;
	c->event_err = 0;
	if (!c->rb && !c->pb)
		return 0;
	n = c->rb ? ring_buffer__consume(c->rb) : perf_buffer__consume(c->pb);
	if (c->event_err)
		return c->event_err;
	return n < 0 ? n : (c->rb ? n : 0);
}

long collector__drain(struct collector *c,
		      int (*fn)(const struct offcpu_key *k, const struct offcpu_val *v, void *arg),
		      void *arg)
{
	struct bpf_map *summed = c->summed_cur ? c->skel->maps.summed_b : c->skel->maps.summed_a;
	struct offcpu_key *keys = NULL, next, *prev = NULL;
	struct offcpu_val val;
	size_t nr = 0, cap = 0, i;
	uint32_t zero = 0;
	long n = 0;
	int err = 0, fd;

	/* the program adds to the other map from here on; the update returns
	 * once no run of it can still be adding to this one */
	fd = bpf_map__fd(c->summed_cur ? c->skel->maps.summed_a : c->skel->maps.summed_b);
	if (bpf_map__update_elem(c->skel->maps.summed_sel, &zero, sizeof(zero), &fd, sizeof(fd), 0))
		return -errno;
	c->summed_cur ^= 1;

	/* Collect the keys first: deleting while walking would restart the walk. */
	while (bpf_map__get_next_key(summed, prev, &next, sizeof(next)) == 0) {
		if (grow_array((void **)&keys, &cap, nr + 1, sizeof(*keys))) {
			free(keys);
			return -ENOMEM;
		}
		keys[nr] = next;
		prev = &keys[nr++];
	}
	for (i = 0; i < nr && !err; i++) {
		/* nothing writes this map now: what ends meanwhile is in the other */
		if (bpf_map_lookup_and_delete_elem(bpf_map__fd(summed), &keys[i], &val))
			continue;
		err = fn(&keys[i], &val, arg);
		n++;
	}
	free(keys);
	return err ? err : n;
}

/* Note that stack @idx is in its BPF map until the next prune. */
static void mark_used(struct collector *c, size_t idx)
{
	struct cached_stack *cs = c->stacks[idx];

	if (cs->in_map)
		return;
	if (grow_array((void **)&c->used, &c->cap_used, c->nr_used + 1, sizeof(*c->used)))
		return; /* not pruned: it stays in the map, nothing is lost */
	c->used[c->nr_used++] = idx;
	cs->in_map = true;
}

static uint32_t cached(struct collector *c, int kind, uint64_t id, struct bpf_map *map,
		       const void *key, size_t key_size, const uint64_t **ips)
{
	uint64_t ck[2] = { (uint64_t)kind, id }, *slot, buf[OFFCPU_MAX_STACK_DEPTH];
	struct cached_stack *cs;
	uint32_t nr = 0;
	int created;

	slot = hashmap__upsert(&c->stack_idx, ck, sizeof(ck), &created);
	if (!slot)
		return 0;
	if (!created) {
		/* used again: the program may have stored it again since a prune */
		mark_used(c, *slot);
		cs = c->stacks[*slot];
		*ips = cs->ips;
		return cs->nr;
	}
	if (bpf_map__lookup_elem(map, key, key_size, buf, sizeof(buf), 0) == 0)
		while (nr < OFFCPU_MAX_STACK_DEPTH && buf[nr])
			nr++;
	cs = calloc(1, sizeof(*cs) + nr * sizeof(uint64_t));
	if (!cs)
		return 0;
	cs->nr = nr;
	cs->kind = (uint8_t)kind;
	cs->id = id;
	memcpy(cs->ips, buf, nr * sizeof(uint64_t));
	if (c->nr_stacks == c->cap_stacks) {
		size_t cap = c->cap_stacks ? c->cap_stacks * 2 : 256;
		struct cached_stack **p = realloc(c->stacks, cap * sizeof(*p));

		if (!p) {
			free(cs);
			return 0;
		}
		c->stacks = p;
		c->cap_stacks = cap;
	}
	*slot = c->nr_stacks;
	c->stacks[c->nr_stacks++] = cs;
	mark_used(c, *slot);
	*ips = cs->ips;
	return cs->nr;
}

/*
 * Take the stacks read since the last prune out of the BPF maps: their
 * frames are cached here for good, and a block that uses one again finds it
 * here, or has the program store it again. The maps then hold only what is
 * new since the last flush, however long the recording.
 */
long collector__prune_stacks(struct collector *c)
{
	long n = 0;
	size_t i;

	for (i = 0; i < c->nr_used; i++) {
		struct cached_stack *cs = c->stacks[c->used[i]];
		struct bpf_map *map = cs->kind ? c->skel->maps.kstacks : c->skel->maps.ustacks;

		if (bpf_map__delete_elem(map, &cs->id, sizeof(cs->id), 0) == 0)
			n++;
		cs->in_map = false;
	}
	c->nr_used = 0;
	/* wakers too: cached here by their hash, stored again when seen again */
	for (i = 0; i < c->nr_wused; i++) {
		struct cached_wakeup *cw = &c->wakeups[c->wused[i]];

		bpf_map__delete_elem(c->skel->maps.wakeups, &cw->id, sizeof(cw->id), 0);
		cw->in_map = false;
	}
	c->nr_wused = 0;
	c->pruned += (uint64_t)n;
	return n;
}

uint32_t collector__user_stack(struct collector *c, uint64_t key, const uint64_t **ips)
{
	static const uint64_t unknown = OFFCPU_UNW_MARK_OF(OFFCPU_UNW_BEFORE_START, 0);

	if (!key)
		return 0;
	if (key == OFFCPU_STACK_UNKNOWN) {
		*ips = &unknown; /* a mark frame alone: taken before offcpu ran */
		return 1;
	}
	return cached(c, 0, key, c->skel->maps.ustacks, &key, sizeof(key), ips);
}

uint32_t collector__kernel_stack(struct collector *c, uint64_t key, const uint64_t **ips)
{
	if (!key)
		return 0;
	return cached(c, 1, key, c->skel->maps.kstacks, &key, sizeof(key), ips);
}

const struct offcpu_chain *collector__chain(struct collector *c, uint64_t key)
{
	struct offcpu_chain ch;
	uint64_t *v;
	int created;

	if (!key)
		return NULL;
	v = hashmap__find(&c->chain_idx, &key, sizeof(key));
	if (v)
		return &c->chains[*v];
	/* chains are few and never deleted: the map keeps them too */
	if (bpf_map__lookup_elem(c->skel->maps.chains, &key, sizeof(key), &ch, sizeof(ch), 0))
		return NULL;
	if (grow_array((void **)&c->chains, &c->cap_chains, c->nr_chains + 1, sizeof(*c->chains)))
		return NULL;
	v = hashmap__upsert(&c->chain_idx, &key, sizeof(key), &created);
	if (!v)
		return NULL;
	*v = c->nr_chains;
	c->chains[c->nr_chains] = ch;
	return &c->chains[c->nr_chains++];
}

const struct offcpu_wakeup *collector__wakeup(struct collector *c, uint64_t key)
{
	struct cached_wakeup *cw;
	struct offcpu_wakeup w;
	uint64_t *v;
	int created;

	if (!key)
		return NULL;
	v = hashmap__find(&c->wakeup_idx, &key, sizeof(key));
	if (!v) {
		if (bpf_map__lookup_elem(c->skel->maps.wakeups, &key, sizeof(key), &w, sizeof(w), 0)) {
			c->unknown_wakeups++;
			return NULL;
		}
		if (grow_array((void **)&c->wakeups, &c->cap_wakeups, c->nr_wakeups + 1,
			       sizeof(*c->wakeups)))
			return NULL;
		v = hashmap__upsert(&c->wakeup_idx, &key, sizeof(key), &created);
		if (!v)
			return NULL;
		*v = c->nr_wakeups;
		c->wakeups[c->nr_wakeups++] = (struct cached_wakeup){ .id = key, .w = w };
	}
	cw = &c->wakeups[*v];
	/* read or used again: the program may have stored it again since a prune */
	if (!cw->in_map &&
	    !grow_array((void **)&c->wused, &c->cap_wused, c->nr_wused + 1, sizeof(*c->wused))) {
		c->wused[c->nr_wused++] = *v;
		cw->in_map = true;
	}
	return &cw->w;
}

uint64_t collector__unknown_wakeups(const struct collector *c)
{
	return c->unknown_wakeups;
}

uint64_t collector__distinct_stacks(const struct collector *c)
{
	return c->nr_stacks;
}

uint64_t collector__pruned_stacks(const struct collector *c)
{
	return c->pruned;
}

int collector__counters(struct collector *c, uint64_t *out)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t *vals;
	uint32_t i;
	int k;

	if (ncpus <= 0)
		return -EINVAL;
	vals = calloc((size_t)ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (i = 0; i < OFFCPU_CNT_NR; i++) {
		out[i] = 0;
		if (bpf_map__lookup_elem(c->skel->maps.counters, &i, 4, vals,
					 (size_t)ncpus * sizeof(*vals), 0))
			continue;
		for (k = 0; k < ncpus; k++)
			out[i] += vals[k];
	}
	free(vals);
	return 0;
}

uint64_t collector__prog_misses(struct collector *c)
{
	struct bpf_program *progs[] = { c->skel->progs.on_switch, c->skel->progs.on_switch_raw };
	uint64_t misses = 0;
	size_t i;

	for (i = 0; i < 2; i++) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(progs[i]);

		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
			misses += info.recursion_misses;
	}
	return misses;
}

void collector__free(struct collector *c)
{
	size_t i;

	if (!c)
		return;
	ring_buffer__free(c->rb);
	perf_buffer__free(c->pb);
	for (i = 0; i < 3; i++)
		if (c->unw_p[i])
			munmap(c->unw_p[i], c->unw_len[i]);
	offcpu_bpf__destroy(c->skel);
	for (i = 0; i < c->nr_stacks; i++)
		free(c->stacks[i]);
	free(c->stacks);
	free(c->used);
	hashmap__free(&c->stack_idx);
	hashmap__free(&c->chain_idx);
	free(c->chains);
	hashmap__free(&c->wakeup_idx);
	free(c->wakeups);
	free(c->wused);
	free(c);
}
