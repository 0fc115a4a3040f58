// SPDX-License-Identifier: GPL-2.0
/* Python frames: the processes, the names, the splice (python.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "python.h"
#include "pylayout.h"
#include "record_int.h"
#include "synth.h"
#include "../offcpu.h"
#include "../perfdata/format.h"
#include "../perfdata/queue.h"
#include "../perfdata/sample.h"
#include "../util/hashmap.h"
#include "../util/intset.h"
#include "../util/objread.h"
#include "../util/procmaps.h"
#include "../util/util.h"

#define PY_READ (-1) /* a process's frames are read: no enum python_why */

/* What an object holds of CPython: found by its dynamic symbols. */
struct pyobj {
	bool python; /* it holds an interpreter (_PyRuntime, _PyEval_EvalFrameDefault) */
	uint32_t version; /* Py_Version, or 3.10's (by its API: no Py_Version); 0: not known */
	int why; /* PY_READ, or why its frames are not read (enum python_why) */
	char detail[64]; /* and what it found, for the summary */
	uint64_t runtime, eval, eval_size; /* _PyRuntime, _PyEval_EvalFrameDefault (ELF addresses) */
	uint32_t tss; /* the thread-state key's offset in _PyRuntime */
	struct offcpu_py_layout l;
	Elf64_Phdr load[8]; /* its PT_LOAD headers, for the load bias */
	size_t nload;
};

struct pyname {
	uint32_t written; /* 1 + the file it was last written to; 0: never */
	uint32_t pad;
	uint64_t written_at; /* the time it was written with there */
	char *text; /* "[py] QUALNAME (FILE:LINE)"; NULL: not received yet */
};

/* A Python process: where its interpreter runs, and the names of its ids. */
struct pyproc {
	uint32_t tgid;
	bool used, gone, cut;
	uint64_t eval_lo, eval_hi; /* _PyEval_EvalFrameDefault in the process */
	uint64_t tss_key; /* where its thread-state key is */
	struct offcpu_py_layout l; /* its interpreter's layout */
	struct pyname *names; /* by id (the process's own) */
	size_t cap_names;
	uint32_t next_id; /* the last id it was seen with: the next ones go on from it */
	uint64_t bytes; /* its names' memory */
	struct hashmap stamps; /* code object's address -> its identity when last named */
	uint64_t gone_ns; /* its exit */
};

/* what the names of all processes may hold, and one process's share */
#define PY_NAMES_MEM_MAX (64ULL << 20)
#define PY_PROC_MEM_MAX (PY_NAMES_MEM_MAX / 4)
#define PY_GONE_MS 5000 /* an exited process's names are kept this long */

struct python {
	int procs_fd, counters_fd;
	struct ring_buffer *rb;
	pthread_t thread;
	bool started;
	volatile int stop;
	pthread_mutex_t lock; /* the ring buffer, names, procs */
	struct hashmap procs; /* tgid -> 1 + index in proc */
	struct pyproc *proc; /* a freed one is reused */
	size_t nr_proc, cap_proc;
	uint64_t bytes, bytes_peak; /* the names' memory */
	uint64_t names_dropped; /* names not kept: over a bound */
	uint64_t cut; /* processes cut off: their ids, or their share of the memory, used up */
	uint32_t first_cut;
	uint64_t freed; /* processes whose names were freed after they exited */
	size_t gone; /* exited ones not freed yet */
	struct hashmap objs; /* (dev, inode) -> 1 + index in obj */
	struct pyobj *obj;
	size_t nr_obj, cap_obj;
	uint32_t *asked; /* processes asked about, to look at outside the lock */
	size_t nr_asked, cap_asked;
	uint64_t found; /* Python processes */
	uint64_t not_read[PYTHON_WHY_NR]; /* processes whose frames are not read, by why */
	struct python_not_read first[PYTHON_WHY_NR]; /* the first of each */
	struct intset said; /* the processes counted there */
	uint64_t renamed; /* code objects named at the address of another one named before */
};

/* ---- which processes run a known CPython ---- */

