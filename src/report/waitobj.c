// SPDX-License-Identifier: GPL-2.0
/* What waits waited on, named (waitobj.h). */
#include <arpa/inet.h>
#include <asm/unistd_64.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "waitobj.h"
#include "../util/util.h"

#define FUTEX_CMD_MASK 0x7f
#define FUTEX_LOCK_PI 6
#define FUTEX_TRYLOCK_PI 8
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_LOCK_PI2 13
#define FUTEX_TID_MASK 0x3fffffffu
#define TCP_LISTEN 10

static const char *const kind_names[WAIT_KIND_NR] = {
	[WAIT_KIND_FUTEX] = "futex", [WAIT_KIND_MUTEX] = "mutex",
	[WAIT_KIND_LIBC_LOCK] = "libc lock", [WAIT_KIND_CONDVAR] = "condvar",
	[WAIT_KIND_RWLOCK] = "rwlock", [WAIT_KIND_SEMAPHORE] = "semaphore",
	[WAIT_KIND_BARRIER] = "barrier", [WAIT_KIND_JOIN] = "join",
	[WAIT_KIND_PIPE] = "pipe", [WAIT_KIND_SOCKET] = "socket", [WAIT_KIND_FILE] = "file",
	[WAIT_KIND_FILE_LOCK] = "file lock", [WAIT_KIND_EVENTFD] = "eventfd",
	[WAIT_KIND_TIMERFD] = "timerfd", [WAIT_KIND_SIGNALFD] = "signalfd",
	[WAIT_KIND_EPOLL] = "epoll", [WAIT_KIND_DEVICE] = "device", [WAIT_KIND_FD] = "fd",
	[WAIT_KIND_NONE] = "syscall",
};

const char *waitobj__kind_name(uint32_t kind)
{
	return kind < WAIT_KIND_NR ? kind_names[kind] : "?";
}

#define SC(n) [__NR_##n] = #n
/* the system calls a thread commonly sleeps in */
static const char *const syscall_names[] = {
	SC(read), SC(write), SC(poll), SC(pread64), SC(pwrite64), SC(readv), SC(writev),
	SC(select), SC(sched_yield), SC(msync), SC(pause), SC(nanosleep), SC(sendfile),
	SC(connect), SC(accept), SC(sendto), SC(recvfrom), SC(sendmsg), SC(recvmsg), SC(vfork),
	SC(wait4), SC(msgsnd), SC(msgrcv), SC(semop), SC(fcntl), SC(flock), SC(fsync),
	SC(fdatasync), SC(rt_sigtimedwait), SC(rt_sigsuspend), SC(futex), SC(io_getevents),
	SC(epoll_wait), SC(semtimedop), SC(clock_nanosleep), SC(waitid), SC(pselect6),
	SC(ppoll), SC(splice), SC(tee), SC(sync_file_range), SC(epoll_pwait), SC(accept4),
	SC(preadv), SC(pwritev), SC(recvmmsg), SC(sendmmsg), SC(preadv2), SC(pwritev2),
	SC(io_uring_enter), SC(epoll_pwait2), SC(futex_waitv), SC(openat), SC(open),
	SC(close), SC(mmap), SC(munmap), SC(mprotect), SC(madvise), SC(exit_group),
	SC(ioctl), SC(sync), SC(syncfs), SC(fallocate), SC(ftruncate), SC(unlink),
	SC(unlinkat), SC(rename), SC(renameat2), SC(mkdir), SC(getdents64), SC(newfstatat),
	SC(statx), SC(execve), SC(clone), SC(clone3), SC(kill), SC(tgkill),
};

const char *waitobj__syscall_name(uint32_t nr, char *buf, size_t cap)
{
	if (nr == ~0u)
		return "no system call";
	if (nr < ARRAY_SIZE(syscall_names) && syscall_names[nr])
		return syscall_names[nr];
	snprintf(buf, cap, "syscall %u", nr);
	return buf;
}

/* The identity objects are interned by: what makes two waits wait on one thing. */
struct wait_id {
	uint32_t cls, pid;
	uint64_t a, b;
};

enum { ID_FUTEX = 1, ID_FILE, ID_ANON, ID_FD, ID_NONE };

