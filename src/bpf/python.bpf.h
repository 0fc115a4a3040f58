/* SPDX-License-Identifier: GPL-2.0 */
/*
 * python.bpf.h - the Python frames of a thread of a CPython process, walked
 * where its user stack is stored (store_stack(), stackmap.bpf.h): at its
 * switch-out, and as a waker at sched_waking; the task is the current one
 * there, so its memory is read with bpf_probe_read_user.
 *
 * Where CPython keeps what is read is the process's layout (struct
 * offcpu_py_layout in its py_procs entry, CPython 3.10 to 3.13, chosen by
 * user space from the interpreter's version). The thread's PyThreadState is
 * in glibc's TSS slot of _PyRuntime's key (not the GIL holder's, which a
 * blocked thread is not; 3.13's _Py_tss_tstate is cleared while a thread
 * waits without the GIL); its current frame is in it or in its cframe, and
 * the callers' frames are the previous ones. Each (code object, its
 * identity, instruction) is interned per process on first sight: an id, and
 * its names (co_qualname or 3.10's co_name, co_filename, co_firstlineno, and
 * co_linetable's first bytes for the line of the instruction) read here and
 * sent to user space at once, so a process that exits keeps them. The
 * identity is what tells a code object from one made later at its address:
 * the hash of its co_name (3.10, 3.11) or its co_version (3.12, 3.13),
 * read at every frame. The frames go after the native ones (struct
 * offcpu_py_proc, offcpu.h), part of the stored stack and of its identity.
 * A process is one map lookup; a process offcpu has not seen is asked of
 * user space once (py_procs holds a pending entry meanwhile).
 *
 * Needs: common.bpf.h.
 */
#ifndef OFFCPU_PYTHON_BPF_H
#define OFFCPU_PYTHON_BPF_H

#include "common.bpf.h"

/* on unless --no-python (user space sets it before loading) */
const volatile bool python_frames = false;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct offcpu_py_proc);
	__uint(max_entries, 8192);
} py_procs SEC(".maps");

/* A frame's name: its code object and instruction (the line comes from the two). */
struct py_code_key {
	__u32 tgid;
	__s32 lasti; /* -1: none yet */
	__u64 code;
	__u64 stamp; /* the code object's identity: another one at its address is named anew */
};

/* (process, code object, instruction) -> id; an entry evicted is named again under a new id */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct py_code_key);
	__type(value, __u32);
	__uint(max_entries, 65536);
} py_codes SEC(".maps");

/*
 * Each cpu's cache of py_codes, direct-mapped: a hit costs a few loads where
 * the hash lookup costs tens of nanoseconds, and a walk looks up every frame.
 * (Per cpu: no other program writes an entry while it is read; an id once
 * given names its frame for good.)
 */
#define PY_CACHE 1024
struct py_cache_ent {
	struct py_code_key k;
	__u32 id;
	__u32 pad;
};
struct py_cache {
	struct py_cache_ent e[PY_CACHE];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct py_cache);
	__uint(max_entries, 1);
} py_cache SEC(".maps");

/*
 * Each cpu's walk state, off the stack (the program, the walk and its
 * callback share 512 bytes): the window a frame's or a code object's bytes
 * are read into at once, the frame's key, and the process's layout, copied
 * at the walk's start. (Not in the cache's value: a per-cpu value is at
 * most 32 KiB, the cache's size.)
 */
struct py_win {
	__u8 b[OFFCPU_PY_CODE_WIN];
	struct py_code_key k;
	struct offcpu_py_layout l;
	__u32 tgid;
	__u32 first; /* where the walk's Python frames begin in its stack */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct py_win);
	__uint(max_entries, 1);
} py_wins SEC(".maps");

/* struct offcpu_py_event for user space (src/record/python.c) */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} py_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, OFFCPU_PY_CNT_NR);
} py_counters SEC(".maps");

static __always_inline void py_count_n(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&py_counters, &idx);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline void py_count(__u32 idx)
{
	py_count_n(idx, 1);
}

/* A process not seen yet: a pending entry, and the question to user space.
 * Its own call: the entry it builds on its stack (the process's layout in
 * it) is then not on py_frames' stack, under which the walk's calls go
 * (6.1 bounds the chain of calls at 512 bytes). */
