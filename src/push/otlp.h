/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An interval as OTLP profiles: ExportProfilesServiceRequest
 * (opentelemetry.proto.collector.profiles.v1development, profiles.proto of
 * the signal's Alpha), encoded by hand with pb.h.
 *
 * - One ResourceProfiles for each group (process, or cgroup), its resource
 *   the host, service, process, container and --push-label; one
 *   ScopeProfiles (offcpu and its version) holding one Profile: sample type
 *   off_cpu / nanoseconds, the interval's window, a random profile_id.
 * - One ProfilesDictionary for the request, every table's index 0 its zero
 *   value (string_table[0] ""), nothing in it twice, nothing unreferenced.
 * - A Sample for each row (thread, stack, state, waker): its stack's index
 *   (locations leaf first), its attributes, and one value for each block or
 *   summed blocks with the time it ended, inside [time, time + duration);
 *   with values alone (one each) when the interval has too many to time.
 *
 * Attributes (doc/push.md): on the resource host.name, service.name,
 * process.pid, process.executable.name, process.executable.path,
 * process.command, container.id, k8s.pod.uid, linux.cgroup.path; on each
 * sample thread.id, thread.name, linux.sched.state,
 * linux.sched.waker.thread.name, linux.sched.waker.function (its own user
 * frame),
 * linux.sched.waker.chain (by cgroup also process.pid and
 * process.executable.name); on locations profile.frame.type (not for JIT
 * code); on mappings
 * process.executable.build_id.gnu.
 */
#ifndef OFFCPU_PUSH_OTLP_H
#define OFFCPU_PUSH_OTLP_H

#include <stddef.h>
#include <stdint.h>
#include "interval.h"
#include "meta.h"
#include "../report/pb.h"

/* The request of groups @groups[0..@n) of @iv, not compressed, into @out. 0 or -ENOMEM. */
int otlp__encode(const struct interval *iv, const uint32_t *groups, size_t n,
		 const struct push_meta *pm, struct pb *out);

/*
 * An ExportProfilesServiceResponse's partial_success (@b, @n bytes): the
 * profiles it rejected and its message (into @msg, escaped). 0 when it has
 * one with something in it, -ENOENT when it has none, -EINVAL when @b is no
 * such message.
 */
int otlp__partial_success(const uint8_t *b, size_t n, int64_t *rejected, char *msg, size_t cap);

#endif
