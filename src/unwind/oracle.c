// SPDX-License-Identifier: GPL-2.0
/*
 * The libdw reference unwinder (oracle.h).
 *
 * libdw binds thread callbacks to a Dwfl once (dwfl_attach_state), with one
 * argument for the whole Dwfl. perf makes a Dwfl per sample; here each
 * process's Dwfl lives on, attached once to its cache slot, and every unwind
 * hangs its registers, stack copy and output on that slot before calling
 * dwfl_getthread_frames: libdw keeps the modules, their ELF files and parsed
 * .eh_frame between samples, but no unwind state.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <gelf.h>
#include <elfutils/libdwfl.h>
#include "oracle.h"
#include "../util/objread.h"
#include "../util/util.h"

#define ORACLE_PROCS 64
/* after a re-read of a process's mappings that did not find a pc: JIT code or garbage */
#define ORACLE_REREAD_BACKOFF_NS (100 * 1000 * 1000ULL)

#define X86_RBP 6 /* DWARF register numbers */

struct oracle_proc;

/* One unwind: what the callbacks read and write. */
struct oracle_call {
	struct unwind_oracle *o;
	struct oracle_proc *proc;
	int tid;
	uint64_t ip, sp, bp;
	const uint64_t *regs; /* all 16 general registers in DWARF's order, or NULL: bp, sp only */
	const unsigned char *stack;
	size_t len;
	uint64_t *ips;
	int max, n;
	bool reread; /* the mappings were read again during this unwind */
	bool complete; /* libdw reached the outermost frame */
	bool read_fault; /* libdw asked for memory outside the copy */
	bool gone; /* that failed: the process is dropped after the walk */
};

/* A cached process: the Dwfl's argument, so it must not move. */
struct oracle_proc {
	int pid;
	Dwfl *dwfl; /* NULL: a free slot */
	uint64_t used; /* tick of the last unwind */
	uint64_t no_reread_until; /* now_ns() before which a missing pc reads no mappings */
	struct oracle_call *call; /* the unwind under way */
};

#define ORACLE_ELF_CACHE 32
#define ORACLE_ELF_CACHE_BYTES (64ULL << 20)

struct unwind_oracle {
	struct oracle_proc procs[ORACLE_PROCS];
	uint64_t tick;
	/*
	 * An x86-64 ELF header: the architecture every Dwfl is attached with.
	 * Left to itself, dwfl_attach_state would borrow the backend of the first
	 * module, freed if a re-read of the mappings finds it gone.
	 */
	Elf64_Ehdr ehdr;
	Elf *arch;
	/* a recording's processes: their mappings from here, not from /proc */
	unwind_maps_fn maps;
	void *maps_arg;
	/*
	 * Objects read, by file: a new process's Dwfl takes another reference
	 * to an image already in memory instead of reading it again (cc1's 30
	 * MB for every compiler run of a build), least recently used dropped.
	 */
	struct elf_cached {
		dev_t dev;
		ino_t ino;
		off_t size;
		struct timespec mtime;
		Elf *elf;
		uint64_t used;
	} ecache[ORACLE_ELF_CACHE];
	uint64_t ecache_bytes;
};

/* Only .eh_frame (in the main ELF) is needed: no separate debuginfo. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	return -1;
}

/* the process whose objects find_elf opens: callbacks get no argument of ours */
static __thread int finding_pid;
static __thread struct unwind_oracle *finding_oracle;

/*
 * @name as the process sees it: through its root, which may be a container's.
 * A descriptor, or -errno: -EINVAL when it is there but not a regular file
 * (a fifo, a device: never opened for reading).
 */
static int open_in_root(int pid, const char *name, char **file_name)
{
	char path[PATH_MAX];
	int fd;

	if (snprintf(path, sizeof(path), "/proc/%d/root%s", pid, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = objread_open(path, NULL);
	if (fd < 0)
		return fd;
	*file_name = strdup(path);
	if (!*file_name) {
		close(fd);
		return -ENOMEM;
	}
	return fd;
}

static int elf_in_memory(int fd, Elf **elfp);

/*
 * The file of @pid's mapping of @name at @base or above, as
 * /proc/PID/map_files/START-END (the mapped inode itself, deleted or not,
 * whatever the path names now): a descriptor or -errno.
 */
static int open_mapped(int pid, const char *name, Dwarf_Addr base, char **file_name)
{
	char path[PATH_MAX + 128], line[PATH_MAX + 128];
	size_t nlen = strlen(name);
	int fd = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fd == -ENOENT && fgets(line, sizeof(line), f)) {
		unsigned long long start, end;
		size_t len = strlen(line);
		int at = 0;

		if (len && line[len - 1] == '\n')
			line[--len] = 0;
		if (len <= nlen || strcmp(line + len - nlen, name) || line[len - nlen - 1] != ' ' ||
		    sscanf(line, "%llx-%llx %*s %*s %*s %*s %n", &start, &end, &at) != 2 || !at ||
		    start < base)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid, start, end);
		fd = objread_open(path, NULL);
		if (fd >= 0 && !(*file_name = strdup(name))) {
			close(fd);
			fd = -ENOMEM;
		}
	}
	fclose(f);
	return fd;
}