static __noinline void py_ask(__u32 tgid)
{
	struct offcpu_py_proc p = { .state = OFFCPU_PY_PENDING };
	struct offcpu_py_event *e;

	if (bpf_map_update_elem(&py_procs, &tgid, &p, BPF_NOEXIST))
		return; /* another cpu asked */
	e = bpf_ringbuf_reserve(&py_events, sizeof(*e), 0);
	if (!e) {
		bpf_map_delete_elem(&py_procs, &tgid); /* asked again at its next block */
		return;
	}
	e->kind = OFFCPU_PY_EV_PROC;
	e->tgid = tgid;
	bpf_ringbuf_submit(e, 0);
}

/* A str's characters into @d (NUL-ended): ASCII ones, or the UTF-8 copy
 * CPython made of another; "" otherwise. */
static __always_inline void py_str(char *d, __u32 len, __u64 str, const struct offcpu_py_layout *l)
{
	__u64 utf8 = 0;
	__u32 state = 0;

	d[0] = 0;
	if (!str || bpf_probe_read_user(&state, sizeof(state), (void *)(str + l->str_state)))
		return;
	if (state & (1u << 6)) {
		bpf_probe_read_user_str(d, len, (void *)(str + l->str_ascii));
		return;
	}
	if (!bpf_probe_read_user(&utf8, sizeof(utf8), (void *)(str + l->str_utf8)) && utf8)
		bpf_probe_read_user_str(d, len, (void *)utf8);
}

/* The 8 bytes at @off of window @c (@off checked: within it). */
static __always_inline __u64 py_win64(const struct py_win *c, __u32 off)
{
	if (off > OFFCPU_PY_CODE_WIN - 8)
		return 0;
	return *(const __u64 *)(c->b + off);
}

/* Process @tgid handed out its last id: user space is told, once (again at
 * its next frame to name while the buffer was full). */
static __always_inline void py_tell_cut(struct offcpu_py_proc *p, __u32 tgid)
{
	struct offcpu_py_event *e;

	if (p->flags & OFFCPU_PY_F_CUT_TOLD)
		return;
	e = bpf_ringbuf_reserve(&py_events, sizeof(*e), 0);
	if (!e)
		return;
	p->flags |= OFFCPU_PY_F_CUT_TOLD;
	e->kind = OFFCPU_PY_EV_CUT;
	e->tgid = tgid;
	bpf_ringbuf_submit(e, 0);
}

/* The id of the frame at instruction @lasti of code object @code of process
 * @tgid: named now on first sight (an id of the process's own), or 0 when it
 * cannot be. @c: this cpu's window. */
static __always_inline __u32 py_intern(struct py_code_key *k, struct py_win *c)
{
	const struct offcpu_py_layout *l;
	struct offcpu_py_event *e;
	struct offcpu_py_proc *p;
	__u64 lt, len = 0, next;
	__u32 *v, id, n;

	v = bpf_map_lookup_elem(&py_codes, k);
	if (v)
		return *v;
	p = bpf_map_lookup_elem(&py_procs, &k->tgid);
	if (!p)
		goto lost;
	l = &p->l;
	next = __sync_fetch_and_add(&p->next_id, 1) + 1;
	if (next > p->max_id) {
		py_tell_cut(p, k->tgid);
		goto lost;
	}
	id = (__u32)next;
	e = bpf_ringbuf_reserve(&py_events, sizeof(*e), 0);
	if (!e)
		goto lost;
	if (bpf_map_update_elem(&py_codes, k, &id, BPF_NOEXIST)) {
		bpf_ringbuf_discard(e, 0);
		v = bpf_map_lookup_elem(&py_codes, k); /* another cpu named it */
		return v ? *v : 0;
	}
	e->kind = OFFCPU_PY_EV_NAME;
	e->tgid = k->tgid;
	e->id = id;
	e->code = k->code;
	e->stamp = k->stamp;
	e->lasti = k->lasti;
	e->minor = l->minor;
	/* the code object's fields that name it, read at once into the window
	 * (not onto the stack: this runs two calls deep, and the three frames
	 * share 512 bytes) */
	n = l->code_len;
	if (n > OFFCPU_PY_CODE_WIN)
		n = OFFCPU_PY_CODE_WIN;
	if (!n || bpf_probe_read_user(c->b, n, (void *)(k->code + l->code_base)))
		__builtin_memset(c->b, 0, sizeof(c->b));
	e->lineno = (__s32)py_win64(c, l->code_firstlineno);
	lt = py_win64(c, l->code_linetable);
	py_str(e->filename, sizeof(e->filename), py_win64(c, l->code_filename), l);
	py_str(e->qualname, sizeof(e->qualname), py_win64(c, l->code_qualname), l);
	/* the line table's first bytes: user space finds the instruction's line */
	if (!lt || k->lasti < 0 ||
	    bpf_probe_read_user(&len, sizeof(len), (void *)(lt + l->bytes_size)))
		len = 0;
	if (len > OFFCPU_PY_LINETABLE)
		len = OFFCPU_PY_LINETABLE;
	if (len && bpf_probe_read_user(e->linetable, len, (void *)(lt + l->bytes_data)))
		len = 0;
	e->linetable_len = (__u32)len;
	bpf_ringbuf_submit(e, 0);
	py_count(OFFCPU_PY_CNT_NAMES);
	return id;
lost:
	py_count(OFFCPU_PY_CNT_NAME_LOST);
	return 0;
}

