/* SPDX-License-Identifier: GPL-2.0 */
/*
 * waits.bpf.h - what a blocked thread waits on (struct offcpu_wait, offcpu.h):
 * the object of the system call it sleeps in, from its registers at the
 * system call's entry (the task's pt_regs, which stay as they were saved
 * while it sleeps): for futex and futex_waitv the user address, and with
 * the task current the 24 bytes there (a glibc mutex's owner); for a system
 * call on a file descriptor (read, write, recv*, send*, accept*, connect,
 * poll, select, epoll_wait, flock, fcntl's lock waits) what the descriptor
 * is, from the task's descriptor table: a pipe (its inode), a socket (family,
 * protocol, state, both addresses; a unix socket's peer), a file (name,
 * inode, device), an anonymous inode (eventfd, timerfd, signalfd, epoll).
 *
 * Taken at a recorded switch-out with --wait-objects (record_waits), and by
 * the start and end iterators for the blocks under way then (iter_waits),
 * whose user memory (not the current task's) user space reads. The object is
 * stored in the wait map under a hash of it; the block's key carries the
 * hash. Every read is bounded (a fixed number of them, no loop over user
 * data) and cannot fault: user memory through bpf_probe_read_user (of the
 * current task only), kernel memory through probe reads.
 *
 * x86-64 only (system call numbers, registers); elsewhere no object is read.
 *
 * Needs: common.bpf.h, wakers.bpf.h (hash_words()).
 */
#ifndef OFFCPU_WAITS_BPF_H
#define OFFCPU_WAITS_BPF_H

#include <bpf/bpf_endian.h>
#include "common.bpf.h"
#include "wakers.bpf.h"

/* --wait-objects: every recorded block's wait object, at its switch-out */
const volatile bool record_waits = false;
/* the iterators note the wait objects of the blocks under way at the start and the end */
const volatile bool iter_waits = false;

/* Wait objects by a hash of them; the blocks' keys carry the hash. Sized like
 * the stack maps when used; user space reads and prunes it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct offcpu_wait);
	__uint(max_entries, 1);
} waits SEC(".maps");

/* The counters of this part (enum offcpu_wait_counter), per cpu. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, OFFCPU_WAIT_CNT_NR);
} wait_counters SEC(".maps");

/*
 * Where an object is built, and the kernel structures it is read from: slot
 * 0 for the switch program, 1 for the iterators, which can be preempted on
 * their CPU, and the switch that preempts them may build an object too.
 */
#define WAIT_BUF 512
struct wait_scratch {
	struct offcpu_wait w;
	__u8 buf[WAIT_BUF]; /* a copy of the structure being read */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct wait_scratch);
	__uint(max_entries, 2);
} wait_scratch SEC(".maps");

static __always_inline void wait_count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&wait_counters, &idx);

	if (v)
		__sync_fetch_and_add(v, 1);
}

#ifdef __TARGET_ARCH_x86

/* x86-64 system call numbers */
#define NR_read 0
#define NR_write 1
#define NR_poll 7
#define NR_pread64 17
#define NR_pwrite64 18
#define NR_readv 19
#define NR_writev 20
#define NR_select 23
#define NR_connect 42
#define NR_accept 43
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_fcntl 72
#define NR_flock 73
#define NR_fsync 74
#define NR_fdatasync 75
#define NR_futex 202
#define NR_epoll_wait 232
#define NR_pselect6 270
#define NR_ppoll 271
#define NR_splice 275
#define NR_epoll_pwait 281
#define NR_accept4 288
#define NR_preadv 295
#define NR_pwritev 296
#define NR_recvmmsg 299
#define NR_sendmmsg 307
#define NR_preadv2 327
#define NR_pwritev2 328
#define NR_epoll_pwait2 441
#define NR_futex_waitv 449

#define F_SETLKW 7
#define F_OFD_SETLKW 38

#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFREG 0100000
#define S_IFBLK 0060000
#define S_IFDIR 0040000
#define S_IFCHR 0020000
#define S_IFIFO 0010000

#define WAIT_AF_UNIX 1
#define WAIT_AF_INET 2
#define WAIT_AF_INET6 10

/* The first descriptor of a select() set: the lowest bit of its first 64, or -1. */
static __always_inline int first_fd(__u64 set)
{
	int n = 0;

	if (!set)
		return -1;
	if (!(set & 0xffffffffULL)) { n += 32; set >>= 32; }
	if (!(set & 0xffffULL)) { n += 16; set >>= 16; }
	if (!(set & 0xffULL)) { n += 8; set >>= 8; }
	if (!(set & 0xfULL)) { n += 4; set >>= 4; }
	if (!(set & 0x3ULL)) { n += 2; set >>= 2; }
	if (!(set & 0x1ULL))
		n += 1;
	return n;
}

