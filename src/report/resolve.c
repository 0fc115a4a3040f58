// SPDX-License-Identifier: GPL-2.0
/*
 * Sample resolution: call chains to stacks of profile frames, and waker
 * payloads to names, chains and stacks (resolve.h says how).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "resolve.h"
#include "../offcpu.h"
#include "../unwind/oracle.h"
#include "../util/util.h"

#define MAX_INLINE 8
#define MAX_DWARF_FRAMES 256 /* user frames unwound from a sample's stack copy */
/* x86-64 perf_regs numbers: the registers the unwinder starts from */
#define PERF_REG_BP 6
#define PERF_REG_SP 7
#define PERF_REG_IP 8

int resolver__init(struct resolver *r, struct profile *p, struct symbolizer *sym,
		   struct threads *th)
{
	memset(r, 0, sizeof(*r));
	r->p = p;
	r->sym = sym;
	r->th = th;
	r->unknown = strtab__add(&p->str, "[unknown]");
	return r->unknown == UINT32_MAX ? -ENOMEM : 0;
}

void resolver__free(struct resolver *r)
{
	hashmap__free(&r->stacks);
	hashmap__free(&r->addr_frames);
	free(r->cached);
	free(r->key);
	unwind_oracle__free(r->oracle);
	hashmap__free(&r->oracle_gen);
	free(r->dwarf_ips);
	jitnames__free(&r->jit);
	memset(r, 0, sizeof(*r));
}

/* Keep @n frames of @out as what (@key) resolves to; *@v is its addr_frames entry. */
static int cache_frames(struct resolver *r, uint64_t *v, const uint32_t *out, int n)
{
	if (r->nr_cached + (size_t)n > r->cap_cached) {
		size_t c = r->cap_cached ? r->cap_cached * 2 : 1024;
		uint32_t *nc;

		while (c < r->nr_cached + (size_t)n)
			c *= 2;
		nc = realloc(r->cached, c * sizeof(*nc));
		if (!nc)
			return -ENOMEM;
		r->cached = nc;
		r->cap_cached = c;
	}
	memcpy(r->cached + r->nr_cached, out, n * sizeof(*out));
	*v = ((uint64_t)r->nr_cached << 8) | (uint64_t)n;
	r->nr_cached += (size_t)n;
	return 0;
}

/*
 * The name of a frame no symbol names: its object and where in it, so that
 * distinct frames stay distinct and a user can look them up. In a file,
 * "OBJ+0xOFFSET" with the file offset (what perf report shows of an
 * unresolved frame, "[.] 0x...", and pprof's address; the ELF address too
 * in the text of most PIE programs and libraries); in memory without a
 * file, "OBJ@0xADDRESS".
 */
static uint32_t unnamed(struct resolver *r, const struct mapobj *m, uint64_t off, uint64_t addr)
{
	const char *obj = strtab__get(&r->p->str, r->p->dsos[m->dso].short_name);
	char name[320];

	if (m->kind == MAPOBJ_ANON)
		snprintf(name, sizeof(name), "%s@0x%llx", obj, (unsigned long long)addr);
	else
		snprintf(name, sizeof(name), "%s+0x%llx", obj, (unsigned long long)off);
	return strtab__add(&r->p->str, name);
}

bool resolver__unnamed(const struct profile *p, uint32_t frame)
{
	const struct profile_frame *f = frame < p->nr_frames ? &p->frames[frame] : NULL;
	const char *name, *obj, *q;
	size_t n;

	if (!f || f->kernel || f->label || f->dso >= p->nr_dsos)
		return false;
	name = strtab__get(&p->str, f->sym);
	obj = strtab__get(&p->str, p->dsos[f->dso].short_name);
	n = strlen(obj);
	if (strncmp(name, obj, n) || (name[n] != '+' && name[n] != '@') || strncmp(name + n + 1, "0x", 2))
		return false;
	q = name + n + 3;
	return *q && q[strspn(q, "0123456789abcdef")] == 0;
}

