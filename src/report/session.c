// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include "session.h"
#include "../perfdata/wakers.h"
#include "../offcpu.h"
#include "../perfdata/queue.h"
#include "../perfdata/reader.h"
#include "../unwind/oracle.h"
#include "../util/procmaps.h"
#include "../util/util.h"

#define MAX_FRAMES 512 /* resolved frames per sample, inlined ones included */
#define MAX_INLINE 8
#define MAX_DWARF_FRAMES 256 /* user frames unwound from a sample's stack copy */
/* x86-64 perf_regs numbers: the registers the unwinder starts from */
#define PERF_REG_BP 6
#define PERF_REG_SP 7
#define PERF_REG_IP 8

/*
 * A thread waiting when the recording began (its offcpu-before sample), and
 * its offcpu-time samples since, whatever the filters: what became of that
 * wait is told from them once the file is read (finish_befores()).
 */
struct before_track {
	uint32_t pid, tid;
	uint32_t shown; /* index into profile.befores; UINT32_MAX: the filters left it out */
	uint64_t start; /* the recording's start: the sample's time */
	bool gone; /* its thread id was given to a new thread: later samples are not its */
	bool exited; /* its thread exited during the recording */
	bool mark; /* a sample of it ends in the mark of a stack taken before offcpu ran */
	uint64_t mark_sum; /* their periods */
	uint64_t sum, first, last; /* its offcpu-time samples after the start: periods, times */
	uint32_t waits; /* of them, the ones of a wait, not of a run queue */
	uint64_t group_time, group_sum; /* its samples at one time: a block, its run queue part */
	uint64_t ended; /* when a block streamed as it ended began at the start; 0: none did */
};

/* What a mapping's object number stands for here: a symbolizer dso and a profile dso. */
struct mapobj {
	struct sym_dso *sd;
	uint32_t dso;
};

struct session {
	const struct session_opts *o;
	struct profile *p;
	struct perf_reader *r;
	struct symbolizer *sym;
	struct hashmap comm_of; /* tid -> strtab index */
	struct hashmap exe_of; /* pid -> profile dso of its executable, UINT64_MAX: none yet */
	struct procmaps maps;
	struct hashmap obj_of; /* mapobj -> index into objs */
	struct mapobj *objs;
	size_t nr_objs, cap_objs;
	struct hashmap build_ids; /* path -> index into bids */
	uint8_t (*bids)[21]; /* [0] = length */
	size_t nr_bids;
	struct hashmap chain_row; /* raw chain key -> row */
	struct hashmap addr_frames; /* (sym_dso, offset) -> packed (first << 8 | n) */
	uint32_t *cached;
	size_t nr_cached, cap_cached;
	uint64_t *key;
	size_t key_cap;
	uint32_t frames[MAX_FRAMES];
	uint32_t unknown;
	struct perf_queue queue; /* records waiting for their round to end */
	uint64_t round_max, prev_round_max;
	/* samples with user registers and a stack copy (perf record --call-graph dwarf) */
	struct unwind_oracle *oracle;
	struct hashmap oracle_gen; /* pid -> generation of the mappings the oracle has */
	uint64_t *dwarf_ips; /* the sample's call chain, then its unwound user frames */
	size_t dwarf_cap;
	/* the offcpu-time sample just read, for the offcpu-waker sample that follows it */
	bool last_ok;
	uint32_t last_row; /* UINT32_MAX: filtered out */
	uint32_t last_tid;
	uint64_t last_time, last_period;
	struct hashmap waker_stacks; /* (pid, mappings, call chain) -> waker stack */
	/* threads waiting when the recording began: tid -> index into tracks */
	struct hashmap track_idx;
	struct before_track *tracks;
	size_t nr_tracks, cap_tracks;
	uint64_t offcpu_last; /* the newest offcpu-time sample: the last drain of summed blocks */
};

static uint32_t comm_for(struct session *s, uint32_t pid, uint32_t tid)
{
	uint64_t *v = hashmap__find(&s->comm_of, &tid, sizeof(tid));
	char buf[24];

	if (!v)
		v = hashmap__find(&s->comm_of, &pid, sizeof(pid));
	if (v)
		return (uint32_t)*v;
	snprintf(buf, sizeof(buf), ":%u", tid);
	return strtab__add(&s->p->str, buf);
}

static int set_comm(struct session *s, uint32_t tid, uint32_t comm)
{
	int created;
	uint64_t *v = hashmap__upsert(&s->comm_of, &tid, sizeof(tid), &created);

	if (!v || comm == UINT32_MAX)
		return -ENOMEM;
	*v = comm;
	return 0;
}

/*
 * A process's executable is its first file mapping since its exec (the
 * kernel maps the program before its interpreter; /proc lists it first).
 * Set @dso (UINT32_MAX: forget) when @only_if_none is false or none is known.
 */
static int set_exe(struct session *s, uint32_t pid, uint32_t dso, bool only_if_none)
{
	int created;
	uint64_t *v = hashmap__upsert(&s->exe_of, &pid, sizeof(pid), &created);

	if (!v)
		return -ENOMEM;
	if (created || !only_if_none || *v == UINT64_MAX)
		*v = dso == UINT32_MAX ? UINT64_MAX : dso;
	return 0;
}

static uint32_t exe_for(struct session *s, uint32_t pid)
{
	uint64_t *v = hashmap__find(&s->exe_of, &pid, sizeof(pid));

	return v && *v != UINT64_MAX ? (uint32_t)*v : UINT32_MAX;
}

/* The object number of (@sd, @dso) for procmaps, or -ENOMEM. */
static long mapobj(struct session *s, struct sym_dso *sd, uint32_t dso)
{
	struct mapobj o = { sd, dso };
	int created;
	uint64_t *v = hashmap__upsert(&s->obj_of, &o, sizeof(o), &created);

	if (!v)
		return -ENOMEM;
	if (created) {
		if (grow_array((void **)&s->objs, &s->cap_objs, s->nr_objs + 1, sizeof(*s->objs)))
			return -ENOMEM;
		s->objs[s->nr_objs] = o;
		*v = s->nr_objs++;
	}
	return (long)*v;
}