/* The @len bytes at ELF address @at of @o from its file (they must be there), or NULL. */
static void *read_at(struct elfobj *o, const struct pyobj *po, uint64_t at, size_t len)
{
	size_t i;

	for (i = 0; i < po->nload; i++) {
		const Elf64_Phdr *ph = &po->load[i];

		if (at >= ph->p_vaddr && at + len <= ph->p_vaddr + ph->p_filesz && at + len > at)
			return elfobj__read(o, ph->p_offset + (at - ph->p_vaddr), len, len);
	}
	return NULL;
}

/* The 3.N its path's last component says ("libpython3.10.so.1.0", "python3.12"), or -1. */
static int name_minor(const char *path)
{
	const char *base = strrchr(path, '/'), *p;

	base = base ? base + 1 : path;
	p = strstr(base, "python3.");
	if (!p || p[8] < '0' || p[8] > '9')
		return -1;
	return (int)strtol(p + 8, NULL, 10);
}

/*
 * Which CPython @o (mapped from @path) is, by its dynamic symbols, into
 * @po: Py_Version says from 3.11; 3.10 has none, and is the one version
 * with PyAIter_Check (new in 3.10) and no Py_Version, which its file's name
 * must not contradict. Its layout is then checked against the sizes its own
 * type objects give their instances (PyCode_Type, PyUnicode_Type).
 */
static void read_pyobj(struct elfobj *o, const char *path, struct pyobj *po)
{
	const Elf64_Shdr *ds = NULL, *ss;
	Elf64_Sym *syms = NULL;
	char *str = NULL;
	uint64_t version_at = 0, code_type = 0, str_type = 0, *got;
	uint32_t code_size, str_size;
	bool aiter = false;
	int minor;
	size_t i, n;

	memset(po, 0, sizeof(*po));
	for (i = 0; i < o->nph && po->nload < 8; i++)
		if (o->ph[i].p_type == PT_LOAD)
			po->load[po->nload++] = o->ph[i];
	for (i = 0; i < o->nsh; i++)
		if (o->sh[i].sh_type == SHT_DYNSYM) {
			ds = &o->sh[i];
			break;
		}
	if (!ds || ds->sh_link >= o->nsh || ds->sh_entsize != sizeof(Elf64_Sym))
		return;
	ss = &o->sh[ds->sh_link];
	syms = elfobj__read(o, ds->sh_offset, ds->sh_size, 64 << 20);
	str = elfobj__read(o, ss->sh_offset, ss->sh_size, 64 << 20);
	if (!syms || !str || !ss->sh_size)
		goto out;
	str[ss->sh_size - 1] = 0;
	n = ds->sh_size / sizeof(Elf64_Sym);
	for (i = 0; i < n; i++) {
		const char *name;

		if (syms[i].st_name >= ss->sh_size || syms[i].st_shndx == SHN_UNDEF)
			continue;
		name = str + syms[i].st_name;
		if (name[0] != '_' && name[0] != 'P')
			continue;
		if (!strcmp(name, "_PyRuntime")) {
			po->runtime = syms[i].st_value;
		} else if (!strcmp(name, "Py_Version")) {
			version_at = syms[i].st_value;
		} else if (!strcmp(name, "_PyEval_EvalFrameDefault")) {
			po->eval = syms[i].st_value;
			po->eval_size = syms[i].st_size;
		} else if (!strcmp(name, "PyAIter_Check")) {
			aiter = true;
		} else if (!strcmp(name, "PyCode_Type")) {
			code_type = syms[i].st_value;
		} else if (!strcmp(name, "PyUnicode_Type")) {
			str_type = syms[i].st_value;
		}
	}
	if (!po->runtime || !po->eval)
		goto out;
	po->python = true;
	po->why = PYTHON_UNKNOWN;
	minor = name_minor(path);
	if (version_at) {
		uint32_t *v = read_at(o, po, version_at, 4);

		if (v)
			po->version = *v;
		free(v);
		if (!po->version || (po->version >> 24) != 3) {
			snprintf(po->detail, sizeof(po->detail), "Py_Version %#x", po->version);
			po->version = 0;
			goto out;
		}
	} else if (aiter && (minor < 0 || minor == 10)) {
		po->version = 0x030a0000;
	} else {
		snprintf(po->detail, sizeof(po->detail), "no Py_Version%s", aiter ? "" :
			 ", older than 3.10 by its API");
		if (!aiter) {
			po->why = PYTHON_UNSUPPORTED;
			snprintf(po->detail, sizeof(po->detail), "older than 3.10 (no PyAIter_Check)");
		}
		goto out;
	}
	minor = (po->version >> 16) & 0xff;
	if (pylayout__get((unsigned)minor, &po->l, &po->tss, &code_size, &str_size)) {
		po->why = PYTHON_UNSUPPORTED;
		snprintf(po->detail, sizeof(po->detail), "3.%d", minor);
		goto out;
	}
	/* what its own type objects say the layout's sizes are */
	po->why = PYTHON_CHECK;
	got = code_type ? read_at(o, po, code_type + OFFCPU_PY_TYPE_BASICSIZE, 8) : NULL;
	if (!got || *got != code_size) {
		snprintf(po->detail, sizeof(po->detail), "3.%d: PyCode_Type's size %lld, not %u",
			 minor, got ? (long long)*got : -1LL, code_size);
		free(got);
		goto out;
	}
	free(got);
	got = str_type ? read_at(o, po, str_type + OFFCPU_PY_TYPE_BASICSIZE, 8) : NULL;
	if (!got || *got != str_size) {
		snprintf(po->detail, sizeof(po->detail), "3.%d: PyUnicode_Type's size %lld, not %u",
			 minor, got ? (long long)*got : -1LL, str_size);
		free(got);
		goto out;
	}
	free(got);
	po->why = PY_READ;
	snprintf(po->detail, sizeof(po->detail), "3.%d", minor);
out:
	free(syms);
	free(str);
}

