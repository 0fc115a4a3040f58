// SPDX-License-Identifier: GPL-2.0
/* JIT frames named from the processes' /tmp/perf-PID.map (perfmap.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "perfmap.h"
#include "synth.h"
#include "../offcpu.h"
#include "../perfdata/format.h"
#include "../perfdata/queue.h"
#include "../perfdata/sample.h"
#include "../util/hashmap.h"
#include "../util/util.h"

/* messages name paths: one too long for its buffer is cut, on purpose */
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#define LINE_MAX_LEN 4096 /* a longer line is skipped */
#define BACK_SCAN 8 /* entries before the found one looked at for an overlapping later one */

struct pm_entry {
	uint64_t start;
	uint32_t size;
	uint32_t name; /* offset in the process's names */
	uint32_t written; /* 1 + the file it has a record in; 0: none */
	uint32_t pad;
	uint64_t written_at; /* that record's time */
};

struct pm_proc {
	uint32_t tgid;
	int fd; /* -1: none (yet) */
	bool refused; /* not read: unsafe, or over a bound */
	uint64_t off; /* bytes read (whole lines) */
	uint64_t looked_ns; /* the last look at its file */
	struct pm_entry *e; /* in the file's order: a later entry wins where they overlap */
	size_t nr, cap;
	uint32_t *sorted; /* indexes into e, by start, then by order */
	size_t nr_sorted, cap_sorted;
	char *names;
	size_t names_len, names_cap;
};

struct pending {
	uint32_t proc, entry;
};

struct perfmap {
	pthread_mutex_t lock;
	struct hashmap procs; /* tgid -> 1 + index */
	struct pm_proc *p;
	size_t nr, cap;
	struct perfmap_stats st;
};

/* noted by this thread's last perfmap__name_frames() calls, for its flush */
static __thread struct pending pend[2 * OFFCPU_MAX_STACK_DEPTH];
static __thread size_t nr_pend;

struct perfmap *perfmap__new(void)
{
	struct perfmap *pm = calloc(1, sizeof(*pm));

	if (pm)
		pthread_mutex_init(&pm->lock, NULL);
	return pm;
}

void perfmap__free(struct perfmap *pm)
{
	size_t i;

	if (!pm)
		return;
	if (pm->st.maps)
		pr_info("perf maps: %llu read (%llu refused), %llu entries, %llu JIT frames named by "
			"%llu records, %llu left out (over a bound)",
			(unsigned long long)pm->st.maps, (unsigned long long)pm->st.refused,
			(unsigned long long)pm->st.entries, (unsigned long long)pm->st.frames,
			(unsigned long long)pm->st.named, (unsigned long long)pm->st.over);
	for (i = 0; i < pm->nr; i++) {
		if (pm->p[i].fd >= 0)
			close(pm->p[i].fd);
		free(pm->p[i].e);
		free(pm->p[i].sorted);
		free(pm->p[i].names);
	}
	free(pm->p);
	hashmap__free(&pm->procs);
	pthread_mutex_destroy(&pm->lock);
	free(pm);
}

/* The pid of @tgid in its own pid namespace (the last NSpid field), or @tgid. */
static int ns_pid(int tgid)
{
	char path[64], line[256];
	int pid = tgid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", tgid);
	f = fopen(path, "re");
	if (!f)
		return tgid;
	while (fgets(line, sizeof(line), f)) {
		char *p, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (p = line + 6;; p = end) {
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			if (v > 0)
				pid = (int)v;
		}
		break;
	}
	fclose(f);
	return pid;
}

/*
 * Open process @tgid's map safely: /proc/PID/root/tmp/perf-NSPID.map, no
 * symbolic link followed (tmp and the file itself), a regular file owned by
 * the process's user (the owner of /proc/PID), reopened from the descriptor
 * that was checked. Returns a descriptor, -ENOENT when there is none, or
 * -EPERM when it is refused.
 */
