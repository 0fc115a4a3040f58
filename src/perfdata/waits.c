// SPDX-License-Identifier: GPL-2.0
/* The offcpu-wait payload: see waits.h. */
#include <errno.h>
#include <string.h>
#include "waits.h"

int wait__encode(const struct offcpu_wait *w, uint32_t pid, uint32_t tid, uint64_t end_time,
		 void *buf, size_t cap)
{
	struct offcpu_wait_raw h = { 0 };
	size_t len = sizeof(h);

	len += (8 - (4 + len) % 8) % 8;
	if (len > cap)
		return -ENOSPC;
	h.magic = OFFCPU_WAIT_MAGIC;
	h.version = OFFCPU_WAIT_VERSION;
	h.size = sizeof(h);
	h.pid = pid;
	h.tid = tid;
	h.kind = w->kind;
	h.flags = w->flags;
	h.syscall = w->syscall;
	h.futex_op = w->futex_op;
	h.addr = w->addr;
	memcpy(h.words, w->words, sizeof(h.words));
	h.fd = w->fd;
	h.nfds = w->nfds;
	h.file = w->file;
	h.mode = w->mode;
	h.dev = w->dev;
	h.ino = w->ino;
	h.sock_family = w->sock_family;
	h.sock_type = w->sock_type;
	h.sock_protocol = w->sock_protocol;
	h.sock_state = w->sock_state;
	h.sock_lport = w->sock_lport;
	h.sock_rport = w->sock_rport;
	memcpy(h.sock_laddr, w->sock_laddr, sizeof(h.sock_laddr));
	memcpy(h.sock_raddr, w->sock_raddr, sizeof(h.sock_raddr));
	h.sock_peer_ino = w->sock_peer_ino;
	memcpy(h.name, w->name, sizeof(h.name));
	h.end_time = end_time;
	memset(buf, 0, len);
	memcpy(buf, &h, sizeof(h));
	return (int)len;
}

int wait__parse(const void *raw, size_t size, struct offcpu_wait_obj *o)
{
	memset(o, 0, sizeof(*o));
	if (size < sizeof(o->r))
		return -EINVAL;
	memcpy(&o->r, raw, sizeof(o->r));
	if (o->r.magic != OFFCPU_WAIT_MAGIC || o->r.size < sizeof(o->r) || o->r.size > size ||
	    o->r.kind > OFFCPU_WAIT_FD)
		return -EINVAL;
	memcpy(o->name, o->r.name, sizeof(o->r.name));
	o->name[OFFCPU_WAIT_NAME] = 0;
	return 0;
}
