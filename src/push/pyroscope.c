// SPDX-License-Identifier: GPL-2.0
/* An interval as Pyroscope ingest requests (pyroscope.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pyroscope.h"
#include "../perfdata/format.h"
#include "../util/util.h"

struct keep_arg {
	struct hashmap *series_of_pid;
	uint64_t series;
};

static bool keep_row(const struct profile_row *r, void *arg)
{
	const struct keep_arg *k = arg;
	uint64_t pid = r->pid;
	const uint64_t *v = hashmap__find(k->series_of_pid, &pid, sizeof(pid));

	return v && *v == k->series;
}

/* Append ",key=value" (or "key=value" first) to @out of @cap, key's dots made '_'. */
static void label(char *out, size_t cap, const char *key, const char *val)
{
	size_t n = strlen(out), i;
	char v[257];

	if (n + 2 >= cap)
		return;
	if (out[n - 1] != '{')
		out[n++] = ',';
	for (i = 0; key[i] && n + 1 < cap; i++)
		out[n++] = key[i] == '.' ? '_' : key[i];
	out[n] = 0;
	push_label_value(val, v, sizeof(v));
	snprintf(out + n, cap - n, "=%s", v);
}

/* The series of group @g: "APP{k=v,...}". */
static void series_name(const struct interval *iv, const struct ivl_group *g,
			const struct push_meta *pm, char *out, size_t cap)
{
	const struct profile *p = &iv->p;
	const char *cg = g->cgroup ? interval__cgroup_path(iv, g->cgroup) : NULL;
	const char *exe = g->exe < p->nr_dsos ? strtab__get(&p->str, p->dsos[g->exe].short_name) :
						strtab__get(&p->str, g->comm);
	struct cgroup_meta m;
	char app[160];
	size_t i;

	cgroup_meta(cg ? cg : "", &m);
	if (m.service[0])
		push_label_value(m.service, app, sizeof(app));
	else if (iv->by == PUSH_BY_PROCESS)
		push_label_value(exe, app, sizeof(app));
	else
		push_label_value(cg && strrchr(cg, '/') && strrchr(cg, '/')[1] ?
				 strrchr(cg, '/') + 1 : "cgroup", app, sizeof(app));
	snprintf(out, cap, "%s{", app);
#define BUILTIN(k) (!push_meta__user_key(pm, k))
	if (BUILTIN("host.name"))
		label(out, cap, "host.name", pm->host);
	if (iv->by == PUSH_BY_PROCESS && BUILTIN("process.executable.name"))
		label(out, cap, "process.executable.name", exe);
	if (m.container[0] && BUILTIN("container.id"))
		label(out, cap, "container.id", m.container);
	if (m.pod[0] && BUILTIN("k8s.pod.uid"))
		label(out, cap, "k8s.pod.uid", m.pod);
#undef BUILTIN
	for (i = 0; i < pm->o->nr_labels; i++)
		label(out, cap, pm->o->label_keys[i], pm->o->label_values[i]);
	i = strlen(out);
	if (i + 1 < cap)
		snprintf(out + i, cap - i, "}");
}

/* @s %-encoded (all but RFC 3986's unreserved) into a malloc'ed string. */
static char *url_encode(const char *s)
{
	char *out = malloc(strlen(s) * 3 + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-._~", c))
			*o++ = (char)c;
		else
			o += sprintf(o, "%%%02X", c);
	}
	*o = 0;
	return out;
}

static int event_named(const struct profile *p, const char *name)
{
	uint32_t i;

	for (i = 0; i < p->nr_events; i++)
		if (!strcmp(strtab__get(&p->str, p->events[i].name), name))
			return (int)i;
	return -1;
}

int pyroscope__requests(const struct interval *iv, const struct push_meta *pm,
			int (*emit)(void *arg, char *query, struct pb *body, uint32_t groups),
			void *arg)
{
	struct hashmap series_idx = { 0 }, series_of_pid = { 0 };
	uint64_t *series_of_group = calloc(iv->nr_groups + 1, sizeof(*series_of_group));
	char **names = calloc(iv->nr_groups + 1, sizeof(*names));
	uint32_t *members = calloc(iv->nr_groups + 1, sizeof(*members));
	uint64_t nr_series = 0, s;
	int ev = event_named(&iv->p, OFFCPU_EVENT_NAME), err = 0;
	/* the blocks under way at the start are off-CPU time of the interval too */
	int before = event_named(&iv->p, OFFCPU_BEFORE_EVENT_NAME);
	uint32_t i;

	if (!series_of_group || !names || !members) {
		err = -ENOMEM;
		goto out;
	}
	if (ev < 0)
		goto out; /* nothing off-CPU in it */
	for (i = 0; i < iv->nr_groups && !err; i++) {
		char name[2048];
		int created;
		uint64_t *v;

		series_name(iv, &iv->groups[i], pm, name, sizeof(name));
		v = hashmap__upsert(&series_idx, name, strlen(name), &created);
		if (!v) {
			err = -ENOMEM;
			break;
		}
		if (created) {
			names[nr_series] = strdup(name);
			if (!names[nr_series])
				err = -ENOMEM;
			*v = nr_series++;
		}
		series_of_group[i] = *v;
		members[*v]++;
	}
	/* each row's process to its series (by cgroup: the cgroup it was in) */
	for (i = 0; i < iv->nr_rows && !err; i++) {
		uint64_t pid = iv->rows[i].pid;
		int created;
		uint64_t *v = hashmap__upsert(&series_of_pid, &pid, sizeof(pid), &created);

		if (!v)
			err = -ENOMEM;
		else
			*v = series_of_group[iv->rows[i].group];
	}
	for (s = 0; s < nr_series && !err; s++) {
		struct keep_arg k = { &series_of_pid, s };
		struct pprof_opts o = {
			.event = ev, .with_event = before + 1, .keep = keep_row, .arg = &k,
			.thread = "thread_name", .state = "linux_sched_state",
			.waker = "linux_sched_waker_thread_name", .waker_name_only = true,
			.waker_function = "linux_sched_waker_function",
		};
		struct pb body = { 0 };
		char *enc = url_encode(names[s]), *query = NULL;

		err = enc ? pprof__encode(&iv->p, &o, &body) : -ENOMEM;
		if (!err && asprintf(&query, "name=%s&from=%llu&until=%llu&format=pprof", enc,
				     (unsigned long long)(iv->start / 1000000000ULL),
				     (unsigned long long)((iv->end + 999999999ULL) / 1000000000ULL)) < 0) {
			query = NULL;
			err = -ENOMEM;
		}
		free(enc);
		if (!err)
			err = emit(arg, query, &body, members[s]);
		else {
			free(query);
			free(body.d);
		}
	}
out:
	for (s = 0; names && s < nr_series; s++)
		free(names[s]);
	free(names);
	free(members);
	free(series_of_group);
	hashmap__free(&series_idx);
	hashmap__free(&series_of_pid);
	return err;
}