/* @size bytes of the kernel object at @p into @buf (a scratch area of WAIT_BUF). */
static __always_inline bool copy_in(__u8 *buf, const void *p, __u32 size)
{
	if (!p)
		return false;
	if (size > WAIT_BUF)
		size = WAIT_BUF;
	return bpf_probe_read_kernel(buf, size, p) == 0;
}

/* A field at CO-RE offset @off of the copy in @buf (0 when beyond it). */
#define AT(buf, off, type) ((off) + sizeof(type) <= WAIT_BUF ? *(type *)((buf) + (off)) : 0)

/* A socket: family, type, protocol, state, addresses, a unix socket's peer. */
static __always_inline void describe_socket(struct offcpu_wait *w, __u8 *buf, struct socket *sock)
{
	struct sock *sk = BPF_CORE_READ(sock, sk);
	struct sock *peer;
	__u32 off;

	if (!sk || !copy_in(buf, sk, bpf_core_type_size(struct sock_common)))
		return;
	w->sock_family = AT(buf, bpf_core_field_offset(struct sock_common, skc_family), __u16);
	w->sock_state = AT(buf, bpf_core_field_offset(struct sock_common, skc_state), __u8);
	w->sock_lport = AT(buf, bpf_core_field_offset(struct sock_common, skc_num), __u16);
	w->sock_rport = bpf_ntohs(AT(buf, bpf_core_field_offset(struct sock_common, skc_dport), __u16));
	if (w->sock_family == WAIT_AF_INET) {
		*(__u32 *)w->sock_laddr =
			AT(buf, bpf_core_field_offset(struct sock_common, skc_rcv_saddr), __u32);
		*(__u32 *)w->sock_raddr =
			AT(buf, bpf_core_field_offset(struct sock_common, skc_daddr), __u32);
	} else if (w->sock_family == WAIT_AF_INET6) {
		off = bpf_core_field_offset(struct sock_common, skc_v6_rcv_saddr);
		if (off + 16 <= WAIT_BUF)
			__builtin_memcpy(w->sock_laddr, buf + off, 16);
		off = bpf_core_field_offset(struct sock_common, skc_v6_daddr);
		if (off + 16 <= WAIT_BUF)
			__builtin_memcpy(w->sock_raddr, buf + off, 16);
	}
	/* two adjacent u16 (5.6+): one read */
	off = bpf_core_field_offset(struct sock, sk_type);
	if (bpf_core_field_offset(struct sock, sk_protocol) == off + 2 &&
	    !bpf_probe_read_kernel(&w->sock_type, 4, (void *)sk + off)) {
		/* sock_type and sock_protocol are adjacent in struct offcpu_wait too */
	} else {
		w->sock_type = BPF_CORE_READ(sk, sk_type);
		w->sock_protocol = BPF_CORE_READ(sk, sk_protocol);
	}
	if (w->sock_family == WAIT_AF_UNIX) {
		peer = BPF_CORE_READ((struct unix_sock *)sk, peer);
		if (peer)
			w->sock_peer_ino = BPF_CORE_READ(peer, sk_socket, file, f_inode, i_ino);
	}
}