static void note_build_id(struct session *s, const char *path, const uint8_t *id, size_t len)
{
	int created;
	uint64_t *v;

	if (!len || len > 20)
		return;
	if (!strcmp(path, "[kernel.kallsyms]"))
		symbolizer__kernel_build_id(s->sym, id, len);
	v = hashmap__upsert(&s->build_ids, path, strlen(path), &created);
	if (!v)
		return;
	if (created) {
		uint8_t (*n)[21] = realloc(s->bids, (s->nr_bids + 1) * sizeof(*n));

		if (!n)
			return;
		s->bids = n;
		*v = s->nr_bids++;
	}
	s->bids[*v][0] = (uint8_t)len;
	memcpy(&s->bids[*v][1], id, len);
}

/* BUILD_ID feature or HEADER_BUILD_ID records: entries with a header and a file name. */
static void parse_build_ids(struct session *s, const uint8_t *p, size_t size)
{
	size_t off = 0;

	while (size - off >= sizeof(struct perf_build_id_entry)) {
		struct perf_build_id_entry e;
		size_t len;
		const char *name;

		memcpy(&e, p + off, sizeof(e));
		if (e.header.size <= sizeof(e) || e.header.size > size - off)
			break;
		name = (const char *)p + off + sizeof(e);
		len = e.header.size - sizeof(e);
		if (memchr(name, 0, len)) {
			size_t idlen = (e.header.misc & PERF_RECORD_MISC_BUILD_ID_SIZE_FLAG) ? e.size : 20;

			if (idlen <= 20)
				note_build_id(s, name, e.build_id, idlen);
		}
		off += e.header.size;
	}
}

static int on_mmap(struct session *s, const struct perf_event_header *h)
{
	struct perf_record_mmap2 m2;
	uint32_t pid, prot = PROT_EXEC;
	uint64_t addr, len, pgoff;
	const uint8_t *bid = NULL;
	size_t bid_len = 0;
	const char *fn;
	struct sym_dso *sd;
	uint32_t dso;
	long obj;
	uint64_t *v;

	if (h->type == PERF_RECORD_MMAP2) {
		fn = perf_record__name(h, sizeof(m2));
		if (!fn || !perf_record__copy(h, &m2, sizeof(m2)))
			return 0;
	} else {
		fn = perf_record__name(h, sizeof(struct perf_record_mmap));
		if (!fn || !perf_record__copy(h, &m2, sizeof(struct perf_record_mmap)))
			return 0;
	}
	pid = m2.pid;
	addr = m2.start;
	len = m2.len;
	pgoff = m2.pgoff;
	if (h->type == PERF_RECORD_MMAP2) {
		prot = m2.prot;
		if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			bid_len = m2.build_id_size > 20 ? 20 : m2.build_id_size;
			bid = (const uint8_t *)h + offsetof(struct perf_record_mmap2, build_id);
		}
		if (prot && !(prot & PROT_EXEC))
			return 0;
	} else if (h->misc & PERF_RECORD_MISC_MMAP_DATA) {
		return 0;
	}
	if (pid == UINT32_MAX || (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
					 PERF_RECORD_MISC_KERNEL) {
		/* kernel and modules: kallsyms resolves those, once checked against this */
		if (pid == UINT32_MAX && !strncmp(fn, "[kernel.kallsyms]", 17) && fn[17])
			symbolizer__kernel_mmap(s->sym, fn + 17, pgoff);
		return 0;
	}
	if (!len || addr + len < addr)
		return 0;
	if (!bid_len && (v = hashmap__find(&s->build_ids, fn, strlen(fn)))) {
		bid_len = s->bids[*v][0];
		bid = &s->bids[*v][1];
	}
	sd = symbolizer__dso(s->sym, fn, bid, bid_len);
	dso = profile__dso(s->p, fn, bid, bid_len, false);
	if (!sd || dso == UINT32_MAX)
		return -ENOMEM;
	obj = mapobj(s, sd, dso);
	if (obj < 0)
		return (int)obj;
	if (fn[0] == '/' && fn[1] != '/' && strncmp(fn, "/memfd:", 7) &&
	    set_exe(s, pid, dso, true)) /* not //anon, memfd code */
		return -ENOMEM;
	return procmaps__map(&s->maps, pid, addr, len, pgoff, (uint32_t)obj);
}

static int on_fork(struct session *s, const struct perf_event_header *h)
{
	struct perf_record_task t;
	uint32_t pid, ppid, tid, ptid;
	uint64_t *v;

	if (!perf_record__copy(h, &t, sizeof(t)))
		return 0;
	pid = t.pid;
	ppid = t.ppid;
	tid = t.tid;
	ptid = t.ptid;
	/* a waiting thread's id given to a new thread: its samples are the new one's */
	v = s->nr_tracks ? hashmap__find(&s->track_idx, &tid, sizeof(tid)) : NULL;
	if (v && t.time > s->tracks[*v].start)
		s->tracks[*v].gone = true;
	v = hashmap__find(&s->comm_of, &ptid, sizeof(ptid));
	if (v && set_comm(s, tid, (uint32_t)*v))
		return -ENOMEM;
	if (pid != ppid && set_exe(s, pid, exe_for(s, ppid), false))
		return -ENOMEM;
	/* a new process starts with a copy of its parent's mappings */
	return procmaps__fork(&s->maps, ppid, pid);
}

/* A waiting thread that exits was not waiting at the recording's end. */
static void on_exit_record(struct session *s, const struct perf_event_header *h)
{
	struct perf_record_task t;
	uint64_t *v;

	if (!s->nr_tracks || !perf_record__copy(h, &t, sizeof(t)))
		return;
	v = hashmap__find(&s->track_idx, &t.tid, sizeof(t.tid));
	if (v && t.pid == s->tracks[*v].pid && t.time > s->tracks[*v].start)
		s->tracks[*v].exited = true;
}

static bool in_list(const int *l, size_t n, uint32_t v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((uint32_t)l[i] == v)
			return true;
	return false;
}

