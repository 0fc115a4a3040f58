// SPDX-License-Identifier: GPL-2.0
/*
 * Python frames of the threads already blocked when the recording began
 * (python.h, python__thread_frames()): their stacks are finished in user
 * space (userstacks.c), and so are their Python frames, read here from the
 * process's memory with the layout the program uses for its later blocks.
 *
 * The process is another user's: every read is bounded (PYREAD_READS a
 * thread, the names' lengths), goes only where no file system is asked
 * (anonymous memory, and the interpreter's own object, whose file offcpu
 * already read through objread), and every value read is a hint: a frame,
 * a code object or a string that cannot be read ends the walk or leaves a
 * name empty, never more.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "python_int.h"
#include "pylayout.h"
#include "../util/procmaps.h"
#include "../util/util.h"

#define PYREAD_READS 512 /* reads of one thread's frames and names at most */
#define PYREAD_MAPS 65536 /* mappings of a process looked at */

/* Where reading a process's memory asks no file system. */
struct span {
	uint64_t lo, hi;
};

struct reader {
	pid_t pid;
	struct span *ok;
	size_t nr, cap;
	unsigned reads;
};

/* Is the file of maps line @m the interpreter's object (read through objread)? Under the lock. */
static bool interpreter_file(struct python *py, const struct maps_line *m)
{
	uint64_t key[2] = { ((uint64_t)m->maj << 32) | m->min, m->ino }, *v;

	v = hashmap__find(&py->objs, key, sizeof(key));
	return v && *v && py->obj[*v - 1].python;
}

