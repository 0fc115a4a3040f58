// SPDX-License-Identifier: GPL-2.0
/* V8's frame and object layout, from the v8dbg_* symbols of an object (v8layout.h). */
#include "v8layout.h"
#include "../util/util.h"
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name; /* a prefix where it ends in "__": the field's type follows, and varies */
	int k;
} wanted[] = {
    {"v8dbg_off_fp_function", V8K_FP_FUNCTION},
    {"v8dbg_off_fp_context", V8K_FP_CONTEXT},
    {"v8dbg_class_JSFunction__shared__", V8K_FN_SHARED},
    {"v8dbg_class_HeapObject__map__", V8K_OBJ_MAP},
    {"v8dbg_class_Map__instance_type__", V8K_MAP_TYPE},
    {"v8dbg_class_SharedFunctionInfo__name_or_scope_info__", V8K_SFI_NAME},
    {"v8dbg_class_SharedFunctionInfo__script_or_debug_info__", V8K_SFI_SCRIPT},
    {"v8dbg_class_SharedFunctionInfo__script__", V8K_SFI_SCRIPT},
    {"v8dbg_class_Script__name__", V8K_SCRIPT_NAME},
    {"v8dbg_class_String__length__", V8K_STR_LEN},
    {"v8dbg_class_SeqOneByteString__chars__", V8K_STR_CHARS},
    {"v8dbg_class_ThinString__actual__", V8K_THIN_ACTUAL},
    {"v8dbg_class_ConsString__first__", V8K_CONS_FIRST},
    {"v8dbg_class_ConsString__second__", V8K_CONS_SECOND},
    {"v8dbg_type_SharedFunctionInfo__", V8K_TYPE_SFI},
    {"v8dbg_type_ScopeInfo__", V8K_TYPE_SCOPE},
    {"v8dbg_type_Script__", V8K_TYPE_SCRIPT},
    {"v8dbg_FirstNonstringType", V8K_FIRST_NONSTRING},
    {"v8dbg_StringRepresentationMask", V8K_REPR_MASK},
    {"v8dbg_SeqStringTag", V8K_REPR_SEQ},
    {"v8dbg_ThinStringTag", V8K_REPR_THIN},
    {"v8dbg_ConsStringTag", V8K_REPR_CONS},
    {"v8dbg_StringEncodingMask", V8K_ENC_MASK},
    {"v8dbg_OneByteStringTag", V8K_ENC_ONE},
    {"v8dbg_scopeinfo_idx_first_vars", V8K_SCOPE_FIRST},
    {"v8dbg_scopeinfo_idx_ncontextlocals", V8K_SCOPE_NLOCALS},
    {"v8dbg_TaggedSize", V8K_TAGGED_SIZE},
    {"v8dbg_SmiShiftSize", V8K_SMI_SHIFT},
    {"v8dbg_HeapObjectTag", V8K_HEAP_TAG},
    {"v8dbg_HeapObjectTagMask", V8K_HEAP_TAG_MASK},
    {"v8dbg_parent_ScopeInfo__HeapObject", V8K_SCOPE_HEAPOBJ},
    {"v8dbg_class_FixedArray__data__", V8K_FIXED_DATA},
};

/* The int at ELF address @addr of @o: 0 in a section without bytes (.bss). */
static bool sym_value(const struct elfobj *o, uint64_t addr, int32_t *out)
{
	size_t i;

	for (i = 0; i < o->nsh; i++) {
		const Elf64_Shdr *sh = &o->sh[i];
		int32_t *v;

		if (!(sh->sh_flags & SHF_ALLOC) || addr < sh->sh_addr ||
		    addr + 4 > sh->sh_addr + sh->sh_size)
			continue;
		if (sh->sh_type == SHT_NOBITS) {
			*out = 0;
			return true;
		}
		v = elfobj__read(o, sh->sh_offset + (addr - sh->sh_addr), 4, 4);
		if (!v)
			return false;
		*out = *v;
		free(v);
		return true;
	}
	return false;
}