/* Resolve one address to frames (innermost first) into @out; returns how many. */
static int resolve_addr(struct session *s, const struct addrspace *as, uint8_t ctx, uint64_t addr,
			bool ret, uint32_t *out, int max)
{
	struct profile_frame f = { 0 };
	struct sym_frame sf[MAX_INLINE];
	int n, i;

	if (ctx == PERF_RECORD_MISC_KERNEL) {
		const char *mod, *name = symbolizer__kernel(s->sym, addr, &mod);

		f.kernel = true;
		f.dso = profile__dso(s->p, mod, NULL, 0, true);
		f.sym = name ? strtab__add(&s->p->str, name) : s->unknown;
		f.addr = addr;
		out[0] = profile__frame(s->p, &f);
		return out[0] == UINT32_MAX ? -ENOMEM : 1;
	}
	{
		const struct vmap *vm = addrspace__find(as, addr);
		const struct mapobj *m = vm ? &s->objs[vm->obj] : NULL;
		uint64_t off, key[2], *v;
		int created;

		if (!m) {
			f.dso = UINT32_MAX;
			f.sym = s->unknown;
			out[0] = profile__frame(s->p, &f);
			return out[0] == UINT32_MAX ? -ENOMEM : 1;
		}
		off = addr - vm->start + vm->pgoff;
		key[0] = vm->obj;
		key[1] = off | ((uint64_t)ret << 63);
		v = hashmap__upsert(&s->addr_frames, key, sizeof(key), &created);
		if (!v)
			return -ENOMEM;
		if (!created) {
			n = (int)(*v & 0xff);
			if (n > max)
				n = max;
			memcpy(out, s->cached + (*v >> 8), n * sizeof(*out));
			return n;
		}
		n = sym_dso__resolve(s->sym, m->sd, off, ret, sf, MAX_INLINE);
		f.dso = m->dso;
		f.addr = off;
		if (s->p->dsos[m->dso].max_addr < off)
			s->p->dsos[m->dso].max_addr = off;
		if (n == 0) {
			f.sym = s->unknown;
			out[0] = profile__frame(s->p, &f);
			n = 1;
		} else {
			for (i = 0; i < n && i < max; i++) {
				f.sym = strtab__add(&s->p->str, sf[i].name);
				f.file = sf[i].file ? strtab__add(&s->p->str, sf[i].file) : 0;
				f.line = sf[i].line;
				f.inlined = sf[i].inlined;
				out[i] = profile__frame(s->p, &f);
				if (out[i] == UINT32_MAX || f.sym == UINT32_MAX)
					return -ENOMEM;
			}
			n = i;
		}
		if (s->nr_cached + (size_t)n > s->cap_cached) {
			size_t c = s->cap_cached ? s->cap_cached * 2 : 1024;
			uint32_t *nc;

			while (c < s->nr_cached + (size_t)n)
				c *= 2;
			nc = realloc(s->cached, c * sizeof(*nc));
			if (!nc)
				return -ENOMEM;
			s->cached = nc;
			s->cap_cached = c;
		}
		memcpy(s->cached + s->nr_cached, out, n * sizeof(*out));
		*v = ((uint64_t)s->nr_cached << 8) | (uint64_t)n;
		s->nr_cached += (size_t)n;
		return n;
	}
}

/*
 * The frame that ends a user stack offcpu's table walk did not complete
 * (offcpu.h: OFFCPU_UNW_MARK): named for why, and for the object of the
 * frame where the tables stopped (@user: the user frames, @nr of them).
 */
static int mark_frame(struct session *s, const struct addrspace *as, uint64_t mark,
		      const uint64_t *user, size_t nr, uint32_t *out)
{
	unsigned at = OFFCPU_UNW_MARK_AT(mark);
	const struct vmap *vm = at < nr ? addrspace__find(as, user[at]) : NULL;
	const char *obj = vm ? strtab__get(&s->p->str, s->p->dsos[s->objs[vm->obj].dso].short_name) :
			       "an unknown mapping";
	struct profile_frame f = { .dso = UINT32_MAX };
	char name[320];

	switch (OFFCPU_UNW_MARK_REASON(mark)) {
	case OFFCPU_UNW_NO_PROC:
		snprintf(name, sizeof(name), "[no unwind table yet: frame pointers from here]");
		break;
	case OFFCPU_UNW_BUILDING:
		snprintf(name, sizeof(name), "[no unwind table yet: %s, frame pointers from there]", obj);
		break;
	case OFFCPU_UNW_NO_MAPPING:
		snprintf(name, sizeof(name), "[no unwind table: %s, frame pointers from there]",
			 vm ? obj : "a mapping loaded after the process");
		break;
	case OFFCPU_UNW_NO_TABLE:
		snprintf(name, sizeof(name), "[no unwind table: %s, frame pointers from there]", obj);
		break;
	case OFFCPU_UNW_NO_RULE:
		snprintf(name, sizeof(name), "[unwind: no rule for a pc in %s]", obj);
		break;
	case OFFCPU_UNW_BAD_FRAME:
		snprintf(name, sizeof(name), "[unwind: impossible frame in %s]", obj);
		break;
	case OFFCPU_UNW_READ_FAULT:
		snprintf(name, sizeof(name), "[unwind: stack not readable]");
		break;
	case OFFCPU_UNW_DEPTH:
		snprintf(name, sizeof(name), "[unwind: depth limit]");
		break;
	case OFFCPU_UNW_BEFORE_START:
		snprintf(name, sizeof(name), "[user stack unknown: blocked before the recording began]");
		break;
	default:
		snprintf(name, sizeof(name), "[unwind: stopped]");
		break;
	}
	f.sym = strtab__add(&s->p->str, name);
	if (f.sym == UINT32_MAX)
		return -ENOMEM;
	out[0] = profile__frame(s->p, &f);
	return out[0] == UINT32_MAX ? -ENOMEM : 1;
}

/* The oracle's view of a recorded process: its file mappings as /proc/PID/maps lines. */
static int write_maps(int pid, FILE *f, void *arg)
{
	struct session *s = arg;
	const struct addrspace *as = procmaps__get(&s->maps, (uint32_t)pid);
	size_t i;

	if (!as)
		return -ESRCH;
	for (i = 0; i < as->nr; i++) {
		const struct vmap *vm = &as->maps[i];
		const struct profile_dso *d = &s->p->dsos[s->objs[vm->obj].dso];
		const char *path = strtab__get(&s->p->str, d->name);

		/*
		 * Only executable mappings are kept: the object's start (where libdw
		 * takes its first segment to be) is where its offset 0 would be.
		 */
		if (path[0] == '/' && path[1] != '/' && vm->pgoff <= vm->start && !strchr(path, '\n'))
			fprintf(f, "%llx-%llx r-xp %08llx 00:01 %u %s\n",
				(unsigned long long)(vm->start - vm->pgoff), (unsigned long long)vm->end,
				0ULL, vm->obj + 1, path);
	}
	return 0;
}

