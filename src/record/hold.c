// SPDX-License-Identifier: GPL-2.0
/* The ptrace hold of a starting command (hold.h). */
#if defined(__x86_64__)
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <elf.h>
#include "hold.h"
#include "../util/util.h"

/*
 * Holding the command until its unwind tables are loaded, with ptrace, so
 * that the kernel undoes it by itself if offcpu dies (SIGKILL included):
 * offcpu attaches with PTRACE_SEIZE (no PTRACE_O_EXITKILL), only ever stops
 * the command at its exec and at system call boundaries, and changes
 * nothing in its memory or registers. When a tracer exits, exit_ptrace() ->
 * __ptrace_detach() -> __ptrace_unlink() (kernel/ptrace.c; the same in 6.1,
 * 6.12 and 6.18) clears the system call tracing, the pending traps
 * (PTRACE_INTERRUPT's) and the ptrace flags, puts back a group stop, and
 * wakes the tracee (SIGKILL only with EXITKILL). ptrace_stop()
 * (kernel/signal.c) then returns the code the stop set, as nothing changed
 * it (PTRACE_DETACH would, exit_ptrace() does not; a wait would zero it:
 * offcpu only looks at stops, WNOWAIT). At the exec stop, ptrace_event()
 * ignores it. At a system call stop, ptrace_report_syscall()
 * (include/linux/ptrace.h) sends it as a signal: SIGTRAP | 0x80 with
 * PTRACE_O_TRACESYSGOOD, not a valid signal (above _NSIG), which send_sig()
 * refuses; without the option, a SIGTRAP that kills the command. At a
 * signal's stop, ptrace_signal() delivers that signal, as if never traced.
 */
#define HOLD_OPTIONS (PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD)
#define SYSCALL_STOP (SIGTRAP | 0x80)
/* a loader that never makes a system call outside its own code: let go anyway */
#define HOLD_MAX_STOPS 10000

struct code_range {
	uint64_t start, end;
};

struct hold {
	struct workload *w;
	void (*load)(void *arg, int pid);
	void *arg;
	volatile sig_atomic_t *stop;
	struct code_range code[16]; /* the dynamic loader's executable mappings and the vDSO */
	int nr_code;
	unsigned int stops; /* system call stops */
	uint64_t start_ns;
	const char *pause; /* tests: OFFCPU_FAULT_HOLD_PAUSE */
};

/* One value of process @pid's auxiliary vector, 0 when it has none. */
static uint64_t auxv_value(int pid, uint64_t type)
{
	uint64_t av[2], v = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	f = fopen(path, "re");
	while (f && fread(av, sizeof(av), 1, f) == 1 && av[0] != AT_NULL)
		if (av[0] == type)
			v = av[1];
	if (f)
		fclose(f);
	return v;
}

/*
 * Where the dynamic loader's code is, from the exec stop: the executable
 * mappings of the file mapped at AT_BASE, and the vDSO. -ENOENT: no loader
 * (a static program, or one run as "ld.so PROGRAM").
 */
static int loader_code(struct hold *h)
{
	uint64_t base = auxv_value(h->w->pid, AT_BASE), start, end, off, ino, lino = 0;
	char path[64], line[4096], perms[8], dev[32], ldev[32] = "";
	FILE *f;
	int pass;

	if (!base)
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/maps", h->w->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* the mapping at AT_BASE names the loader's file; then its code */
	for (pass = 0; pass < 2; pass++) {
		rewind(f);
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %31s %" SCNu64,
				   &start, &end, perms, &off, dev, &ino) != 6)
				continue;
			if (pass == 0 && start == base && ino) {
				snprintf(ldev, sizeof(ldev), "%s", dev);
				lino = ino;
				break;
			}
			if (pass == 1 && perms[2] == 'x' && h->nr_code < (int)ARRAY_SIZE(h->code) &&
			    ((ino == lino && !strcmp(dev, ldev)) || strstr(line, "[vdso]"))) {
				h->code[h->nr_code].start = start;
				h->code[h->nr_code++].end = end;
			}
		}
		if (!lino)
			break;
	}
	fclose(f);
	return lino && h->nr_code ? 0 : -ENOENT;
}

/* Is @pc in the loader's code (or the vDSO's, which the loader may call)? */
static bool in_loader(const struct hold *h, uint64_t pc)
{
	for (int i = 0; i < h->nr_code; i++)
		if (pc >= h->code[i].start && pc < h->code[i].end)
			return true;
	return false;
}

/*
 * The system calls a dynamic loader makes while it maps and relocates the
 * program's libraries (glibc's and musl's): any other one, even from the
 * loader's code, means the loading is over (musl's loader is its C library:
 * the program's own calls come from there too).
 */