/*
 * The object mapped by maps line @m of @tgid, read once per (device, inode),
 * into *@po; false if it could not be kept (*@again when it may be later).
 * The file is another user's (objread.h: no file system a user serves is
 * asked, no lease waited for); it is read without py->lock, which the
 * writers' splice takes.
 */
static bool pyobj_of(struct python *py, uint32_t tgid, const struct maps_line *m,
		     struct pyobj *po, bool *again)
{
	uint64_t key[2] = { ((uint64_t)m->maj << 32) | m->min, m->ino }, *v;
	struct elfobj o;
	char path[96], err[128];
	bool ok = false;
	int created, e;

	pthread_mutex_lock(&py->lock);
	v = hashmap__find(&py->objs, key, sizeof(key));
	if (v && *v)
		*po = py->obj[*v - 1];
	ok = v && *v;
	pthread_mutex_unlock(&py->lock);
	if (v) /* read before (0: it could not be kept) */
		return ok;
	/* the object as mapped, even if its path was replaced or removed since */
	snprintf(path, sizeof(path), "/proc/%u/map_files/%lx-%lx", tgid, (unsigned long)m->start,
		 (unsigned long)m->end);
	memset(po, 0, sizeof(*po));
	e = elfobj__open(&o, path, err, sizeof(err));
	if (!e) {
		read_pyobj(&o, m->name, po);
		elfobj__close(&o);
	} else if (e == -EAGAIN || e == -EWOULDBLOCK) {
		*again = true; /* refused for now (a mount table changing, a lease): asked again */
		return false;
	}
	pthread_mutex_lock(&py->lock);
	v = hashmap__upsert(&py->objs, key, sizeof(key), &created);
	if (v && created) {
		if (!grow_array((void **)&py->obj, &py->cap_obj, py->nr_obj + 1, sizeof(*py->obj))) {
			py->obj[py->nr_obj] = *po;
			*v = ++py->nr_obj;
			ok = true;
		}
	} else if (v && *v) { /* read meanwhile by another look */
		*po = py->obj[*v - 1];
		ok = true;
	}
	pthread_mutex_unlock(&py->lock);
	return ok;
}

/* Where @po's ELF address 0 is in a process that maps it as @m. */
static bool load_bias(const struct pyobj *po, const struct maps_line *m, uint64_t *bias)
{
	size_t i;

	for (i = 0; i < po->nload; i++) {
		const Elf64_Phdr *ph = &po->load[i];
		uint64_t off = ph->p_offset & ~0xfffULL;

		if (m->pgoff >= off && m->pgoff < ph->p_offset + ph->p_filesz) {
			*bias = m->start - m->pgoff - ((ph->p_vaddr & ~0xfffULL) - off);
			return true;
		}
	}
	return false;
}