/*
 * Is process @tgid's /tmp (or its root, where /tmp is no mount of its own)
 * served by FUSE? Its server is a process, which a user can make never
 * answer (in a user namespace of their own), and the map is read on the
 * recording's path: such a file is not opened at all. Read from the
 * process's mountinfo, which procfs makes without asking any filesystem.
 * Returns 1 (FUSE, or more mounts than are read), 0, or -ENOENT (gone).
 */
#define MOUNTINFO_LINES_MAX 100000
static int tmp_on_fuse(int tgid)
{
	char path[64], line[4096];
	bool fuse = true, tmp_seen = false;
	unsigned n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/mountinfo", tgid);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS] - FSTYPE ...": the last
	 * mount on /tmp, else on /, is the one a path under /tmp reaches */
	while (fgets(line, sizeof(line), f) && n++ < MOUNTINFO_LINES_MAX) {
		char mnt[4096], *sep = strstr(line, " - ");
		bool is_tmp;

		if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		is_tmp = !strcmp(mnt, "/tmp");
		if (!is_tmp && (strcmp(mnt, "/") || tmp_seen))
			continue;
		tmp_seen |= is_tmp;
		fuse = !strncmp(sep + 3, "fuse", 4);
	}
	if (n > MOUNTINFO_LINES_MAX)
		fuse = true;
	fclose(f);
	return fuse;
}

