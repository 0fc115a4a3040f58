/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CPython layouts offcpu reads (x86-64), one per minor version it
 * supports: where a thread's state, its frames, their code objects and
 * their strings keep what a frame's name needs. Each number below is
 * checked against that version's DWARF (pyenv's builds, Debian's
 * python3.11-dbg) by tests/integration/runtimes_python.sh, which reads
 * them from this file: one "#define OFFCPU_PY3NN_FIELD VALUE" a line.
 *
 * A process's layout is chosen from the version its interpreter's object
 * carries (Py_Version from 3.11; 3.10 by its API, python.c), checked
 * against the sizes the object's own type objects give (pylayout__check()),
 * and handed to the BPF program in the process's struct offcpu_py_proc.
 */
#ifndef OFFCPU_RECORD_PYLAYOUT_H
#define OFFCPU_RECORD_PYLAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include "../offcpu.h"

/* CPython 3.10: a frame is a PyFrameObject of its own C-level eval call, at f_lasti */
#define OFFCPU_PY310_RUNTIME_TSS 584 /* _PyRuntime.gilstate.autoTSSkey (Py_tss_t) */
#define OFFCPU_PY310_TSTATE_FRAME 24 /* PyThreadState.frame */
#define OFFCPU_PY310_FRAME_BACK 24 /* PyFrameObject.f_back */
#define OFFCPU_PY310_FRAME_CODE 32 /* PyFrameObject.f_code */
#define OFFCPU_PY310_FRAME_LASTI 96 /* PyFrameObject.f_lasti (int, code units) */
#define OFFCPU_PY310_CODE_FIRSTLINENO 40 /* PyCodeObject.co_firstlineno */
#define OFFCPU_PY310_CODE_FILENAME 104 /* PyCodeObject.co_filename */
#define OFFCPU_PY310_CODE_NAME 112 /* PyCodeObject.co_name (3.10 has no co_qualname) */
#define OFFCPU_PY310_CODE_LINETABLE 120 /* PyCodeObject.co_linetable (bytes, 3.10's format) */
#define OFFCPU_PY310_CODE_SIZE 176 /* sizeof(PyCodeObject): PyCode_Type.tp_basicsize */
#define OFFCPU_PY310_STR_HASH 24 /* PyASCIIObject.hash */
#define OFFCPU_PY310_STR_STATE 32 /* PyASCIIObject.state (bit 6: ascii) */
#define OFFCPU_PY310_STR_ASCII 48 /* sizeof(PyASCIIObject): an ASCII string's characters */
#define OFFCPU_PY310_STR_UTF8 56 /* PyCompactUnicodeObject.utf8 */
#define OFFCPU_PY310_STR_SIZE 80 /* sizeof(PyUnicodeObject): PyUnicode_Type.tp_basicsize */
#define OFFCPU_PY310_BYTES_SIZE 16 /* PyVarObject.ob_size */
#define OFFCPU_PY310_BYTES_DATA 32 /* PyBytesObject.ob_sval */

/* CPython 3.11: _PyInterpreterFrame from cframe, is_entry ends a C-level eval call's frames */
#define OFFCPU_PY311_RUNTIME_TSS 592 /* _PyRuntime.gilstate.autoTSSkey */
#define OFFCPU_PY311_TSTATE_CFRAME 56 /* PyThreadState.cframe */
#define OFFCPU_PY311_CFRAME_CURRENT 8 /* _PyCFrame.current_frame */
#define OFFCPU_PY311_FRAME_CODE 32 /* _PyInterpreterFrame.f_code */
#define OFFCPU_PY311_FRAME_PREVIOUS 48 /* _PyInterpreterFrame.previous */
#define OFFCPU_PY311_FRAME_PREV_INSTR 56 /* _PyInterpreterFrame.prev_instr: the instruction it is in */
#define OFFCPU_PY311_FRAME_IS_ENTRY 68 /* _PyInterpreterFrame.is_entry */
#define OFFCPU_PY311_CODE_FIRSTLINENO 72 /* PyCodeObject.co_firstlineno */
#define OFFCPU_PY311_CODE_FILENAME 112 /* PyCodeObject.co_filename */
#define OFFCPU_PY311_CODE_NAME 120 /* PyCodeObject.co_name (its hash: the identity) */
#define OFFCPU_PY311_CODE_QUALNAME 128 /* PyCodeObject.co_qualname */
#define OFFCPU_PY311_CODE_LINETABLE 136 /* PyCodeObject.co_linetable (bytes) */
#define OFFCPU_PY311_CODE_CODE 184 /* PyCodeObject.co_code_adaptive: PyCode_Type.tp_basicsize */
#define OFFCPU_PY311_STR_HASH 24
#define OFFCPU_PY311_STR_STATE 32
#define OFFCPU_PY311_STR_ASCII 48
#define OFFCPU_PY311_STR_UTF8 56
#define OFFCPU_PY311_STR_SIZE 80
#define OFFCPU_PY311_BYTES_SIZE 16
#define OFFCPU_PY311_BYTES_DATA 32