static int reader_open(struct python *py, struct reader *rd, uint32_t tgid)
{
	char path[64], line[4096 + 256];
	size_t lines = 0;
	FILE *f;

	memset(rd, 0, sizeof(*rd));
	rd->pid = (pid_t)tgid;
	snprintf(path, sizeof(path), "/proc/%u/maps", tgid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	pthread_mutex_lock(&py->lock);
	while (fgets(line, sizeof(line), f) && lines++ < PYREAD_MAPS) {
		struct maps_line m;
		bool anon;

		if (maps_line__parse(line, &m) || m.perms[0] != 'r')
			continue;
		anon = !m.ino && (!m.name[0] || (m.name[0] == '[' && strcmp(m.name, "[vvar]")));
		if (!anon && !(m.ino && m.name[0] == '/' && interpreter_file(py, &m)))
			continue;
		if (grow_array((void **)&rd->ok, &rd->cap, rd->nr + 1, sizeof(*rd->ok)))
			break;
		rd->ok[rd->nr++] = (struct span){ m.start, m.end };
	}
	pthread_mutex_unlock(&py->lock);
	fclose(f);
	return 0;
}

/* @len bytes at @addr into @buf: false if not all of them can be, or may not be, read. */
static bool rd_read(struct reader *rd, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	size_t i;

	if (!len || addr + len < addr || rd->reads >= PYREAD_READS)
		return false;
	for (i = 0; i < rd->nr; i++)
		if (addr >= rd->ok[i].lo && addr + len <= rd->ok[i].hi)
			break;
	if (i == rd->nr)
		return false;
	rd->reads++;
	return process_vm_readv(rd->pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

static uint64_t rd_u64(struct reader *rd, uint64_t addr)
{
	uint64_t v = 0;

	return rd_read(rd, addr, &v, sizeof(v)) ? v : 0;
}

/* A str's characters into @d (NUL-ended, "" when not read): its ASCII ones, or CPython's UTF-8 copy. */
static void rd_str(struct reader *rd, const struct offcpu_py_layout *l, uint64_t str, char *d,
		   size_t size)
{
	uint64_t len = 0, utf8 = 0;
	uint32_t state = 0;

	d[0] = 0;
	if (!str || !rd_read(rd, str + l->str_state, &state, sizeof(state)))
		return;
	if (state & (1u << 6)) {
		len = rd_u64(rd, str + 16); /* PyASCIIObject.length: one byte a character */
		str += l->str_ascii;
	} else {
		utf8 = rd_u64(rd, str + l->str_utf8);
		len = utf8 ? rd_u64(rd, str + l->str_utf8 - 8) : 0; /* utf8_length, just before */
		str = utf8;
	}
	if (!len || !str)
		return;
	if (len > size - 1)
		len = size - 1;
	if (rd_read(rd, str, d, len))
		d[len] = 0;
	else
		d[0] = 0;
	/* the name is another user's: no NUL inside it cuts what follows unsaid */
	d[strnlen(d, len)] = 0;
}

/* The identity of code object @code (struct offcpu_py_layout), as the program reads it. */
static uint64_t rd_stamp(struct reader *rd, const struct offcpu_py_layout *l, uint64_t code)
{
	uint32_t v = 0;
	uint64_t name;

	if (l->stamp_str) {
		name = rd_u64(rd, code + l->code_stamp);
		return name ? rd_u64(rd, name + l->str_hash) : 0;
	}
	return rd_read(rd, code + l->code_stamp, &v, sizeof(v)) ? v : 0;
}

struct uid_key {
	uint64_t code, stamp;
	int64_t lasti;
};

/*
 * The id of the frame at @lasti of code object @code (identity @stamp) of
 * @tgid, named now if new (an id of user space's range of the process's),
 * 0 when it cannot be.
 */
static uint32_t name_frame(struct python *py, uint32_t tgid, struct reader *rd,
			   const struct offcpu_py_layout *l, uint64_t code, uint64_t stamp,
			   int32_t lasti)
{
	struct uid_key k = { code, stamp, lasti };
	char qualname[OFFCPU_PY_NAME_LEN], filename[OFFCPU_PY_FILE_LEN];
	char text[OFFCPU_PY_NAME_LEN + OFFCPU_PY_FILE_LEN + 64];
	uint8_t win[OFFCPU_PY_CODE_WIN], lt[OFFCPU_PY_LINETABLE];
	uint64_t *v, ltab, str, len = 0;
	struct pyproc *pp;
	uint32_t id = 0;
	int32_t first;
	int created;

	pthread_mutex_lock(&py->lock);
	pp = proc_get(py, tgid, false);
	v = pp ? hashmap__find(&pp->uids, &k, sizeof(k)) : NULL;
	if (v)
		id = (uint32_t)*v;
	pthread_mutex_unlock(&py->lock);
	if (!pp || v)
		return id;
	/* its names, read without the lock */
	memset(win, 0, sizeof(win));
	if (l->code_len > sizeof(win) || !rd_read(rd, code + l->code_base, win, l->code_len))
		return 0;
	memcpy(&first, win + l->code_firstlineno, sizeof(first));
	memcpy(&ltab, win + l->code_linetable, sizeof(ltab));
	memcpy(&str, win + l->code_qualname, sizeof(str));
	rd_str(rd, l, str, qualname, sizeof(qualname));
	memcpy(&str, win + l->code_filename, sizeof(str));
	rd_str(rd, l, str, filename, sizeof(filename));
	if (ltab && lasti >= 0) {
		len = rd_u64(rd, ltab + l->bytes_size);
		if (len > sizeof(lt))
			len = sizeof(lt);
		if (len && !rd_read(rd, ltab + l->bytes_data, lt, len))
			len = 0;
	}
	python_name_text(text, sizeof(text), qualname, filename,
			 pylayout__line(l->minor, lt, len, first, lasti));
	pthread_mutex_lock(&py->lock);
	pp = proc_get(py, tgid, false);
	if (pp && !pp->gone && !pp->cut) {
		v = hashmap__upsert(&pp->uids, &k, sizeof(k), &created);
		if (v && !created) {
			id = (uint32_t)*v; /* named meanwhile */
		} else if (v && pp->next_uid < PY_UID_LAST) {
			id = pp->next_uid = pp->next_uid ? pp->next_uid + 1 : PY_UID_FIRST;
			*v = id;
			keep_name(py, pp, id, text);
			note_stamp(py, pp, code, stamp);
			if (!name_of(pp, id) || !name_of(pp, id)->text)
				id = 0; /* not kept: over a bound */
		} else if (v) {
			proc_cut(py, pp);
		}
	}
	pthread_mutex_unlock(&py->lock);
	return id;
}

int python__thread_frames(void *arg, uint32_t tgid, uint64_t fsbase, uint64_t *out, int max)
{
	struct python *py = arg;
	struct offcpu_py_layout l;
	struct reader rd;
	struct pyproc *pp;
	uint64_t tss_key = 0, frame, code, at, first;
	uint8_t win[OFFCPU_PY_FRAME_WIN];
	uint32_t tss[2], id;
	int n = 0, i;

	if (!py || !fsbase || max <= 0)
		return 0;
	pthread_mutex_lock(&py->lock);
	pp = proc_get(py, tgid, false);
	if (pp && !pp->gone) {
		tss_key = pp->tss_key;
		l = pp->l;
	}
	pthread_mutex_unlock(&py->lock);
	if (!tss_key || l.frame_len > sizeof(win) || reader_open(py, &rd, tgid))
		return 0;
	/* its thread state, in glibc's slot of _PyRuntime's key, as the program finds it */
	if (!rd_read(&rd, tss_key, tss, sizeof(tss)) || tss[0] != 1 || tss[1] >= 32)
		goto out;
	frame = rd_u64(&rd, fsbase + OFFCPU_GLIBC_TSS_SLOTS + 16 * (uint64_t)tss[1] + 8);
	frame = frame ? rd_u64(&rd, frame + l.tstate_frame) : 0;
	if (frame && l.cframe_frame != OFFCPU_PY_NONE)
		frame = rd_u64(&rd, frame + l.cframe_frame);
	for (i = 0; frame && i < OFFCPU_PY_FRAMES && n < max; i++) {
		uint64_t entry = 0;
		int32_t lasti = -1;
		uint8_t flag = 0;

		if (!rd_read(&rd, frame + l.frame_base, win, l.frame_len))
			break;
		memcpy(&code, win + l.frame_code, sizeof(code));
		memcpy(&frame, win + l.frame_previous, sizeof(frame));
		if (l.frame_flag != OFFCPU_PY_NONE)
			flag = win[l.frame_flag];
		if (l.frames == OFFCPU_PY_FRAMES_OWNER && flag == l.cstack) {
			/* a C-level call's own frame: the frame before it entered that call */
			if (n)
				out[n - 1] |= OFFCPU_PY_ENTRY;
			continue;
		}
		if (!code)
			break;
		if (l.code_instr == OFFCPU_PY_NONE) {
			memcpy(&lasti, win + l.frame_instr, sizeof(lasti));
			if (lasti < -1 || lasti >= (1 << 24))
				lasti = -1;
		} else {
			memcpy(&at, win + l.frame_instr, sizeof(at));
			first = code + l.code_instr;
			if (at >= first && at - first < (1ULL << 24))
				lasti = (int32_t)((at - first) / 2);
		}
		if (l.frames == OFFCPU_PY_FRAMES_OWN || (l.frames == OFFCPU_PY_FRAMES_IS_ENTRY && flag))
			entry = OFFCPU_PY_ENTRY;
		id = name_frame(py, tgid, &rd, &l, code, rd_stamp(&rd, &l, code), lasti);
		out[n++] = OFFCPU_PYFRAME_OF(id) | entry;
	}
out:
	free(rd.ok);
	pthread_mutex_lock(&py->lock);
	py->start_threads += n > 0;
	py->start_frames += (uint64_t)n;
	pthread_mutex_unlock(&py->lock);
	return n;
}