/* Process @tgid's entry; made if new and @make (under the lock). NULL: none, or no memory. */
static struct pyproc *proc_get(struct python *py, uint32_t tgid, bool make)
{
	uint64_t *v = hashmap__find(&py->procs, &tgid, sizeof(tgid));
	size_t i;
	int created;

	if (v)
		return &py->proc[*v - 1];
	if (!make)
		return NULL;
	for (i = 0; i < py->nr_proc && py->proc[i].used; i++)
		;
	if (i == py->nr_proc) {
		if (grow_array((void **)&py->proc, &py->cap_proc, py->nr_proc + 1, sizeof(*py->proc)))
			return NULL;
		py->nr_proc++;
	}
	v = hashmap__upsert(&py->procs, &tgid, sizeof(tgid), &created);
	if (!v)
		return NULL;
	py->proc[i] = (struct pyproc){ .tgid = tgid, .used = true };
	*v = i + 1;
	return &py->proc[i];
}

/* Free @pp's names (under the lock). */
static void proc_drop_names(struct python *py, struct pyproc *pp)
{
	size_t i;

	for (i = 0; i < pp->cap_names; i++)
		free(pp->names[i].text);
	free(pp->names);
	hashmap__free(&pp->stamps);
	pp->names = NULL;
	pp->cap_names = 0;
	py->bytes -= pp->bytes;
	pp->bytes = 0;
}

/* Process @tgid's Python frames are not read, for @why: counted once, the first kept. */
static void not_read(struct python *py, uint32_t tgid, int why, const char *detail)
{
	char path[64], comm[16] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", tgid);
	f = fopen(path, "re");
	if (f && fgets(comm, sizeof(comm), f))
		comm[strcspn(comm, "\n")] = 0;
	if (f)
		fclose(f);
	pthread_mutex_lock(&py->lock);
	if (!intset__has(&py->said, (int)tgid)) {
		intset__add(&py->said, (int)tgid);
		if (!py->not_read[why]++) {
			py->first[why].pid = tgid;
			snprintf(py->first[why].comm, sizeof(py->first[why].comm), "%s", comm);
			snprintf(py->first[why].detail, sizeof(py->first[why].detail), "%s", detail);
		}
	}
	pthread_mutex_unlock(&py->lock);
	pr_debug("python: process %u (%s) runs an interpreter whose frames offcpu does not read: %s",
		 tgid, comm, detail);
}

/* Look at process @tgid and tell the program what it runs. */
static void detect(struct python *py, uint32_t tgid)
{
	struct offcpu_py_proc p = { .state = OFFCPU_PY_NONE };
	struct pyproc pp = { 0 };
	char path[64], line[4096 + 256];
	struct pyobj found = { .why = PY_READ };
	uint64_t bias = 0;
	bool again = false, python = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", tgid);
	f = fopen(path, "re");
	if (!f)
		goto tell; /* gone: its entry goes with the LRU */
	while (fgets(line, sizeof(line), f)) {
		struct pyobj obj;
		struct maps_line m;

		if (maps_line__parse(line, &m) || m.perms[2] != 'x' || m.name[0] != '/' || !m.ino)
			continue;
		if (!pyobj_of(py, tgid, &m, &obj, &again))
			continue;
		if (!obj.python || !load_bias(&obj, &m, &bias))
			continue;
		python = true;
		found = obj;
		if (obj.why == PY_READ) {
			p.version = obj.version;
			p.tss_key = obj.runtime + bias + obj.tss;
			p.l = obj.l;
			pp.eval_lo = obj.eval + bias;
			pp.eval_hi = pp.eval_lo + obj.eval_size;
			p.state = OFFCPU_PY_READ;
		}
		break;
	}
	fclose(f);
	if (p.state == OFFCPU_PY_READ) {
		struct pyproc *e;

		pthread_mutex_lock(&py->lock);
		e = proc_get(py, tgid, true);
		if (e && e->gone) {
			/* its pid taken by a new process: nothing of the old one's holds */
			proc_drop_names(py, e);
			*e = (struct pyproc){ .tgid = tgid, .used = true };
			py->gone--;
		}
		if (e) {
			e->eval_lo = pp.eval_lo;
			e->eval_hi = pp.eval_hi;
			e->tss_key = p.tss_key;
			e->l = p.l;
			/* ids go on past the ones it had (an exec): never two names for one */
			p.next_id = e->next_id;
			p.max_id = e->cut ? 0 : OFFCPU_PY_IDS_MAX;
		}
		py->found++;
		pthread_mutex_unlock(&py->lock);
		pr_debug("python: process %u runs Python %s (_PyRuntime key at %#llx)", tgid,
			 found.detail, (unsigned long long)p.tss_key);
	} else if (python) {
		not_read(py, tgid, found.why, found.detail);
	}
	if (p.state == OFFCPU_PY_NONE && again) {
		/* not known yet: the program asks again at the process's next block */
		bpf_map_delete_elem(py->procs_fd, &tgid);
		return;
	}
tell:
	bpf_map_update_elem(py->procs_fd, &tgid, &p, BPF_ANY);
}