/* Resolve one address to frames (innermost first) into @out; returns how many. */
static int resolve_addr(struct resolver *r, const struct addrspace *as,
			const struct rangeset *named, uint8_t ctx, uint64_t addr, bool ret,
			uint32_t *out, int max, bool *anon)
{
	struct profile_frame f = { 0 };
	struct sym_frame sf[MAX_INLINE];
	const struct vmap *vm;
	const struct mapobj *m;
	uint64_t off, key[2], *v;
	uint32_t obj;
	int created, n, i;

	if (ctx == PERF_RECORD_MISC_KERNEL) {
		const char *mod, *name = symbolizer__kernel(r->sym, addr, &mod);

		f.kernel = true;
		f.dso = profile__dso(r->p, mod, NULL, 0, true);
		f.sym = name ? strtab__add(&r->p->str, name) : r->unknown;
		f.addr = addr;
		out[0] = profile__frame(r->p, &f);
		return out[0] == UINT32_MAX ? -ENOMEM : 1;
	}
	/* named code first: JIT code lies in an anonymous mapping */
	if (named && rangeset__find(named, addr, &obj)) {
		vm = NULL;
		m = threads__obj(r->th, obj);
	} else {
		vm = addrspace__find(as, addr);
		m = vm ? threads__obj(r->th, vm->obj) : NULL;
	}
	if (!m) {
		f.dso = UINT32_MAX;
		f.sym = r->unknown;
		out[0] = profile__frame(r->p, &f);
		return out[0] == UINT32_MAX ? -ENOMEM : 1;
	}
	if (m->kind == MAPOBJ_PY || m->kind == MAPOBJ_JIT || m->kind == MAPOBJ_JS || !vm) {
		/* named code: the mapping is the function (offcpu.h, "Named frames") */
		f.dso = m->dso;
		f.sym = m->name;
		f.file = m->file;
		f.line = m->line;
		f.addr = addr;
		if (r->p->dsos[m->dso].max_addr < addr)
			r->p->dsos[m->dso].max_addr = addr;
		out[0] = profile__frame(r->p, &f);
		return out[0] == UINT32_MAX ? -ENOMEM : 1;
	}
	/* anonymous memory that no named code holds yet: JIT code named later, perhaps */
	*anon = m->kind == MAPOBJ_ANON && ctx == PERF_RECORD_MISC_USER;
	off = addr - vm->start + vm->pgoff;
	key[0] = vm->obj;
	/* without a file, the address tells frames apart: offsets may repeat */
	key[1] = (m->kind == MAPOBJ_ANON ? addr : off) | ((uint64_t)ret << 63);
	v = hashmap__upsert(&r->addr_frames, key, sizeof(key), &created);
	if (!v)
		return -ENOMEM;
	if (!created) {
		n = (int)(*v & 0xff);
		if (n > max)
			n = max;
		memcpy(out, r->cached + (*v >> 8), n * sizeof(*out));
		return n;
	}
	n = sym_dso__resolve(r->sym, m->sd, off, ret, sf, MAX_INLINE);
	if (sym_dso__go(m->sd))
		r->p->dsos[m->dso].runtime = DSO_GO;
	f.dso = m->dso;
	f.addr = off;
	if (r->p->dsos[m->dso].max_addr < off)
		r->p->dsos[m->dso].max_addr = off;
	if (n == 0) {
		f.sym = unnamed(r, m, off, addr);
		out[0] = f.sym == UINT32_MAX ? UINT32_MAX : profile__frame(r->p, &f);
		if (out[0] == UINT32_MAX)
			return -ENOMEM;
		n = 1;
	} else {
		for (i = 0; i < n && i < max; i++) {
			f.sym = strtab__add(&r->p->str, sf[i].name);
			f.file = sf[i].file ? strtab__add(&r->p->str, sf[i].file) : 0;
			f.line = sf[i].line;
			f.inlined = sf[i].inlined;
			out[i] = profile__frame(r->p, &f);
			if (out[i] == UINT32_MAX || f.sym == UINT32_MAX)
				return -ENOMEM;
		}
		n = i;
	}
	if (cache_frames(r, v, out, n))
		return -ENOMEM;
	return n;
}

/*
 * The frame that ends a user stack offcpu's table walk did not complete
 * (offcpu.h: OFFCPU_UNW_MARK): named for why, and for the object of the
 * frame where the tables stopped (@user: the user frames, @nr of them).
 */
