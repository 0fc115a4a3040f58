// SPDX-License-Identifier: GPL-2.0
/* The on-CPU sampler (-F): a cpu-clock event on each CPU recorded, into rings of its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "record_int.h"
#include "../util/util.h"

int open_oncpu(struct record *r, int cgroup_fd)
{
	struct perf_event_attr *a = &r->ev.oncpu_attr;
	int *cpus = NULL, err;
	size_t nr = 0;
	char msg[256];

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->freq = 1;
	a->sample_freq = r->o.freq;
	a->sample_type = OFFCPU_SAMPLE_TYPE | (r->o.all_cgroups ? PERF_SAMPLE_CGROUP : 0);
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	if (r->o.nr_cpus) {
		cpus = malloc(r->o.nr_cpus * sizeof(*cpus));
		if (!cpus)
			return -ENOMEM;
		memcpy(cpus, r->o.cpus, r->o.nr_cpus * sizeof(*cpus));
		nr = r->o.nr_cpus;
	} else {
		err = online_cpus(&cpus, &nr);
		if (err)
			return err;
	}
	if (r->o.overwrite && cgroup_fd >= 0)
		pr_warn("--overwrite samples on-CPU on every task; -G filters them when written");
	r->oncpu = r->o.overwrite ?
		perf_rings__open_overwrite(a, cpus, nr, r->o.mmap_pages, ONCPU_EVENT_NAME, msg,
					   sizeof(msg)) :
		perf_rings__open(a, cpus, nr, r->o.mmap_pages, cgroup_fd, ONCPU_EVENT_NAME, msg,
				 sizeof(msg));
	free(cpus);
	if (r->oncpu)
		return 0;
	err = -errno;
	pr_err("%s", msg);
	return err;
}

