// SPDX-License-Identifier: GPL-2.0
/* Python frames: spliced into the native stacks, their names into the file (python_int.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "python_int.h"
#include "pylayout.h"
#include "record_int.h"
#include "synth.h"
#include "../perfdata/format.h"
#include "../perfdata/queue.h"
#include "../perfdata/sample.h"

/* the frames spliced, and the names they need, of this thread's last stacks */
struct need {
	uint32_t tgid, id;
};
static __thread uint64_t spliced[OFFCPU_MAX_STACK_DEPTH + 1];
static __thread struct need pending[2 * OFFCPU_MAX_STACK_DEPTH];
static __thread size_t nr_pending;

static void need_name(uint32_t tgid, uint32_t id)
{
	size_t i;

	for (i = 0; i < nr_pending; i++)
		if (pending[i].id == id && pending[i].tgid == tgid)
			return;
	if (nr_pending < sizeof(pending) / sizeof(pending[0]))
		pending[nr_pending++] = (struct need){ tgid, id };
}

uint32_t python__frames(const uint64_t *ips, uint32_t n)
{
	uint32_t np = 0;

	while (np < n && OFFCPU_IS_PYFRAME(ips[n - 1 - np]))
		np++;
	return np;
}

uint32_t python__splice(struct python *py, uint32_t tgid, const uint64_t *native, uint32_t nn,
			const uint64_t *pyf, uint32_t np, const uint64_t **out)
{
	uint32_t i, j = 0, n = 0;
	uint64_t lo = 0, hi = 0;
	struct pyproc *pp;

	*out = native;
	if (!py || !np || !nn)
		return nn;
	pthread_mutex_lock(&py->lock);
	pp = proc_get(py, tgid, false);
	if (pp) {
		lo = pp->eval_lo;
		hi = pp->eval_hi;
	}
	pthread_mutex_unlock(&py->lock);
	for (i = 0; i < nn && n < OFFCPU_MAX_STACK_DEPTH; i++) {
		/* a caller's frame is its return address: the call is before it */
		uint64_t at = i ? native[i] - 1 : native[i];

		if (at >= lo && at < hi) {
			/* the Python frames this C frame runs: up to the one that entered it */
			while (j < np && n < OFFCPU_MAX_STACK_DEPTH) {
				uint64_t f = pyf[j++];
				uint32_t id = (uint32_t)((f - OFFCPU_PYFRAME_LO) / OFFCPU_PYFRAME_SIZE);

				/* id 0: a frame the program could not name (counted there) */
				if (id) {
					spliced[n++] = OFFCPU_PYFRAME_OF(id);
					need_name(tgid, id);
				}
				if (f & OFFCPU_PY_ENTRY)
					break;
			}
		}
		if (n < OFFCPU_MAX_STACK_DEPTH)
			spliced[n++] = native[i];
	}
	*out = spliced;
	return n;
}

int python__flush(struct python *py, struct record *r, struct perf_queue *q, size_t gen,
		  uint64_t time, int kind)
{
	struct synth_queue sq = { .q = q, .time = time, .kind = kind };
	const struct synth sy = { .sample_type = SIDEBAND_SAMPLE_TYPE, .id = r->ev.sideband_id,
				  .time = time, .emit = synth__to_queue, .arg = &sq };
	struct pyname *nm;
	int err = 0;
	size_t i;

	if (!py || !nr_pending)
		return 0;
	pthread_mutex_lock(&py->lock);
	for (i = 0; i < nr_pending && !err; i++) {
		uint32_t id = pending[i].id;
		struct pyproc *pp = proc_get(py, pending[i].tgid, false);

		/* a name sent just before the stack: maybe not read yet */
		if (!pp || !(nm = name_of(pp, id)) || !nm->text) {
			ring_buffer__consume(py->rb);
			pp = proc_get(py, pending[i].tgid, false);
		}
		nm = pp ? name_of(pp, id) : NULL;
		/* (samples are encoded out of time order: summed ones, stamped at the
		 * end of their interval, before streamed ones of the same round) */
		if (!nm || !nm->text || (nm->written == gen + 1 && nm->written_at <= time))
			continue;
		nm->written = (uint32_t)gen + 1;
		nm->written_at = time;
		err = synth__named(&sy, pp->tgid, OFFCPU_PYFRAME_OF(id), OFFCPU_PYFRAME_SIZE, nm->text);
	}
	pthread_mutex_unlock(&py->lock);
	nr_pending = 0;
	return err;
}