static uint64_t user_reg(const struct perf_event_attr *attr, const struct perf_sample *smp, int reg,
			 bool *ok)
{
	uint64_t bit = 1ULL << reg, idx;

	if (!(attr->sample_regs_user & bit)) {
		*ok = false;
		return 0;
	}
	idx = (uint64_t)__builtin_popcountll(attr->sample_regs_user & (bit - 1));
	if (idx >= smp->nr_regs_user) {
		*ok = false;
		return 0;
	}
	return smp->regs_user[idx];
}

/*
 * A sample with user registers and a copy of the user stack, and no user
 * frames in its call chain (perf record --call-graph dwarf): its user stack
 * is unwound with libdw, as perf report does, and appended to the chain.
 * Returns 1 when @smp's chain was replaced, 0 when left, -ENOMEM.
 */
static int unwind_user(struct session *s, const struct perf_event_attr *attr,
		       struct perf_sample *smp)
{
	const struct addrspace *as;
	uint64_t ip, sp, bp, *gen;
	size_t i, nr;
	bool ok = true;
	int created, n;

	if ((attr->sample_type & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)) !=
		    (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER) ||
	    !smp->regs_abi || !smp->stack_user_size || !smp->pid || !smp->tid)
		return 0;
	for (i = 0; i < smp->nr_ips; i++)
		if (smp->ips[i] == (uint64_t)PERF_CONTEXT_USER)
			return 0; /* it has its user frames */
	ip = user_reg(attr, smp, PERF_REG_IP, &ok);
	sp = user_reg(attr, smp, PERF_REG_SP, &ok);
	bp = user_reg(attr, smp, PERF_REG_BP, &ok);
	as = procmaps__get(&s->maps, smp->pid);
	if (!ok || !as)
		return 0;
	if (!s->oracle && !(s->oracle = unwind_oracle__new_recorded(write_maps, s)))
		return -ENOMEM;
	gen = hashmap__upsert(&s->oracle_gen, &smp->pid, sizeof(smp->pid), &created);
	if (!gen)
		return -ENOMEM;
	if (!created && *gen != as->gen)
		unwind_oracle__forget(s->oracle, (int)smp->pid);
	*gen = as->gen;
	nr = smp->nr_ips + 1 + MAX_DWARF_FRAMES;
	if (grow_array((void **)&s->dwarf_ips, &s->dwarf_cap, nr, sizeof(*s->dwarf_ips)))
		return -ENOMEM;
	memcpy(s->dwarf_ips, smp->ips, smp->nr_ips * sizeof(*smp->ips));
	s->dwarf_ips[smp->nr_ips] = (uint64_t)PERF_CONTEXT_USER;
	n = unwind_oracle__unwind(s->oracle, (int)smp->pid, (int)smp->tid, ip, sp, bp,
				  smp->stack_user, smp->stack_user_size,
				  s->dwarf_ips + smp->nr_ips + 1, MAX_DWARF_FRAMES);
	if (n <= 0)
		return n == -ENOMEM ? -ENOMEM : 0;
	smp->ips = s->dwarf_ips;
	smp->nr_ips += 1 + (uint64_t)n;
	return 1;
}

/* Symbolize a call chain (innermost first) into a root-first stack. */
static uint32_t make_stack(struct session *s, const struct perf_event_header *h,
			   const struct perf_sample *smp, const struct addrspace *as, bool chain)
{
	uint32_t tmp[MAX_INLINE];
	uint8_t ctx = h->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	size_t nr = 0, i, user = 0;
	bool first = true;
	uint64_t ip;

	if (ctx != PERF_RECORD_MISC_KERNEL)
		ctx = PERF_RECORD_MISC_USER;
	for (i = 0; i < (chain ? smp->nr_ips : 1); i++) {
		int n, k;

		ip = chain ? smp->ips[i] : smp->ip;
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			if (ip == (uint64_t)PERF_CONTEXT_KERNEL)
				ctx = PERF_RECORD_MISC_KERNEL;
			else if (ip == (uint64_t)PERF_CONTEXT_USER)
				ctx = PERF_RECORD_MISC_USER, user = i + 1;
			else
				ctx = 0xff; /* hypervisor, guest: shown as unknown */
			first = true;
			continue;
		}
		if (ctx == 0xff) {
			n = resolve_addr(s, NULL, PERF_RECORD_MISC_USER, ip, false, tmp, MAX_INLINE);
		} else if (ctx == PERF_RECORD_MISC_USER && chain && i == smp->nr_ips - 1 &&
			   OFFCPU_UNW_IS_MARK(ip)) {
			n = mark_frame(s, as, ip, smp->ips + user, i - user, tmp);
		} else {
			n = resolve_addr(s, as, ctx, ip, !first, tmp, MAX_INLINE);
		}
		first = false;
		if (n < 0)
			return UINT32_MAX;
		for (k = 0; k < n && nr < MAX_FRAMES; k++)
			s->frames[nr++] = tmp[k];
	}
	/* reverse: root first */
	for (i = 0; i < nr / 2; i++) {
		uint32_t t = s->frames[i];

		s->frames[i] = s->frames[nr - 1 - i];
		s->frames[nr - 1 - i] = t;
	}
	return profile__stack(s->p, s->frames, (uint32_t)nr);
}

/*
 * A name from a waker payload as the profile keeps it: ';' would split the
 * chain and a folded line, an empty name would read as "no waker".
 */
static void clean_name(const char *in, char *out, size_t cap)
{
	size_t i;

	snprintf(out, cap, "%s", in[0] ? in : "[unknown]");
	for (i = 0; out[i]; i++)
		if (out[i] == ';' || out[i] == '\n')
			out[i] = ':';
}

