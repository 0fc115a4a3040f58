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
#include "record_int.h"
#include "synth.h"
#include "../offcpu.h"
#include "../perfdata/format.h"
#include "../perfdata/queue.h"
#include "../perfdata/sample.h"
#include "../util/hashmap.h"
#include "../util/objread.h"
#include "../util/procmaps.h"
#include "../util/util.h"
#include "../util/worker.h"

/* What an object holds of CPython: found by its dynamic symbols. */
struct pyobj {
	bool python;
	uint32_t version; /* Py_Version */
	uint64_t runtime, eval, eval_size; /* _PyRuntime, _PyEval_EvalFrameDefault (ELF addresses) */
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
	struct pyname *names; /* by id (the process's own) */
	size_t cap_names;
	uint32_t next_id; /* the last id it was seen with: the next ones go on from it */
	uint64_t bytes; /* its names' memory */
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
};

/* ---- which processes run a known CPython ---- */

/* The dynamic symbols of @o that CPython defines, into @po. */
static void read_pyobj(struct elfobj *o, struct pyobj *po)
{
	const Elf64_Shdr *ds = NULL, *ss;
	Elf64_Sym *syms = NULL;
	char *str = NULL;
	uint64_t version_at = 0;
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
		}
	}
	if (!po->runtime || !version_at || !po->eval)
		goto out;
	/* Py_Version's value, from the file */
	for (i = 0; i < po->nload; i++) {
		const Elf64_Phdr *ph = &po->load[i];
		uint32_t *v;

		if (version_at < ph->p_vaddr || version_at + 4 > ph->p_vaddr + ph->p_filesz)
			continue;
		v = elfobj__read(o, ph->p_offset + (version_at - ph->p_vaddr), 4, 4);
		if (v)
			po->version = *v;
		free(v);
		break;
	}
	po->python = po->version != 0;
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
		read_pyobj(&o, po);
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
	pp->names = NULL;
	pp->cap_names = 0;
	py->bytes -= pp->bytes;
	pp->bytes = 0;
}

