/* SPDX-License-Identifier: GPL-2.0 */
/*
 * v8.bpf.h - the JavaScript functions of a node (V8) thread's stack, named
 * where its user stack is walked by tables (offcpu.h, "JavaScript frames of
 * V8"): the walk notes the frame pointer of each frame it stepped through by
 * a checked frame-pointer step (V8's builtins, its JIT code: uwalk.bpf.h);
 * here each of them that is a JavaScript frame, by the layout the process's
 * V8 exports (v8dbg_* symbols, read by user space into v8_procs), has its pc
 * replaced by its function's named frame.
 *
 * A JavaScript frame (interpreted, baseline or optimized) keeps its context,
 * a heap object, at fp + fp_context and its JSFunction at fp + fp_function;
 * a frame of another kind (an exit, a stub, an entry) keeps a small integer
 * marker there instead. The function's SharedFunctionInfo and that one's
 * name_or_scope_info identify it: (process, SharedFunctionInfo, name or
 * scope info) is interned per process on first sight, its names read then
 * and sent to user space at once (a process that exits keeps them): the
 * function's name (a string, or the first string among a ScopeInfo's slots
 * past its context locals: V8 keeps its function's name there, then its
 * inferred name) and its script's name. Strings are read where they are
 * sequential one-byte ones (V8's identifiers and paths), through one thin
 * string; others leave the name empty. What the process's memory says is a
 * hint: every object's type is checked before it is read further, reads are
 * bounded, a wrong pointer costs a frame its name, never more.
 *
 * A process is one map lookup, made only for a walk that noted frames; a
 * process offcpu has not seen is asked of user space once (v8_procs holds a
 * pending entry meanwhile).
 *
 * Needs: common.bpf.h, uwalk.bpf.h (x86-64).
 */
#ifndef OFFCPU_V8_BPF_H
#define OFFCPU_V8_BPF_H

#include "common.bpf.h"
#include "uwalk.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct offcpu_v8_proc);
	__uint(max_entries, 4096);
} v8_procs SEC(".maps");

/* A function: its SharedFunctionInfo and that one's name or scope info (tagged). */
struct v8_key {
	__u32 tgid;
	__u32 pad;
	__u64 sfi;
	__u64 nos;
};

/* (process, function) -> id; an entry evicted is named again under a new id */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct v8_key);
	__type(value, __u32);
	__uint(max_entries, 65536);
} v8_funcs SEC(".maps");

/* each cpu's direct-mapped cache of v8_funcs (as python.bpf.h's py_cache) */
#define V8_CACHE 512
struct v8_cache_ent {
	struct v8_key k;
	__u32 id;
	__u32 pad;
};
struct v8_cache {
	struct v8_cache_ent e[V8_CACHE];
	/* the walk's frames whose function the cache did not know, named after
	 * the walk (off the stack, which is short under it) */
	struct v8_key miss[OFFCPU_V8_FRAMES];
	__u32 miss_at[OFFCPU_V8_FRAMES]; /* their index in the stack */
	__u32 nmiss;
	__u32 pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct v8_cache);
	__uint(max_entries, 1);
} v8_cache SEC(".maps");

/* struct offcpu_v8_event for user space (src/record/v8.c) */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 19);
} v8_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, OFFCPU_V8_CNT_NR);
} v8_counters SEC(".maps");

static __always_inline void v8_count_n(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&v8_counters, &idx);

	if (v)
		__sync_fetch_and_add(v, n);
}

static __always_inline void v8_count(__u32 idx)
{
	v8_count_n(idx, 1);
}

#ifdef __TARGET_ARCH_x86
/* A process not seen yet: a pending entry, and the question to user space.
 * (Not inlined: its entry would take v8_frames()'s stack.) */