/* The waker's stack, symbolized once per distinct call chain in its process's mappings. */
static uint32_t waker_stack(struct session *s, const struct perf_event_header *h,
			    const struct perf_sample *smp)
{
	const struct addrspace *as = procmaps__get(&s->maps, smp->pid);
	size_t klen = 4 + smp->nr_ips;
	uint64_t *v;
	int created;

	if (klen > s->key_cap) {
		uint64_t *k = realloc(s->key, klen * 2 * sizeof(*k));

		if (!k)
			return UINT32_MAX;
		s->key = k;
		s->key_cap = klen * 2;
	}
	s->key[0] = smp->pid;
	s->key[1] = as ? as->gen : 0;
	s->key[2] = h->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	s->key[3] = klen;
	memcpy(s->key + 4, smp->ips, smp->nr_ips * 8);
	v = hashmap__upsert(&s->waker_stacks, s->key, klen * 8, &created);
	if (!v)
		return UINT32_MAX;
	if (created)
		*v = make_stack(s, h, smp, as, true);
	return (uint32_t)*v;
}

/*
 * An offcpu-waker sample: who ended the wait of the offcpu-time sample just
 * before it (same thread, time and period). It is not an event of its own:
 * its wait's time moves from the row that sample went to, to the row of the
 * same wait with its waker, the waker's chain and stack.
 */
static int on_waker(struct session *s, const struct perf_event_header *h,
		    const struct perf_reader_event *e, const struct perf_sample *smp)
{
	struct profile *p = s->p;
	struct profile_row key;
	struct offcpu_waker w;
	char name[OFFCPU_COMM_LEN + 16], chain[OFFCPU_CHAIN_MAX * (OFFCPU_COMM_LEN + 16)];
	size_t len = 0;
	uint32_t i, row, src = s->last_row;
	bool match = s->last_ok && smp->time == s->last_time && smp->period == s->last_period;

	s->last_ok = false; /* one waker per wait */
	if (!match || !smp->raw || waker__parse(smp->raw, smp->raw_size, &w) ||
	    w.wakee_tid != s->last_tid) {
		p->orphan_wakers++;
		return 0;
	}
	if (src == UINT32_MAX)
		return 0; /* the filters left its wait out */
	key = p->rows[src];
	chain[0] = 0;
	for (i = 0; i < w.nr_chain; i++) {
		/* every name is a label frame too, for outputs that draw the chain */
		clean_name(w.chain[i], name, sizeof(name));
		if (profile__label(p, name) == UINT32_MAX)
			return -ENOMEM;
		if (i == 0) {
			key.waker = strtab__add(&p->str, name);
			if (key.waker == UINT32_MAX)
				return -ENOMEM;
		} else {
			len += (size_t)snprintf(chain + len, sizeof(chain) - len, "%s%s",
						i > 1 ? ";" : "", name);
		}
	}
	key.chain = chain[0] ? strtab__add(&p->str, chain) : 0;
	key.waker_stack = UINT32_MAX;
	if (key.chain == UINT32_MAX)
		return -ENOMEM;
	if ((e->attr.sample_type & PERF_SAMPLE_CALLCHAIN) && smp->nr_ips) {
		key.waker_stack = waker_stack(s, h, smp);
		if (key.waker_stack == UINT32_MAX)
			return -ENOMEM;
	}
	row = profile__row(p, &key);
	if (row == UINT32_MAX)
		return -ENOMEM;
	if (p->rows[row].exe == UINT32_MAX)
		p->rows[row].exe = p->rows[src].exe;
	p->rows[src].period -= smp->period;
	p->rows[src].count--;
	p->rows[row].period += smp->period;
	p->rows[row].count++;
	return 0;
}

/*
 * Whether the thread of @smp passes --pid, --tid and --comm: 1 yes, 0 no,
 * -ENOMEM; its command in *@comm.
 */
static int wanted_thread(struct session *s, const struct perf_sample *smp, uint32_t *comm)
{
	const struct session_opts *o = s->o;
	size_t i;

	if (o->nr_pids && !in_list(o->pids, o->nr_pids, smp->pid))
		return 0;
	if (o->nr_tids && !in_list(o->tids, o->nr_tids, smp->tid))
		return 0;
	*comm = comm_for(s, smp->pid, smp->tid);
	if (*comm == UINT32_MAX)
		return -ENOMEM;
	if (o->nr_comms) {
		const char *c = strtab__get(&s->p->str, *comm);

		for (i = 0; i < o->nr_comms && strcmp(o->comms[i], c); i++)
			;
		if (i == o->nr_comms)
			return 0;
	}
	return 1;
}

/* A user stack that is only the mark of one taken before offcpu ran (not read by the recorder). */
static bool before_mark(const struct perf_sample *smp)
{
	uint64_t ip;

	if (smp->nr_ips < 2 || smp->ips[smp->nr_ips - 2] != (uint64_t)PERF_CONTEXT_USER)
		return false;
	ip = smp->ips[smp->nr_ips - 1];
	return OFFCPU_UNW_IS_MARK(ip) && OFFCPU_UNW_MARK_REASON(ip) == OFFCPU_UNW_BEFORE_START;
}

/*
 * An offcpu-time sample, before any filter: if its thread was waiting when
 * the recording began, what it tells of that wait. offcpu record writes the
 * block under way at the start like any block, counted from the start: as
 * it ends, at its own time, when it lasts the threshold (then its time less
 * its period, and its run queue part's at the same time, is the start);
 * else summed, at the next drain of the summed map (its call chain, or the
 * mark of a stack it could not read, is its own, so nothing else is summed
 * with it there, but an identical chain of a later block may look the
 * same); and if it lasted to the end, summed, at the last drain.
 */
static void track_wait(struct session *s, const struct perf_sample *smp, uint32_t state)
{
	struct before_track *t;
	uint64_t *v;

	if (smp->time > s->offcpu_last)
		s->offcpu_last = smp->time;
	if (!s->nr_tracks)
		return;
	v = hashmap__find(&s->track_idx, &smp->tid, sizeof(smp->tid));
	if (!v)
		return;
	t = &s->tracks[*v];
	if (t->gone || smp->pid != t->pid || smp->time <= t->start)
		return;
	t->sum += smp->period;
	if (!t->first || smp->time < t->first)
		t->first = smp->time;
	if (smp->time > t->last)
		t->last = smp->time;
	if (state != OFFCPU_STATE_RUNQ + 1)
		t->waits++;
	if (smp->time != t->group_time) {
		t->group_time = smp->time;
		t->group_sum = 0;
	}
	t->group_sum += smp->period;
	if (!t->ended && t->group_sum <= smp->time && smp->time - t->group_sum == t->start)
		t->ended = smp->time;
	if (before_mark(smp)) {
		t->mark = true;
		t->mark_sum += smp->period;
	}
}