/* ---- the program's events ---- */

/* @pp used its ids, or its share of the names' memory: cut off, said (under the lock). */
static void proc_cut(struct python *py, struct pyproc *pp)
{
	struct offcpu_py_proc p;

	if (pp->cut)
		return;
	pp->cut = true;
	if (!py->cut++)
		py->first_cut = pp->tgid;
	/* the program hands it no more ids */
	if (!bpf_map_lookup_elem(py->procs_fd, &pp->tgid, &p)) {
		p.max_id = 0;
		bpf_map_update_elem(py->procs_fd, &pp->tgid, &p, BPF_EXIST);
	}
}

/* Keep name @text of @pp's @id, within the memory bounds (under the lock). */
static void keep_name(struct python *py, struct pyproc *pp, uint32_t id, const char *text)
{
	size_t len = strlen(text) + 1, cap = pp->cap_names;
	uint64_t grow = 0;

	if (id >= cap) {
		cap = cap ? cap : 64;
		while (cap <= id)
			cap *= 2;
		grow = (cap - pp->cap_names) * sizeof(*pp->names);
	}
	if (pp->cut || pp->bytes + grow + len > PY_PROC_MEM_MAX ||
	    py->bytes + grow + len > PY_NAMES_MEM_MAX) {
		py->names_dropped++;
		proc_cut(py, pp);
		return;
	}
	if (grow) {
		struct pyname *n = realloc(pp->names, cap * sizeof(*n));

		if (!n)
			return;
		memset(n + pp->cap_names, 0, (cap - pp->cap_names) * sizeof(*n));
		pp->names = n;
		pp->cap_names = cap;
	}
	if (pp->names[id].text) {
		len -= strlen(pp->names[id].text) + 1;
		free(pp->names[id].text);
	}
	pp->names[id] = (struct pyname){ .text = strdup(text) };
	pp->bytes += grow + len;
	py->bytes += grow + len;
	if (py->bytes > py->bytes_peak)
		py->bytes_peak = py->bytes;
}

/*
 * Code object @code of @pp named with identity @stamp: one named before at
 * its address with another identity was freed, and this one took its place
 * (counted). Its names' memory bounds what is kept (under the lock).
 */
static void note_stamp(struct python *py, struct pyproc *pp, uint64_t code, uint64_t stamp)
{
	uint64_t *v;
	int created;

	if (pp->cut || pp->bytes + 64 > PY_PROC_MEM_MAX || py->bytes + 64 > PY_NAMES_MEM_MAX)
		return;
	v = hashmap__upsert(&pp->stamps, &code, sizeof(code), &created);
	if (!v)
		return;
	if (created) {
		pp->bytes += 64;
		py->bytes += 64;
	} else if (*v != stamp) {
		py->renamed++;
	}
	*v = stamp;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct python *py = ctx;
	const struct offcpu_py_event *e = data;
	char text[OFFCPU_PY_NAME_LEN + OFFCPU_PY_FILE_LEN + 64];
	struct pyproc *pp;

	if (size < sizeof(*e))
		return 0;
	if (e->kind == OFFCPU_PY_EV_PROC) {
		if (!grow_array((void **)&py->asked, &py->cap_asked, py->nr_asked + 1,
				sizeof(*py->asked)))
			py->asked[py->nr_asked++] = e->tgid;
		return 0;
	}
	pp = proc_get(py, e->tgid, true);
	if (pp && e->kind == OFFCPU_PY_EV_CUT)
		proc_cut(py, pp);
	if (!pp || e->kind != OFFCPU_PY_EV_NAME || !e->id || e->id > OFFCPU_PY_IDS_MAX)
		return 0;
	if (e->id > pp->next_id)
		pp->next_id = e->id;
	note_stamp(py, pp, e->code, e->stamp);
	snprintf(text, sizeof(text), OFFCPU_NAMED_PY "%.*s (%.*s:%d)", OFFCPU_PY_NAME_LEN,
		 e->qualname[0] ? e->qualname : "?", OFFCPU_PY_FILE_LEN,
		 e->filename[0] ? e->filename : "?",
		 pylayout__line(e->minor, e->linetable,
				e->linetable_len < OFFCPU_PY_LINETABLE ? e->linetable_len :
									 OFFCPU_PY_LINETABLE,
				e->lineno, e->lasti));
	keep_name(py, pp, e->id, text);
	return 0;
}

