/* SPDX-License-Identifier: GPL-2.0 */
/*
 * urules.bpf.h - the unwind tables' rules (x86-64): the rows user space
 * builds from each object's .eh_frame (src/unwind/) and writes into these
 * maps through mmap, and the rule for an address: found by binary search in
 * its object's rows, and kept in a per-CPU cache of the addresses walked
 * lately.
 *
 * Needs: common.bpf.h.
 */
#ifndef OFFCPU_URULES_BPF_H
#define OFFCPU_URULES_BPF_H

#include "common.bpf.h"

/* Unwind tables (see offcpu.h), written by user space through mmap. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct offcpu_unw_row);
	__uint(max_entries, 1); /* sized by user space (--unwind-mem) */
} unw_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct offcpu_unw_rule);
	__uint(max_entries, OFFCPU_UNW_RULES);
} unw_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct offcpu_unw_obj);
	__uint(max_entries, OFFCPU_UNW_OBJS);
} unw_objs SEC(".maps");

/*
 * The rules of the addresses walked lately, per CPU and direct-mapped: most
 * blocks return through the same few call sites, and a hit saves the binary
 * search. An object's rows never change once it has an id: nothing to flush.
 */
struct unw_cached {
	__u32 obj, addr, rule, valid;
};

#define UNW_CACHE_BITS 12

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct unw_cached);
	__uint(max_entries, 1 << UNW_CACHE_BITS);
} unw_cache SEC(".maps");

#ifdef __TARGET_ARCH_x86
/* The rule for ELF address @addr of object @obj: NULL with @why when none. */
static __always_inline struct offcpu_unw_rule *uw_rule(__u32 obj, __u64 addr, __u32 *why)
{
	struct offcpu_unw_obj *o = bpf_map_lookup_elem(&unw_objs, &obj);
	struct offcpu_unw_row *row;
	struct unw_cached *hit;
	__u32 lo, hi, mid, slot;
	int k;

	if (!o || !o->nr) {
		*why = OFFCPU_UNW_NO_TABLE;
		return NULL;
	}
	*why = OFFCPU_UNW_NO_RULE;
	if (addr > 0xffffffffULL)
		return NULL;
	slot = ((__u32)addr * 0x9e3779b1u ^ obj * 0x85ebca77u) >> (32 - UNW_CACHE_BITS);
	hit = bpf_map_lookup_elem(&unw_cache, &slot);
	if (hit && hit->valid && hit->obj == obj && hit->addr == (__u32)addr)
		return bpf_map_lookup_elem(&unw_rules, &hit->rule);
	lo = o->first;
	hi = o->first + o->nr;
	for (k = 0; k < 24; k++) {
		if (lo + 1 >= hi)
			break;
		mid = lo + (hi - lo) / 2;
		row = bpf_map_lookup_elem(&unw_rows, &mid);
		if (!row)
			return NULL;
		if (row->start <= addr)
			lo = mid;
		else
			hi = mid;
	}
	row = bpf_map_lookup_elem(&unw_rows, &lo);
	if (!row || row->start > addr)
		return NULL;
	if (hit) {
		hit->obj = obj;
		hit->addr = (__u32)addr;
		hit->rule = row->rule;
		hit->valid = 1;
	}
	return bpf_map_lookup_elem(&unw_rules, &row->rule);
}
#endif /* __TARGET_ARCH_x86 */

#endif /* OFFCPU_URULES_BPF_H */