/* What the open file @f is: its inode's kind, number and device, and more by kind. */
static __always_inline void describe_file(struct offcpu_wait *w, __u8 *buf, struct file *f)
{
	struct inode *inode;
	struct dentry *dentry;
	void *priv;
	const unsigned char *name;
	__u32 fmt;

	struct super_block *sb;

	/* each structure copied once: a probe read costs a helper call */
	if (!copy_in(buf, f, bpf_core_type_size(struct file)))
		return;
	inode = (struct inode *)AT(buf, bpf_core_field_offset(struct file, f_inode), __u64);
	priv = (void *)AT(buf, bpf_core_field_offset(struct file, private_data), __u64);
	dentry = (struct dentry *)AT(buf, bpf_core_field_offset(struct file, f_path.dentry), __u64);
	if (!inode || !copy_in(buf, inode, bpf_core_field_offset(struct inode, i_ino) + 8))
		return;
	w->mode = AT(buf, bpf_core_field_offset(struct inode, i_mode), __u16);
	w->ino = AT(buf, bpf_core_field_offset(struct inode, i_ino), __u64);
	sb = (struct super_block *)AT(buf, bpf_core_field_offset(struct inode, i_sb), __u64);
	w->dev = sb ? BPF_CORE_READ(sb, s_dev) : 0;
	fmt = w->mode & S_IFMT;
	switch (fmt) {
	case S_IFIFO: w->file = OFFCPU_FILE_PIPE; break;
	case S_IFSOCK: w->file = OFFCPU_FILE_SOCKET; break;
	case S_IFREG: w->file = OFFCPU_FILE_REG; break;
	case S_IFCHR: w->file = OFFCPU_FILE_CHR; break;
	case S_IFBLK: w->file = OFFCPU_FILE_BLK; break;
	case S_IFDIR: w->file = OFFCPU_FILE_DIR; break;
	case 0: w->file = OFFCPU_FILE_ANON; break; /* anon_inode's mode has no type */
	default: w->file = OFFCPU_FILE_OTHER; break;
	}
	if (w->file == OFFCPU_FILE_SOCKET) {
		if (priv)
			describe_socket(w, buf, priv);
		return;
	}
	if (w->file == OFFCPU_FILE_PIPE || !dentry)
		return;
	name = BPF_CORE_READ(dentry, d_name.name);
	if (name)
		bpf_probe_read_kernel_str(w->name, sizeof(w->name), name);
}

/* The open file at descriptor @fd of @task, or NULL: typed loads to its
 * table (no helper call), one read of its slot. */
static __always_inline struct file *fd_file(struct task_struct *task, int fd)
{
	struct files_struct *files = task->files;
	struct fdtable *fdt;
	struct file **arr, *f = NULL;

	if (!files || fd < 0)
		return NULL;
	fdt = files->fdt;
	if (!fdt || (__u32)fd >= fdt->max_fds)
		return NULL;
	arr = fdt->fd;
	if (!arr || bpf_probe_read_kernel(&f, sizeof(f), arr + (__u32)fd))
		return NULL;
	return f;
}

/* epoll_wait on @f: the one file it watches (its descriptor in *@fd), else @f itself. */
static __always_inline struct file *epoll_target(struct file *f, int *fd)
{
	struct eventpoll *ep = BPF_CORE_READ(f, private_data);
	struct rb_node *n;
	struct epitem *epi;

	if (!ep || !bpf_core_type_exists(struct epitem))
		return f;
	n = BPF_CORE_READ(ep, rbr.rb_leftmost);
	/* the leftmost node, with no parent and no children: the only one */
	if (!n || BPF_CORE_READ(n, __rb_parent_color) > 3 || BPF_CORE_READ(n, rb_left) ||
	    BPF_CORE_READ(n, rb_right))
		return f;
	epi = (void *)n - bpf_core_field_offset(struct epitem, rbn);
	*fd = BPF_CORE_READ(epi, ffd.fd);
	return BPF_CORE_READ(epi, ffd.file) ?: f;
}

/*
 * The wait object of @task, blocked now, stored: its key in the wait map, or
 * 0 (not in a system call offcpu describes, or the map is full). @current:
 * @task is the current task, whose user memory can be read. @flags:
 * OFFCPU_WAIT_AT_START or AT_END for the iterators; with AT_END every user
 * task gets one, of kind NONE when nothing is described (its system call
 * number, ~0 when in none). @t: its state (the stack mapping the walk saw).
 */