/*
 * A mapping's file, as the process sees it (through its root, a
 * container's), or a deleted one's through map_files; the vDSO (a name in
 * brackets) libdw reads from /proc/PID/mem. Never libdw's own open of the
 * path, which waits for a lease's holder (a user's file named "LIB
 * (deleted)" under a lease held 45 s) and asks any file system. The ELF is
 * handed back in memory (mapped), the file closed: 64 processes' modules
 * would otherwise hold a descriptor each.
 */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	static const char deleted[] = " (deleted)";
	size_t len = strlen(name);
	int fd;

	if (name[0] == '[')
		return finding_pid > 0 ?
		       dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp) : -1;
	if (finding_pid <= 0 || name[0] != '/')
		return -1;
	if (len > sizeof(deleted) - 1 && !strcmp(name + len - (sizeof(deleted) - 1), deleted))
		fd = open_mapped(finding_pid, name, base, file_name);
	else
		fd = open_in_root(finding_pid, name, file_name);
	if (fd < 0)
		return -1;
	return elf_in_memory(fd, elfp);
}

/*
 * A recording's objects are opened by their recorded path, regular files
 * only: the process is gone, and its pid may be another's now.
 */
static int find_elf_by_path(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
			    char **file_name, Elf **elfp)
{
	int fd = objread_open(name, NULL);

	if (fd < 0)
		return -1;
	if (!(*file_name = strdup(name))) {
		close(fd);
		return -1;
	}
	return elf_in_memory(fd, elfp);
}

static const Dwfl_Callbacks recorded_callbacks = {
	.find_elf = find_elf_by_path,
	.find_debuginfo = no_debuginfo,
};

/*
 * The ELF of @fd read into memory (not mapped: another user's file truncated
 * under a mapping is a SIGBUS), @fd closed; -1 when it cannot be read.
 */
static int elf_in_memory(int fd, Elf **elfp)
{
	struct unwind_oracle *o = finding_oracle;
	struct elf_cached *c, *lru = NULL;
	struct stat st;

	if (fstat(fd, &st) || (uint64_t)st.st_size > ELFOBJ_MAX_READ) {
		close(fd);
		return -1;
	}
	for (c = o ? o->ecache : NULL; c && c < o->ecache + ORACLE_ELF_CACHE; c++) {
		if (c->elf && c->dev == st.st_dev && c->ino == st.st_ino &&
		    c->size == st.st_size && c->mtime.tv_sec == st.st_mtim.tv_sec &&
		    c->mtime.tv_nsec == st.st_mtim.tv_nsec) {
			/* another reference to the same image: libdw's elf_end drops it */
			*elfp = elf_begin(-1, ELF_C_READ, c->elf);
			c->used = ++o->tick;
			close(fd);
			return -1;
		}
		if (!lru || !c->elf || (lru->elf && c->used < lru->used))
			lru = c;
	}
	*elfp = elf_begin(fd, ELF_C_READ, NULL);
	if (*elfp && elf_cntl(*elfp, ELF_C_FDREAD)) {
		elf_end(*elfp);
		*elfp = NULL;
	}
	close(fd);
	if (*elfp && lru) {
		/* kept: the cache holds a reference of its own, within its bytes */
		if (lru->elf) {
			elf_end(lru->elf);
			o->ecache_bytes -= (uint64_t)lru->size;
			lru->elf = NULL;
		}
		if (o->ecache_bytes + (uint64_t)st.st_size <= ORACLE_ELF_CACHE_BYTES) {
			*lru = (struct elf_cached){ st.st_dev, st.st_ino, st.st_size, st.st_mtim,
						    elf_begin(-1, ELF_C_READ, *elfp), ++o->tick };
			if (lru->elf)
				o->ecache_bytes += (uint64_t)st.st_size;
		}
	}
	return -1;
}

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = no_debuginfo,
};

static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct oracle_proc *p = dwfl_arg;

	if (*thread_argp || !p->call)
		return 0;
	*thread_argp = p->call;
	return p->call->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	struct oracle_proc *p = dwfl_arg;

	if (!p->call || p->call->tid != tid)
		return false;
	*thread_argp = p->call;
	return true;
}