/*
 * An offcpu-before sample: a thread waiting when the recording began. Kept
 * apart from the rows (it is no time of the recording's), as a before-wait
 * when --pid, --tid and --comm let it through, whatever --time says (the
 * wait is measured over the whole recording).
 */
static int on_before(struct session *s, const struct perf_event_header *h,
		     const struct perf_reader_event *e, const struct perf_sample *smp,
		     uint32_t state)
{
	const struct session_opts *o = s->o;
	struct profile_before b = { .pid = smp->pid, .tid = smp->tid, .state = state,
				    .start = smp->time, .before = smp->period };
	struct before_track *t;
	int created, ret;
	uint64_t *v;

	if (!(e->attr.sample_type & PERF_SAMPLE_TIME))
		return 0; /* not at the start of anything */
	v = hashmap__upsert(&s->track_idx, &smp->tid, sizeof(smp->tid), &created);
	if (!v)
		return -ENOMEM;
	if (!created)
		return 0; /* one wait per thread: a second sample is a damaged file's */
	if (grow_array((void **)&s->tracks, &s->cap_tracks, s->nr_tracks + 1, sizeof(*s->tracks)))
		return -ENOMEM;
	*v = s->nr_tracks;
	t = &s->tracks[s->nr_tracks++];
	memset(t, 0, sizeof(*t));
	t->pid = smp->pid;
	t->tid = smp->tid;
	t->start = smp->time;
	t->shown = UINT32_MAX;
	if (o->event && strcmp(o->event, e->name) && strcmp(o->event, OFFCPU_EVENT_NAME))
		return 0;
	ret = wanted_thread(s, smp, &b.comm);
	if (ret <= 0)
		return ret;
	b.stack = make_stack(s, h, smp, procmaps__get(&s->maps, smp->pid),
			     (e->attr.sample_type & PERF_SAMPLE_CALLCHAIN) != 0);
	if (b.stack == UINT32_MAX)
		return -ENOMEM;
	b.own = profile__own_frame(s->p, b.stack);
	b.end = BEFORE_NOT_SEEN;
	t->shown = profile__add_before(s->p, &b);
	return t->shown == UINT32_MAX ? -ENOMEM : 0;
}

static int on_sample(struct session *s, const struct perf_event_header *h)
{
	const struct session_opts *o = s->o;
	struct perf_sample smp;
	size_t ev, klen;
	uint32_t comm, row;
	const struct addrspace *as;
	const struct perf_reader_event *e;
	bool chain, offcpu, before;
	uint32_t state = 0;
	uint64_t *v;
	int created, ret;

	if (perf_reader__parse_sample(s->r, h, &smp, &ev))
		return -EINVAL;
	e = perf_reader__event(s->r, ev);
	if (!strcmp(e->name, OFFCPU_WAKER_EVENT_NAME))
		return on_waker(s, h, e, &smp);
	offcpu = !strcmp(e->name, OFFCPU_EVENT_NAME);
	before = !offcpu && !strcmp(e->name, OFFCPU_BEFORE_EVENT_NAME);
	/* its waker sample, if any, comes next: it finds this one left out until it is added */
	s->last_ok = offcpu;
	s->last_row = UINT32_MAX;
	s->last_tid = smp.tid;
	s->last_time = smp.time;
	s->last_period = smp.period;
	if ((offcpu || before) && (e->attr.sample_type & PERF_SAMPLE_WEIGHT) &&
	    smp.weight <= OFFCPU_STATES_ALL)
		state = (uint32_t)smp.weight;
	if (offcpu && (e->attr.sample_type & PERF_SAMPLE_TIME))
		track_wait(s, &smp, state);
	if (before) {
		ret = on_before(s, h, e, &smp, state);
		/* a time before the recording's: in the rows only when --event chose it */
		if (ret || !o->event || strcmp(o->event, e->name))
			return ret;
	}
	if (o->event && strcmp(e->name, o->event))
		return 0;
	if (o->time_filter && (!(e->attr.sample_type & PERF_SAMPLE_TIME) ||
			       smp.time < o->time_start || smp.time >= o->time_end))
		return 0;
	ret = wanted_thread(s, &smp, &comm);
	if (ret <= 0)
		return ret;
	as = procmaps__get(&s->maps, smp.pid);
	ret = unwind_user(s, &e->attr, &smp);
	if (ret < 0)
		return ret;
	chain = (ret || (e->attr.sample_type & PERF_SAMPLE_CALLCHAIN)) && smp.nr_ips;
	klen = 7 + (chain ? smp.nr_ips : 1);
	if (klen > s->key_cap) {
		uint64_t *k = realloc(s->key, klen * 2 * sizeof(*k));

		if (!k)
			return -ENOMEM;
		s->key = k;
		s->key_cap = klen * 2;
	}
	s->key[0] = ev;
	s->key[1] = ((uint64_t)smp.pid << 32) | smp.tid;
	s->key[2] = comm;
	s->key[3] = as ? as->gen : 0;
	s->key[4] = (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) | (uint64_t)state << 16;
	s->key[5] = chain;
	s->key[6] = klen;
	if (chain)
		memcpy(s->key + 7, smp.ips, smp.nr_ips * 8);
	else
		s->key[7] = smp.ip;
	v = hashmap__upsert(&s->chain_row, s->key, klen * 8, &created);
	if (!v)
		return -ENOMEM;
	if (created) {
		uint32_t stack = make_stack(s, h, &smp, as, chain);
		struct profile_row key = { .event = (uint32_t)ev, .pid = smp.pid, .tid = smp.tid,
					   .comm = comm, .stack = stack, .state = state };

		if (stack == UINT32_MAX)
			return -ENOMEM;
		row = profile__row(s->p, &key);
		if (row == UINT32_MAX)
			return -ENOMEM;
		if (s->p->rows[row].exe == UINT32_MAX)
			s->p->rows[row].exe = exe_for(s, smp.pid);
		*v = row;
	}
	row = (uint32_t)*v;
	s->p->rows[row].period += smp.period;
	s->p->rows[row].count++;
	s->last_row = row;
	if (e->attr.sample_type & PERF_SAMPLE_TIME) {
		if (!s->p->first_time || smp.time < s->p->first_time)
			s->p->first_time = smp.time;
		if (smp.time > s->p->last_time)
			s->p->last_time = smp.time;
	}
	return 0;
}

