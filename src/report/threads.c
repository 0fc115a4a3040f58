// SPDX-License-Identifier: GPL-2.0
/*
 * A report session's threads, processes and mappings, from the side-band
 * records (threads.h says what is kept and why).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "threads.h"
#include "../offcpu.h"
#include "../perfdata/format.h"
#include "../util/util.h"

void threads__init(struct threads *t, struct profile *p, struct symbolizer *sym)
{
	memset(t, 0, sizeof(*t));
	t->p = p;
	t->sym = sym;
}

void threads__free(struct threads *t)
{
	size_t i;

	hashmap__free(&t->comm_of);
	hashmap__free(&t->pid_of);
	hashmap__free(&t->exe_of);
	procmaps__free(&t->maps);
	hashmap__free(&t->obj_of);
	free(t->objs);
	hashmap__free(&t->named_of);
	intset__free(&t->jit_pids);
	for (i = 0; i < t->nr_named; i++)
		rangeset__free(&t->named[i]);
	free(t->named);
	hashmap__free(&t->build_ids);
	free(t->bids);
	memset(t, 0, sizeof(*t));
}

uint32_t threads__comm(struct threads *t, uint32_t pid, uint32_t tid)
{
	uint64_t *v = hashmap__find(&t->comm_of, &tid, sizeof(tid));
	char buf[24];

	if (!v)
		v = hashmap__find(&t->comm_of, &pid, sizeof(pid));
	if (v)
		return (uint32_t)*v;
	snprintf(buf, sizeof(buf), ":%u", tid);
	return strtab__add(&t->p->str, buf);
}

uint32_t threads__pid_of(const struct threads *t, uint32_t tid)
{
	uint64_t *v = hashmap__find(&t->pid_of, &tid, sizeof(tid));

	return v ? (uint32_t)*v : 0;
}

static int set_pid(struct threads *t, uint32_t tid, uint32_t pid)
{
	int created;
	uint64_t *v = hashmap__upsert(&t->pid_of, &tid, sizeof(tid), &created);

	if (!v)
		return -ENOMEM;
	*v = pid;
	return 0;
}

static int set_comm(struct threads *t, uint32_t tid, uint32_t comm)
{
	int created;
	uint64_t *v = hashmap__upsert(&t->comm_of, &tid, sizeof(tid), &created);

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
static int set_exe(struct threads *t, uint32_t pid, uint32_t dso, bool only_if_none)
{
	int created;
	uint64_t *v = hashmap__upsert(&t->exe_of, &pid, sizeof(pid), &created);

	if (!v)
		return -ENOMEM;
	if (created || !only_if_none || *v == UINT64_MAX)
		*v = dso == UINT32_MAX ? UINT64_MAX : dso;
	return 0;
}

uint32_t threads__exe(const struct threads *t, uint32_t pid)
{
	uint64_t *v = hashmap__find(&t->exe_of, &pid, sizeof(pid));

	return v && *v != UINT64_MAX ? (uint32_t)*v : UINT32_MAX;
}

/* The object number of @o for procmaps, or -ENOMEM. */
static long mapobj(struct threads *t, const struct mapobj *mo)
{
	struct mapobj o = *mo;
	int created;
	uint64_t *v = hashmap__upsert(&t->obj_of, &o, sizeof(o), &created);

	if (!v)
		return -ENOMEM;
	if (created) {
		if (grow_array((void **)&t->objs, &t->cap_objs, t->nr_objs + 1, sizeof(*t->objs)))
			return -ENOMEM;
		t->objs[t->nr_objs] = o;
		*v = t->nr_objs++;
	}
	return (long)*v;
}

static void note_build_id(struct threads *t, const char *path, const uint8_t *id, size_t len)
{
	int created;
	uint64_t *v;

	if (!len || len > 20)
		return;
	if (!strcmp(path, "[kernel.kallsyms]"))
		symbolizer__kernel_build_id(t->sym, id, len);
	v = hashmap__upsert(&t->build_ids, path, strlen(path), &created);
	if (!v)
		return;
	if (created) {
		uint8_t (*n)[21] = realloc(t->bids, (t->nr_bids + 1) * sizeof(*n));

		if (!n)
			return;
		t->bids = n;
		*v = t->nr_bids++;
	}
	t->bids[*v][0] = (uint8_t)len;
	memcpy(&t->bids[*v][1], id, len);
}

void threads__build_ids(struct threads *t, const uint8_t *p, size_t size)
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
				note_build_id(t, name, e.build_id, idlen);
		}
		off += e.header.size;
	}
}