static __noinline void v8_ask(__u32 tgid)
{
	struct offcpu_v8_proc p = { .state = OFFCPU_V8_PENDING };
	struct offcpu_v8_event *e;

	if (bpf_map_update_elem(&v8_procs, &tgid, &p, BPF_NOEXIST))
		return; /* another cpu asked */
	e = bpf_ringbuf_reserve(&v8_events, sizeof(*e), 0);
	if (!e) {
		bpf_map_delete_elem(&v8_procs, &tgid); /* asked again at its next block */
		return;
	}
	e->kind = OFFCPU_V8_EV_PROC;
	e->tgid = tgid;
	bpf_ringbuf_submit(e, 0);
}

/* The instance type of heap object @obj (tagged), or 0xffff when it is none or unreadable. */
static __always_inline __u32 v8_type(const struct offcpu_v8_proc *p, __u64 obj)
{
	__u64 map = 0;
	__u16 type = 0xffff;

	if ((obj & 3) != 1 || obj < 4096 ||
	    bpf_probe_read_user(&map, sizeof(map), (void *)(obj - 1 + p->obj_map)) ||
	    (map & 3) != 1 ||
	    bpf_probe_read_user(&type, sizeof(type), (void *)(map - 1 + p->map_type)))
		return 0xffff;
	return type;
}

/*
 * The characters of flat string @str (tagged, of type @type) into @d, @mask
 * + 1 bytes (a power of two), @mask at most (not NUL-ended): a sequential
 * one-byte string, or a thin one whose actual string is one. Returns how
 * many; 0 for another string.
 */
static __always_inline __u32 v8_flat(const struct offcpu_v8_proc *p, char *d, __u32 mask, __u64 str,
				     __u32 type)
{
	__s32 len = 0;
	__u32 n;

	if (type < p->first_nonstring && (type & p->repr_mask) == p->repr_thin) {
		if (bpf_probe_read_user(&str, sizeof(str), (void *)(str - 1 + p->thin_actual)))
			return 0;
		type = v8_type(p, str);
	}
	if (type >= p->first_nonstring || (type & p->repr_mask) != p->repr_seq ||
	    (type & p->enc_mask) != p->enc_one ||
	    bpf_probe_read_user(&len, sizeof(len), (void *)(str - 1 + p->str_len)) || len <= 0)
		return 0;
	n = (__u32)len < mask ? (__u32)len : mask;
	/* the compiler knows the mask changes nothing; the verifier needs it */
	asm volatile("" : "+r"(n));
	n &= mask;
	if (bpf_probe_read_user(d, n, (void *)(str - 1 + p->str_chars)))
		return 0;
	return n;
}

/*
 * String @str (tagged, of type @type) into @e's name (NUL-ended): a flat
 * one (v8_flat()), or a cons string of two flat ones (an inferred name,
 * "Module._compile"), 127 characters of each at most; "" otherwise. (The
 * event's tmp holds the parts: the stack is short here.)
 */
static __always_inline void v8_str(const struct offcpu_v8_proc *p, struct offcpu_v8_event *e,
				   __u64 str, __u32 type)
{
	__u64 *parts = e->tmp;
	char *d = e->name;
	__u32 n = 0, n2;

	if (type < p->first_nonstring && (type & p->repr_mask) == p->repr_cons) {
		if (!bpf_probe_read_user(&parts[0], 8, (void *)(str - 1 + p->cons_first)) &&
		    !bpf_probe_read_user(&parts[1], 8, (void *)(str - 1 + p->cons_second))) {
			n = v8_flat(p, d, 127, parts[0], v8_type(p, parts[0]));
			if (n) {
				n2 = v8_flat(p, d + (n & 127), 127, parts[1], v8_type(p, parts[1]));
				n = n2 ? n + n2 : 0;
			}
		}
	} else {
		n = v8_flat(p, d, 127, str, type);
	}
	d[n & (OFFCPU_V8_NAME_LEN - 1)] = 0;
}

/* Process @tgid handed out its last id: user space is told, once. */
static __always_inline void v8_tell_cut(__u32 tgid)
{
	struct offcpu_v8_event *e = bpf_ringbuf_reserve(&v8_events, sizeof(*e), 0);

	if (!e)
		return;
	e->kind = OFFCPU_V8_EV_CUT;
	e->tgid = tgid;
	bpf_ringbuf_submit(e, 0);
}

