// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "synth.h"
#include "../util/procmaps.h"
#include "../perfdata/format.h"
#include "../perfdata/queue.h"
#include "../perfdata/sample.h"
#include "../util/kallsyms.h"
#include "../util/util.h"

#define REC_MAX 8192

static int finish(const struct synth *s, char *buf, size_t body, int pid, int tid, uint16_t type,
		  uint16_t misc)
{
	struct perf_event_header *h = (void *)buf;
	struct perf_sample id = { .pid = (uint32_t)pid, .tid = (uint32_t)tid, .time = s->time,
				  .id = s->id };
	size_t tsize = perf_sample_id__size(s->sample_type);

	body = PERF_ALIGN(body, 8);
	perf_sample_id__encode(s->sample_type, &id, buf + body);
	h->type = type;
	h->misc = misc;
	h->size = (uint16_t)(body + tsize);
	return s->emit(h, s->arg);
}

int synth__comm(const struct synth *s, int pid, int tid, const char *comm)
{
	char buf[REC_MAX] = { 0 };
	struct perf_record_comm c = { .pid = (uint32_t)pid, .tid = (uint32_t)tid };
	size_t len = strnlen(comm, 16);

	memcpy(buf, &c, sizeof(c));
	memcpy(buf + sizeof(c), comm, len);
	return finish(s, buf, sizeof(c) + len + 1, pid, tid, PERF_RECORD_COMM, 0);
}

int synth__mmap2(const struct synth *s, int pid, int tid, uint64_t start, uint64_t len,
		 uint64_t pgoff, uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot,
		 uint32_t flags, uint16_t misc, const char *filename)
{
	char buf[REC_MAX] = { 0 };
	struct perf_record_mmap2 m = {
		.pid = (uint32_t)pid, .tid = (uint32_t)tid, .start = start, .len = len,
		.pgoff = pgoff, .maj = maj, .min = min, .ino = ino, .prot = prot, .flags = flags,
	};
	size_t flen = strnlen(filename, 4095);

	memcpy(buf, &m, sizeof(m));
	memcpy(buf + sizeof(m), filename, flen);
	return finish(s, buf, sizeof(m) + flen + 1, pid, tid, PERF_RECORD_MMAP2, misc);
}

static int read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return (int)n;
}

static int read_comm(int pid, int tid, char *comm, size_t cap)
{
	char path[64];
	int n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	n = read_small(path, comm, cap);
	if (n < 0)
		return n;
	/* the kernel ends the name with a newline; the name itself may hold one */
	if (n > 0 && comm[n - 1] == '\n')
		comm[n - 1] = 0;
	return 0;
}

static int synth_maps(const struct synth *s, int tgid)
{
	char path[64], line[4096 + 256];
	FILE *f;
	int err = 0, n = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", tgid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		struct maps_line m;
		const char *name;
		uint32_t prot = 0;

		if (maps_line__parse(line, &m) || m.perms[2] != 'x')
			continue;
		/* anonymous executable memory (JIT code) is "//anon", as the
		 * kernel names it: perf and offcpu report name it from the
		 * process's perf map */
		name = *m.name ? m.name : "//anon";
		if (name[0] == '[' && strcmp(name, "[vdso]"))
			continue; /* [vsyscall] and friends */
		prot = (m.perms[0] == 'r' ? PROT_READ : 0) | (m.perms[1] == 'w' ? PROT_WRITE : 0) |
		       PROT_EXEC;
		err = synth__mmap2(s, tgid, tgid, m.start, m.end - m.start, m.pgoff, m.maj, m.min, m.ino,
				   prot, m.perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE,
				   PERF_RECORD_MISC_USER, name);
		if (err)
			break;
		n++;
	}
	fclose(f);
	/* no mapping: a zombie (or a kernel thread), whose maps are gone */
	return err ? err : n ? 0 : -ESRCH;
}

int synth__process(const struct synth *s, int tgid)
{
	char path[64], comm[64];
	struct dirent *de;
	DIR *d;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", tgid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name);

		if (tid <= 0 || read_comm(tgid, tid, comm, sizeof(comm)))
			continue;
		err = synth__comm(s, tgid, tid, comm);
		if (err)
			break;
	}
	closedir(d);
	if (!err)
		err = synth_maps(s, tgid);
	return err; /* -ESRCH: it exited meanwhile (its COMMs may be written) */
}

int synth__all(const struct synth *s)
{
	struct dirent *de;
	DIR *d = opendir("/proc");
	int err = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int pid = atoi(de->d_name);

		if (pid <= 0)
			continue;
		err = synth__process(s, pid);
		if (err && err != -ESRCH && err != -EACCES)
			break;
		err = 0;
	}
	closedir(d);
	return err;
}

static const struct synth *cg_synth;
static size_t cg_root_len;
static int cg_err;

static int cg_visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char buf[REC_MAX] = { 0 };
	/* a cgroup v2 id is its directory's inode */
	struct perf_record_cgroup c = { .id = st->st_ino };
	const char *rel = path + cg_root_len;
	size_t len;

	if (flag != FTW_D)
		return 0;
	if (!*rel)
		rel = "/";
	len = strnlen(rel, 4000);
	memcpy(buf, &c, sizeof(c));
	memcpy(buf + sizeof(c), rel, len);
	cg_err = finish(cg_synth, buf, sizeof(c) + len + 1, -1, -1, PERF_RECORD_CGROUP, 0);
	return cg_err ? 1 : 0;
}

int synth__cgroups(const struct synth *s, const char *root)
{
	cg_synth = s;
	cg_root_len = strlen(root);
	while (cg_root_len > 1 && root[cg_root_len - 1] == '/')
		cg_root_len--;
	cg_err = 0;
	if (nftw(root, cg_visit, 16, FTW_PHYS | FTW_MOUNT) < 0 && !cg_err)
		return -errno;
	return cg_err;
}

static int find_text(const struct ksym_line *l, void *arg)
{
	if (l->module || (strcmp(l->name, "_text") && strcmp(l->name, "_stext")))
		return 0;
	*(uint64_t *)arg = l->addr;
	return 1;
}

static int kallsyms_text(uint64_t *addr)
{
	int n = kallsyms__foreach(NULL, find_text, addr);

	if (n < 0)
		return n;
	if (n == 0)
		return -ENOENT;
	return *addr ? 0 : -EPERM; /* kptr_restrict hides addresses */
}

int synth__kernel_mmap(const struct synth *s)
{
	static const char name[] = "[kernel.kallsyms]_text";
	char buf[256] = { 0 };
	uint64_t text = 0;
	int err = kallsyms_text(&text);

	if (err)
		return err;
	struct perf_record_mmap m = {
		.pid = (uint32_t)-1, .tid = 0, .start = text, .len = ~0ULL - text, .pgoff = text,
	};

	memcpy(buf, &m, sizeof(m));
	memcpy(buf + sizeof(m), name, sizeof(name));
	return finish(s, buf, sizeof(m) + sizeof(name), -1, 0, PERF_RECORD_MMAP,
		      PERF_RECORD_MISC_KERNEL);
}

int synth__named(const struct synth *s, int pid, uint64_t start, uint64_t len, const char *name)
{
	return synth__mmap2(s, pid, pid, start, len, 0, 0, 0, 0, PROT_READ | PROT_EXEC, MAP_PRIVATE,
			    PERF_RECORD_MISC_USER, name);
}

int synth__to_queue(const struct perf_event_header *rec, void *arg)
{
	const struct synth_queue *sq = arg;

	return perf_queue__push(sq->q, rec, sq->time, sq->kind);
}