static struct wait_id identity(const struct profile_wait *w)
{
	switch (w->kind) {
	case WAIT_KIND_FUTEX: case WAIT_KIND_MUTEX: case WAIT_KIND_LIBC_LOCK:
	case WAIT_KIND_CONDVAR: case WAIT_KIND_RWLOCK: case WAIT_KIND_SEMAPHORE:
	case WAIT_KIND_BARRIER: case WAIT_KIND_JOIN:
		return (struct wait_id){ ID_FUTEX, w->pid, w->addr, 0 };
	case WAIT_KIND_NONE:
		return (struct wait_id){ ID_NONE, w->pid, w->syscall, 0 };
	case WAIT_KIND_FD:
		return (struct wait_id){ ID_FD, w->pid, (uint64_t)(int64_t)w->fd, w->syscall };
	case WAIT_KIND_EVENTFD: case WAIT_KIND_TIMERFD: case WAIT_KIND_SIGNALFD:
	case WAIT_KIND_EPOLL:
		/* anonymous inodes share one inode: told apart by their descriptor */
		return (struct wait_id){ ID_ANON, w->pid, (uint64_t)(int64_t)w->fd, w->kind };
	default:
		return (struct wait_id){ ID_FILE, 0, w->ino, w->dev };
	}
}

static bool futex_kind(uint32_t kind)
{
	return kind <= WAIT_KIND_JOIN;
}

uint32_t waitobj__intern(struct profile *p, const struct profile_wait *w)
{
	struct wait_id id = identity(w);
	size_t cap = p->cap_waits;
	uint64_t *v = hashmap__find(&p->wait_idx, &id, sizeof(id));
	int created;

	if (v) {
		if (futex_kind(w->kind) && p->waits[*v].kind == WAIT_KIND_FUTEX)
			p->waits[*v].kind = w->kind; /* this wait told what it is */
		return (uint32_t)*v + 1;
	}
	if (p->nr_waits == UINT32_MAX - 1 ||
	    grow_array((void **)&p->waits, &cap, p->nr_waits + 1, sizeof(*p->waits)))
		return 0;
	p->cap_waits = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
	v = hashmap__upsert(&p->wait_idx, &id, sizeof(id), &created);
	if (!v)
		return 0;
	p->waits[p->nr_waits] = *w;
	*v = p->nr_waits++;
	return p->nr_waits;
}

const char *waitobj__text(const struct profile *p, uint32_t wait, char *buf, size_t cap)
{
	const struct profile_wait *w;

	if (!wait || wait > p->nr_waits)
		return "[none]";
	w = &p->waits[wait - 1];
	snprintf(buf, cap, "%s %s", waitobj__kind_name(w->kind), strtab__get(&p->str, w->name));
	return buf;
}

static bool any_addr(const uint8_t *a, uint16_t family)
{
	static const uint8_t zero[16];

	return !memcmp(a, zero, family == AF_INET6 ? 16 : 4);
}

bool waitobj__peers(const struct profile *p, uint32_t a, uint32_t b)
{
	const struct profile_wait *x, *y;
	size_t len;

	if (!a || !b || a > p->nr_waits || b > p->nr_waits || a == b)
		return false;
	x = &p->waits[a - 1];
	y = &p->waits[b - 1];
	if (x->kind != y->kind)
		return false;
	if (x->kind == WAIT_KIND_PIPE)
		return x->ino == y->ino && x->dev == y->dev;
	if (x->kind != WAIT_KIND_SOCKET || x->family != y->family)
		return false;
	if (x->family == AF_UNIX)
		return (x->peer_ino && x->peer_ino == y->ino) || (y->peer_ino && y->peer_ino == x->ino);
	if (x->family != AF_INET && x->family != AF_INET6)
		return false;
	len = x->family == AF_INET6 ? 16 : 4;
	/* one's peer is the other's address: its connection, or its listening socket */
	if (x->rport && x->rport == y->lport &&
	    (!memcmp(x->raddr, y->laddr, len) || any_addr(y->laddr, y->family)) &&
	    (!y->rport || (y->rport == x->lport && !memcmp(y->raddr, x->laddr, len))))
		return true;
	return y->rport && y->rport == x->lport &&
	       (!memcmp(y->raddr, x->laddr, len) || any_addr(x->laddr, x->family)) && !x->rport;
}