/* A ScopeInfo's slots, looked at one by one (bpf_loop's callback). Two
 * pointers only: the first slot looked at is the event's, so that
 * v8_intern()'s frame stays within the 512 bytes 6.1 gives the switch's
 * deepest chain of calls (on_switch, v8_frames, v8_name_step, v8_intern,
 * this callback). */
struct v8_scope {
	const struct offcpu_v8_proc *p;
	struct offcpu_v8_event *e; /* its tmp[0]: the name found; tmp[1]: the slot before;
				    * tmp[2]: the first slot looked at */
};

static long v8_scope_step(__u64 i, void *arg)
{
	struct v8_scope *sc = arg;
	struct offcpu_v8_event *e = sc->e;
	__u64 v, prev = e->tmp[1];
	__s32 len = 0;

	if (i < e->tmp[2])
		return 0;
	v = e->slots[i & (OFFCPU_V8_SCOPE_SLOTS - 1)];
	e->tmp[1] = v;
	if (v & 1) {
		/* (an anonymous function's name is the empty string) */
		if (!e->tmp[0] && v8_type(sc->p, v) < sc->p->first_nonstring &&
		    !bpf_probe_read_user(&len, sizeof(len), (void *)(v - 1 + sc->p->str_len)) && len > 0)
			e->tmp[0] = v;
		return 0;
	}
	/* two small integers, increasing: the function's start and end */
	if (!(prev & 1) && (__s32)(prev >> 32) >= 0 && (__s32)(prev >> 32) < (__s32)(v >> 32)) {
		e->start = (__s32)(prev >> 32);
		return 1;
	}
	return 0;
}

/*
 * The id of function @k of a process with layout @p: named now on first
 * sight (an id of the process's own), or 0 when it cannot be. @fn is the
 * frame's JSFunction, whose SharedFunctionInfo @k->sfi is.
 */
static __noinline __u32 v8_intern(struct offcpu_v8_proc *p, struct v8_key *k)
{
	struct offcpu_v8_event *e;
	struct v8_scope sc;
	__u64 next;
	__u32 *idp, id, type, ncl;

	idp = bpf_map_lookup_elem(&v8_funcs, k);
	if (idp)
		return *idp;
	/* only what is a SharedFunctionInfo is named */
	if (v8_type(p, k->sfi) != p->type_sfi)
		return 0;
	next = __sync_fetch_and_add(&p->next_id, 1) + 1;
	if (next > p->max_id) {
		if (next == (__u64)p->max_id + 1)
			v8_tell_cut(k->tgid);
		goto lost;
	}
	id = (__u32)next;
	e = bpf_ringbuf_reserve(&v8_events, sizeof(*e), 0);
	if (!e)
		goto lost;
	if (bpf_map_update_elem(&v8_funcs, k, &id, BPF_NOEXIST)) {
		bpf_ringbuf_discard(e, 0);
		idp = bpf_map_lookup_elem(&v8_funcs, k); /* another cpu named it */
		return idp ? *idp : 0;
	}
	e->kind = OFFCPU_V8_EV_NAME;
	e->tgid = k->tgid;
	e->id = id;
	e->sfi = k->sfi;
	e->start = -1;
	e->name[0] = 0;
	e->file[0] = 0;
	e->tmp[0] = 0;
	e->tmp[1] = 1;
	type = v8_type(p, k->nos);
	if (type < p->first_nonstring) {
		e->tmp[0] = k->nos;
	} else if (type == p->type_scope &&
		   !bpf_probe_read_user(e->slots, sizeof(e->slots),
					(void *)(k->nos - 1 + p->scope_data))) {
		/* past the context locals' names and infos: the function's
		 * name, else its inferred one, then its start and end. The
		 * first string, and the first pair of increasing integers */
		ncl = (__u32)(e->slots[p->scope_nlocals & (OFFCPU_V8_SCOPE_SLOTS - 1)] >> 32);
		sc.p = p;
		sc.e = e;
		e->tmp[2] = p->scope_first + 2 * (ncl < 16 ? ncl : 16);
		bpf_loop(OFFCPU_V8_SCOPE_SLOTS, v8_scope_step, &sc, 0);
	}
	if (e->tmp[0])
		v8_str(p, e, e->tmp[0], v8_type(p, e->tmp[0]));
	/* its script's name (a Script; not where the debugger replaced it) */
	if (!bpf_probe_read_user(&e->tmp[0], 8, (void *)(k->sfi - 1 + p->sfi_script)) &&
	    v8_type(p, e->tmp[0]) == p->type_script &&
	    !bpf_probe_read_user(&e->tmp[1], 8, (void *)(e->tmp[0] - 1 + p->script_name))) {
		type = v8_type(p, e->tmp[1]);
		e->file[v8_flat(p, e->file, OFFCPU_V8_FILE_LEN - 1, e->tmp[1], type) &
			(OFFCPU_V8_FILE_LEN - 1)] = 0;
	}
	bpf_ringbuf_submit(e, 0);
	v8_count(OFFCPU_V8_CNT_NAMES);
	return id;
lost:
	v8_count(OFFCPU_V8_CNT_NAME_LOST);
	return 0;
}

