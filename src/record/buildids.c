// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdio.h>
#include <sys/mman.h>
#include "buildids.h"
#include "synth.h"
#include "../perfdata/writer.h"
#include "../util/hashmap.h"
#include "../util/procmaps.h"
#include "../util/util.h"
#include "../util/elf.h"

struct file {
	char *name;
	int marked;
};

struct maptab {
	struct procmaps maps; /* objects are indices into files */
	struct hashmap comm_of; /* pid -> index into comms: its last COMM */
	char (*comms)[16];
	size_t nr_comms, cap_comms;
	struct file *files;
	size_t nr_files, cap_files;
	struct hashmap file_of; /* name -> index into files */
};

struct maptab *maptab__new(void)
{
	return calloc(1, sizeof(struct maptab));
}

static long file_index(struct maptab *t, const char *name)
{
	int created;
	uint64_t *v = hashmap__upsert(&t->file_of, name, strlen(name), &created);

	if (!v)
		return -ENOMEM;
	if (!created)
		return (long)*v;
	if (grow_array((void **)&t->files, &t->cap_files, t->nr_files + 1, sizeof(*t->files)))
		return -ENOMEM;
	t->files[t->nr_files].name = strdup(name);
	if (!t->files[t->nr_files].name)
		return -ENOMEM;
	t->files[t->nr_files].marked = 0;
	*v = t->nr_files;
	return (long)t->nr_files++;
}

int maptab__observe(struct maptab *t, const struct perf_event_header *rec)
{
	struct perf_record_mmap mm; /* the start of MMAP2 too */
	struct perf_record_task task;
	const char *name;
	long f;

	switch (rec->type) {
	case PERF_RECORD_COMM: {
		struct perf_record_comm c;
		const char *cn = perf_record__name(rec, sizeof(c));
		uint64_t *v;
		int created;

		if (!cn || !perf_record__copy(rec, &c, sizeof(c)) || c.pid != c.tid)
			return 0;
		v = hashmap__upsert(&t->comm_of, &c.pid, sizeof(c.pid), &created);
		if (!v)
			return -ENOMEM;
		if (created) {
			if (grow_array((void **)&t->comms, &t->cap_comms, t->nr_comms + 1,
				       sizeof(*t->comms)))
				return -ENOMEM;
			*v = t->nr_comms++;
		}
		snprintf(t->comms[*v], sizeof(t->comms[*v]), "%s", cn);
		return 0;
	}
	case PERF_RECORD_FORK:
		if (!perf_record__copy(rec, &task, sizeof(task)))
			return 0;
		return procmaps__fork(&t->maps, task.ppid, task.pid);
	case PERF_RECORD_MMAP:
		name = perf_record__name(rec, sizeof(struct perf_record_mmap));
		break;
	case PERF_RECORD_MMAP2:
		name = perf_record__name(rec, sizeof(struct perf_record_mmap2));
		break;
	default:
		return 0;
	}
	if (!name || name[0] != '/' || !perf_record__copy(rec, &mm, sizeof(mm)))
		return 0; /* [vdso], anonymous: no file to read a build id from */
	f = file_index(t, name);
	if (f < 0)
		return (int)f;
	return procmaps__map(&t->maps, mm.pid, mm.start, mm.len, mm.pgoff, (uint32_t)f);
}

void maptab__mark(struct maptab *t, int pid, uint64_t ip)
{
	const struct vmap *m = addrspace__find(procmaps__get(&t->maps, (uint32_t)pid), ip);

	if (m)
		t->files[m->obj].marked = 1;
}

void maptab__clear_marks(struct maptab *t)
{
	size_t i;

	for (i = 0; i < t->nr_files; i++)
		t->files[i].marked = 0;
}

int maptab__write_build_ids(struct maptab *t, struct perf_writer *w)
{
	uint8_t id[20];
	size_t i;
	int n = 0, len, err;

	for (i = 0; i < t->nr_files; i++) {
		if (!t->files[i].marked)
			continue;
		len = elf_build_id_path(t->files[i].name, id, sizeof(id));
		if (len <= 0) {
			pr_debug("no build id for %s", t->files[i].name);
			continue;
		}
		err = perf_writer__add_build_id(w, -1, false, id, (size_t)len, t->files[i].name);
		if (err)
			return err;
		n++;
	}
	return n;
}

int maptab__synth(struct maptab *t, const struct synth *s, int pid)
{
	const struct addrspace *as = procmaps__get(&t->maps, (uint32_t)pid);
	uint32_t key = (uint32_t)pid;
	uint64_t *v = hashmap__find(&t->comm_of, &key, sizeof(key));
	size_t i;
	int err = 0;

	if (!as && !v)
		return -ESRCH;
	if (v)
		err = synth__comm(s, pid, pid, t->comms[*v]);
	for (i = 0; as && i < as->nr && !err; i++) {
		const struct vmap *m = &as->maps[i];

		/* device and inode are not kept: perf and offcpu report go by name */
		err = synth__mmap2(s, pid, pid, m->start, m->end - m->start, m->pgoff, 0, 0, 0,
				   PROT_READ | PROT_EXEC, MAP_PRIVATE, PERF_RECORD_MISC_USER,
				   t->files[m->obj].name);
	}
	return err;
}

void maptab__free(struct maptab *t)
{
	size_t i;

	if (!t)
		return;
	free(t->comms);
	hashmap__free(&t->comm_of);
	for (i = 0; i < t->nr_files; i++)
		free(t->files[i].name);
	free(t->files);
	hashmap__free(&t->file_of);
	procmaps__free(&t->maps);
	free(t);
}
