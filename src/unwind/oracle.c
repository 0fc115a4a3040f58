// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <elfutils/libdwfl.h>
#include "oracle.h"

#define CACHE 16 /* processes whose modules are kept */

/* What one unwind reads: the registers and the stack copy. */
struct sample {
	int tid;
	uint64_t ip, sp, bp;
	const uint8_t *stack;
	size_t len;
	bool given; /* next_thread handed out the thread */
};

struct proc {
	Dwfl *dwfl;
	int pid;
	struct sample cur; /* the callbacks read this */
	uint64_t used;
};

struct unwind_oracle {
	struct proc p[CACHE];
	uint64_t clock;
};

static char *debuginfo_path;

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	/* .eh_frame is in the objects themselves: no debug files looked for */
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct proc *p = arg;

	if (p->cur.given)
		return 0;
	p->cur.given = true;
	*thread_argp = p;
	return p->cur.tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct proc *p = arg;

	if (tid != p->cur.tid)
		return false;
	*thread_argp = p;
	return true;
}

/* Only the copy can be read, as perf's copy of the stack is all it reads. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct proc *p = arg;
	const struct sample *s = &p->cur;

	if (addr < s->sp || addr - s->sp + sizeof(*result) > s->len)
		return false;
	memcpy(result, s->stack + (addr - s->sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct proc *p = arg;
	Dwarf_Word regs[2] = { p->cur.bp, p->cur.sp }; /* DWARF registers 6 (rbp), 7 (rsp) */

	if (!dwfl_thread_state_registers(thread, 6, 2, regs))
		return false;
	dwfl_thread_state_register_pc(thread, p->cur.ip);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

struct unwind_oracle *unwind_oracle__new(void)
{
	return calloc(1, sizeof(struct unwind_oracle));
}

static void forget(struct proc *p)
{
	if (p->dwfl)
		dwfl_end(p->dwfl);
	memset(p, 0, sizeof(*p));
}

/* The process's Dwfl: its modules reported, its thread state attached. */
static struct proc *proc_of(struct unwind_oracle *o, int pid)
{
	struct proc *p = NULL, *old = &o->p[0];
	int i;

	for (i = 0; i < CACHE; i++) {
		if (o->p[i].dwfl && o->p[i].pid == pid) {
			o->p[i].used = ++o->clock;
			return &o->p[i];
		}
		if (o->p[i].used < old->used)
			old = &o->p[i];
	}
	p = old;
	forget(p);
	p->dwfl = dwfl_begin(&proc_callbacks);
	if (!p->dwfl)
		return NULL;
	p->pid = pid;
	if (dwfl_linux_proc_report(p->dwfl, pid) || dwfl_report_end(p->dwfl, NULL, NULL) ||
	    !dwfl_attach_state(p->dwfl, NULL, pid, &thread_callbacks, p)) {
		forget(p);
		return NULL;
	}
	p->used = ++o->clock;
	return p;
}

struct frames {
	uint64_t *ips;
	int n, max;
};

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct frames *f = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	f->ips[f->n++] = pc;
	return f->n < f->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

int unwind_oracle__unwind(struct unwind_oracle *o, int pid, int tid, uint64_t ip, uint64_t sp,
			  uint64_t bp, const void *stack, size_t len, uint64_t *ips, int max)
{
	struct frames f = { .ips = ips, .max = max };
	struct proc *p = proc_of(o, pid);

	if (!p)
		return -ESRCH;
	p->cur = (struct sample){ .tid = tid, .ip = ip, .sp = sp, .bp = bp, .stack = stack,
				  .len = len };
	/* the walk ends where libdw cannot go on: the outermost frame, or the
	 * end of the copy; what it found is the answer either way */
	dwfl_getthread_frames(p->dwfl, tid, on_frame, &f);
	return f.n ? f.n : -EINVAL;
}

void unwind_oracle__free(struct unwind_oracle *o)
{
	int i;

	if (!o)
		return;
	for (i = 0; i < CACHE; i++)
		forget(&o->p[i]);
	free(o);
}