static int on_record(struct session *s, const struct perf_event_header *h)
{
	const uint8_t *p = (const uint8_t *)h;
	struct perf_record_comm c;
	struct perf_record_lost l;
	struct perf_record_lost_samples ls;
	const char *name;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		return on_sample(s, h);
	case PERF_RECORD_COMM:
		name = perf_record__name(h, sizeof(c));
		if (!name || !perf_record__copy(h, &c, sizeof(c)))
			return 0;
		/* the mappings that follow an exec are the new program's */
		if ((h->misc & PERF_RECORD_MISC_COMM_EXEC) && set_exe(s, c.pid, UINT32_MAX, false))
			return -ENOMEM;
		return set_comm(s, c.tid, strtab__add(&s->p->str, name));
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return on_mmap(s, h);
	case PERF_RECORD_FORK:
		return on_fork(s, h);
	case PERF_RECORD_EXIT:
		on_exit_record(s, h);
		return 0;
	case PERF_RECORD_LOST:
		if (perf_record__copy(h, &l, sizeof(l)))
			s->p->lost_records += l.lost;
		return 0;
	case PERF_RECORD_LOST_SAMPLES:
		if (perf_record__copy(h, &ls, sizeof(ls)))
			s->p->lost_samples += ls.lost;
		return 0;
	case PERF_RECORD_HEADER_BUILD_ID:
		parse_build_ids(s, p, h->size);
		return 0;
	}
	return 0;
}

/* The time of a record (0 when it has none); fails like the parse would. */
static int record_time(struct session *s, const struct perf_event_header *h, uint64_t *t)
{
	struct perf_sample smp;
	size_t ev;

	*t = 0;
	if (h->type == PERF_RECORD_SAMPLE) {
		if (perf_reader__parse_sample(s->r, h, &smp, &ev))
			return -EINVAL;
		if (perf_reader__event(s->r, ev)->attr.sample_type & PERF_SAMPLE_TIME)
			*t = smp.time;
		return 0;
	}
	if (h->type >= PERF_RECORD_HEADER_ATTR)
		return 0;
	if (perf_reader__parse_id(s->r, h, &smp))
		return -EINVAL;
	*t = smp.time;
	return 0;
}

static int flush_one(const struct perf_event_header *h, uint64_t time, int kind, void *arg)
{
	return on_record(arg, h);
}

/*
 * perf's ordering: records between two FINISHED_ROUNDs are sorted by time,
 * and at the end of a round everything up to the previous round's newest
 * time is processed; the rest at the end of the file.
 */
static int session__add(struct session *s, const struct perf_event_header *h)
{
	uint64_t t;
	int err;

	if (h->type == PERF_RECORD_COMPRESSED) {
		pr_err("%s: a COMPRESSED record (perf record -z) at offset %llu: compressed files "
		       "are not supported; record without -z", s->o->input,
		       (unsigned long long)perf_reader__offset(s->r));
		return -ENOTSUP;
	}
	if (h->type == PERF_RECORD_FINISHED_ROUND) {
		err = perf_queue__flush_until(&s->queue, s->prev_round_max, flush_one, s);
		s->prev_round_max = s->round_max;
		return err;
	}
	err = record_time(s, h, &t);
	if (err)
		return err;
	if (t > s->round_max)
		s->round_max = t;
	return perf_queue__push(&s->queue, h, t, 0);
}

static void progress(struct session *s, bool done)
{
	uint64_t pos, total;

	perf_reader__progress(s->r, &pos, &total);
	if (done)
		fprintf(stderr, "\r%60s\r", "");
	else if (total) {
		fprintf(stderr, "\rreading ");
		fput_escaped(stderr, s->o->input, 0);
		fprintf(stderr, ": %3d%%", (int)(100.0 * (double)pos / (double)total));
	}
}

/*
 * A wait under way at the recording's end was summed at the last drain, its
 * period counted up to the end; the drain comes a few milliseconds later
 * (the programs detached, the tasks walked). The end itself is not in the
 * file: it is the latest start + period of such a wait, trusted when two
 * threads share it (no two waits end at the same nanosecond otherwise) or
 * when it is within this of the drain.
 */
#define BEFORE_END_SLACK_NS 250000000ULL

/* One sample at the last drain, of one wait: what a wait under way all along leaves. */
static bool waited_to_end(const struct session *s, const struct before_track *t)
{
	return !t->gone && !t->exited && !t->ended && t->waits == 1 && t->first == t->last &&
	       t->last == s->offcpu_last;
}