static bool loading_syscall(long nr)
{
	switch (nr) {
	case SYS_execve: /* the exit of the exec that made the stop */
	case SYS_brk:
	case SYS_arch_prctl:
	case SYS_mmap:
	case SYS_munmap:
	case SYS_mprotect:
	case SYS_open:
	case SYS_openat:
	case SYS_read:
	case SYS_pread64:
	case SYS_close:
	case SYS_fstat:
	case SYS_stat:
	case SYS_lstat:
	case SYS_newfstatat:
	case SYS_statx:
	case SYS_access:
	case SYS_faccessat:
	case SYS_readlink: /* $ORIGIN */
	case SYS_readlinkat:
	case SYS_getcwd:
	case SYS_statfs:
	case SYS_fstatfs:
	case SYS_lseek:
	case SYS_uname:
	case SYS_set_tid_address:
	case SYS_set_robust_list:
	case SYS_rseq:
	case SYS_prlimit64:
	case SYS_getuid:
	case SYS_geteuid:
	case SYS_getgid:
	case SYS_getegid:
	case SYS_getpid:
	case SYS_gettid:
		return true;
	}
	return false;
}

#ifdef OFFCPU_TEST_HOOKS
static volatile sig_atomic_t hold_resumed;

static void on_hold_cont(int sig)
{
	hold_resumed = 1;
}
#endif

/*
 * Tests: OFFCPU_FAULT_HOLD_PAUSE=WHERE[,WHERE...] pauses the hold at those
 * stops (exec; N, the Nth system call stop; last, the stop where it ends;
 * signal, a signal on its way to the command) until SIGCONT goes on or a
 * stop signal ends it: a test kills offcpu there.
 */
static void hold_pause(struct hold *h, const char *where)
{
#ifdef OFFCPU_TEST_HOOKS
	struct sigaction sa = { .sa_handler = on_hold_cont }, old;
	size_t n = strcspn(where, " "); /* "signal 10" is paused at by "signal" */
	const char *p = h->pause;

	while (p && (strncmp(p, where, n) || (p[n] && p[n] != ',')))
		p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
	if (!p)
		return;
	hold_resumed = 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCONT, &sa, &old);
	fprintf(stderr, "offcpu: test: the command (pid %d) is held at %s "
		"(OFFCPU_FAULT_HOLD_PAUSE)\n", h->w->pid, where);
	while (!*h->stop && !hold_resumed)
		poll(NULL, 0, 20);
	sigaction(SIGCONT, &old, NULL);
#else
	(void)h;
	(void)where;
#endif
}

/*
 * Wait for the command's next stop: 0 with its status as waitpid() gives it
 * in *@st, or -ECHILD once it ended (reaped). The stop is only looked at
 * (WNOWAIT): the kernel keeps its code, so that if offcpu dies before it
 * resumes the command, the command resumes as if never traced, a signal on
 * its way delivered (a wait would have consumed it: wait_task_stopped(),
 * kernel/exit.c). When offcpu is asked to stop while the command runs, the
 * command is interrupted (PTRACE_INTERRUPT) so that it stops soon and can be
 * let go.
 */
static int next_stop(struct hold *h, int *st)
{
	struct workload *w = h->w;
	bool interrupted = false;
	siginfo_t si;

	for (;;) {
		if (*h->stop && !interrupted) {
			ptrace(PTRACE_INTERRUPT, w->pid, NULL, NULL);
			interrupted = true;
		}
		memset(&si, 0, sizeof(si));
		if (!waitid(P_PID, (id_t)w->pid, &si, WEXITED | WSTOPPED | WNOWAIT))
			break;
		if (errno != EINTR)
			return -errno;
	}
	if (si.si_code == CLD_TRAPPED || si.si_code == CLD_STOPPED) {
		*st = (si.si_status << 8) | 0x7f;
		return 0;
	}
	if (waitpid(w->pid, &w->status, 0) != w->pid)
		return -errno;
	w->reaped = true;
	return -ECHILD;
}

/* The signal on its way to the command at this stop; 0 at an event or a system call stop. */
static int stop_signal_of(int st)
{
	return (st >> 16) == 0 && WSTOPSIG(st) != SYSCALL_STOP ? WSTOPSIG(st) : 0;
}

/* Let the stopped command go, with the signal it was stopped for, if any. */
static int let_go(struct hold *h, int st)
{
	long sig = stop_signal_of(st);

	return ptrace(PTRACE_DETACH, h->w->pid, NULL, (void *)sig) ? -errno : 0;
}

/*
 * From the release of the seized child: at its exec (the program and the
 * dynamic loader mapped) load the tables, then stop it at each system call
 * until the first one made from outside the loader (and the vDSO), or one a
 * loader does not make: the libraries it maps at start are all mapped then,
 * and none of their code, or the program's, has blocked. Load the tables
 * again there and let it go. Returns 0 once it is let go, -ECHILD when it
 * ended, -EAGAIN when it was let go before its exec (stopped by job control,
 * or offcpu asked to stop), or -errno when ptrace failed.
 */