/*
 * A mapping offcpu record named (offcpu.h, "Named frames"): a Python
 * function, "[py] QUALNAME (FILE:LINE)", a JavaScript function, "[js] NAME
 * (SCRIPT)", or JIT code, "[jit] NAME". Every address in it is that
 * function; its object is the pseudo-object of its kind, shared by all. A
 * name whose "(FILE:LINE)" or "(SCRIPT)" cannot be read is the function's
 * whole name.
 */
static int on_named(struct threads *t, uint32_t pid, uint64_t addr, uint64_t len, const char *fn,
		    enum mapobj_kind kind)
{
	static const char *const prefix[] = { [MAPOBJ_PY] = OFFCPU_NAMED_PY,
					      [MAPOBJ_JIT] = OFFCPU_NAMED_JIT,
					      [MAPOBJ_JS] = OFFCPU_NAMED_JS };
	static const char *const object[] = { [MAPOBJ_PY] = "[python]", [MAPOBJ_JIT] = "[jit]",
					      [MAPOBJ_JS] = "[js]" };
	struct mapobj o = { .kind = kind };
	const char *name = fn + strlen(prefix[kind]);
	size_t n = strlen(name);
	uint64_t *v;
	int created;
	long obj;

	if (kind == MAPOBJ_PY && n > 4 && name[n - 1] == ')') {
		/* a qualified name has no space ("f.<locals>.g"), a file name may */
		const char *open = strstr(name, " ("), *colon = NULL;
		char *copy;

		if (open)
			colon = memrchr(open, ':', (size_t)(name + n - open));
		if (open && colon && colon > open + 2 && colon + 1 < name + n - 1 &&
		    strspn(colon + 1, "0123456789") == (size_t)(name + n - 1 - (colon + 1)) &&
		    (copy = strndup(name, n))) {
			copy[open - name] = 0;
			copy[colon - name] = 0;
			o.file = strtab__add(&t->p->str, copy + (open - name) + 2);
			o.line = (uint32_t)strtoul(colon + 1, NULL, 10);
			o.name = strtab__add(&t->p->str, copy);
			free(copy);
			if (o.file == UINT32_MAX || o.name == UINT32_MAX)
				return -ENOMEM;
		}
	} else if (kind == MAPOBJ_JS && n > 4 && name[n - 1] == ')') {
		/* a name may have a space ("get x"), a script's name seldom: the last " (" */
		const char *open = NULL, *p;
		char *copy;

		for (p = name; (p = strstr(p, " (")); p++)
			open = p;
		if (open && open > name && open + 3 < name + n && (copy = strndup(name, n - 1))) {
			copy[open - name] = 0;
			o.file = strtab__add(&t->p->str, copy + (open - name) + 2);
			o.name = strtab__add(&t->p->str, copy);
			free(copy);
			if (o.file == UINT32_MAX || o.name == UINT32_MAX)
				return -ENOMEM;
		}
	}
	if (!o.name)
		o.name = strtab__add(&t->p->str, *name ? name : fn);
	o.dso = profile__dso(t->p, object[kind], NULL, 0, false);
	if (o.name == UINT32_MAX || o.dso == UINT32_MAX)
		return -ENOMEM;
	t->p->dsos[o.dso].runtime = kind == MAPOBJ_PY ? DSO_PYTHON : kind == MAPOBJ_JS ? DSO_JS : DSO_JIT;
	obj = mapobj(t, &o);
	if (obj < 0)
		return (int)obj;
	if (kind == MAPOBJ_JIT && intset__add(&t->jit_pids, (int)pid) < 0)
		return -ENOMEM;
	v = hashmap__upsert(&t->named_of, &pid, sizeof(pid), &created);
	if (!v)
		return -ENOMEM;
	if (created) {
		if (grow_array((void **)&t->named, &t->cap_named, t->nr_named + 1, sizeof(*t->named)))
			return -ENOMEM;
		memset(&t->named[t->nr_named], 0, sizeof(*t->named));
		*v = t->nr_named++;
	}
	return rangeset__add(&t->named[*v], addr, len, (uint32_t)obj) == -ENOMEM ? -ENOMEM : 0;
}

int threads__add_named(struct threads *t, uint32_t pid, uint64_t addr, uint64_t len,
		       const char *name)
{
	if (!strncmp(name, OFFCPU_NAMED_PY, strlen(OFFCPU_NAMED_PY)))
		return on_named(t, pid, addr, len, name, MAPOBJ_PY);
	if (!strncmp(name, OFFCPU_NAMED_JS, strlen(OFFCPU_NAMED_JS)))
		return on_named(t, pid, addr, len, name, MAPOBJ_JS);
	if (!strncmp(name, OFFCPU_NAMED_JIT, strlen(OFFCPU_NAMED_JIT)))
		return on_named(t, pid, addr, len, name, MAPOBJ_JIT);
	return -EINVAL;
}