static int cmp_before(const void *a, const void *b)
{
	const struct profile_before *x = a, *y = b;
	uint64_t tx = profile__before_total(x), ty = profile__before_total(y);

	if (tx != ty)
		return tx < ty ? 1 : -1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/*
 * What became of each wait under way at the start, from its thread's
 * offcpu-time samples (track_wait()): ended when a block streamed at its end
 * began at the start (exact); still waiting at the end when its one sample
 * is the last drain's and it ends where the recording does; ended, with its
 * length, when its sample carries the mark of a stack not read (that wait's
 * alone); else it ended within the first of its thread's samples (a short
 * wait, summed: which sample is its own cannot be told for sure). Then
 * longest wait first.
 */
static void finish_befores(struct session *s)
{
	struct profile *p = s->p;
	uint64_t end = 0;
	uint32_t at_end = 0;
	bool trust;
	size_t i;

	for (i = 0; i < s->nr_tracks; i++) {
		const struct before_track *t = &s->tracks[i];

		if (!waited_to_end(s, t))
			continue;
		if (t->start + t->sum > end) {
			end = t->start + t->sum;
			at_end = 1;
		} else if (t->start + t->sum == end) {
			at_end++;
		}
	}
	trust = end && (at_end >= 2 || s->offcpu_last - end <= BEFORE_END_SLACK_NS);
	for (i = 0; i < s->nr_tracks; i++) {
		const struct before_track *t = &s->tracks[i];
		struct profile_before *b;

		if (t->shown == UINT32_MAX)
			continue;
		b = &p->befores[t->shown];
		if (t->ended) {
			b->end = BEFORE_ENDED;
			b->during = t->ended - t->start;
		} else if (trust && waited_to_end(s, t) && t->start + t->sum == end) {
			b->end = BEFORE_TO_END;
			b->during = t->sum;
		} else if (t->mark) {
			b->end = BEFORE_ENDED;
			b->during = t->mark_sum;
		} else if (t->first) {
			b->end = BEFORE_ENDED_BY;
			b->during = t->first - t->start;
		} else {
			b->end = BEFORE_NOT_SEEN;
			b->during = 0;
		}
	}
	if (p->nr_befores)
		qsort(p->befores, p->nr_befores, sizeof(*p->befores), cmp_before);
}

/* CLOCK_DATA (perf record -k): u32 version, u32 clockid, u64 wall-clock ns, u64 clockid ns. */
static void read_clock(struct session *s)
{
	size_t size;
	const uint8_t *f = perf_reader__feature(s->r, FEAT_CLOCK_DATA, &size);
	uint32_t version, clockid;

	if (!f || size < 24)
		return;
	memcpy(&version, f, 4);
	memcpy(&clockid, f + 4, 4);
	/* samples are on CLOCK_MONOTONIC (offcpu's, and perf's with -k mono): another clock's
	 * reference says nothing of them */
	if (version < 1 || clockid != CLOCK_MONOTONIC)
		return;
	memcpy(&s->p->clock_wall_ns, f + 8, 8);
	memcpy(&s->p->clock_mono_ns, f + 16, 8);
	s->p->has_clock = s->p->clock_wall_ns != 0;
}

static void session__free(struct session *s)
{
	hashmap__free(&s->comm_of);
	hashmap__free(&s->exe_of);
	procmaps__free(&s->maps);
	hashmap__free(&s->obj_of);
	free(s->objs);
	hashmap__free(&s->build_ids);
	free(s->bids);
	hashmap__free(&s->chain_row);
	hashmap__free(&s->waker_stacks);
	hashmap__free(&s->track_idx);
	free(s->tracks);
	hashmap__free(&s->addr_frames);
	unwind_oracle__free(s->oracle);
	hashmap__free(&s->oracle_gen);
	free(s->dwarf_ips);
	free(s->cached);
	free(s->key);
	perf_queue__free(&s->queue);
	symbolizer__free(s->sym);
	perf_reader__close(s->r);
}

int session__load(const struct session_opts *o, struct profile *p)
{
	struct session s = { .o = o, .p = p };
	const struct perf_event_header *h;
	char err[1024];
	const void *feat;
	size_t size, i, nr = 0;
	int ret;

	ret = profile__init(p, 0);
	if (ret)
		return ret;
	s.unknown = strtab__add(&p->str, "[unknown]");
	s.r = perf_reader__open(o->input, o->force ? PERF_READER_FORCE : 0, err, sizeof(err));
	if (!s.r) {
		pr_err("%s", err);
		return -EINVAL;
	}
	s.sym = symbolizer__new(&o->sym);
	if (!s.sym) {
		ret = -ENOMEM;
		goto out;
	}
	feat = perf_reader__feature(s.r, FEAT_BUILD_ID, &size);
	if (feat)
		parse_build_ids(&s, feat, size);
	read_clock(&s);
	while ((ret = perf_reader__next(s.r, &h)) > 0) {
		ret = session__add(&s, h);
		if (ret)
			break;
		if (o->progress && !(++nr & 0xffff))
			progress(&s, false);
	}
	if (!ret)
		ret = perf_queue__flush_until(&s.queue, UINT64_MAX, flush_one, &s);
	if (o->progress)
		progress(&s, true);
	/* a recording that never finished, or a file cut short: read, and said */
	if (!ret && perf_reader__warning(s.r, err, sizeof(err)))
		pr_warn("%s: %s", o->input, err);
	if (ret == -EINVAL) {
		pr_err("%s: %s", o->input, perf_reader__error(s.r));
		goto out;
	}
	if (ret) {
		if (ret != -ENOTSUP)
			pr_err("cannot read %s: %s", o->input, strerror(-ret));
		goto out;
	}
	if (o->event) {
		for (i = 0; i < perf_reader__nr_events(s.r); i++)
			if (!strcmp(perf_reader__event(s.r, i)->name, o->event))
				break;
		if (i == perf_reader__nr_events(s.r)) {
			pr_err("%s has no event named '%s'", o->input, o->event);
			ret = -ENOENT;
			goto out;
		}
	}
	p->nr_events = (uint32_t)perf_reader__nr_events(s.r);
	free(p->events);
	p->events = calloc(p->nr_events ? p->nr_events : 1, sizeof(*p->events));
	if (!p->events) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->nr_events; i++) {
		const struct perf_reader_event *e = perf_reader__event(s.r, i);

		p->events[i].name = strtab__add(&p->str, e->name);
		/* offcpu-before's periods are blocked time too: ms when --event chooses it */
		p->events[i].offcpu = !strcmp(e->name, OFFCPU_EVENT_NAME) ||
				      !strcmp(e->name, OFFCPU_BEFORE_EVENT_NAME);
		if (!strcmp(e->name, OFFCPU_BEFORE_EVENT_NAME))
			p->has_before = true;
		/* what the file can say, whether or not a sample passed the filters */
		if (!strcmp(e->name, OFFCPU_EVENT_NAME) &&
		    (e->attr.sample_type & PERF_SAMPLE_WEIGHT))
			p->has_states = true;
		if (!strcmp(e->name, OFFCPU_WAKER_EVENT_NAME))
			p->has_wakers = true;
	}
	finish_befores(&s);
	if (p->orphan_wakers)
		pr_warn("%s: %llu waker samples without their wait, ignored (a damaged or "
			"reordered file)", o->input, (unsigned long long)p->orphan_wakers);
	for (i = 0; i < p->nr_rows; i++) {
		p->events[p->rows[i].event].period += p->rows[i].period;
		p->events[p->rows[i].event].count += p->rows[i].count;
	}
	ret = 0;
out:
	session__free(&s);
	return ret;
}