int v8layout__make(const int32_t *k, const bool *have, struct offcpu_v8_proc *l, char *why,
		   size_t len)
{
	static const char *const names[V8K_NEEDED] = {
	    "off_fp_function",
	    "off_fp_context",
	    "JSFunction.shared",
	    "HeapObject.map",
	    "Map.instance_type",
	    "SharedFunctionInfo.name_or_scope_info",
	    "SharedFunctionInfo.script_or_debug_info",
	    "Script.name",
	    "String.length",
	    "SeqOneByteString.chars",
	    "ThinString.actual",
	    "ConsString.first",
	    "ConsString.second",
	    "SharedFunctionInfo's type",
	    "ScopeInfo's type",
	    "Script's type",
	    "FirstNonstringType",
	    "StringRepresentationMask",
	    "SeqStringTag",
	    "ThinStringTag",
	    "ConsStringTag",
	    "StringEncodingMask",
	    "OneByteStringTag",
	    "scopeinfo_idx_first_vars",
	    "scopeinfo_idx_ncontextlocals",
	    "TaggedSize",
	    "SmiShiftSize",
	    "HeapObjectTag",
	    "HeapObjectTagMask",
	};
	int i;

	for (i = 0; i < V8K_NEEDED; i++)
		if (!have[i]) {
			snprintf(why, len, "no v8dbg symbol of %s", names[i]);
			return -1;
		}
	if (!have[V8K_SCOPE_HEAPOBJ] && !have[V8K_FIXED_DATA]) {
		snprintf(why, len, "no v8dbg symbol of where a ScopeInfo's slots begin");
		return -1;
	}
	/* 64-bit tagged values, small integers in the upper half: no pointer compression */
	if (k[V8K_TAGGED_SIZE] != 8 || k[V8K_SMI_SHIFT] != 31 || k[V8K_HEAP_TAG] != 1 ||
	    k[V8K_HEAP_TAG_MASK] != 3) {
		snprintf(why, len,
			 "tagged values of %d bytes, small integers shifted by %d "
			 "(pointer compression is not read)",
			 k[V8K_TAGGED_SIZE], k[V8K_SMI_SHIFT] + 1);
		return -1;
	}
	for (i = V8K_FN_SHARED; i <= V8K_CONS_SECOND; i++)
		if (k[i] < 0 || k[i] > 4096) {
			snprintf(why, len, "an offset out of range (%s: %d)", names[i], k[i]);
			return -1;
		}
	if (k[V8K_FP_FUNCTION] < -256 || k[V8K_FP_FUNCTION] > 256 || k[V8K_FP_CONTEXT] < -256 ||
	    k[V8K_FP_CONTEXT] > 256 || k[V8K_SCOPE_FIRST] < 0 || k[V8K_SCOPE_FIRST] >= 16 ||
	    k[V8K_SCOPE_NLOCALS] < 0 || k[V8K_SCOPE_NLOCALS] >= 16) {
		snprintf(why, len, "a frame offset or ScopeInfo index out of range");
		return -1;
	}
	*l = (struct offcpu_v8_proc){
	    .state = OFFCPU_V8_ON,
	    .fp_function = (int16_t)k[V8K_FP_FUNCTION],
	    .fp_context = (int16_t)k[V8K_FP_CONTEXT],
	    .fn_shared = (uint16_t)k[V8K_FN_SHARED],
	    .obj_map = (uint16_t)k[V8K_OBJ_MAP],
	    .map_type = (uint16_t)k[V8K_MAP_TYPE],
	    .sfi_name = (uint16_t)k[V8K_SFI_NAME],
	    .sfi_script = (uint16_t)k[V8K_SFI_SCRIPT],
	    .script_name = (uint16_t)k[V8K_SCRIPT_NAME],
	    .str_len = (uint16_t)k[V8K_STR_LEN],
	    .str_chars = (uint16_t)k[V8K_STR_CHARS],
	    .thin_actual = (uint16_t)k[V8K_THIN_ACTUAL],
	    .cons_first = (uint16_t)k[V8K_CONS_FIRST],
	    .cons_second = (uint16_t)k[V8K_CONS_SECOND],
	    /* a ScopeInfo is a heap object of its own since V8 9.1, a FixedArray before */
	    .scope_data =
		(uint16_t)(have[V8K_SCOPE_HEAPOBJ] ? k[V8K_OBJ_MAP] + 8 : k[V8K_FIXED_DATA]),
	    .type_sfi = (uint16_t)k[V8K_TYPE_SFI],
	    .type_scope = (uint16_t)k[V8K_TYPE_SCOPE],
	    .type_script = (uint16_t)k[V8K_TYPE_SCRIPT],
	    .first_nonstring = (uint16_t)k[V8K_FIRST_NONSTRING],
	    .repr_mask = (uint8_t)k[V8K_REPR_MASK],
	    .repr_seq = (uint8_t)k[V8K_REPR_SEQ],
	    .repr_thin = (uint8_t)k[V8K_REPR_THIN],
	    .repr_cons = (uint8_t)k[V8K_REPR_CONS],
	    .enc_mask = (uint8_t)k[V8K_ENC_MASK],
	    .enc_one = (uint8_t)k[V8K_ENC_ONE],
	    .scope_first = (uint8_t)k[V8K_SCOPE_FIRST],
	    .scope_nlocals = (uint8_t)k[V8K_SCOPE_NLOCALS],
	};
	return 0;
}

int v8layout__read(const struct elfobj *o, struct offcpu_v8_proc *l, char *why, size_t len)
{
	struct elfsyms ds;
	int32_t k[V8K_NR] = {0};
	bool have[V8K_NR] = {false}, any = false;
	size_t i, j;
	int ret = 0;

	memset(l, 0, sizeof(*l));
	if (len)
		why[0] = 0;
	if (elfobj__dynsyms(o, &ds))
		goto out;
	for (i = 0; i < ds.n; i++) {
		const char *name = elfsyms__name(&ds, i);
		const Elf64_Sym *syms = ds.v;

		if (!name || strncmp(name, "v8dbg_", 6))
			continue;
		any = true;
		for (j = 0; j < ARRAY_SIZE(wanted); j++) {
			size_t len = strlen(wanted[j].name);
			bool prefix = len > 2 && !strcmp(wanted[j].name + len - 2, "__");

			if (prefix ? strncmp(name, wanted[j].name, len)
				   : strcmp(name, wanted[j].name))
				continue;
			if (!have[wanted[j].k] && sym_value(o, syms[i].st_value, &k[wanted[j].k]))
				have[wanted[j].k] = true;
			break;
		}
	}
	if (any)
		ret = v8layout__make(k, have, l, why, len) ? -1 : 1;
out:
	elfsyms__free(&ds);
	return ret;
}