static int open_map(int tgid)
{
	struct stat pst, st, st2;
	char path[96];
	int root = -1, tmp = -1, lnk = -1, fd = -1, err;

	snprintf(path, sizeof(path), "/proc/%d", tgid);
	if (stat(path, &pst))
		return -ENOENT;
	err = tmp_on_fuse(tgid);
	if (err)
		return err < 0 ? err : -EXDEV;
	snprintf(path, sizeof(path), "/proc/%d/root", tgid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -ENOENT;
	tmp = openat(root, "tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	err = tmp < 0 ? (errno == ENOENT ? -ENOENT : -EPERM) : 0;
	if (!err) {
		snprintf(path, sizeof(path), "perf-%d.map", ns_pid(tgid));
		/* O_PATH: no open of a device's driver, no wait for a fifo */
		lnk = openat(tmp, path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		err = lnk < 0 ? -ENOENT : fstat(lnk, &st) ? -ENOENT : 0;
	}
	if (!err && (!S_ISREG(st.st_mode) || st.st_uid != pst.st_uid))
		err = -EPERM;
	if (!err) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", lnk);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0 || fstat(fd, &st2) || st2.st_ino != st.st_ino || st2.st_dev != st.st_dev)
			err = -EPERM;
	}
	if (lnk >= 0)
		close(lnk);
	if (tmp >= 0)
		close(tmp);
	close(root);
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd;
}

/* The process of @tgid, added if new; NULL over the bound (under the lock). */
static struct pm_proc *proc_of(struct perfmap *pm, uint32_t tgid, size_t *idx)
{
	uint64_t *v = hashmap__find(&pm->procs, &tgid, sizeof(tgid));
	int created;

	if (!v) {
		if (pm->nr >= PERFMAP_PROCS_MAX) {
			pm->st.over++; /* (once per sample of such a process) */
			return NULL;
		}
		if (grow_array((void **)&pm->p, &pm->cap, pm->nr + 1, sizeof(*pm->p)))
			return NULL;
		v = hashmap__upsert(&pm->procs, &tgid, sizeof(tgid), &created);
		if (!v)
			return NULL;
		pm->p[pm->nr] = (struct pm_proc){ .tgid = tgid, .fd = -1 };
		*v = ++pm->nr;
	}
	*idx = *v - 1;
	return &pm->p[*v - 1];
}

static struct pm_proc *sort_proc; /* qsort's context (under the lock) */

static int by_start(const void *a, const void *b)
{
	const struct pm_entry *x = &sort_proc->e[*(const uint32_t *)a],
			      *y = &sort_proc->e[*(const uint32_t *)b];

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* One "START SIZE NAME" line into @p's entries; false past a bound. */
static bool add_line(struct perfmap *pm, struct pm_proc *p, char *line, size_t len)
{
	unsigned long long start, size;
	char *end, *name;
	size_t nlen;

	line[len] = 0;
	start = strtoull(line, &end, 16);
	if (end == line || *end != ' ')
		return true; /* not an entry: skipped */
	name = end + 1;
	size = strtoull(name, &end, 16);
	if (end == name || *end != ' ' || !size || size > UINT32_MAX || start + size < start)
		return true;
	name = end + 1;
	nlen = strlen(name);
	if (nlen && name[nlen - 1] == '\r')
		name[--nlen] = 0;
	if (p->nr >= PERFMAP_ENTRIES_MAX || p->names_len + nlen + 1 > PERFMAP_NAMES_MAX) {
		pm->st.over++;
		return false;
	}
	if (grow_array((void **)&p->e, &p->cap, p->nr + 1, sizeof(*p->e)) ||
	    grow_array((void **)&p->names, &p->names_cap, p->names_len + nlen + 1, 1))
		return false;
	memcpy(p->names + p->names_len, name, nlen + 1);
	p->e[p->nr++] = (struct pm_entry){ .start = start, .size = (uint32_t)size,
					   .name = (uint32_t)p->names_len };
	p->names_len += nlen + 1;
	pm->st.entries++;
	return true;
}

/* Read what @p's map gained since the last look (whole lines, a bounded piece). */
static void read_more(struct perfmap *pm, struct pm_proc *p)
{
	size_t old, i;
	struct stat st;
	char *buf;
	ssize_t n;

	if (p->fd < 0 || fstat(p->fd, &st))
		return;
	if ((uint64_t)st.st_size < p->off) {
		/* written anew (its pid reused by another JIT process): from the start */
		p->nr = p->nr_sorted = p->names_len = 0;
		p->off = 0;
	}
	old = p->nr;
	if ((uint64_t)st.st_size <= p->off)
		return;
	if (p->off >= PERFMAP_FILE_MAX) {
		pm->st.over++;
		p->refused = true;
		return;
	}
	buf = malloc(PERFMAP_READ_MAX + 1);
	if (!buf)
		return;
	n = pread(p->fd, buf, PERFMAP_READ_MAX, (off_t)p->off);
	if (n > 0) {
		size_t at = 0;

		for (i = 0; i < (size_t)n; i++) {
			if (buf[i] != '\n')
				continue;
			/* a line too long to be an entry is skipped whole */
			if (i - at < LINE_MAX_LEN && !add_line(pm, p, buf + at, i - at)) {
				p->refused = true; /* over a bound: what was read stays */
				break;
			}
			at = i + 1;
		}
		/* a line longer than a whole read is no entry: skip what was read */
		if (!at && (size_t)n == PERFMAP_READ_MAX)
			at = (size_t)n;
		p->off += at; /* a partial last line is read again, whole, next time */
	}
	free(buf);
	if (p->nr == old)
		return;
	if (grow_array((void **)&p->sorted, &p->cap_sorted, p->nr, sizeof(*p->sorted)))
		return;
	for (i = old; i < p->nr; i++)
		p->sorted[i] = (uint32_t)i;
	p->nr_sorted = p->nr;
	sort_proc = p;
	qsort(p->sorted, p->nr_sorted, sizeof(*p->sorted), by_start);
}

/* Open @p's map if not yet (at most every PERFMAP_RETRY_MS), read what it gained. */
static void look(struct perfmap *pm, struct pm_proc *p, uint64_t now)
{
	if (p->refused)
		return;
	if (p->looked_ns &&
	    now - p->looked_ns < (p->fd < 0 ? PERFMAP_RETRY_MS : PERFMAP_REFRESH_MS) * 1000000ULL)
		return;
	p->looked_ns = now;
	if (p->fd < 0) {
		int fd = open_map((int)p->tgid);

		if (fd == -EPERM || fd == -EXDEV) {
			p->refused = true;
			pm->st.refused++;
			pr_info("perf map of process %u not read: %s", p->tgid,
				fd == -EPERM ? "not a regular file of its user" :
					       "its /tmp is on FUSE, which may never answer");
		}
		if (fd < 0)
			return;
		p->fd = fd;
		pm->st.maps++;
	}
	read_more(pm, p);
}

void perfmap__process(struct perfmap *pm, int tgid)
{
	struct pm_proc *p;
	size_t idx;

	if (!pm || tgid <= 0)
		return;
	pthread_mutex_lock(&pm->lock);
	p = proc_of(pm, (uint32_t)tgid, &idx);
	if (p)
		look(pm, p, now_ns());
	pthread_mutex_unlock(&pm->lock);
}

void perfmap__process_cb(void *pm, int tgid)
{
	perfmap__process(pm, tgid);
}

/* The entry holding @ip (the latest where entries overlap), or -1. */
static long find(const struct pm_proc *p, uint64_t ip)
{
	size_t lo = 0, hi = p->nr_sorted, k;
	long best = -1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->e[p->sorted[mid]].start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = 0; k < BACK_SCAN && lo > k; k++) {
		uint32_t i = p->sorted[lo - 1 - k];

		if (ip - p->e[i].start < p->e[i].size && (best < 0 || i > (uint32_t)best))
			best = i;
	}
	return best;
}

void perfmap__name_frames(struct perfmap *pm, uint32_t tgid, const uint64_t *uips, uint32_t nu)
{
	struct pm_proc *p;
	uint64_t now = 0;
	size_t idx, k;
	uint32_t i;

	if (!pm || !nu)
		return;
	pthread_mutex_lock(&pm->lock);
	p = proc_of(pm, tgid, &idx);
	for (i = 0; p && i < nu && nr_pend < ARRAY_SIZE(pend); i++) {
		uint64_t ip = uips[i];
		long e;

		if (ip < 4096 || ip >= (1ULL << 56))
			continue; /* a mark, a deferral, a Python frame */
		/* a caller's frame is its return address: the call is before it */
		e = find(p, i ? ip - 1 : ip);
		if (e < 0) {
			/* perhaps new code: the map may have grown since */
			if (!now)
				now = now_ns();
			look(pm, p, now);
			e = find(p, i ? ip - 1 : ip);
		}
		if (e < 0)
			continue;
		pm->st.frames++;
		for (k = 0; k < nr_pend; k++)
			if (pend[k].proc == idx && pend[k].entry == (uint32_t)e)
				break;
		if (k == nr_pend)
			pend[nr_pend++] = (struct pending){ (uint32_t)idx, (uint32_t)e };
	}
	pthread_mutex_unlock(&pm->lock);
}

int perfmap__flush(struct perfmap *pm, struct perf_queue *q, uint64_t sideband_id, size_t gen,
		   uint64_t time, int kind)
{
	struct synth_queue sq = { .q = q, .time = time, .kind = kind };
	const struct synth sy = { .sample_type = SIDEBAND_SAMPLE_TYPE, .id = sideband_id,
				  .time = time, .emit = synth__to_queue, .arg = &sq };
	char name[PERFMAP_NAME_LEN];
	int err = 0;
	size_t i;

	if (!pm || !nr_pend)
		return 0;
	pthread_mutex_lock(&pm->lock);
	for (i = 0; i < nr_pend && !err; i++) {
		struct pm_proc *p = &pm->p[pend[i].proc];
		struct pm_entry *e = pend[i].entry < p->nr ? &p->e[pend[i].entry] : NULL;

		if (!e || (e->written == gen + 1 && e->written_at <= time))
			continue;
		e->written = (uint32_t)gen + 1;
		e->written_at = time;
		snprintf(name, sizeof(name), "%s%s", OFFCPU_NAMED_JIT, p->names + e->name);
		err = synth__named(&sy, p->tgid, e->start, e->size, name);
		if (!err)
			pm->st.named++;
	}
	pthread_mutex_unlock(&pm->lock);
	nr_pend = 0;
	return err;
}

void perfmap__stats(struct perfmap *pm, struct perfmap_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!pm)
		return;
	pthread_mutex_lock(&pm->lock);
	*st = pm->st;
	pthread_mutex_unlock(&pm->lock);
}
