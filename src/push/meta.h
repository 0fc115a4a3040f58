/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a profile says of where it comes from, besides its samples: the host,
 * the service (the systemd unit of its cgroup), the container and
 * Kubernetes pod (from the cgroup's path, as systemd, Docker, containerd,
 * CRI-O and podman name them), and the labels of --push-label. Pure: the
 * unit tests call it.
 */
#ifndef OFFCPU_PUSH_META_H
#define OFFCPU_PUSH_META_H

#include <stdbool.h>
#include <stddef.h>
#include "config.h"

/* What every profile of a recording carries. */
struct push_meta {
	char host[256]; /* host.name */
	const struct push_opts *o; /* its labels */
};

/* What a cgroup's path says; "" where it says nothing. */
struct cgroup_meta {
	char service[128]; /* the innermost systemd service, without ".service" */
	char container[65]; /* a container's 64 hex digits */
	char pod[37]; /* a Kubernetes pod's uid, 8-4-4-4-12 */
};

void cgroup_meta(const char *path, struct cgroup_meta *m);

/* Whether --push-label gave @key (it then replaces offcpu's own of that name). */
bool push_meta__user_key(const struct push_meta *pm, const char *key);

#endif
