// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/auxv.h>
#include <sys/xattr.h>
#include <elf.h>
#include "options.h"
#include "target.h"
#include "../perfdata/format.h"
#include "../util/util.h"

#define CGROUP2_SUPER_MAGIC 0x63677270

int workload__prepare(struct workload *w, char **argv, bool stdout_to_stderr)
{
	int go[2], errp[2];
	pid_t pid;

	memset(w, 0, sizeof(*w));
	w->pidfd = -1;
	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(errp, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		close(errp[0]);
		close(errp[1]);
		return err;
	}
	if (pid == 0) {
		char c;
		int e;

		close(go[1]);
		close(errp[0]);
		sigset_t none;

		/*
		 * Signals offcpu catches go back to their default here (exec would
		 * do it too); those ignored from the start (nohup) stay ignored.
		 * SIGPIPE is ignored by offcpu itself: the command gets the default.
		 */
		for (int sig = 1; sig < NSIG; sig++) {
			struct sigaction cur;

			if (sig != SIGKILL && sig != SIGSTOP && !sigaction(sig, NULL, &cur) &&
			    cur.sa_handler != SIG_IGN && cur.sa_handler != SIG_DFL)
				signal(sig, SIG_DFL);
		}
		signal(SIGPIPE, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* offcpu's stdout is the recording (-o -): the command's goes to stderr, as perf does */
		if (stdout_to_stderr && dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(127);
		/* Wait for the collector; EOF (parent died) means do not run. */
		if (read(go[0], &c, 1) != 1)
			_exit(127);
		execvp(argv[0], argv);
		e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(errp[1]);
	w->pid = pid;
	w->file = argv[0];
	w->go_fd = go[1];
	w->err_fd = errp[0];
	w->pidfd = pidfd_for(pid);
	return 0;
}

#if defined(__x86_64__)
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

static volatile sig_atomic_t hold_resumed;

static void on_hold_cont(int sig)
{
	hold_resumed = 1;
}

/*
 * Tests: OFFCPU_FAULT_HOLD_PAUSE=WHERE[,WHERE...] pauses the hold at those
 * stops (exec; N, the Nth system call stop; last, the stop where it ends;
 * signal, a signal on its way to the command) until SIGCONT goes on or a
 * stop signal ends it: a test kills offcpu there.
 */
static void hold_pause(struct hold *h, const char *where)
{
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

/* Why the command cannot be held, in @why; 0 when it can. */
static int hold_refused(struct workload *w, char *why, size_t len)
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
#endif

int workload__start(struct workload *w, void (*load)(void *arg, int pid), void *arg,
		    volatile sig_atomic_t *stop)
{
	int e = 0;
	ssize_t n;
	bool hold = false;
#if defined(__x86_64__)
	struct hold h = { .w = w, .load = load, .arg = arg, .stop = stop,
			  .pause = getenv("OFFCPU_FAULT_HOLD_PAUSE") };
	char why[256];

	/* seized while it waits for the go: the exec is its first stop */
	if (load) {
		hold = !hold_refused(w, why, sizeof(why));
		if (!hold)
			pr_warn("cannot hold the command before it runs: %s; its first blocks "
				"may be walked before its unwind tables are loaded", why);
	}
#endif
	if (write(w->go_fd, "g", 1) != 1)
		return -errno;
	close(w->go_fd);
	w->go_fd = -1;
#if defined(__x86_64__)
	if (hold) {
		e = hold_until_loaded(&h);
		if (e && e != -ECHILD && e != -EAGAIN)
			pr_warn("could not hold the command until its unwind tables were "
				"loaded (%s): its first blocks may be walked before they are",
				strerror(-e));
		e = 0;
	}
#endif
	/* at EOF once it exec'd (the pipe is close-on-exec): no wait after a hold */
	do
		n = read(w->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(w->err_fd);
	w->err_fd = -1;
	if (n == sizeof(e)) {
		if (!w->reaped)
			waitpid(w->pid, &w->status, 0);
		w->reaped = true;
		return -e;
	}
	return 0;
}

bool workload__reap(struct workload *w)
{
	if (w->reaped)
		return true;
	if (waitpid(w->pid, &w->status, WNOHANG) == w->pid)
		w->reaped = true;
	return w->reaped;
}

void workload__kill(struct workload *w, int sig)
{
	if (!w->pid)
		return;
	if (w->go_fd >= 0) {
		close(w->go_fd); /* a child still waiting sees EOF and exits */
		w->go_fd = -1;
	}
	if (w->err_fd >= 0) {
		close(w->err_fd);
		w->err_fd = -1;
	}
	if (!w->reaped) {
		kill(w->pid, sig);
		w->signal_sent = sig;
		/* SIGTERM is a request: a command that ignores it for 2 s is killed */
		if (sig == SIGTERM && w->pidfd >= 0) {
			struct pollfd p = { .fd = w->pidfd, .events = POLLIN };

			if (poll(&p, 1, 2000) == 0) {
				kill(w->pid, SIGKILL);
				w->signal_sent = SIGKILL;
			}
		}
		waitpid(w->pid, &w->status, 0);
		w->reaped = true;
	}
	if (w->pidfd >= 0) {
		close(w->pidfd);
		w->pidfd = -1;
	}
}

int tid_to_tgid(int tid)
{
	char path[64], line[256];
	FILE *f;
	int tgid = -ESRCH;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

bool is_kernel_thread(int tid)
{
	char path[64], buf[1024], *p;
	unsigned long flags = 0;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the command name may hold anything */
	if (!p)
		return false;
	/* state ppid pgrp session tty_nr tpgid flags */
	for (i = 0; i < 6 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %*s %lu", &flags) != 1)
		return false;
	return flags & 0x00200000; /* PF_KTHREAD */
}

bool thread_alive(int tgid, int tid)
{
	return syscall(SYS_tgkill, tgid, tid, 0) == 0 || errno == EPERM;
}

int pidfd_for(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : fd;
}

bool have_capabilities(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &h, d))
		return false;
	/* CAP_PERFMON is 38 and CAP_BPF 39: bits 6 and 7 of the second word. */
	return (d[1].effective & (1u << 6)) && (d[1].effective & (1u << 7));
}

int cgroup2_mount(char *out, size_t cap)
{
	char line[4096], dev[256], dir[2048], type[64];
	FILE *f = fopen("/proc/self/mounts", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %2047s %63s", dev, dir, type) != 3)
			continue;
		if (!strcmp(type, "cgroup2")) {
			snprintf(out, cap, "%s", dir);
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

static int open_cgroup(const char *arg, char *msg, size_t len)
{
	char root[2048], path[PATH_MAX];
	struct statfs sfs;
	int fd;

	if (arg[0] == '/' && statfs(arg, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC) {
		snprintf(path, sizeof(path), "%s", arg);
	} else {
		if (cgroup2_mount(root, sizeof(root))) {
			snprintf(msg, len, "cgroup '%s': no cgroup v2 hierarchy is mounted", arg);
			return -ENOENT;
		}
		snprintf(path, sizeof(path), "%s/%s", root, arg[0] == '/' ? arg + 1 : arg);
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		snprintf(msg, len, "cgroup '%s': cannot open %s: %s", arg, path, strerror(-err));
		return err;
	}
	if (fstatfs(fd, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC) {
		snprintf(msg, len, "cgroup '%s': %s is not a cgroup v2 directory", arg, path);
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* The cgroup's id (its inode number, the kernel's kernfs id) and depth below the root. */
static void cgroup_id_level(int fd, uint64_t *id, uint32_t *level)
{
	char link[64], path[PATH_MAX], root[2048], rroot[PATH_MAX];
	struct stat st;
	ssize_t n;
	const char *p;

	*id = fstat(fd, &st) == 0 ? (uint64_t)st.st_ino : 0;
	*level = 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || cgroup2_mount(root, sizeof(root)) || !realpath(root, rroot))
		return;
	path[n] = 0;
	if (strncmp(path, rroot, strlen(rroot)))
		return;
	for (p = path + strlen(rroot); *p; p++)
		if (*p == '/' && p[1] && p[1] != '/')
			(*level)++;
}

/* One of -p or -t: the process it belongs to, refused when gone or a kernel thread. */
static int resolve(int id, const char *what, char *msg, size_t len)
{
	int tgid = tid_to_tgid(id);

	if (tgid < 0) {
		snprintf(msg, len, "%s %d does not exist", what, id);
		return -ESRCH;
	}
	if (is_kernel_thread(id)) {
		snprintf(msg, len, "%d is a kernel thread: offcpu records user tasks only (kernel "
			 "threads are left out of every recording)", id);
		return -EINVAL;
	}
	return tgid;
}

int targets__init(struct targets *t, struct record_opts *o, char *msg, size_t len)
{
	size_t i;
	int tgid;

	memset(t, 0, sizeof(*t));
	t->cgroup_fd = -1;
	for (i = 0; i < o->nr_pids; i++) {
		tgid = resolve(o->pids[i], "process", msg, len);
		if (tgid < 0)
			return tgid;
		if (tgid != o->pids[i])
			pr_warn("%d is a thread of process %d: recording the whole process",
				o->pids[i], tgid);
		o->pids[i] = tgid;
		if (intset__add(&t->tracked, tgid) < 0)
			return -ENOMEM;
	}
	for (i = 0; i < o->nr_tids; i++) {
		tgid = resolve(o->tids[i], "thread", msg, len);
		if (tgid < 0)
			return tgid;
		if (intset__add(&t->tracked, tgid) < 0 || intset__add(&t->tids, o->tids[i]) < 0)
			return -ENOMEM;
	}
	t->only_tids = o->nr_tids > 0;
	/* -C and -G alone mean "everything on those cpus / in that cgroup" */
	t->filter = (!o->system_wide && !o->nr_cpus && !o->cgroup) || (o->argc && !o->system_wide);
	/* processes forked by the command or by -p processes, as perf follows them */
	t->follow = (o->argc > 0 || o->nr_pids > 0) && !o->no_inherit;
	if (o->cgroup) {
		t->cgroup_fd = open_cgroup(o->cgroup, msg, len);
		if (t->cgroup_fd < 0)
			return t->cgroup_fd;
		cgroup_id_level(t->cgroup_fd, &t->cgroup_id, &t->cgroup_level);
	}
	return 0;
}

int targets__track(struct targets *t, int pid)
{
	return intset__add(&t->tracked, pid) < 0 ? -ENOMEM : 0;
}

bool targets__keep_sideband(struct targets *t, const struct perf_event_header *h)
{
	struct perf_record_task task; /* pid first, as in COMM, MMAP and MMAP2 */
	struct perf_record_comm c; /* the common pid, tid prefix */
	int pid;

	switch (h->type) {
	case PERF_RECORD_FORK:
		if (!perf_record__copy(h, &task, sizeof(task)))
			return true;
		pid = (int)task.pid;
		if (t->follow && intset__has(&t->tracked, (int)task.ppid))
			intset__add(&t->tracked, pid);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_EXIT:
		if (!perf_record__copy(h, &c, sizeof(c)))
			return true;
		pid = (int)c.pid;
		break;
	default:
		return true;
	}
	return !t->filter || intset__has(&t->tracked, pid);
}

bool targets__keep_sample(const struct targets *t, int tid, bool tracked)
{
	if (t->only_tids)
		return intset__has(&t->tids, tid);
	return !t->filter || tracked;
}

void targets__free(struct targets *t)
{
	intset__free(&t->tracked);
	intset__free(&t->tids);
	if (t->cgroup_fd >= 0)
		close(t->cgroup_fd);
	t->cgroup_fd = -1;
}
