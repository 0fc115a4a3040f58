// SPDX-License-Identifier: GPL-2.0
/* The offcpu-waker payload: see wakers.h. */
#include <errno.h>
#include <string.h>
#include "wakers.h"

int waker__encode(const struct offcpu_waker *w, const uint64_t *ips, uint64_t nr_ips, void *buf,
		  size_t cap)
{
	struct offcpu_waker_raw h = { 0 };
	size_t len = sizeof(h) + nr_ips * 8, i;

	len += (8 - (4 + len) % 8) % 8;
	if (len > cap || len > 0xfff0)
		return -ENOSPC;
	h.magic = OFFCPU_WAKER_MAGIC;
	h.version = OFFCPU_WAKER_VERSION;
	h.size = sizeof(h);
	h.wakee_pid = w->wakee_pid;
	h.wakee_tid = w->wakee_tid;
	h.state = w->state;
	h.kind = w->kind;
	h.nr_chain = w->nr_chain > OFFCPU_CHAIN_MAX ? OFFCPU_CHAIN_MAX : w->nr_chain;
	h.nr_wakee_ips = (uint32_t)nr_ips;
	for (i = 0; i < h.nr_chain; i++)
		strncpy(h.chain[i], w->chain[i], OFFCPU_COMM_LEN);
	memset(buf, 0, len);
	memcpy(buf, &h, sizeof(h));
	if (nr_ips)
		memcpy((char *)buf + sizeof(h), ips, nr_ips * 8);
	return (int)len;
}

int waker__parse(const void *raw, size_t size, struct offcpu_waker *w)
{
	struct offcpu_waker_raw h;
	uint32_t i;

	if (size < sizeof(h))
		return -EINVAL;
	memcpy(&h, raw, sizeof(h));
	if (h.magic != OFFCPU_WAKER_MAGIC || h.size < sizeof(h) || h.size > size ||
	    h.nr_chain < 1 || h.nr_chain > OFFCPU_CHAIN_MAX ||
	    h.nr_wakee_ips > (size - h.size) / 8)
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	w->wakee_pid = h.wakee_pid;
	w->wakee_tid = h.wakee_tid;
	w->state = h.state;
	w->kind = h.kind;
	w->nr_chain = h.nr_chain;
	for (i = 0; i < h.nr_chain; i++)
		memcpy(w->chain[i], h.chain[i], OFFCPU_COMM_LEN);
	w->nr_wakee_ips = h.nr_wakee_ips;
	w->wakee_ips = (const char *)raw + h.size;
	return 0;
}

uint64_t waker__ip(const struct offcpu_waker *w, uint64_t i)
{
	uint64_t ip;

	memcpy(&ip, (const char *)w->wakee_ips + i * 8, 8);
	return ip;
}

const char *offcpu_state__name(uint32_t state)
{
	static const char *const names[OFFCPU_STATES_ALL] = { "preempted", "S", "D", "T", "I",
							       "runqueue" };

	return state < OFFCPU_STATES_ALL ? names[state] : "?";
}