static int mark_frame(struct resolver *r, const struct addrspace *as, uint64_t mark,
		      const uint64_t *user, size_t nr, uint32_t *out)
{
	unsigned at = OFFCPU_UNW_MARK_AT(mark);
	const struct vmap *vm = at < nr ? addrspace__find(as, user[at]) : NULL;
	const char *obj = vm ? strtab__get(&r->p->str,
					   r->p->dsos[threads__obj(r->th, vm->obj)->dso].short_name) :
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
	case OFFCPU_UNW_GO_SCHED:
		snprintf(name, sizeof(name), "[go: scheduler, no goroutine of its own]");
		break;
	case OFFCPU_UNW_BEFORE_START:
		snprintf(name, sizeof(name), "[user stack unknown: blocked before the recording began]");
		break;
	default:
		snprintf(name, sizeof(name), "[unwind: stopped]");
		break;
	}
	f.sym = strtab__add(&r->p->str, name);
	if (f.sym == UINT32_MAX)
		return -ENOMEM;
	out[0] = profile__frame(r->p, &f);
	return out[0] == UINT32_MAX ? -ENOMEM : 1;
}

/* The oracle's view of a recorded process: its file mappings as /proc/PID/maps lines. */
static int write_maps(int pid, FILE *f, void *arg)
{
	struct resolver *r = arg;
	const struct addrspace *as = threads__maps(r->th, (uint32_t)pid);
	size_t i;

	if (!as)
		return -ESRCH;
	for (i = 0; i < as->nr; i++) {
		const struct vmap *vm = &as->maps[i];
		const struct profile_dso *d = &r->p->dsos[threads__obj(r->th, vm->obj)->dso];
		const char *path = strtab__get(&r->p->str, d->name);

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
static int unwind_user(struct resolver *r, const struct perf_event_attr *attr,
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
	as = threads__maps(r->th, smp->pid);
	if (!ok || !as)
		return 0;
	if (!r->oracle && !(r->oracle = unwind_oracle__new_recorded(write_maps, r)))
		return -ENOMEM;
	gen = hashmap__upsert(&r->oracle_gen, &smp->pid, sizeof(smp->pid), &created);
	if (!gen)
		return -ENOMEM;
	if (!created && *gen != as->gen)
		unwind_oracle__forget(r->oracle, (int)smp->pid);
	*gen = as->gen;
	nr = smp->nr_ips + 1 + MAX_DWARF_FRAMES;
	if (grow_array((void **)&r->dwarf_ips, &r->dwarf_cap, nr, sizeof(*r->dwarf_ips)))
		return -ENOMEM;
	memcpy(r->dwarf_ips, smp->ips, smp->nr_ips * sizeof(*smp->ips));
	r->dwarf_ips[smp->nr_ips] = (uint64_t)PERF_CONTEXT_USER;
	n = unwind_oracle__unwind(r->oracle, (int)smp->pid, (int)smp->tid, ip, sp, bp,
				  smp->stack_user, smp->stack_user_size,
				  r->dwarf_ips + smp->nr_ips + 1, MAX_DWARF_FRAMES);
	if (n <= 0)
		return n == -ENOMEM ? -ENOMEM : 0;
	smp->ips = r->dwarf_ips;
	smp->nr_ips += 1 + (uint64_t)n;
	return 1;
}

/* Symbolize a call chain (innermost first) into a root-first stack. */
static uint32_t make_stack(struct resolver *r, uint16_t misc, const struct perf_sample *smp,
			   const struct addrspace *as, bool chain)
{
	const struct rangeset *named = threads__named(r->th, smp->pid);
	uint32_t tmp[MAX_INLINE];
	uint8_t ctx = misc & PERF_RECORD_MISC_CPUMODE_MASK;
	size_t nr = 0, i, user = 0;
	bool first = true;
	uint64_t ip;
	bool anon;

	if (ctx != PERF_RECORD_MISC_KERNEL)
		ctx = PERF_RECORD_MISC_USER;
	for (i = 0; i < (chain ? smp->nr_ips : 1); i++) {
		int n, k;

		anon = false;
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
			n = resolve_addr(r, NULL, NULL, PERF_RECORD_MISC_USER, ip, false, tmp,
					 MAX_INLINE, &anon);
			anon = false;
		} else if (ctx == PERF_RECORD_MISC_USER && chain && i == smp->nr_ips - 1 &&
			   OFFCPU_UNW_IS_MARK(ip)) {
			n = mark_frame(r, as, ip, smp->ips + user, i - user, tmp);
		} else {
			n = resolve_addr(r, as, ctx == PERF_RECORD_MISC_USER ? named : NULL, ctx, ip,
					 !first, tmp, MAX_INLINE, &anon);
		}
		/* a caller's frame is its return address: the call is before it */
		if (n == 1 && anon && resolver__unnamed(r->p, tmp[0]) &&
		    jitnames__note(&r->jit, tmp[0], smp->pid, first ? ip : ip - 1))
			return UINT32_MAX;
		first = false;
		if (n < 0)
			return UINT32_MAX;
		for (k = 0; k < n && nr < MAX_FRAMES; k++)
			r->frames[nr++] = tmp[k];
	}
	/* reverse: root first */
	for (i = 0; i < nr / 2; i++) {
		uint32_t t = r->frames[i];

		r->frames[i] = r->frames[nr - 1 - i];
		r->frames[nr - 1 - i] = t;
	}
	return profile__stack(r->p, r->frames, (uint32_t)nr);
}

/*
 * Symbolized once per key: the process, the generation of its mappings, the
 * cpumode and the chain, so that the threads, commands and events that
 * share a chain share its stack.
 */
int resolver__chain(struct resolver *r, uint16_t misc, const struct perf_sample *smp, bool chain,
		    uint32_t *stack)
{
	const struct addrspace *as = threads__maps(r->th, smp->pid);
	size_t klen = 4 + (chain ? smp->nr_ips : 1);
	uint64_t *v;
	int created;

	if (klen > r->key_cap) {
		uint64_t *k = realloc(r->key, klen * 2 * sizeof(*k));

		if (!k)
			return -ENOMEM;
		r->key = k;
		r->key_cap = klen * 2;
	}
	r->key[0] = smp->pid;
	r->key[1] = as ? as->gen : 0;
	r->key[2] = (misc & PERF_RECORD_MISC_CPUMODE_MASK) | (uint64_t)chain << 8;
	r->key[3] = klen;
	if (chain)
		memcpy(r->key + 4, smp->ips, smp->nr_ips * 8);
	else
		r->key[4] = smp->ip;
	v = hashmap__upsert(&r->stacks, r->key, klen * 8, &created);
	if (!v)
		return -ENOMEM;
	if (created)
		*v = make_stack(r, misc, smp, as, chain);
	*stack = (uint32_t)*v;
	return *stack == UINT32_MAX ? -ENOMEM : 0; /* the session ends with it */
}

int resolver__stack(struct resolver *r, const struct perf_event_attr *attr, uint16_t misc,
		    struct perf_sample *smp, uint32_t *stack)
{
	int ret = unwind_user(r, attr, smp);
	bool chain;

	if (ret < 0)
		return ret;
	chain = (ret || (attr->sample_type & PERF_SAMPLE_CALLCHAIN)) && smp->nr_ips;
	return resolver__chain(r, misc, smp, chain, stack);
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

int resolver__waker(struct resolver *r, const struct perf_event_attr *attr, uint16_t misc,
		    const struct perf_sample *smp, const struct offcpu_waker *w, uint32_t *waker,
		    uint32_t *chain, uint32_t *stack)
{
	struct profile *p = r->p;
	char name[OFFCPU_COMM_LEN + 16], names[OFFCPU_CHAIN_MAX * (OFFCPU_COMM_LEN + 16)];
	size_t len = 0;
	uint32_t i;

	*waker = 0;
	*stack = UINT32_MAX;
	names[0] = 0;
	for (i = 0; i < w->nr_chain; i++) {
		/* every name is a label frame too, for outputs that draw the chain */
		clean_name(w->chain[i], name, sizeof(name));
		if (profile__label(p, name) == UINT32_MAX)
			return -ENOMEM;
		if (i == 0) {
			*waker = strtab__add(&p->str, name);
			if (*waker == UINT32_MAX)
				return -ENOMEM;
		} else {
			len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
						i > 1 ? ";" : "", name);
		}
	}
	*chain = names[0] ? strtab__add(&p->str, names) : 0;
	if (*chain == UINT32_MAX)
		return -ENOMEM;
	if ((attr->sample_type & PERF_SAMPLE_CALLCHAIN) && smp->nr_ips)
		return resolver__chain(r, misc, smp, true, stack);
	return 0;
}