/* Free the names of processes that exited PY_GONE_MS ago and more (under the lock). */
static void collect(struct python *py)
{
	uint64_t now = now_ns();
	size_t i;

	for (i = 0; i < py->nr_proc && py->gone; i++) {
		struct pyproc *pp = &py->proc[i];

		if (!pp->used || !pp->gone || now - pp->gone_ns < PY_GONE_MS * 1000000ULL)
			continue;
		proc_drop_names(py, pp);
		hashmap__remove(&py->procs, &pp->tgid, sizeof(pp->tgid));
		memset(pp, 0, sizeof(*pp));
		py->gone--;
		py->freed++;
	}
}

/* What the program saw of Python process @tgid that keeps its frames from being read: said. */
static void check_seen(struct python *py, uint32_t tgid)
{
	struct offcpu_py_proc p;

	if (!bpf_map_lookup_elem(py->procs_fd, &tgid, &p) && p.state == OFFCPU_PY_READ &&
	    (p.flags & OFFCPU_PY_F_KEY_BAD))
		not_read(py, tgid, PYTHON_KEY, "its thread-state key is past glibc's 32 first slots");
}

void python__exit(struct python *py, uint32_t tgid)
{
	struct pyproc *pp;
	bool known;

	if (!py)
		return;
	pthread_mutex_lock(&py->lock);
	pp = proc_get(py, tgid, false);
	known = pp && !pp->gone;
	if (known) {
		pp->gone = true;
		pp->gone_ns = now_ns();
		py->gone++;
	}
	pthread_mutex_unlock(&py->lock);
	if (known)
		check_seen(py, tgid);
}

static void *run(void *arg)
{
	struct python *py = arg;
	struct pollfd pfd = { .fd = ring_buffer__epoll_fd(py->rb), .events = POLLIN };
	uint32_t asked[64];
	size_t n, i;

	while (!py->stop) {
		if (poll(&pfd, 1, 100) < 0 && errno != EINTR)
			break;
		do {
			pthread_mutex_lock(&py->lock);
			ring_buffer__consume(py->rb);
			collect(py);
			n = py->nr_asked < 64 ? py->nr_asked : 64;
			memcpy(asked, py->asked, n * sizeof(*asked));
			memmove(py->asked, py->asked + n, (py->nr_asked - n) * sizeof(*asked));
			py->nr_asked -= n;
			pthread_mutex_unlock(&py->lock);
			for (i = 0; i < n; i++)
				detect(py, asked[i]);
		} while (n && !py->stop);
	}
	return NULL;
}

/* The processes recorded from the start (-p): known before their first block. */
static void py_targets(struct python *py, int filter_fd)
{
	uint32_t key, next, n = 0;
	uint8_t v;
	void *prev = NULL;

	while (filter_fd >= 0 && n < 4096 && !bpf_map_get_next_key(filter_fd, prev, &next)) {
		key = next;
		prev = &key;
		n++;
		if (!bpf_map_lookup_elem(filter_fd, &key, &v) && v == OFFCPU_FILTER_ACTIVE)
			detect(py, key);
	}
}

struct python *python__new(struct collector *c)
{
	struct python *py;
	int events_fd;

