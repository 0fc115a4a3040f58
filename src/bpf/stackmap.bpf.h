/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stackmap.bpf.h - stacks as the collector keeps them: user and kernel
 * stacks each in a map of their own, under a hash of their frames, which
 * the samples' keys name (user space takes them out at every flush); and
 * the per-CPU scratch a stack is built in before it is stored.
 *
 * A user stack of a Python process gets its Python frames appended here,
 * where every user stack is stored (python.bpf.h).
 *
 * Needs: common.bpf.h, python.bpf.h.
 */
#ifndef OFFCPU_STACKMAP_BPF_H
#define OFFCPU_STACKMAP_BPF_H

#include "common.bpf.h"
#include "python.bpf.h"

typedef __u64 frames_t[OFFCPU_MAX_STACK_DEPTH];
typedef __u64 scratch_t[OFFCPU_MAX_STACK_DEPTH + 1];

/*
 * Stacks, keyed by a hash of their frames: user stacks taken at switch-out,
 * kernel stacks at switch-in. Frames end at the first zero.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, frames_t);
	__uint(max_entries, 16384);
} ustacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, frames_t);
	__uint(max_entries, 16384);
} kstacks SEC(".maps");

/* A stack being built: one frame more than a stack holds, for the zero after
 * the last frame. [1] holds the kernel helper's result under --verify-stacks,
 * [2] the frame-pointer walk's when tables walked. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, scratch_t);
	__uint(max_entries, 3);
} scratch SEC(".maps");

/*
 * Store the @n frames in @buf (a scratch slot) under a hash of them and
 * return that key, or 0 when the map is full. An entry already under the key
 * is compared frame by frame: a different stack with the same hash moves to
 * the next key, so a key always names one stack.
 *
 * The count leaves the hash loop as a known value on each exit; nothing after
 * the loop reads it (the zero after the frames is written first, and the
 * comparison ends there), so the verifier checks what follows once, not once
 * per count.
 */
static __always_inline __u64 store_stack(void *map, __u64 *buf, long n)
{
	__u64 h = 0xcbf29ce484222325ULL, *old;
	int i, try;
	bool same;

	/* (the knob first: without it the verifier never sees the call) */
	if (python_frames && map == (void *)&ustacks)
		n = py_frames(buf, n);
	if (n <= 0 || n > OFFCPU_MAX_STACK_DEPTH)
		return 0;
	/* readers stop at the first zero; n <= 127, so n & 127 is n */
	buf[n & OFFCPU_MAX_STACK_DEPTH] = 0;
	for (i = 0; i < OFFCPU_MAX_STACK_DEPTH && i < n; i++) {
		h ^= buf[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 29;
	for (try = 0; try < 2; try++, h++) {
		if (!h || h == OFFCPU_STACK_UNKNOWN)
			h = 1;
		old = bpf_map_lookup_elem(map, &h);
		if (!old) {
			if (!bpf_map_update_elem(map, &h, buf, BPF_NOEXIST))
				return h;
			old = bpf_map_lookup_elem(map, &h); /* another cpu stored it first */
			if (!old)
				return 0;
		}
		/* the same frames up to the same end */
		same = true;
		for (i = 0; i < OFFCPU_MAX_STACK_DEPTH; i++) {
			if (old[i] != buf[i]) {
				same = false;
				break;
			}
			if (!buf[i])
				break;
		}
		if (same)
			return h;
	}
	return 0;
}

/* Frames in what a stack helper returned (bytes, or a negative error). */
static __always_inline long frames_of(long bytes)
{
	return bytes > 0 ? (long)((__u64)bytes / sizeof(__u64)) : 0;
}

/* Same frames, same number: what --verify-stacks checks. */
static __always_inline bool same_stack(const __u64 *a, long na, const __u64 *b, long nb)
{
	int i;

	if (na != nb)
		return false;
	for (i = 0; i < OFFCPU_MAX_STACK_DEPTH && i < na; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

#endif /* OFFCPU_STACKMAP_BPF_H */