/* CPython 3.12: cframe still; FRAME_OWNED_BY_CSTACK frames end a C-level eval call's frames */
#define OFFCPU_PY312_RUNTIME_TSS 1544 /* _PyRuntime.autoTSSkey */
#define OFFCPU_PY312_TSTATE_CFRAME 56 /* PyThreadState.cframe */
#define OFFCPU_PY312_CFRAME_CURRENT 0 /* _PyCFrame.current_frame */
#define OFFCPU_PY312_FRAME_CODE 0 /* _PyInterpreterFrame.f_code */
#define OFFCPU_PY312_FRAME_PREVIOUS 8 /* _PyInterpreterFrame.previous */
#define OFFCPU_PY312_FRAME_PREV_INSTR 56 /* _PyInterpreterFrame.prev_instr */
#define OFFCPU_PY312_FRAME_OWNER 70 /* _PyInterpreterFrame.owner */
#define OFFCPU_PY312_OWNED_BY_CSTACK 3 /* FRAME_OWNED_BY_CSTACK */
#define OFFCPU_PY312_CODE_FIRSTLINENO 68
#define OFFCPU_PY312_CODE_VERSION 92 /* PyCodeObject.co_version: one per code object made */
#define OFFCPU_PY312_CODE_FILENAME 112
#define OFFCPU_PY312_CODE_QUALNAME 128
#define OFFCPU_PY312_CODE_LINETABLE 136
#define OFFCPU_PY312_CODE_CODE 192
#define OFFCPU_PY312_STR_HASH 24
#define OFFCPU_PY312_STR_STATE 32
#define OFFCPU_PY312_STR_ASCII 40 /* (wstr is gone) */
#define OFFCPU_PY312_STR_UTF8 48
#define OFFCPU_PY312_STR_SIZE 64
#define OFFCPU_PY312_BYTES_SIZE 16
#define OFFCPU_PY312_BYTES_DATA 32

/* CPython 3.13: no cframe, the frame in the thread state; f_executable, instr_ptr */
#define OFFCPU_PY313_RUNTIME_TSS 2160 /* _PyRuntime.autoTSSkey (kept while the thread waits;
				       * _Py_tss_tstate is cleared when it lets the GIL go) */
#define OFFCPU_PY313_TSTATE_FRAME 72 /* PyThreadState.current_frame */
#define OFFCPU_PY313_FRAME_CODE 0 /* _PyInterpreterFrame.f_executable */
#define OFFCPU_PY313_FRAME_PREVIOUS 8
#define OFFCPU_PY313_FRAME_INSTR_PTR 56 /* _PyInterpreterFrame.instr_ptr */
#define OFFCPU_PY313_FRAME_OWNER 70
#define OFFCPU_PY313_OWNED_BY_CSTACK 3
#define OFFCPU_PY313_CODE_FIRSTLINENO 68
#define OFFCPU_PY313_CODE_VERSION 92
#define OFFCPU_PY313_CODE_FILENAME 112
#define OFFCPU_PY313_CODE_QUALNAME 128
#define OFFCPU_PY313_CODE_LINETABLE 136
#define OFFCPU_PY313_CODE_CODE 200
#define OFFCPU_PY313_STR_HASH 24
#define OFFCPU_PY313_STR_STATE 32
#define OFFCPU_PY313_STR_ASCII 40
#define OFFCPU_PY313_STR_UTF8 48
#define OFFCPU_PY313_STR_SIZE 64
#define OFFCPU_PY313_BYTES_SIZE 16
#define OFFCPU_PY313_BYTES_DATA 32

/* PyTypeObject.tp_basicsize: the size a type object gives its instances (all four) */
#define OFFCPU_PY_TYPE_BASICSIZE 32

#define PYLAYOUT_MIN 10 /* 3.10 */
#define PYLAYOUT_MAX 13 /* 3.13 */

/*
 * The layout of CPython 3.@minor, into *@l, with where _PyRuntime keeps the
 * thread-state key (*@tss, from _PyRuntime) and the sizes its type objects
 * must give (*@code_size: PyCode_Type, *@str_size: PyUnicode_Type): 0, or
 * -ENOENT for a version offcpu has no layout of.
 */
int pylayout__get(unsigned minor, struct offcpu_py_layout *l, uint32_t *tss, uint32_t *code_size,
		  uint32_t *str_size);

/*
 * The line of instruction @lasti (code units from the first; < 0: none) of
 * a code object whose first line is @first, from the first @n bytes of its
 * co_linetable in 3.@minor's format (3.10's pairs, 3.11's locations); @first
 * where the part read does not say.
 */
int pylayout__line(unsigned minor, const uint8_t *lt, size_t n, int first, int lasti);

#endif
