/* SPDX-License-Identifier: GPL-2.0 */
/*
 * python.bpf.h - the Python frames of a thread of a CPython process, walked
 * where its user stack is stored (store_stack(), stackmap.bpf.h): at its
 * switch-out, and as a waker at sched_waking; the task is the current one
 * there, so its memory is read with bpf_probe_read_user.
 *
 * The thread's PyThreadState is in glibc's TSS slot of _PyRuntime's key
 * (not the GIL holder's, which a blocked thread is not); its frames are
 * cframe->current_frame and the `previous` chain. Each (code object,
 * instruction) is interned per process on first sight: an id, and its names
 * (co_qualname, co_filename, co_firstlineno, and co_linetable's first bytes
 * for the line of the instruction) read here and sent to user space at once,
 * so a process that exits keeps them. The frames go after the native ones
 * (struct offcpu_py_proc, offcpu.h), part of the stored stack and of its
 * identity. A process is one map lookup; a process offcpu has not seen is
 * asked of user space once (py_procs holds a pending entry meanwhile).
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

/* A process not seen yet: a pending entry, and the question to user space. */
static __always_inline void py_ask(__u32 tgid)
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
static __always_inline void py_str(char *d, __u32 len, __u64 str)
{
	__u64 utf8 = 0;
	__u32 state = 0;

	d[0] = 0;
	if (!str || bpf_probe_read_user(&state, sizeof(state), (void *)(str + OFFCPU_PY311_STR_STATE)))
		return;
	if (state & (1u << 6)) {
		bpf_probe_read_user_str(d, len, (void *)(str + OFFCPU_PY311_STR_ASCII));
		return;
	}
	if (!bpf_probe_read_user(&utf8, sizeof(utf8), (void *)(str + OFFCPU_PY311_STR_UTF8)) && utf8)
		bpf_probe_read_user_str(d, len, (void *)utf8);
}

/* Process @tgid handed out its last id: user space is told, once. */
static __always_inline void py_tell_cut(__u32 tgid)
{
	struct offcpu_py_event *e = bpf_ringbuf_reserve(&py_events, sizeof(*e), 0);

	if (!e)
		return;
	e->kind = OFFCPU_PY_EV_CUT;
	e->tgid = tgid;
	bpf_ringbuf_submit(e, 0);
}

/* The id of the frame at instruction @lasti of code object @code of process
 * @tgid: named now on first sight (an id of the process's own), or 0 when it
 * cannot be. */