/* The kind a waiting stack tells of its futex: its innermost frame of glibc's waits. */
static uint32_t kind_of_stack(const struct profile *p, uint32_t stack)
{
	static const struct {
		const char *part;
		uint32_t kind;
	} pats[] = {
		{ "__lll_lock_wait_private", WAIT_KIND_LIBC_LOCK },
		{ "__lll_lock_wait", WAIT_KIND_MUTEX },
		{ "pthread_mutex_", WAIT_KIND_MUTEX },
		{ "pthread_cond_", WAIT_KIND_CONDVAR },
		{ "pthread_rwlock_", WAIT_KIND_RWLOCK },
		{ "sem_wait", WAIT_KIND_SEMAPHORE },
		{ "sem_timedwait", WAIT_KIND_SEMAPHORE },
		{ "sem_clockwait", WAIT_KIND_SEMAPHORE },
		{ "pthread_barrier_wait", WAIT_KIND_BARRIER },
		{ "pthread_join", WAIT_KIND_JOIN },
		{ "pthread_clockjoin", WAIT_KIND_JOIN },
		{ "pthread_timedjoin", WAIT_KIND_JOIN },
	};
	const uint32_t *fr;
	uint32_t nr, i, k;

	if (stack >= p->nr_stacks)
		return WAIT_KIND_FUTEX;
	fr = profile__stack_frames(p, stack, &nr);
	for (i = nr; i-- > 0;) {
		const struct profile_frame *f = &p->frames[fr[i]];
		const char *name;

		if (f->kernel || f->label)
			continue;
		name = profile__frame_name(p, fr[i]);
		for (k = 0; k < ARRAY_SIZE(pats); k++)
			if (strstr(name, pats[k].part))
				return pats[k].kind;
	}
	return WAIT_KIND_FUTEX;
}

/* A futex's address named: the data symbol holding it, else the object, region or address. */
static void name_address(struct resolver *r, uint32_t pid, const struct offcpu_wait_raw *o,
			 char *buf, size_t cap)
{
	const struct addrspace *as = threads__maps(r->th, pid);
	uint32_t tried[16];
	size_t i, nt = 0, k;

	for (i = 0; as && i < as->nr; i++) {
		const struct vmap *vm = &as->maps[i];
		const struct mapobj *mo = threads__obj(r->th, vm->obj);
		uint64_t vaddr = 0, off = 0;
		const char *sym, *obj;

		if (mo->kind != MAPOBJ_FILE || !mo->sd)
			continue;
		for (k = 0; k < nt && tried[k] != vm->obj; k++)
			;
		if (k < nt)
			continue;
		if (nt < ARRAY_SIZE(tried))
			tried[nt++] = vm->obj;
		sym = sym_dso__data(r->sym, mo->sd, vm->start, vm->pgoff, o->addr, &vaddr, &off);
		if (!sym)
			continue;
		obj = mo->dso < r->p->nr_dsos ? strtab__get(&r->p->str, r->p->dsos[mo->dso].short_name) :
						"[unknown]";
		if (!*sym)
			snprintf(buf, cap, "%s+0x%llx", obj, (unsigned long long)vaddr);
		else if (off)
			snprintf(buf, cap, "%s+0x%llx (%s)", sym, (unsigned long long)off, obj);
		else
			snprintf(buf, cap, "%s (%s)", sym, obj);
		return;
	}
	snprintf(buf, cap, "%s0x%llx",
		 (o->flags & OFFCPU_WAIT_HEAP) ? "[heap] " : (o->flags & OFFCPU_WAIT_STACK) ? "[stack] " : "",
		 (unsigned long long)o->addr);
}

static void fmt_inet(const uint8_t *a, uint16_t port, uint16_t family, char *buf, size_t cap)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	inet_ntop(family, a, ip, sizeof(ip));
	snprintf(buf, cap, family == AF_INET6 ? "[%s]:%u" : "%s:%u", ip, port);
}