	errno = 0;
	events_fd = collector__python_fd(c, "py_events");
	if (events_fd < 0) /* loaded without Python frames (--no-python, or a fallback) */
		return NULL;
	py = calloc(1, sizeof(*py));
	if (!py)
		return NULL;
	pthread_mutex_init(&py->lock, NULL);
	py->procs_fd = collector__python_fd(c, "py_procs");
	py->counters_fd = collector__python_fd(c, "py_counters");
	py->rb = ring_buffer__new(events_fd, on_event, py, NULL);
	if (!py->rb || py->procs_fd < 0) {
		errno = errno ?: EINVAL;
		python__free(py);
		return NULL;
	}
	py_targets(py, collector__python_fd(c, "tgid_filter"));
	if ((errno = pthread_create(&py->thread, NULL, run, py))) {
		python__free(py);
		return NULL;
	}
	py->started = true;
	return py;
}

void python__free(struct python *py)
{
	size_t i;

	if (!py)
		return;
	if (py->started) {
		struct timespec until;

		py->stop = 1;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		if (pthread_timedjoin_np(py->thread, NULL, &until)) {
			/* stuck on another user's file that blocks (FUSE): its state
			 * goes with the process */
			pr_warn("the Python process reader did not stop within 1 s (reading a file "
				"that blocks?): left behind");
			pthread_detach(py->thread);
			return;
		}
	}
	ring_buffer__free(py->rb);
	for (i = 0; i < py->nr_proc; i++)
		if (py->proc[i].used)
			proc_drop_names(py, &py->proc[i]);
	hashmap__free(&py->procs);
	free(py->proc);
	hashmap__free(&py->objs);
	free(py->obj);
	intset__free(&py->said);
	free(py->asked);
	pthread_mutex_destroy(&py->lock);
	free(py);
}

/* ---- the splice ---- */

/* the frames spliced, and the names they need, of this thread's last stacks */
struct need {
	uint32_t tgid, id;
};
static __thread uint64_t spliced[OFFCPU_MAX_STACK_DEPTH + 1];
static __thread struct need pending[2 * OFFCPU_MAX_STACK_DEPTH];
static __thread size_t nr_pending;

static void need_name(uint32_t tgid, uint32_t id)
{
	size_t i;

	for (i = 0; i < nr_pending; i++)
		if (pending[i].id == id && pending[i].tgid == tgid)
			return;
	if (nr_pending < sizeof(pending) / sizeof(pending[0]))
		pending[nr_pending++] = (struct need){ tgid, id };
}

uint32_t python__splice(struct python *py, uint32_t tgid, const uint64_t *uips, uint32_t nu,
			const uint64_t **out)
{
	uint32_t np = 0, nn, tail = 0, i, j = 0, n = 0;
	uint64_t lo = 0, hi = 0;
	struct pyproc *pp;

	*out = uips;
	if (!py || !nu || !OFFCPU_IS_PYFRAME(uips[nu - 1]))
		return nu;
	while (np < nu && OFFCPU_IS_PYFRAME(uips[nu - 1 - np]))
		np++;
	nn = nu - np;
	/* the walk's mark and a deferral stay last */
	while (tail < nn && (OFFCPU_UNW_IS_MARK(uips[nn - 1 - tail]) ||
			     OFFCPU_UNW_IS_DEFER(uips[nn - 1 - tail])))
		tail++;
	pthread_mutex_lock(&py->lock);
	pp = proc_get(py, tgid, false);
	if (pp) {
		lo = pp->eval_lo;
		hi = pp->eval_hi;
	}
	pthread_mutex_unlock(&py->lock);
	for (i = 0; i < nn - tail && n < OFFCPU_MAX_STACK_DEPTH; i++) {
		/* a caller's frame is its return address: the call is before it */
		uint64_t at = i ? uips[i] - 1 : uips[i];

		if (at >= lo && at < hi) {
			/* the Python frames this C frame runs: up to the one that entered it */
			while (j < np && n < OFFCPU_MAX_STACK_DEPTH) {
				uint64_t f = uips[nn + j++];
				uint32_t id = (uint32_t)((f - OFFCPU_PYFRAME_LO) / OFFCPU_PYFRAME_SIZE);

				/* id 0: a frame the program could not name (counted there) */
				if (id) {
					spliced[n++] = OFFCPU_PYFRAME_OF(id);
					need_name(tgid, id);
				}
				if (f & OFFCPU_PY_ENTRY)
					break;
			}
		}
		if (n < OFFCPU_MAX_STACK_DEPTH)
			spliced[n++] = uips[i];
	}
	for (i = nn - tail; i < nn && n < OFFCPU_MAX_STACK_DEPTH + 1; i++)
		spliced[n++] = uips[i];
	*out = spliced;
	return n;
}