static int hold_until_loaded(struct hold *h)
{
	struct user_regs_struct regs;
	bool exec_seen = false, last;
	int st = 0, sig = 0, err, event;
	char where[32];

	for (;;) {
		err = next_stop(h, &st);
		if (err)
			return err;
		event = st >> 16;
		if (*h->stop)
			break;
		if (event == PTRACE_EVENT_EXEC && !exec_seen) {
			exec_seen = true;
			h->start_ns = now_ns();
			/* the program's and the loader's own blocks come before any library's */
			h->load(h->arg, h->w->pid);
			hold_pause(h, "exec");
			if (*h->stop || loader_code(h))
				break; /* static: nothing more will be mapped at start */
		} else if (event == 0 && WSTOPSIG(st) == SYSCALL_STOP && exec_seen) {
			h->stops++;
			if (ptrace(PTRACE_GETREGS, h->w->pid, NULL, &regs))
				break;
			last = !in_loader(h, regs.rip) || !loading_syscall((long)regs.orig_rax) ||
			       h->stops >= HOLD_MAX_STOPS;
			if (last) {
				pr_debug("the hold ends at system call %llu, from %#llx, after %u "
					 "stops", regs.orig_rax, regs.rip, h->stops);
				h->load(h->arg, h->w->pid);
				hold_pause(h, "last");
				break;
			}
			snprintf(where, sizeof(where), "%u", h->stops);
			hold_pause(h, where);
			if (*h->stop)
				break;
		} else if (event) {
			break; /* a group stop (job control): it stays stopped, untraced */
		} else if (stop_signal_of(st)) {
			snprintf(where, sizeof(where), "signal %d", stop_signal_of(st));
			hold_pause(h, where);
			if (*h->stop)
				break;
		}
		/* a signal on its way is delivered as it would have been */
		sig = stop_signal_of(st);
		if (ptrace(exec_seen ? PTRACE_SYSCALL : PTRACE_CONT, h->w->pid, NULL,
			   (void *)(long)sig)) {
			err = -errno;
			let_go(h, st);
			return err;
		}
	}
	err = let_go(h, st);
	if (!err && exec_seen)
		pr_info("held the command for %.1f ms, %u system call stops",
			(now_ns() - h->start_ns) / 1e6, h->stops);
	return err ?: exec_seen ? 0 : -EAGAIN;
}

/* Has offcpu CAP_SYS_PTRACE? Without, the kernel runs a set-user-ID program traced unprivileged. */
static bool have_sys_ptrace(void)
{
	struct __user_cap_header_struct hd = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	return !syscall(SYS_capget, &hd, d) && (d[0].effective & (1u << CAP_SYS_PTRACE));
}

/*
 * Would exec of @file raise privileges (set-user-ID, set-group-ID, file
 * capabilities)? Traced by a tracer without CAP_SYS_PTRACE, the kernel
 * would run it without them (cap_bprm_creds_from_file(), LSM_UNSAFE_PTRACE):
 * such a program is not held. @file is found on PATH as execvp() does.
 */
static bool exec_gains_privileges(const char *file)
{
	const char *path = getenv("PATH"), *p, *e;
	char full[PATH_MAX];
	struct stat st;

	if (strchr(file, '/'))
		return !stat(file, &st) && ((st.st_mode & (S_ISUID | S_ISGID)) ||
					    getxattr(file, "security.capability", NULL, 0) > 0);
	for (p = path && *path ? path : "/bin:/usr/bin"; p; p = *e ? e + 1 : NULL) {
		e = strchrnul(p, ':');
		snprintf(full, sizeof(full), "%.*s/%s", (int)(e - p), e == p ? "." : p, file);
		if (!stat(full, &st) && S_ISREG(st.st_mode) && !access(full, X_OK))
			return exec_gains_privileges(full);
	}
	return false;
}

int hold__seize(struct workload *w, char *why, size_t len)
{
	char path[64], line[256], comm[64] = "?";
	int tracer = 0;
	FILE *f;

	if (!have_sys_ptrace() && exec_gains_privileges(w->file)) {
		snprintf(why, len, "it gains privileges at its exec (set-user-ID or file "
			 "capabilities), which a traced exec loses without CAP_SYS_PTRACE");
		return -EPERM;
	}
	if (!ptrace(PTRACE_SEIZE, w->pid, NULL, (void *)(long)HOLD_OPTIONS))
		return 0;
	snprintf(why, len, "%s", strerror(errno));
	f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (f && fscanf(f, "%d", &tracer) == 1 && tracer >= 2)
		snprintf(why, len, "ptrace is restricted (kernel.yama.ptrace_scope = %d)", tracer);
	if (f)
		fclose(f);
	tracer = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", w->pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	if (f)
		fclose(f);
	if (tracer > 0) {
		snprintf(path, sizeof(path), "/proc/%d/comm", tracer);
		f = fopen(path, "re");
		if (f && fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		if (f)
			fclose(f);
		snprintf(why, len, "it is traced already, by process %d (%s)", tracer, comm);
	}
	return -EPERM;
}

int hold__until_loaded(struct workload *w, void (*load)(void *arg, int pid), void *arg,
		       volatile sig_atomic_t *stop)
{
	struct hold h = { .w = w, .load = load, .arg = arg, .stop = stop,
			  .pause = test_hook("FAULT_HOLD_PAUSE") };

	return hold_until_loaded(&h);
}

#endif