/* A socket named: protocol and addresses, or its inode. */
static void name_socket(const struct offcpu_wait_raw *o, char *buf, size_t cap)
{
	char l[64], r[64], proto[24];

	if (o->sock_family == AF_INET || o->sock_family == AF_INET6) {
		if (o->sock_protocol == IPPROTO_TCP)
			snprintf(proto, sizeof(proto), "TCP");
		else if (o->sock_protocol == IPPROTO_UDP)
			snprintf(proto, sizeof(proto), "UDP");
		else
			snprintf(proto, sizeof(proto), "IP protocol %u", o->sock_protocol);
		fmt_inet(o->sock_laddr, o->sock_lport, o->sock_family, l, sizeof(l));
		fmt_inet(o->sock_raddr, o->sock_rport, o->sock_family, r, sizeof(r));
		if (o->sock_protocol == IPPROTO_TCP && o->sock_state == TCP_LISTEN)
			snprintf(buf, cap, "%s %s (listening)", proto, l);
		else if (!o->sock_rport)
			snprintf(buf, cap, "%s %s", proto, l);
		else
			snprintf(buf, cap, "%s %s -> %s", proto, l, r);
	} else if (o->sock_family == AF_UNIX) {
		if (o->sock_peer_ino)
			snprintf(buf, cap, "unix socket:[%llu] (peer socket:[%llu])",
				 (unsigned long long)o->ino, (unsigned long long)o->sock_peer_ino);
		else
			snprintf(buf, cap, "unix socket:[%llu]", (unsigned long long)o->ino);
	} else {
		snprintf(buf, cap, "socket:[%llu] (family %u)", (unsigned long long)o->ino,
			 o->sock_family);
	}
}