/* The record that maps a named frame to the symbol file perf reads (offcpu.h, "Named frames"). */
static bool names_file(const struct perf_event_header *h, const char *fn)
{
	size_t n = strlen(fn), k = strlen(OFFCPU_NAMES_FILE);

	return h->type == PERF_RECORD_MMAP2 && (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) &&
	       n > k && !strcmp(fn + n - k, OFFCPU_NAMES_FILE) &&
	       (fn[n - k - 1] == '.' || fn[n - k - 1] == '/');
}

/* A mapping with no file behind it: its offsets mean nothing, its addresses do. */
static bool anon_name(const char *fn)
{
	return fn[0] != '/' ? strcmp(fn, "[vdso]") != 0 : fn[1] == '/';
}

static int on_mmap(struct threads *t, const struct perf_event_header *h)
{
	struct perf_record_mmap2 m2;
	uint32_t pid, prot = PROT_EXEC;
	uint64_t addr, len, pgoff;
	const uint8_t *bid = NULL;
	size_t bid_len = 0;
	const char *fn;
	struct mapobj mo = { 0 };
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
			symbolizer__kernel_mmap(t->sym, fn + 17, pgoff);
		return 0;
	}
	if (!len || addr + len < addr)
		return 0;
	if (!strncmp(fn, OFFCPU_NAMED_PY, strlen(OFFCPU_NAMED_PY)))
		return on_named(t, pid, addr, len, fn, MAPOBJ_PY);
	if (!strncmp(fn, OFFCPU_NAMED_JS, strlen(OFFCPU_NAMED_JS)))
		return on_named(t, pid, addr, len, fn, MAPOBJ_JS);
	if (!strncmp(fn, OFFCPU_NAMED_JIT, strlen(OFFCPU_NAMED_JIT)))
		return on_named(t, pid, addr, len, fn, MAPOBJ_JIT);
	if (names_file(h, fn))
		return 0; /* the named records above name these frames */
	if (!bid_len && (v = hashmap__find(&t->build_ids, fn, strlen(fn)))) {
		bid_len = t->bids[*v][0];
		bid = &t->bids[*v][1];
	}
	sd = symbolizer__dso(t->sym, fn, bid, bid_len);
	dso = profile__dso(t->p, fn, bid, bid_len, false);
	if (!sd || dso == UINT32_MAX)
		return -ENOMEM;
	mo.sd = sd;
	mo.dso = dso;
	mo.kind = anon_name(fn) ? MAPOBJ_ANON : MAPOBJ_FILE;
	obj = mapobj(t, &mo);
	if (obj < 0)
		return (int)obj;
	if (fn[0] == '/' && fn[1] != '/' && strncmp(fn, "/memfd:", 7) &&
	    set_exe(t, pid, dso, true)) /* not //anon, memfd code */
		return -ENOMEM;
	return procmaps__map(&t->maps, pid, addr, len, pgoff, (uint32_t)obj);
}

static int on_fork(struct threads *t, const struct perf_event_header *h)
{
	struct perf_record_task k;
	uint32_t pid, ppid, tid, ptid;
	uint64_t *v;

	if (!perf_record__copy(h, &k, sizeof(k)))
		return 0;
	pid = k.pid;
	ppid = k.ppid;
	tid = k.tid;
	ptid = k.ptid;
	v = hashmap__find(&t->comm_of, &ptid, sizeof(ptid));
	if (v && set_comm(t, tid, (uint32_t)*v))
		return -ENOMEM;
	if (set_pid(t, tid, pid))
		return -ENOMEM;
	if (pid != ppid && set_exe(t, pid, threads__exe(t, ppid), false))
		return -ENOMEM;
	/* a new process starts with a copy of its parent's mappings */
	return procmaps__fork(&t->maps, ppid, pid);
}

int threads__record(struct threads *t, const struct perf_event_header *h)
{
	struct perf_record_comm c;
	const char *name;

	switch (h->type) {
	case PERF_RECORD_COMM:
		name = perf_record__name(h, sizeof(c));
		if (!name || !perf_record__copy(h, &c, sizeof(c)))
			return 0;
		/* the mappings that follow an exec are the new program's */
		if ((h->misc & PERF_RECORD_MISC_COMM_EXEC) && set_exe(t, c.pid, UINT32_MAX, false))
			return -ENOMEM;
		return set_pid(t, c.tid, c.pid) ?: set_comm(t, c.tid, strtab__add(&t->p->str, name));
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return on_mmap(t, h);
	case PERF_RECORD_FORK:
		return on_fork(t, h);
	case PERF_RECORD_HEADER_BUILD_ID:
		threads__build_ids(t, (const uint8_t *)h, h->size);
		return 0;
	}
	return 0;
}