/* Look at process @tgid and tell the program what it runs. */
static void detect(struct python *py, uint32_t tgid)
{
	struct offcpu_py_proc p = { .state = OFFCPU_PY_NONE };
	struct pyproc pp = { 0 };
	char path[64], line[4096 + 256];
	uint64_t bias = 0;
	bool again = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", tgid);
	f = fopen(path, "re");
	if (!f)
		goto tell; /* gone: its entry goes with the LRU */
	while (fgets(line, sizeof(line), f)) {
		const struct pyobj *po;
		struct pyobj obj;
		struct maps_line m;

		if (maps_line__parse(line, &m) || m.perms[2] != 'x' || m.name[0] != '/' || !m.ino)
			continue;
		if (!pyobj_of(py, tgid, &m, &obj, &again))
			continue;
		po = &obj;
		if (po->python && load_bias(po, &m, &bias)) {
			p.version = po->version;
			p.tss_key = po->runtime + bias + OFFCPU_PY311_RUNTIME_TSS;
			pp.eval_lo = po->eval + bias;
			pp.eval_hi = pp.eval_lo + po->eval_size;
			/* 3.11 only: 3.12 moved cframe, 3.13 the thread state */
			if ((po->version >> 16) == 0x030b)
				p.state = OFFCPU_PY_311;
			else
				pr_debug("python: process %u runs Python %x.%x, whose frames offcpu does "
					 "not read", tgid, po->version >> 24, (po->version >> 16) & 0xff);
		}
		if (p.version)
			break;
	}
	fclose(f);
	if (p.state == OFFCPU_PY_311) {
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
			/* ids go on past the ones it had (an exec): never two names for one */
			p.next_id = e->next_id;
			p.max_id = e->cut ? 0 : OFFCPU_PY_IDS_MAX;
		}
		py->found++;
		pthread_mutex_unlock(&py->lock);
		pr_debug("python: process %u runs Python 3.11 (_PyRuntime key at %#llx)", tgid,
			 (unsigned long long)p.tss_key);
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

/* A varint of a 3.11 line table at @p (6 bits a byte, bit 6: more): its value; @p moves past it. */
static unsigned lt_varint(const uint8_t *lt, size_t n, size_t *p)
{
	unsigned v = 0, shift = 0;
	uint8_t b;

	do {
		if (*p >= n || shift > 24)
			return v;
		b = lt[(*p)++];
		v |= (unsigned)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

/*
 * The line of instruction @lasti (code units) from CPython 3.11's line table
 * (Objects/locations.md): entries of a first byte (bit 7 set; bits 3-6 the
 * kind, bits 0-2 the code units covered - 1) and the kind's bytes; kinds 13
 * and 14 carry the line's change as a signed varint, 10-12 a change of 0-2,
 * 15 has no line, the others keep it. @first (co_firstlineno) when the table
 * (or the part read) does not say.
 */
static int lt_line(const uint8_t *lt, size_t n, int first, int lasti)
{
	int line = first, addr = 0;
	size_t p = 0;

	if (lasti < 0)
		return first;
	while (p < n) {
		uint8_t b = lt[p++];
		int kind = (b >> 3) & 15, len = (b & 7) + 1;
		unsigned u;

		if (!(b & 0x80))
			continue; /* (not an entry's first byte) */
		if (kind == 13 || kind == 14) {
			u = lt_varint(lt, n, &p);
			line += (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
		} else if (kind >= 10 && kind <= 12) {
			line += kind - 10;
		}
		if (lasti < addr + len)
			return kind == 15 || line <= 0 ? first : line;
		addr += len;
		while (p < n && !(lt[p] & 0x80))
			p++;
	}
	return first;
}

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
	snprintf(text, sizeof(text), OFFCPU_NAMED_PY "%.*s (%.*s:%d)", OFFCPU_PY_NAME_LEN,
		 e->qualname[0] ? e->qualname : "?", OFFCPU_PY_FILE_LEN,
		 e->filename[0] ? e->filename : "?",
		 lt_line(e->linetable, e->linetable_len < OFFCPU_PY_LINETABLE ? e->linetable_len :
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

void python__exit(struct python *py, uint32_t tgid)
{
	struct pyproc *pp;

	if (!py)
		return;
	pthread_mutex_lock(&py->lock);
	pp = proc_get(py, tgid, false);
	if (pp && !pp->gone) {
		pp->gone = true;
		pp->gone_ns = now_ns();
		py->gone++;
	}
	pthread_mutex_unlock(&py->lock);
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

void python__detect(struct python *py, int pid)
{
	struct offcpu_py_proc p;
	uint32_t tgid = (uint32_t)pid;

	if (!py || pid <= 0)
		return;
	if (!bpf_map_lookup_elem(py->procs_fd, &tgid, &p) && p.state == OFFCPU_PY_311)
		return; /* known since its exec */
	detect(py, tgid);
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
	if ((errno = -worker__start(&py->thread, run, py))) {
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
		py->stop = 1;
		/* stuck on something another user controls: its state goes with the process */
		if (!worker__join_within(py->thread, 1000, "the Python process reader"))
			return;
	}
	ring_buffer__free(py->rb);
	for (i = 0; i < py->nr_proc; i++)
		if (py->proc[i].used)
			proc_drop_names(py, &py->proc[i]);
	hashmap__free(&py->procs);
	free(py->proc);
	hashmap__free(&py->objs);
	free(py->obj);
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

/*
 * The processes past their last id, from the program's own entries: the
 * event that tells one is a ring buffer record a flood of names can crowd out
 * (under the lock).
 */
static void find_cut(struct python *py)
{
	uint32_t key, next, n = 0;
	struct offcpu_py_proc p;
	void *prev = NULL;

	while (n++ < 65536 && !bpf_map_get_next_key(py->procs_fd, prev, &next)) {
		struct pyproc *pp;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(py->procs_fd, &key, &p) || p.state != OFFCPU_PY_311 ||
		    p.next_id <= p.max_id)
			continue;
		pp = proc_get(py, key, true);
		if (pp && !pp->cut) {
			pp->cut = true;
			if (!py->cut++)
				py->first_cut = key;
		}
	}
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
	st->walks = sum[OFFCPU_PY_CNT_WALKS];
	st->frames = sum[OFFCPU_PY_CNT_FRAMES];
	st->faults = sum[OFFCPU_PY_CNT_FAULTS];
	st->cut = sum[OFFCPU_PY_CNT_NO_ROOM];
	st->names = sum[OFFCPU_PY_CNT_NAMES];
	st->names_lost = sum[OFFCPU_PY_CNT_NAME_LOST];
	pthread_mutex_lock(&py->lock);
	find_cut(py);
	st->procs = py->found;
	st->names_dropped = py->names_dropped;
	st->procs_cut = py->cut;
	st->first_cut = py->first_cut;
	st->bytes_peak = py->bytes_peak;
	st->procs_freed = py->freed;
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
