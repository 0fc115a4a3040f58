// SPDX-License-Identifier: GPL-2.0
/*
 * A process that looks like CPython 3.11 to offcpu (the dynamic symbols
 * _PyRuntime, Py_Version and _PyEval_EvalFrameDefault, type objects of the
 * sizes 3.11's give, a thread state in glibc's TSS slot of _PyRuntime's key) and that blocks again and again,
 * inside its _PyEval_EvalFrameDefault, in a chain of OFFCPU_PY_FRAMES Python
 * frames that are new at every block: each block asks the recorder to name
 * as many new code objects as it walks frames. What a local user can run to
 * use up a recorder's frame ids and its memory for names
 * (tests/integration/hostile.sh); a recording of it is one process with as
 * many names as it blocked (bench/report.sh).
 *
 *   fakepy SECONDS [BLOCKS]   block for SECONDS, or BLOCKS times
 *
 * Built with -rdynamic (its symbols in .dynsym, where offcpu looks).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "../../src/record/pylayout.h"

/* 3.11.4, final (or what the build says) */
#ifndef FAKEPY_VERSION
#define FAKEPY_VERSION 0x030b04f0
#endif
const uint32_t Py_Version = FAKEPY_VERSION;
char _PyRuntime[4096] __attribute__((aligned(64)));
/* PyTypeObject's start: ob_base, tp_name, tp_basicsize (what offcpu checks) */
struct fake_type {
	uint64_t ob[3];
	const char *name;
	int64_t basicsize;
};
struct fake_type PyCode_Type = { .name = "code", .basicsize = OFFCPU_PY311_CODE_CODE };
struct fake_type PyUnicode_Type = { .name = "str", .basicsize = OFFCPU_PY311_STR_SIZE };

static void block(uint64_t round);

/* where a fake Python frame runs: the C frame the recorder splices them into */
__attribute__((noinline)) void _PyEval_EvalFrameDefault(uint64_t round)
{
	block(round);
	__asm__ volatile("" ::: "memory");
}

#define CODES 64 /* code objects, each at OFFCPU_PYFRAME... distinct addresses */
#define CODE_SIZE 4096

static char str[64] __attribute__((aligned(16))); /* an ASCII str: "fake" */
static char *codes; /* CODES code objects */
static char frames[OFFCPU_PY_FRAMES][80] __attribute__((aligned(16)));
static char cframe[16], tstate[128];

static void put64(char *at, uint64_t v)
{
	memcpy(at, &v, 8);
}

/* every frame at an instruction it was never at: a new name each, then a block */
static void block(uint64_t round)
{
	struct timespec ts = { 0, 1000 };
	int i;

	for (i = 0; i < OFFCPU_PY_FRAMES; i++) {
		char *c = codes + (size_t)(i % CODES) * CODE_SIZE;

		put64(frames[i] + OFFCPU_PY311_FRAME_PREV_INSTR,
		      (uint64_t)(uintptr_t)(c + OFFCPU_PY311_CODE_CODE) +
		      2 * ((round * OFFCPU_PY_FRAMES + (uint64_t)i) % (1u << 20)));
	}
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	uint64_t round = 0, rounds = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
	struct timespec t0, t;
	pthread_key_t key;
	int32_t tss[2];
	int i;

	if (pthread_key_create(&key, NULL) || key >= 32)
		return 1;
	tss[0] = 1;
	tss[1] = (int32_t)key;
	memcpy(_PyRuntime + OFFCPU_PY311_RUNTIME_TSS, tss, sizeof(tss));
	str[OFFCPU_PY311_STR_STATE] = 1 << 6; /* ascii */
	strcpy(str + OFFCPU_PY311_STR_ASCII, "fake");
	codes = aligned_alloc(64, (size_t)CODES * CODE_SIZE);
	if (!codes)
		return 1;
	memset(codes, 0, (size_t)CODES * CODE_SIZE);
	for (i = 0; i < CODES; i++) {
		char *c = codes + (size_t)i * CODE_SIZE;

		put64(c + OFFCPU_PY311_CODE_FIRSTLINENO, (uint64_t)i + 1);
		put64(c + OFFCPU_PY311_CODE_FILENAME, (uint64_t)(uintptr_t)str);
		put64(c + OFFCPU_PY311_CODE_QUALNAME, (uint64_t)(uintptr_t)str);
	}
	for (i = 0; i < OFFCPU_PY_FRAMES; i++) {
		put64(frames[i] + OFFCPU_PY311_FRAME_CODE,
		      (uint64_t)(uintptr_t)(codes + (size_t)(i % CODES) * CODE_SIZE));
		put64(frames[i] + OFFCPU_PY311_FRAME_PREVIOUS,
		      i + 1 < OFFCPU_PY_FRAMES ? (uint64_t)(uintptr_t)frames[i + 1] : 0);
	}
	put64(cframe + OFFCPU_PY311_CFRAME_CURRENT, (uint64_t)(uintptr_t)frames[0]);
	put64(tstate + OFFCPU_PY311_TSTATE_CFRAME, (uint64_t)(uintptr_t)cframe);
	pthread_setspecific(key, tstate);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		_PyEval_EvalFrameDefault(++round);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs &&
		 (!rounds || round < rounds));
	return 0;
}
