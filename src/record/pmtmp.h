/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A process's perf map opened in its own /tmp (perfmap.h): the directory
 * (/proc/PID/root/tmp: its own, in another mount namespace too) walked with
 * no link followed and every mount checked (objread.h), kept as an O_PATH
 * descriptor with the process's user and its pid there, so that its map can
 * be opened in it after the process exits (a JVM writes it at its exit).
 * The map is opened only as a regular file of that user, on that mount.
 * No state of its own: the caller owns the descriptor.
 */
#ifndef OFFCPU_RECORD_PMTMP_H
#define OFFCPU_RECORD_PMTMP_H

#include <stdint.h>

struct pm_tmp {
	int fd; /* the directory, O_PATH; -1: none */
	uint64_t mnt; /* its mount */
	uint32_t uid; /* the process's user (the owner of /proc/PID) */
	int nspid; /* its pid in its own pid namespace */
};

/* Keep process @tgid's /tmp in @t. 0 or -errno (-ESRCH: the process is gone). */
int pm_tmp__open(int tgid, struct pm_tmp *t);

/*
 * Open the map, perf-NSPID.map, in a kept /tmp @t. A descriptor, -ENOENT
 * when there is none, or another -errno when it is refused (-EPERM: not
 * its user's regular file).
 */
int pm_tmp__map(const struct pm_tmp *t);

#endif
