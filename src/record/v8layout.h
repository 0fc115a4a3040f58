/* SPDX-License-Identifier: GPL-2.0 */
/*
 * V8's frame and object layout, as the v8dbg_* symbols of its object say
 * (V8's tools/gen-postmortem-metadata.py: node exports them from its
 * executable, Debian's node from libnode): the offsets src/bpf/v8.bpf.h
 * reads a JavaScript frame's function and its names with. What the object
 * says is checked to be a layout the program can use (64-bit tagged values,
 * no pointer compression; offsets in range); the values are read from the
 * file, never from a process.
 */
#ifndef OFFCPU_RECORD_V8LAYOUT_H
#define OFFCPU_RECORD_V8LAYOUT_H

#include "../offcpu.h"
#include "../util/objread.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The v8dbg_* symbols the program needs (V8's tools/gen-postmortem-metadata.py). */
enum {
	V8K_FP_FUNCTION,
	V8K_FP_CONTEXT,
	V8K_FN_SHARED,
	V8K_OBJ_MAP,
	V8K_MAP_TYPE,
	V8K_SFI_NAME,
	V8K_SFI_SCRIPT,
	V8K_SCRIPT_NAME,
	V8K_STR_LEN,
	V8K_STR_CHARS,
	V8K_THIN_ACTUAL,
	V8K_CONS_FIRST,
	V8K_CONS_SECOND,
	V8K_TYPE_SFI,
	V8K_TYPE_SCOPE,
	V8K_TYPE_SCRIPT,
	V8K_FIRST_NONSTRING,
	V8K_REPR_MASK,
	V8K_REPR_SEQ,
	V8K_REPR_THIN,
	V8K_REPR_CONS,
	V8K_ENC_MASK,
	V8K_ENC_ONE,
	V8K_SCOPE_FIRST,
	V8K_SCOPE_NLOCALS,
	V8K_TAGGED_SIZE,
	V8K_SMI_SHIFT,
	V8K_HEAP_TAG,
	V8K_HEAP_TAG_MASK,
	V8K_NEEDED, /* the ones above are needed */
	V8K_SCOPE_HEAPOBJ = V8K_NEEDED,
	V8K_FIXED_DATA,
	V8K_NR
};

/*
 * The layout the program needs from the symbols' values @k (present where
 * @have): 0, or -1 with @why saying what is missing or unusable.
 */
int v8layout__make(const int32_t *k, const bool *have, struct offcpu_v8_proc *l, char *why,
		   size_t len);

/*
 * The layout of object @o's v8dbg_* symbols into @l: 1; 0 when it has none;
 * -1 when it has some but not a usable layout (@why says why).
 */
int v8layout__read(const struct elfobj *o, struct offcpu_v8_proc *l, char *why, size_t len);

#endif