/* The thread's current Python frame, 0 when it has none (its own call, as
 * py_ask: off the stack under the walk) */
static __noinline __u64 py_current_frame(struct offcpu_py_proc *p)
{
#ifdef __TARGET_ARCH_x86
	struct task_struct *task = bpf_get_current_task_btf();
	/* one variable for the pointers read in turn: its stack is that of the
	 * switch program's deepest chain, which 6.1 bounds at 512 bytes */
	__u64 fsbase = task->thread.fsbase, slot = p->slot, v = 0;
	__u32 tss[2]; /* Py_tss_t: _is_initialized, _key */

	if (!slot) {
		/* the key is made once, early: kept once it is */
		if (bpf_probe_read_user(tss, sizeof(tss), (void *)p->tss_key) || !tss[0])
			return 0;
		if (tss[0] != 1 || tss[1] >= 32) {
			/* not one of glibc's first slots: its frames are not read (said) */
			p->flags |= OFFCPU_PY_F_KEY_BAD;
			return 0;
		}
		slot = OFFCPU_GLIBC_TSS_SLOTS + 16 * (__u64)tss[1] + 8;
		p->slot = slot;
	}
	/* the thread state, (3.11, 3.12: its cframe,) the current frame */
	if (bpf_probe_read_user(&v, sizeof(v), (void *)(fsbase + slot)) || !v) {
		py_count(OFFCPU_PY_CNT_NO_TSTATE);
		return 0;
	}
	if (bpf_probe_read_user(&v, sizeof(v), (void *)(v + p->l.tstate_frame)))
		goto fault;
	if (p->l.cframe_frame != OFFCPU_PY_NONE && v &&
	    bpf_probe_read_user(&v, sizeof(v), (void *)(v + p->l.cframe_frame)))
		goto fault;
	return v;
fault:
	py_count(OFFCPU_PY_CNT_FAULTS);
	return 0;
#else
	return 0; /* the thread pointer is read from x86-64's thread state (fsbase) */
#endif
}

struct py_walk {
	__u64 *buf; /* the stack being built (a scratch slot) */
	struct py_cache *cache; /* this cpu's */
	struct py_win *win; /* this cpu's */
	__u64 frame; /* the next frame to read; 0: the walk is over */
	__u32 n; /* frames in buf */
};

/* The identity of code object @code (struct offcpu_py_layout): 0 when unreadable. */
static __always_inline __u64 py_stamp(const struct offcpu_py_layout *l, __u64 code)
{
	__u64 v = 0;

	if (l->stamp_str) {
		if (bpf_probe_read_user(&v, sizeof(v), (void *)(code + l->code_stamp)) || !v ||
		    bpf_probe_read_user(&v, sizeof(v), (void *)(v + l->str_hash)))
			return 0;
		return v;
	}
	if (bpf_probe_read_user(&v, 4, (void *)(code + l->code_stamp)))
		return 0;
	return v;
}

