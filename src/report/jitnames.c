// SPDX-License-Identifier: GPL-2.0
/* JIT frames named whatever the time of their names (jitnames.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "jitnames.h"
#include "../offcpu.h"
#include "../util/objread.h"
#include "../util/pmtext.h"
#include "../util/util.h"

void jitnames__init(struct jitnames *j)
{
	memset(j, 0, sizeof(*j));
}

void jitnames__free(struct jitnames *j)
{
	hashmap__free(&j->of_frame);
	intset__free(&j->tried);
	free(j->notes);
	memset(j, 0, sizeof(*j));
}

int jitnames__note(struct jitnames *j, uint32_t frame, uint32_t pid, uint64_t addr)
{
	int created;
	uint64_t *v = hashmap__upsert(&j->of_frame, &frame, sizeof(frame), &created);

	if (!v)
		return -ENOMEM;
	if (!created) {
		struct jitname_note *n = &j->notes[*v - 1];

		if (n->pid != pid)
			n->pid = UINT32_MAX; /* two processes: none's name is sure */
		return 0;
	}
	if (grow_array((void **)&j->notes, &j->cap, j->nr + 1, sizeof(*j->notes))) {
		hashmap__remove(&j->of_frame, &frame, sizeof(frame));
		return -ENOMEM;
	}
	j->notes[j->nr] = (struct jitname_note){ frame, pid, addr };
	*v = ++j->nr;
	return 0;
}

/* Why a map was not read, for the message; 0: there is none. */
static const char *refused(int err, const struct stat *st)
{
	static char why[96];

	if (err == -ENOENT || err == -ENOTDIR)
		return NULL;
	if (err == -ELOOP)
		return "a symbolic link, not followed";
	if (err == -EINVAL)
		return "not a regular file";
	if (err == -EPERM) {
		snprintf(why, sizeof(why), "owned by uid %u, neither you nor root", (unsigned)st->st_uid);
		return why;
	}
	return objread_why(err);
}

/* Process @pid's map, read now into @th's named code. 0, or -ENOMEM. */
static int read_map(struct jitnames *j, struct threads *th, uint32_t pid)
{
	char path[64], name[PMTEXT_LINE_MAX + 16];
	struct pmtext b = { 0 };
	uint64_t off = 0, entries = 0;
	struct stat st = { 0 };
	const char *why;
	int fd, err = 0;
	size_t i;

	snprintf(path, sizeof(path), "/tmp/perf-%u.map", pid);
	fd = objread_open_flags(path, &st, OBJREAD_NO_LINKS);
	/* perf's rule: a map of the user who reads it, or of root */
	if (fd >= 0 && st.st_uid != geteuid() && st.st_uid != 0) {
		close(fd);
		fd = -EPERM;
	}
	if (fd < 0) {
		why = refused(fd, &st);
		if (why && !j->maps_refused++) {
			j->first_refused = pid;
			j->refused_why = why;
		}
		return 0;
	}
	while (!err && off < JITNAMES_MAP_MAX && entries < JITNAMES_ENTRIES_MAX) {
		pmtext__read(fd, off, JITNAMES_MAP_MAX, 4u << 20, &b, NULL);
		for (i = 0; i < b.nr && !err && entries < JITNAMES_ENTRIES_MAX; i++, entries++) {
			snprintf(name, sizeof(name), OFFCPU_NAMED_JIT "%s", b.names + b.e[i].name);
			err = threads__add_named(th, pid, b.e[i].start, b.e[i].size, name);
		}
		if (!b.consumed || b.over)
			break;
		off += b.consumed;
		pmtext__free(&b);
	}
	pmtext__free(&b);
	close(fd);
	if (entries && !j->maps_read++)
		j->first_read = pid;
	return err == -ENOMEM ? -ENOMEM : 0;
}

int jitnames__finish(struct jitnames *j, struct threads *th, struct profile *p)
{
	size_t i;
	int err;

	for (i = 0; i < j->nr; i++) {
		struct jitname_note *n = &j->notes[i];
		const struct rangeset *named;
		const struct mapobj *m;
		struct profile_frame *f;
		uint32_t obj;

		if (n->pid == UINT32_MAX || n->frame >= p->nr_frames)
			continue;
		named = threads__named(th, n->pid);
		if ((!named || !rangeset__find(named, n->addr, &obj)) &&
		    !threads__has_jit(th, n->pid) && intset__add(&j->tried, (int)n->pid) > 0) {
			err = read_map(j, th, n->pid);
			if (err)
				return err;
			named = threads__named(th, n->pid);
		}
		if (!named || !rangeset__find(named, n->addr, &obj))
			continue;
		m = threads__obj(th, obj);
		f = &p->frames[n->frame];
		f->sym = m->name;
		f->dso = m->dso;
		f->file = m->file;
		f->line = m->line;
		f->addr = n->addr;
		if (p->dsos[m->dso].max_addr < n->addr)
			p->dsos[m->dso].max_addr = n->addr;
		j->named++;
	}
	if (j->maps_read)
		pr_warn("JIT frames of %u process%s named from /tmp/perf-PID.map read now, not from "
			"the recording (the first: /tmp/perf-%u.map; a map read now may have changed "
			"since, or be another process's)", j->maps_read, j->maps_read == 1 ? "" : "es",
			j->first_read);
	if (j->maps_refused)
		pr_warn("the perf maps of %u process%s not read (the first, /tmp/perf-%u.map: %s)",
			j->maps_refused, j->maps_refused == 1 ? "" : "es", j->first_refused,
			j->refused_why);
	return 0;
}