static __always_inline __u32 py_intern(struct py_code_key *k)
{
	struct offcpu_py_event *e;
	struct offcpu_py_proc *p;
	__u64 *f, lt, len = 0, next;
	__u32 *v, id;

	v = bpf_map_lookup_elem(&py_codes, k);
	if (v)
		return *v;
	p = bpf_map_lookup_elem(&py_procs, &k->tgid);
	if (!p)
		goto lost;
	next = __sync_fetch_and_add(&p->next_id, 1) + 1;
	if (next > p->max_id) {
		if (next == (__u64)p->max_id + 1)
			py_tell_cut(k->tgid);
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
	e->lasti = k->lasti;
	/* PyCodeObject from co_firstlineno to co_linetable, read into the event's
	 * line table (its place until the table's bytes), not onto the stack:
	 * this runs two calls deep, and the three frames share 512 bytes */
	f = (__u64 *)e->linetable;
	if (bpf_probe_read_user(f, 72, (void *)(k->code + OFFCPU_PY311_CODE_FIRSTLINENO)))
		__builtin_memset(f, 0, 72);
	e->lineno = (__s32)f[0];
	py_str(e->filename, sizeof(e->filename),
	       f[(OFFCPU_PY311_CODE_FILENAME - OFFCPU_PY311_CODE_FIRSTLINENO) / 8]);
	py_str(e->qualname, sizeof(e->qualname),
	       f[(OFFCPU_PY311_CODE_QUALNAME - OFFCPU_PY311_CODE_FIRSTLINENO) / 8]);
	/* the line table's first bytes: user space finds the instruction's line */
	lt = f[(OFFCPU_PY311_CODE_LINETABLE - OFFCPU_PY311_CODE_FIRSTLINENO) / 8];
	if (!lt || k->lasti < 0 ||
	    bpf_probe_read_user(&len, sizeof(len), (void *)(lt + OFFCPU_PY311_BYTES_SIZE)))
		len = 0;
	if (len > OFFCPU_PY_LINETABLE)
		len = OFFCPU_PY_LINETABLE;
	if (len && bpf_probe_read_user(e->linetable, len, (void *)(lt + OFFCPU_PY311_BYTES_DATA)))
		len = 0;
	e->linetable_len = (__u32)len;
	bpf_ringbuf_submit(e, 0);
	py_count(OFFCPU_PY_CNT_NAMES);
	return id;
lost:
	py_count(OFFCPU_PY_CNT_NAME_LOST);
	return 0;
}

/* The thread's current Python frame, 0 when it has none. */
static __always_inline __u64 py_current_frame(struct offcpu_py_proc *p)
{
#ifdef __TARGET_ARCH_x86
	struct task_struct *task = bpf_get_current_task_btf();
	/* one variable for the three pointers read in turn: its stack is that of
	 * the switch program's deepest chain, which 6.1 bounds at 512 bytes */
	__u64 fsbase = task->thread.fsbase, slot = p->slot, v = 0;
	__u32 tss[2]; /* Py_tss_t: _is_initialized, _key */

	if (!slot) {
		/* the key is made once, early: kept once it is */
		if (bpf_probe_read_user(tss, sizeof(tss), (void *)p->tss_key) || !tss[0] ||
		    tss[1] >= 32)
			return 0;
		slot = OFFCPU_GLIBC_TSS_SLOTS + 16 * (__u64)tss[1] + 8;
		p->slot = slot;
	}
	/* the thread state, its cframe, the current frame */
	if (bpf_probe_read_user(&v, sizeof(v), (void *)(fsbase + slot)) || !v)
		return 0;
	if (bpf_probe_read_user(&v, sizeof(v), (void *)(v + OFFCPU_PY311_TSTATE_CFRAME)) || !v)
		goto fault;
	if (bpf_probe_read_user(&v, sizeof(v), (void *)(v + OFFCPU_PY311_CFRAME_CURRENT)))
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
	__u64 frame; /* the next frame to read; 0: the walk is over */
	__u32 n; /* frames in buf */
	__u32 tgid;
};

/* One Python frame: bpf_loop's callback (checked once, not once per frame). */
static long py_step(__u64 i, void *arg)
{
	struct py_walk *w = arg;
	__u64 fr[5]; /* _PyInterpreterFrame from f_code to is_entry */
	struct py_code_key k = { .tgid = w->tgid, .lasti = -1 };
	struct py_cache_ent *ce;
	__u64 first, at;
	__u32 n = w->n, id;

	if (n >= OFFCPU_MAX_STACK_DEPTH)
		return 1; /* the stack is full: counted as cut */
	if (bpf_probe_read_user(fr, sizeof(fr), (void *)(w->frame + OFFCPU_PY311_FRAME_CODE))) {
		py_count(OFFCPU_PY_CNT_FAULTS);
		w->frame = 0;
		return 1;
	}
	if (!fr[0]) {
		w->frame = 0;
		return 1;
	}
	k.code = fr[0];
	/* the instruction it is in (prev_instr), in code units from its first */
	first = k.code + OFFCPU_PY311_CODE_CODE;
	at = fr[(OFFCPU_PY311_FRAME_PREV_INSTR - OFFCPU_PY311_FRAME_CODE) / 8];
	if (at >= first && at - first < (1ULL << 24))
		k.lasti = (__s32)((at - first) / 2);
	ce = &w->cache->e[((k.code >> 4) ^ ((__u64)k.lasti * 0x9e3779b1ULL) ^ k.tgid) & (PY_CACHE - 1)];
	if (ce->k.code == k.code && ce->k.lasti == k.lasti && ce->k.tgid == k.tgid && ce->id) {
		id = ce->id;
	} else {
		id = py_intern(&k);
		ce->k = k;
		ce->id = id;
	}
	w->buf[n & OFFCPU_MAX_STACK_DEPTH] =
		OFFCPU_PYFRAME_OF(id) |
		((fr[(OFFCPU_PY311_FRAME_IS_ENTRY - OFFCPU_PY311_FRAME_CODE) / 8] >>
		  (OFFCPU_PY311_FRAME_IS_ENTRY % 8 * 8)) & 0xff ? OFFCPU_PY_ENTRY : 0);
	w->n = n + 1;
	w->frame = fr[(OFFCPU_PY311_FRAME_PREVIOUS - OFFCPU_PY311_FRAME_CODE) / 8];
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
	__u32 zero = 0;

	if (!python_frames || n <= 0 || n >= OFFCPU_MAX_STACK_DEPTH)
		return n;
	w.tgid = bpf_get_current_pid_tgid() >> 32;
	p = bpf_map_lookup_elem(&py_procs, &w.tgid);
	if (!p) {
		py_ask(w.tgid);
		return n;
	}
	if (p->state != OFFCPU_PY_311)
		return n;
	w.frame = py_current_frame(p);
	if (!w.frame)
		return n;
	w.cache = bpf_map_lookup_elem(&py_cache, &zero);
	if (!w.cache)
		return n;
	py_count(OFFCPU_PY_CNT_WALKS);
	w.buf = buf;
	w.n = (__u32)n;
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
