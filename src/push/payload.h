/* SPDX-License-Identifier: GPL-2.0 */
/* One request for the backend, as push queues, spools and sends it. */
#ifndef OFFCPU_PUSH_PAYLOAD_H
#define OFFCPU_PUSH_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct payload {
	struct payload *next;
	uint64_t seq; /* its place in the spool; 0: never spooled */
	uint64_t start, end; /* the interval it covers (ns since the epoch) */
	uint32_t profiles; /* processes (or cgroups) in it */
	char *query; /* what follows '?' (Pyroscope's name, from, until); NULL: none */
	uint8_t *body;
	size_t len;
};

static inline void payload__free(struct payload *pl)
{
	if (!pl)
		return;
	free(pl->query);
	free(pl->body);
	free(pl);
}

#endif
