// SPDX-License-Identifier: GPL-2.0
/* A process's perf map opened in its own /tmp (pmtmp.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "pmtmp.h"
#include "../util/objread.h"

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

/* Keep process @tgid's /tmp in @t (pmtmp.h). */
int pm_tmp__open(int tgid, struct pm_tmp *t)
{
	struct stat pst;
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d", tgid);
	if (stat(path, &pst))
		return -ESRCH;
	t->uid = pst.st_uid;
	t->nspid = ns_pid(tgid);
	snprintf(path, sizeof(path), "/proc/%d/root/tmp", tgid);
	t->fd = objread_open_dir(path, OBJREAD_NO_LINKS, &t->mnt);
	return t->fd < 0 ? t->fd : 0;
}

/* Open the map in a kept /tmp @t: a regular file of the process's user, on
 * the directory's mount (objread_openat()). */
int pm_tmp__map(const struct pm_tmp *t)
{
	struct stat st;
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "perf-%d.map", t->nspid);
	fd = objread_openat(t->fd, t->mnt, name, &st);
	if (fd == -EINVAL || fd == -ELOOP)
		return -EPERM; /* a fifo, a device, a link: not a map */
	if (fd >= 0 && st.st_uid != t->uid) {
		close(fd);
		return -EPERM;
	}
	return fd;
}