struct v8_walk {
	struct offcpu_v8_proc *p;
	__u64 *buf; /* the stack */
	__u32 tgid;
	__u32 n; /* frames in buf */
	__u32 named;
	__u32 pad;
};

/* A word of the user stack at @addr: from the walk's copy if it is there, else one read. */
static __always_inline long v8_stack_read(struct unw_copy_buf *cb, __u64 addr, __u64 *out)
{
	__u64 off = addr - cb->st.copy_at;

	if (addr >= cb->st.copy_at && off + 8 <= cb->st.copy_len &&
	    cb->st.copy_len <= OFFCPU_UNW_COPY) {
		*out = *(__u64 *)(cb->b + (off & (OFFCPU_UNW_COPY - 1)));
		return 0;
	}
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr);
}

/* One noted frame: bpf_loop's callback. A function the cache knows is
 * named here; another is noted for v8_name_step(). */
static long v8_step(__u64 i, void *arg)
{
	struct v8_walk *w = arg;
	struct offcpu_v8_proc *p = w->p;
	struct unw_copy_buf *cb;
	struct v8_cache *cache;
	struct v8_cache_ent *ce;
	struct v8_key *k;
	__u32 zero = 0, at, m;
	__u64 f, fp, ctx = 0, fn = 0;

	cb = bpf_map_lookup_elem(&unw_copy, &zero);
	cache = bpf_map_lookup_elem(&v8_cache, &zero);
	if (!cb || !cache)
		return 1;
	m = cache->nmiss;
	if (m >= OFFCPU_V8_FRAMES)
		return 1;
	k = &cache->miss[m & (OFFCPU_V8_FRAMES - 1)];
	f = cb->st.v8[i & (OFFCPU_V8_FRAMES - 1)];
	at = (__u32)(f >> 56) & OFFCPU_MAX_STACK_DEPTH;
	fp = f & ((1ULL << 56) - 1);
	if (at >= w->n)
		return 0;
	/* a JavaScript frame: its context and function are heap objects
	 * (another frame keeps a small integer marker where the context is);
	 * read from the walk's copy of the stack where it holds them */
	if (v8_stack_read(cb, fp + p->fp_context, &ctx) ||
	    v8_stack_read(cb, fp + p->fp_function, &fn)) {
		v8_count(OFFCPU_V8_CNT_FAULTS);
		return 0;
	}
	if ((ctx & 3) != 1 || (fn & 3) != 1 || fn < 4096) {
		v8_count(OFFCPU_V8_CNT_OTHER);
		return 0;
	}
	k->tgid = w->tgid;
	k->pad = 0;
	if (bpf_probe_read_user(&k->sfi, sizeof(k->sfi), (void *)(fn - 1 + p->fn_shared)) ||
	    (k->sfi & 3) != 1 || k->sfi < 4096 ||
	    bpf_probe_read_user(&k->nos, sizeof(k->nos), (void *)(k->sfi - 1 + p->sfi_name))) {
		v8_count(OFFCPU_V8_CNT_FAULTS);
		return 0;
	}
	ce = &cache->e[((k->sfi >> 3) ^ (k->nos >> 7) ^ k->tgid) & (V8_CACHE - 1)];
	if (ce->k.sfi == k->sfi && ce->k.nos == k->nos && ce->k.tgid == k->tgid && ce->id) {
		w->buf[at] = OFFCPU_JSFRAME_OF(ce->id);
		w->named++;
		return 0;
	}
	cache->miss_at[m & (OFFCPU_V8_FRAMES - 1)] = at;
	cache->nmiss = m + 1;
	return 0;
}