/* A descriptor's object: its kind and name. */
static uint32_t name_fd(const struct offcpu_wait_obj *ob, char *buf, size_t cap)
{
	const struct offcpu_wait_raw *o = &ob->r;
	char name[3 * OFFCPU_WAIT_NAME + 1];
	uint32_t kind = WAIT_KIND_FD;

	/* other users' names: control characters replaced here, the rest escaped when shown */
	snprintf(name, sizeof(name), "%s", ob->name);
	for (char *c = name; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	switch (o->file) {
	case OFFCPU_FILE_PIPE:
		kind = WAIT_KIND_PIPE;
		snprintf(buf, cap, "pipe:[%llu]", (unsigned long long)o->ino);
		break;
	case OFFCPU_FILE_SOCKET:
		kind = WAIT_KIND_SOCKET;
		name_socket(o, buf, cap);
		break;
	case OFFCPU_FILE_REG:
	case OFFCPU_FILE_DIR:
		kind = (o->flags & OFFCPU_WAIT_FILE_LOCK) ? WAIT_KIND_FILE_LOCK : WAIT_KIND_FILE;
		snprintf(buf, cap, "%s (inode %llu, device %u:%u)", name, (unsigned long long)o->ino,
			 o->dev >> 20, o->dev & 0xfffff);
		break;
	case OFFCPU_FILE_CHR:
	case OFFCPU_FILE_BLK:
		kind = WAIT_KIND_DEVICE;
		snprintf(buf, cap, "%s (%s %u:%u)", name, o->file == OFFCPU_FILE_CHR ? "char" : "block",
			 o->dev >> 20, o->dev & 0xfffff);
		break;
	case OFFCPU_FILE_ANON:
		kind = !strcmp(name, "[eventfd]") ? WAIT_KIND_EVENTFD :
		       !strcmp(name, "[timerfd]") ? WAIT_KIND_TIMERFD :
		       !strcmp(name, "[signalfd]") ? WAIT_KIND_SIGNALFD :
		       !strcmp(name, "[eventpoll]") ? WAIT_KIND_EPOLL : WAIT_KIND_FD;
		snprintf(buf, cap, "fd %d (anon_inode:%s)", o->fd, name);
		break;
	case OFFCPU_FILE_NONE:
		if (o->fd >= 0)
			snprintf(buf, cap, "fd %d", o->fd);
		else if (o->nfds)
			snprintf(buf, cap, "%u descriptors", o->nfds);
		else
			snprintf(buf, cap, "no descriptor");
		break;
	default:
		snprintf(buf, cap, "%s (inode %llu)", name, (unsigned long long)o->ino);
		break;
	}
	if ((o->flags & OFFCPU_WAIT_EPOLL) && kind != WAIT_KIND_EPOLL)
		snprintf(buf + strlen(buf), cap - strlen(buf), " (through epoll)");
	else if (o->nfds > 1 && o->file != OFFCPU_FILE_NONE)
		snprintf(buf + strlen(buf), cap - strlen(buf), " (first of %u descriptors)", o->nfds);
	return kind;
}

/* Words at a futex shaped like a locked glibc mutex: locked, an owner, a small kind. */
static bool mutex_shaped(const struct offcpu_wait_raw *o)
{
	uint32_t lock = o->words[OFFCPU_GLIBC_MUTEX_LOCK];

	return wait__mutex_owner(o) && (lock == 1 || lock == 2) &&
	       o->words[OFFCPU_GLIBC_MUTEX_KIND] < 0x100;
}

/* ... whose owner is a thread of the process: a mutex, without symbols. */
static bool looks_like_mutex(struct resolver *r, uint32_t pid, const struct offcpu_wait_raw *o)
{
	return mutex_shaped(o) && threads__pid_of(r->th, wait__mutex_owner(o)) == pid;
}

int waitobj__resolve(struct resolver *r, uint32_t pid, uint32_t tid,
		     const struct offcpu_wait_obj *ob, struct report_sample *rs)
{
	const struct offcpu_wait_raw *o = &ob->r;
	struct profile_wait w = { .pid = pid, .syscall = o->syscall, .fd = o->fd };
	uint32_t cmd = o->futex_op & FUTEX_CMD_MASK, hint = 0, kind;
	bool pi = cmd == FUTEX_LOCK_PI || cmd == FUTEX_LOCK_PI2 || cmd == FUTEX_TRYLOCK_PI ||
		  cmd == FUTEX_WAIT_REQUEUE_PI;
	struct wait_id id;
	char name[512];

	if (o->kind == OFFCPU_WAIT_FUTEX) {
		w.kind = kind_of_stack(r->p, rs->stack);
		if (w.kind == WAIT_KIND_FUTEX && (pi || looks_like_mutex(r, pid, o)))
			w.kind = WAIT_KIND_MUTEX;
		w.addr = o->addr;
		/* named once, at its first wait (the mappings then): a symbol lookup */
		id = identity(&w);
		if (hashmap__find(&r->p->wait_idx, &id, sizeof(id)))
			name[0] = 0;
		else
			name_address(r, pid, o, name, sizeof(name));
	} else if (o->kind == OFFCPU_WAIT_FD) {
		w.kind = name_fd(ob, name, sizeof(name));
		w.ino = o->ino;
		w.dev = o->dev;
		w.family = o->sock_family;
		w.protocol = o->sock_protocol;
		w.lport = o->sock_lport;
		w.rport = o->sock_rport;
		memcpy(w.laddr, o->sock_laddr, sizeof(w.laddr));
		memcpy(w.raddr, o->sock_raddr, sizeof(w.raddr));
		w.peer_ino = o->sock_peer_ino;
	} else {
		w.kind = WAIT_KIND_NONE;
		snprintf(name, sizeof(name), "%s", waitobj__syscall_name(o->syscall, name, sizeof(name)));
	}
	w.name = strtab__add(&r->p->str, name);
	if (w.name == UINT32_MAX)
		return -ENOMEM;
	rs->wait = waitobj__intern(r->p, &w);
	if (!rs->wait)
		return -ENOMEM;
	rs->wait_flags = o->flags;
	rs->wait_end = (o->flags & OFFCPU_WAIT_AT_END) ? o->end_time : 0;
	/* the owner, from the words, of what the object is known to be by now */
	kind = r->p->waits[rs->wait - 1].kind;
	if ((kind == WAIT_KIND_MUTEX || (kind == WAIT_KIND_FUTEX && mutex_shaped(o))) &&
	    (o->flags & OFFCPU_WAIT_WORDS))
		hint = wait__mutex_owner(o) ?: (pi ? o->words[0] & FUTEX_TID_MASK : 0);
	else if (kind == WAIT_KIND_JOIN && (o->flags & OFFCPU_WAIT_WORDS))
		hint = o->words[0];
	rs->wait_owner_hint = hint;
	/* trusted only as a thread of this process the recording knows */
	if (hint && hint != tid && threads__pid_of(r->th, hint) == pid) {
		rs->wait_owner = hint;
		rs->wait_owner_comm = threads__comm(r->th, pid, hint);
		if (rs->wait_owner_comm == UINT32_MAX)
			return -ENOMEM;
	} else if (hint && hint == tid) {
		rs->wait_owner = hint; /* its own: a deadlock on itself */
		rs->wait_owner_comm = threads__comm(r->th, pid, hint);
		if (rs->wait_owner_comm == UINT32_MAX)
			return -ENOMEM;
	}
	return 0;
}