/* 8-byte reads inside the copy only, as perf's */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct oracle_proc *p = dwfl_arg;
	struct oracle_call *c = p->call;

	if (!c || addr < c->sp || addr - c->sp > c->len ||
	    c->len - (addr - c->sp) < sizeof(*result)) {
		/* libdw may take a read it was refused for the end of the stack */
		if (c)
			c->read_fault = true;
		return false;
	}
	memcpy(result, c->stack + (addr - c->sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	const struct oracle_call *c = thread_arg;
	Dwarf_Word regs[16] = { 0 };

	if (c->regs) {
		memcpy(regs, c->regs, sizeof(regs));
		if (!dwfl_thread_state_registers(thread, 0, 16, regs))
			return false;
	} else {
		regs[0] = c->bp; /* rbp, rsp */
		regs[1] = c->sp;
		if (!dwfl_thread_state_registers(thread, X86_RBP, 2, regs))
			return false;
	}
	dwfl_thread_state_register_pc(thread, c->ip);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* The recorded mappings of @pid as /proc/PID/maps lines, reported. Returns 0 or an errno. */
static int report_recorded(struct unwind_oracle *o, Dwfl *dwfl, int pid)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return ENOMEM;
	err = -o->maps(pid, f, o->maps_arg);
	if (fclose(f) && !err)
		err = ENOMEM;
	if (!err && !len)
		err = ENOENT;
	if (!err) {
		f = fmemopen(buf, len, "r");
		err = f ? dwfl_linux_proc_maps_report(dwfl, f) : ENOMEM;
		if (f)
			fclose(f);
	}
	free(buf);
	return err;
}

/* Report the process's modules, again or for the first time. Returns 0 or -errno. */
static int report(struct unwind_oracle *o, Dwfl *dwfl, int pid)
{
	int err;

	dwfl_report_begin(dwfl);
	err = o->maps ? report_recorded(o, dwfl, pid) : dwfl_linux_proc_report(dwfl, pid);
	/* modules seen again are kept, with their ELF and CFI; the rest go */
	if (dwfl_report_end(dwfl, NULL, NULL) && !err)
		err = EINVAL;
	if (err > 0)
		return err == ENOENT ? -ESRCH : -err;
	return err ? -EINVAL : 0;
}

static void proc_drop(struct oracle_proc *p)
{
	if (p->dwfl)
		dwfl_end(p->dwfl);
	memset(p, 0, sizeof(*p));
}

/* A Dwfl for @pid in slot @p, whose process is dropped only if that succeeds. */
static int proc_open(struct unwind_oracle *o, struct oracle_proc *p, int pid)
{
	Dwfl *dwfl = dwfl_begin(o->maps ? &recorded_callbacks : &proc_callbacks);
	int err;

	if (!dwfl)
		return -ENOMEM;
	err = report(o, dwfl, pid);
	if (err) {
		dwfl_end(dwfl);
		return err;
	}
	proc_drop(p);
	if (!dwfl_attach_state(dwfl, o->arch, pid, &thread_callbacks, p)) {
		dwfl_end(dwfl);
		return -EINVAL;
	}
	p->pid = pid;
	p->dwfl = dwfl;
	return 0;
}

/* The process's slot, its Dwfl built if it has none. */
static int proc_get(struct unwind_oracle *o, int pid, struct oracle_proc **out)
{
	struct oracle_proc *p, *victim = NULL;
	int err;

	for (p = o->procs; p < o->procs + ORACLE_PROCS; p++) {
		if (p->dwfl && p->pid == pid) {
			*out = p;
			return 0;
		}
		if (!victim || (victim->dwfl && (!p->dwfl || p->used < victim->used)))
			victim = p;
	}
	err = proc_open(o, victim, pid);
	if (err)
		return err;
	*out = victim;
	return 0;
}

static bool in_module(Dwfl *dwfl, uint64_t pc, bool activation)
{
	/* a return address may follow the module's last call: look up the call */
	return dwfl_addrmodule(dwfl, activation ? pc : pc - 1) != NULL;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct oracle_call *c = arg;
	struct oracle_proc *p = c->proc;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	if (!in_module(p->dwfl, pc, c->n == 0)) {
		uint64_t now = now_ns();

		if (!c->reread && now >= p->no_reread_until) {
			c->reread = true;
			if (report(c->o, p->dwfl, p->pid)) {
				c->gone = true; /* its modules are gone with it */
			} else if (in_module(p->dwfl, pc, c->n == 0)) {
				goto found;
			}
			p->no_reread_until = now + ORACLE_REREAD_BACKOFF_NS;
		}
		/* perf stops at a pc in no mapping; ips[0] is the caller's own */
		if (c->n == 0)
			c->ips[c->n++] = pc;
		return DWARF_CB_ABORT;
	}
found:
	c->ips[c->n++] = pc;
	return c->n < c->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static int unwind_call(struct unwind_oracle *o, int pid, struct oracle_call *call);

int unwind_oracle__unwind(struct unwind_oracle *o, int pid, int tid, uint64_t ip, uint64_t sp,
			  uint64_t bp, const void *stack, size_t len, uint64_t *ips, int max)
{
	struct oracle_call c = {
		.o = o,
		/* a recording's mappings do not change under an unwind: its caller forgets them */
		.reread = o->maps != NULL,
		.tid = tid,
		.ip = ip,
		.sp = sp,
		.bp = bp,
		.stack = stack,
		.len = stack ? len : 0,
		.ips = ips,
		.max = max,
	};

	return unwind_call(o, pid, &c);
}

int unwind_oracle__unwind_regs(struct unwind_oracle *o, int pid, int tid, const uint64_t *regs,
			       uint64_t ip, const void *stack, size_t len, uint64_t *ips, int max,
			       bool *complete)
{
	struct oracle_call c = {
		.o = o,
		.reread = o->maps != NULL,
		.tid = tid,
		.ip = ip,
		.sp = regs[7],
		.bp = regs[6],
		.regs = regs,
		.stack = stack,
		.len = stack ? len : 0,
		.ips = ips,
		.max = max,
	};
	int n = unwind_call(o, pid, &c);

	if (complete)
		*complete = c.complete;
	return n;
}

static int unwind_call(struct unwind_oracle *o, int pid, struct oracle_call *call)
{
	struct oracle_call c = *call;
	struct oracle_proc *p;
	int err;

	if (c.max < 1 || pid <= 0 || c.tid <= 0)
		return -EINVAL;
	err = proc_get(o, pid, &p);
	if (err)
		return err;
	p->used = ++o->tick;
	c.proc = p;
	p->call = &c;
	finding_pid = o->maps ? 0 : pid;
	finding_oracle = o;
	/* its result says little: a walk may end on an error after good frames */
	/* 0: it ended at the outermost frame (an undefined return address);
	 * else an error (the copy ended) or the callback stopped it */
	call->complete = dwfl_getthread_frames(p->dwfl, c.tid, frame_cb, &c) == 0 && !c.gone &&
			 !c.read_fault;
	finding_pid = 0;
	finding_oracle = NULL;
	p->call = NULL;
	if (c.gone)
		proc_drop(p);
	if (c.n == 0)
		c.ips[c.n++] = c.ip;
	return c.n;
}

void unwind_oracle__forget(struct unwind_oracle *o, int pid)
{
	struct oracle_proc *p;

	for (p = o->procs; p < o->procs + ORACLE_PROCS; p++)
		if (p->dwfl && p->pid == pid)
			proc_drop(p);
}

void unwind_oracle__release(struct unwind_oracle *o)
{
	struct oracle_proc *p;

	for (p = o->procs; p < o->procs + ORACLE_PROCS; p++)
		proc_drop(p);
	for (size_t i = 0; i < ORACLE_ELF_CACHE; i++)
		if (o->ecache[i].elf) {
			elf_end(o->ecache[i].elf);
			o->ecache[i].elf = NULL;
		}
	o->ecache_bytes = 0;
}

struct unwind_oracle *unwind_oracle__new_recorded(unwind_maps_fn maps, void *arg)
{
	struct unwind_oracle *o = unwind_oracle__new();

	if (o) {
		o->maps = maps;
		o->maps_arg = arg;
	}
	return o;
}

struct unwind_oracle *unwind_oracle__new(void)
{
	struct unwind_oracle *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	elf_version(EV_CURRENT);
	memcpy(o->ehdr.e_ident, ELFMAG, SELFMAG);
	o->ehdr.e_ident[EI_CLASS] = ELFCLASS64;
	o->ehdr.e_ident[EI_DATA] = ELFDATA2LSB;
	o->ehdr.e_ident[EI_VERSION] = EV_CURRENT;
	o->ehdr.e_type = ET_EXEC;
	o->ehdr.e_machine = EM_X86_64;
	o->ehdr.e_version = EV_CURRENT;
	o->ehdr.e_ehsize = sizeof(o->ehdr);
	o->arch = elf_memory((char *)&o->ehdr, sizeof(o->ehdr));
	if (!o->arch) {
		free(o);
		return NULL;
	}
	return o;
}

void unwind_oracle__free(struct unwind_oracle *o)
{
	struct oracle_proc *p;

	if (!o)
		return;
	/* the Dwfls' architecture backends refer to o->arch */
	for (p = o->procs; p < o->procs + ORACLE_PROCS; p++)
		proc_drop(p);
	for (size_t i = 0; i < ORACLE_ELF_CACHE; i++)
		if (o->ecache[i].elf)
			elf_end(o->ecache[i].elf);
	elf_end(o->arch);
	free(o);
}
