// SPDX-License-Identifier: GPL-2.0
/* Python frames: which CPython a process runs, and its layout (python_int.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "python_int.h"
#include "pylayout.h"
#include "../util/objread.h"
#include "../util/procmaps.h"
#include "../util/util.h"

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
	struct elfsyms ds;
	uint64_t version_at = 0, code_type = 0, str_type = 0, *got;
	uint32_t code_size, str_size;
	bool aiter = false;
	int minor;
	size_t i;

	memset(po, 0, sizeof(*po));
	for (i = 0; i < o->nph && po->nload < 8; i++)
		if (o->ph[i].p_type == PT_LOAD)
			po->load[po->nload++] = o->ph[i];
	if (elfobj__dynsyms(o, &ds))
		goto out;
	for (i = 0; i < ds.n; i++) {
		const char *name = elfsyms__name(&ds, i);
		const Elf64_Sym *syms = ds.v;

		if (!name || (name[0] != '_' && name[0] != 'P'))
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
	elfsyms__free(&ds);
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



/* Process @tgid's Python frames are not read, for @why: counted once, the first kept. */
void python_not_read(struct python *py, uint32_t tgid, int why, const char *detail)
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
void python_detect(struct python *py, uint32_t tgid)
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
		python_not_read(py, tgid, found.why, found.detail);
	}
	if (p.state == OFFCPU_PY_NONE && again) {
		/* not known yet: the program asks again at the process's next block */
		bpf_map_delete_elem(py->procs_fd, &tgid);
		return;
	}
tell:
	bpf_map_update_elem(py->procs_fd, &tgid, &p, BPF_ANY);
}

void python__detect(struct python *py, int pid)
{
	struct offcpu_py_proc p;
	uint32_t tgid = (uint32_t)pid;

	if (!py || pid <= 0)
		return;
	if (!bpf_map_lookup_elem(py->procs_fd, &tgid, &p) && p.state == OFFCPU_PY_READ)
		return; /* known since its exec */
	python_detect(py, tgid);
}