/* One Python frame: bpf_loop's callback (checked once, not once per frame). */
static long py_step(__u64 i, void *arg)
{
	struct py_walk *w = arg;
	struct py_win *c = w->win;
	const struct offcpu_py_layout *l = &c->l;
	struct py_code_key *k = &c->k;
	struct py_cache_ent *ce;
	__u64 first, at, entry = 0;
	__u32 n = w->n, id, len;
	__u8 flag;

	if (n >= OFFCPU_MAX_STACK_DEPTH)
		return 1; /* the stack is full: counted as cut */
	len = l->frame_len;
	if (len > OFFCPU_PY_FRAME_WIN)
		len = OFFCPU_PY_FRAME_WIN;
	if (!len || bpf_probe_read_user(c->b, len, (void *)(w->frame + l->frame_base))) {
		py_count(OFFCPU_PY_CNT_FAULTS);
		w->frame = 0;
		return 1;
	}
	k->tgid = c->tgid;
	k->lasti = -1;
	k->code = py_win64(c, l->frame_code);
	w->frame = py_win64(c, l->frame_previous);
	flag = l->frame_flag < OFFCPU_PY_FRAME_WIN ? c->b[l->frame_flag & 127] : 0;
	if (l->frames == OFFCPU_PY_FRAMES_OWNER && flag == l->cstack) {
		/* a C-level call's own frame: the frame before it entered that call */
		if (n > c->first)
			w->buf[(n - 1) & OFFCPU_MAX_STACK_DEPTH] |= OFFCPU_PY_ENTRY;
		return w->frame ? 0 : 1;
	}
	if (!k->code) {
		w->frame = 0;
		return 1;
	}
	/* the instruction it is in, in code units from its first */
	at = py_win64(c, l->frame_instr);
	if (l->code_instr == OFFCPU_PY_NONE) {
		k->lasti = (__s32)at; /* 3.10's f_lasti */
		if (k->lasti < -1 || k->lasti >= (1 << 24))
			k->lasti = -1;
	} else {
		first = k->code + l->code_instr;
		if (at >= first && at - first < (1ULL << 24))
			k->lasti = (__s32)((at - first) / 2);
	}
	if (l->frames == OFFCPU_PY_FRAMES_OWN || (l->frames == OFFCPU_PY_FRAMES_IS_ENTRY && flag))
		entry = OFFCPU_PY_ENTRY;
	k->stamp = py_stamp(l, k->code);
	ce = &w->cache->e[((k->code >> 4) ^ ((__u64)k->lasti * 0x9e3779b1ULL) ^ k->stamp ^ k->tgid) & (PY_CACHE - 1)];
	if (ce->k.code == k->code && ce->k.lasti == k->lasti && ce->k.tgid == k->tgid &&
	    ce->k.stamp == k->stamp && ce->id) {
		id = ce->id;
	} else {
		id = py_intern(k, c);
		ce->k = *k;
		ce->id = id;
	}
	w->buf[n & OFFCPU_MAX_STACK_DEPTH] = OFFCPU_PYFRAME_OF(id) | entry;
	w->n = n + 1;
	return w->frame ? 0 : 1;
}

/*
 * Append the current thread's Python frames to the @n native frames in @buf
 * (a scratch slot) while the stack has room: the new number of frames. One
 * map lookup for a process that is not Python.
 */
static __noinline long py_frames(__u64 *buf, long n)
{
	struct offcpu_py_proc *p;
	struct py_walk w;
	__u32 zero = 0, tgid;

	if (!python_frames || n <= 0 || n >= OFFCPU_MAX_STACK_DEPTH)
		return n;
	tgid = bpf_get_current_pid_tgid() >> 32;
	p = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!p) {
		py_ask(tgid);
		return n;
	}
	if (p->state != OFFCPU_PY_READ)
		return n;
	w.frame = py_current_frame(p);
	if (!w.frame)
		return n;
	w.cache = bpf_map_lookup_elem(&py_cache, &zero);
	w.win = bpf_map_lookup_elem(&py_wins, &zero);
	if (!w.cache || !w.win)
		return n;
	py_count(OFFCPU_PY_CNT_WALKS);
	w.buf = buf;
	w.n = (__u32)n;
	w.win->l = p->l;
	w.win->tgid = tgid;
	w.win->first = (__u32)n;
	bpf_loop(OFFCPU_PY_FRAMES, py_step, &w, 0);
	if (w.frame)
		py_count(OFFCPU_PY_CNT_NO_ROOM); /* more frames than the bound, or than room */
	/* (no test of it: a branch here doubles what the verifier checks after) */
	py_count_n(OFFCPU_PY_CNT_FRAMES, w.n - n);
	return w.n;
}

/* A process execs, or a new one is forked (asked anew: user space knows
 * each process's interpreter by its id): the entry left under its id is not its. */
static __always_inline void py_forget(__u32 tgid)
{
	if (python_frames)
		bpf_map_delete_elem(&py_procs, &tgid);
}

#endif /* OFFCPU_PYTHON_BPF_H */
