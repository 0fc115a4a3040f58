// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include "sideband.h"
#include "../perfdata/format.h"
#include "../util/util.h"

struct perf_rings *sideband__open(size_t pages, bool cgroup, bool overwrite, char *msg, size_t len)
{
	struct perf_event_attr attr = { 0 };
	struct perf_rings *r;
	int *cpus = NULL, err;
	size_t nr = 0;

	err = online_cpus(&cpus, &nr);
	if (err) {
		snprintf(msg, len, "cannot list the online cpus: %s", strerror(-err));
		errno = -err;
		return NULL;
	}
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_type = SIDEBAND_SAMPLE_TYPE;
	attr.sample_id_all = 1;
	attr.mmap = 1;
	attr.mmap2 = 1;
	attr.comm = 1;
	attr.comm_exec = 1;
	attr.task = 1;
	attr.cgroup = cgroup;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	r = overwrite ? perf_rings__open_overwrite(&attr, cpus, nr, pages, "side-band", msg, len) :
			perf_rings__open(&attr, cpus, nr, pages, -1, "side-band", msg, len);
	free(cpus);
	return r;
}

int sideband__private_id(uint64_t *id)
{
	struct perf_event_attr bo = { 0 };
	int fd, err = 0;

	bo.size = sizeof(bo);
	bo.type = PERF_TYPE_SOFTWARE;
	bo.config = PERF_COUNT_SW_BPF_OUTPUT;
	bo.disabled = 1;
	fd = (int)syscall(__NR_perf_event_open, &bo, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, PERF_EVENT_IOC_ID, id))
		err = -errno;
	close(fd);
	return err;
}