static __always_inline __u64 wait_object(struct task_struct *task, const struct offcpu_task *t,
					 bool current, __u32 flags)
{
	struct wait_scratch *sc;
	struct offcpu_wait *w;
	struct pt_regs *regs;
	struct file *f = NULL;
	struct mm_struct *mm;
	__u32 slot = current ? 0 : 1;
	__u64 nr, h, set = 0;
	int fd = -1;

	wait_count(OFFCPU_WAIT_CNT_SEEN);
	mm = task->mm;
	if (!mm || (task->flags & (PF_KTHREAD | PF_IO_WORKER | PF_USER_WORKER)))
		return 0;
	sc = bpf_map_lookup_elem(&wait_scratch, &slot);
	if (!sc)
		return 0;
	w = &sc->w;
	__builtin_memset(w, 0, sizeof(*w));
	w->flags = flags;
	w->fd = -1;
	w->tgid = task->tgid;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	/* a 64-bit task that entered the kernel by the syscall instruction, which
	 * saved its ip in cx and its flags in r11 (an exception leaves the user's
	 * own cx: a page fault's error code in orig_ax is no system call) */
	if (!regs || regs->cs != USER64_CS || regs->cx != regs->ip || regs->r11 != regs->flags) {
		if (!(flags & OFFCPU_WAIT_AT_END))
			return 0;
		w->syscall = ~0u;
		goto store;
	}
	nr = regs->orig_ax;
	w->syscall = (__u32)nr;
	switch (nr) {
	case NR_futex:
		w->kind = OFFCPU_WAIT_FUTEX;
		w->addr = regs->di;
		w->futex_op = (__u32)regs->si;
		break;
	case NR_futex_waitv:
		w->kind = OFFCPU_WAIT_FUTEX;
		w->futex_op = (__u32)regs->si;
		/* struct futex_waitv { u64 val; u64 uaddr; u32 flags; u32 pad; }[] */
		if (current && bpf_probe_read_user(&w->addr, sizeof(w->addr), (void *)(regs->di + 8)))
			w->addr = 0;
		break;
	case NR_fcntl:
		if (regs->si != F_SETLKW && regs->si != F_OFD_SETLKW) {
			if (!(flags & OFFCPU_WAIT_AT_END))
				return 0;
			goto store;
		}
		w->flags |= OFFCPU_WAIT_FILE_LOCK;
		fd = (int)regs->di;
		break;
	case NR_flock:
		w->flags |= OFFCPU_WAIT_FILE_LOCK;
		fd = (int)regs->di;
		break;
	case NR_read: case NR_write: case NR_pread64: case NR_pwrite64: case NR_readv:
	case NR_writev: case NR_connect: case NR_accept: case NR_sendto: case NR_recvfrom:
	case NR_sendmsg: case NR_recvmsg: case NR_fsync: case NR_fdatasync: case NR_splice:
	case NR_accept4: case NR_preadv: case NR_pwritev: case NR_recvmmsg: case NR_sendmmsg:
	case NR_preadv2: case NR_pwritev2:
		fd = (int)regs->di;
		break;
	case NR_epoll_wait: case NR_epoll_pwait: case NR_epoll_pwait2:
		w->flags |= OFFCPU_WAIT_EPOLL;
		fd = (int)regs->di;
		break;
	case NR_poll: case NR_ppoll:
		/* struct pollfd { int fd; short events, revents; }[nfds] */
		w->nfds = (__u32)regs->si;
		if (current && w->nfds && bpf_probe_read_user(&fd, sizeof(fd), (void *)regs->di))
			fd = -1;
		break;
	case NR_select: case NR_pselect6:
		w->nfds = (__u32)regs->di;
		/* the first descriptor among the first 64 of the read set, else the write set */
		if (current && regs->si && bpf_probe_read_user(&set, sizeof(set), (void *)regs->si))
			set = 0;
		if (current && !set && regs->dx &&
		    bpf_probe_read_user(&set, sizeof(set), (void *)regs->dx))
			set = 0;
		fd = first_fd(set);
		break;
	default:
		if (!(flags & OFFCPU_WAIT_AT_END))
			return 0;
		goto store;
	}
	if (w->kind == OFFCPU_WAIT_FUTEX) {
		if (w->addr && current) {
			if (bpf_probe_read_user(w->words, sizeof(w->words), (void *)w->addr))
				wait_count(OFFCPU_WAIT_CNT_FAULT);
			else
				w->flags |= OFFCPU_WAIT_WORDS;
		}
		if (w->addr >= mm->start_brk && w->addr < mm->brk)
			w->flags |= OFFCPU_WAIT_HEAP;
		else if (t && w->addr >= t->stack_lo && w->addr < t->stack_hi)
			w->flags |= OFFCPU_WAIT_STACK;
	} else {
		w->kind = OFFCPU_WAIT_FD;
		w->fd = fd;
		f = fd_file(task, fd);
		if (f && (w->flags & OFFCPU_WAIT_EPOLL))
			f = epoll_target(f, &w->fd);
		if (f)
			describe_file(w, sc->buf, f);
	}
	wait_count(OFFCPU_WAIT_CNT_FOUND);
store:
	h = hash_words((const __u64 *)w, sizeof(*w) / 8, 0x77616974);
	if (bpf_map_lookup_elem(&waits, &h))
		return h;
	if (bpf_map_update_elem(&waits, &h, w, BPF_NOEXIST) && !bpf_map_lookup_elem(&waits, &h)) {
		wait_count(OFFCPU_WAIT_CNT_FULL);
		return 0;
	}
	return h;
}

#else
static __always_inline __u64 wait_object(struct task_struct *task, const struct offcpu_task *t,
					 bool current, __u32 flags)
{
	return 0;
}
#endif

#endif /* OFFCPU_WAITS_BPF_H */