int python__flush(struct python *py, struct record *r, struct perf_queue *q, size_t gen,
		  uint64_t time, int kind)
{
	struct synth_queue sq = { .q = q, .time = time, .kind = kind };
	const struct synth sy = { .sample_type = SIDEBAND_SAMPLE_TYPE, .id = r->ev.sideband_id,
				  .time = time, .emit = synth__to_queue, .arg = &sq };
	struct pyname *nm;
	int err = 0;
	size_t i;

	if (!py || !nr_pending)
		return 0;
	pthread_mutex_lock(&py->lock);
	for (i = 0; i < nr_pending && !err; i++) {
		uint32_t id = pending[i].id;
		struct pyproc *pp = proc_get(py, pending[i].tgid, false);

		/* a name sent just before the stack: maybe not read yet */
		if (!pp || id >= pp->cap_names || !pp->names[id].text) {
			ring_buffer__consume(py->rb);
			pp = proc_get(py, pending[i].tgid, false);
		}
		nm = pp && id < pp->cap_names ? &pp->names[id] : NULL;
		/* (samples are encoded out of time order: summed ones, stamped at the
		 * end of their interval, before streamed ones of the same round) */
		if (!nm || !nm->text || (nm->written == gen + 1 && nm->written_at <= time))
			continue;
		nm->written = (uint32_t)gen + 1;
		nm->written_at = time;
		err = synth__named(&sy, pp->tgid, OFFCPU_PYFRAME_OF(id), OFFCPU_PYFRAME_SIZE, nm->text);
	}
	pthread_mutex_unlock(&py->lock);
	nr_pending = 0;
	return err;
}

void python__stats(struct python *py, struct python_stats *st)
{
	uint64_t *v;
	int ncpus = libbpf_num_possible_cpus(), c;
	uint64_t sum[OFFCPU_PY_CNT_NR] = { 0 };
	uint32_t k;

	memset(st, 0, sizeof(*st));
	if (!py || ncpus <= 0 || py->counters_fd < 0)
		return;
	v = calloc((size_t)ncpus, sizeof(*v));
	if (!v)
		return;
	for (k = 0; k < OFFCPU_PY_CNT_NR; k++) {
		if (bpf_map_lookup_elem(py->counters_fd, &k, v))
			continue;
		for (c = 0; c < ncpus; c++)
			sum[k] += v[c];
	}
	free(v);
	/* the processes still running: what the program saw of them */
	pthread_mutex_lock(&py->lock);
	for (c = 0; c < (int)py->nr_proc; c++) {
		uint32_t tgid = py->proc[c].tgid;

		if (!py->proc[c].used || py->proc[c].gone)
			continue;
		pthread_mutex_unlock(&py->lock);
		check_seen(py, tgid);
		pthread_mutex_lock(&py->lock);
	}
	pthread_mutex_unlock(&py->lock);
	st->walks = sum[OFFCPU_PY_CNT_WALKS];
	st->no_tstate = sum[OFFCPU_PY_CNT_NO_TSTATE];
	st->frames = sum[OFFCPU_PY_CNT_FRAMES];
	st->faults = sum[OFFCPU_PY_CNT_FAULTS];
	st->cut = sum[OFFCPU_PY_CNT_NO_ROOM];
	st->names = sum[OFFCPU_PY_CNT_NAMES];
	st->names_lost = sum[OFFCPU_PY_CNT_NAME_LOST];
	pthread_mutex_lock(&py->lock);
	st->procs = py->found;
	st->names_dropped = py->names_dropped;
	st->procs_cut = py->cut;
	st->first_cut = py->first_cut;
	st->bytes_peak = py->bytes_peak;
	st->procs_freed = py->freed;
	st->renamed = py->renamed;
	memcpy(st->not_read, py->not_read, sizeof(st->not_read));
	memcpy(st->first, py->first, sizeof(st->first));
	pthread_mutex_unlock(&py->lock);
}

void python__summary(struct python *py, FILE *f)
{
	struct python_stats st;

	if (!py)
		return;
	python__stats(py, &st);
	summary__print_python(f, &st);
}