/* A function the cache did not know, named (v8_intern()): bpf_loop's callback. */
static long v8_name_step(__u64 i, void *arg)
{
	struct v8_walk *w = arg;
	struct v8_cache *cache;
	struct v8_cache_ent *ce;
	struct v8_key *k;
	__u32 zero = 0, id;

	cache = bpf_map_lookup_elem(&v8_cache, &zero);
	if (!cache)
		return 1;
	k = &cache->miss[i & (OFFCPU_V8_FRAMES - 1)];
	id = v8_intern(w->p, k);
	if (!id) {
		v8_count(OFFCPU_V8_CNT_OTHER);
		return 0;
	}
	ce = &cache->e[((k->sfi >> 3) ^ (k->nos >> 7) ^ k->tgid) & (V8_CACHE - 1)];
	ce->k = *k;
	ce->id = id;
	w->buf[cache->miss_at[i & (OFFCPU_V8_FRAMES - 1)] & OFFCPU_MAX_STACK_DEPTH] =
		OFFCPU_JSFRAME_OF(id);
	w->named++;
	return 0;
}

/*
 * Name the JavaScript frames among the @n frames the table walk just put in
 * @buf (the frames it noted are in its state, this cpu's unw_copy). One map
 * lookup for a process whose walk noted frames, none for another.
 */
static __noinline long v8_frames(__u64 *buf, long n)
{
	struct unw_copy_buf *cb;
	struct v8_cache *cache;
	struct v8_walk w = {};
	__u32 zero = 0, nv8, nmiss;

	if (!js_frames || n <= 0 || n > OFFCPU_MAX_STACK_DEPTH)
		return 0;
	cb = bpf_map_lookup_elem(&unw_copy, &zero);
	if (!cb)
		return 0;
	nv8 = cb->st.nv8;
	if (!nv8)
		return 0;
	w.tgid = cb->st.tgid;
	w.p = bpf_map_lookup_elem(&v8_procs, &w.tgid);
	if (!w.p) {
		v8_ask(w.tgid);
		return 0;
	}
	if (w.p->state != OFFCPU_V8_ON)
		return 0;
	cache = bpf_map_lookup_elem(&v8_cache, &zero);
	if (!cache)
		return 0;
	cache->nmiss = 0;
	w.buf = buf;
	w.n = (__u32)n;
	v8_count(OFFCPU_V8_CNT_WALKS);
	bpf_loop(nv8 < OFFCPU_V8_FRAMES ? nv8 : OFFCPU_V8_FRAMES, v8_step, &w, 0);
	/* (the functions first seen: apart, so that naming one is not under
	 * the walk's step on the stack) */
	nmiss = cache->nmiss;
	if (nmiss)
		bpf_loop(nmiss < OFFCPU_V8_FRAMES ? nmiss : OFFCPU_V8_FRAMES, v8_name_step, &w, 0);
	v8_count_n(OFFCPU_V8_CNT_FRAMES, w.named);
	return w.named;
}
#endif /* __TARGET_ARCH_x86 */

/* A process execs, or a new one is forked: the entry left under its id is not its. */
static __always_inline void v8_forget(__u32 tgid)
{
	if (js_frames)
		bpf_map_delete_elem(&v8_procs, &tgid);
}

#endif /* OFFCPU_V8_BPF_H */
