// SPDX-License-Identifier: GPL-2.0
/* Where a profile comes from: service, container and pod from a cgroup's path (meta.h). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "meta.h"

static bool hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* A run of exactly 64 hex digits in @c (@n bytes): a container's id. */
static const char *container_in(const char *c, size_t n)
{
	size_t i = 0, run;

	while (i < n) {
		for (run = 0; i + run < n && hex(c[i + run]); run++)
			;
		if (run == 64)
			return c + i;
		i += run ? run : 1;
	}
	return NULL;
}

/*
 * "pod" and a uid (8-4-4-4-12 hex digits, '-' or, under systemd's cgroup
 * driver, '_' between): kubepods-burstable-pod<uid>.slice, pod<uid>.
 */
static bool pod_in(const char *c, size_t n, char out[37])
{
	static const int groups[] = { 8, 4, 4, 4, 12 };
	const char *p, *end = c + n;

	for (p = c; (p = memmem(p, (size_t)(end - p), "pod", 3)); p += 3) {
		const char *q = p + 3;
		size_t g, k, at = 0;

		for (g = 0; g < 5; g++) {
			for (k = 0; k < (size_t)groups[g] && q < end && hex(*q); k++)
				out[at++] = *q++;
			if (k != (size_t)groups[g])
				break;
			if (g < 4) {
				if (q >= end || (*q != '-' && *q != '_'))
					break;
				out[at++] = '-';
				q++;
			}
		}
		if (g == 5 && (q == end || !hex(*q))) {
			out[at] = 0;
			return true;
		}
	}
	return false;
}

void cgroup_meta(const char *path, struct cgroup_meta *m)
{
	const char *end = path + strlen(path), *c;

	memset(m, 0, sizeof(*m));
	/* from the innermost component out: the nearest says the most */
	while (end > path) {
		size_t n;
		const char *id;

		for (c = end; c > path && c[-1] != '/'; c--)
			;
		n = (size_t)(end - c);
		if (!m->service[0] && n > 8 && n - 8 < sizeof(m->service) &&
		    !memcmp(end - 8, ".service", 8))
			snprintf(m->service, sizeof(m->service), "%.*s", (int)(n - 8), c);
		if (!m->container[0] && (id = container_in(c, n)))
			snprintf(m->container, sizeof(m->container), "%.64s", id);
		if (!m->pod[0])
			pod_in(c, n, m->pod);
		end = c > path ? c - 1 : path;
	}
	/* the service that runs containers is not theirs */
	if (m->container[0] && !strcmp(m->service, "docker"))
		m->service[0] = 0;
}

bool push_meta__user_key(const struct push_meta *pm, const char *key)
{
	size_t i;

	for (i = 0; i < pm->o->nr_labels; i++)
		if (!strcmp(pm->o->label_keys[i], key))
			return true;
	return false;
}
