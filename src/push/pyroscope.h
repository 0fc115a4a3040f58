/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An interval as Pyroscope's ingest API takes it: one pprof (the report's
 * writer, pprof__encode()) for each series, posted to /ingest with
 * name=APP{k=v,...}&from=&until=&format=pprof.
 *
 * A series is what the application name says: APP the service (the
 * systemd unit of the cgroup), else the executable (by process) or the
 * cgroup's last component (by cgroup); its labels host_name,
 * process_executable_name (by process), container_id, k8s_pod_uid and
 * --push-label's (dots made '_'), values made of what the name may hold
 * (push_label_value()). Processes of one series are one profile: no pid in
 * it, nor any label that grows without bound. The samples are labelled
 * thread_name, linux_sched_state, linux_sched_waker_thread_name (the name
 * alone) and linux_sched_waker_function: the OTLP attributes' names with
 * '_' for '.'.
 */
#ifndef OFFCPU_PUSH_PYROSCOPE_H
#define OFFCPU_PUSH_PYROSCOPE_H

#include <stdint.h>
#include "interval.h"
#include "meta.h"
#include "../report/pb.h"

/*
 * Each series of @iv (read with its rows) to @emit: the query (malloc'ed,
 * @emit's to free), the gzip'ed pprof (its buffer @emit's) and how many
 * groups are in it. Stops at @emit's first error. 0 or -errno.
 */
int pyroscope__requests(const struct interval *iv, const struct push_meta *pm,
			int (*emit)(void *arg, char *query, struct pb *body, uint32_t groups),
			void *arg);

#endif
