// SPDX-License-Identifier: GPL-2.0
/* The flight recorder: overwritable buffers, read only when SIGUSR2 asks for a snapshot. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "record_int.h"
#include "sideband.h"
#include "summary.h"
#include "synth.h"
#include "../perfdata/sample.h"
#include "../util/util.h"

static int push_bpf_output(const struct perf_event_header *h, void *arg)
{
	struct sink *k = arg;
	struct perf_sample s;
	const char *why;

	if (h->type != PERF_RECORD_SAMPLE || perf_sample__parse(&k->r->ev.bpf_out_attr, h, &s, &why) ||
	    s.raw_size < sizeof(struct offcpu_event))
		return 0;
	return push_stream(s.raw, k);
}

int open_bpf_output(struct record *r, struct collector_opts *co)
{
	struct perf_event_attr *a = &r->ev.bpf_out_attr;
	int *cpus = NULL, *fds;
	size_t nr = 0, i;
	int err = online_cpus(&cpus, &nr);
	char msg[256];

	if (err) {
		pr_err("the flight recorder's buffers: cannot list the online cpus: %s",
		       strerror(-err));
		return err;
	}
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_BPF_OUTPUT;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_RAW;
	a->wakeup_events = 1 << 30; /* nobody waits on these */
	r->bpf_out = perf_rings__open_overwrite(a, cpus, nr, r->o.mmap_pages * 4, "BPF output", msg,
						sizeof(msg));
	if (!r->bpf_out) {
		err = -errno;
		pr_err("the flight recorder's buffers: %s", msg);
		free(cpus);
		return err;
	}
	fds = malloc(nr * sizeof(*fds));
	if (!fds) {
		pr_err("the flight recorder's buffers: out of memory");
		free(cpus);
		return -ENOMEM;
	}
	for (i = 0; i < nr; i++)
		fds[i] = perf_rings__fd(r->bpf_out, i);
	co->output_fds = fds;
	co->output_cpus = cpus;
	co->nr_output_fds = nr;
	return 0;
}

/* --overwrite: snapshots skipped for lack of space, counted for the end. */
static size_t skipped;

static bool no_space(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

/*
 * A snapshot that found no space: its temporary removed (only what offcpu
 * made), said now, and recording goes on. What it counted is counted again
 * by the snapshot that writes it: the buffers still hold its records (the
 * last-snapshot mark did not move) and round.c keeps its summed blocks.
 */
static void skip_snapshot(struct record *r, int err, const struct stats *saved,
			  uint64_t lost_reported)
{
	struct intset threads = r->st.threads;
	char name[PATH_MAX];

	snprintf(name, sizeof(name), "%s", r->out.open && r->out.file.final ? r->out.file.final :
					   r->out.base);
	output__discard(&r->out);
	perf_writer__free(r->w);
	r->w = NULL;
	r->st = *saved;
	r->st.threads = threads; /* a thread counted twice is still one */
	r->lost_reported = lost_reported;
	skipped++;
	pr_warn("snapshot skipped: cannot write %s: %s (its temporary removed; %zu skipped so "
		"far); still recording: the next SIGUSR2 writes what the buffers still hold", name,
		strerror(-err), skipped);
}

/*
 * Write what the overwritable buffers hold and is newer than the last
 * snapshot, then the /proc state that symbolizes it (after the samples, as
 * perf does; timestamped 0, so readers order it first). One that finds no
 * space is skipped, but the last (the recording ended): that is an error.
 */
int snapshot(struct record *r)
{
	struct sink k = { r, &r->batch, false };
	struct round rd = { .w = NULL, .batch = &r->batch, .after = r->snap_last,
			    .newest = r->snap_last };
	struct stats saved = r->st;
	uint64_t lost_reported = r->lost_reported;
	bool last = r->end_ns != 0;
	long n;
	int err;

	perf_queue__clear(&r->batch);
	n = perf_rings__snapshot(r->sb, push_sideband, &k);
	if (n >= 0 && r->oncpu)
		n = perf_rings__snapshot(r->oncpu, push_oncpu, &k);
	if (n >= 0)
		n = perf_rings__snapshot(r->bpf_out, push_bpf_output, &k);
	if (n < 0)
		return (int)n;
	/* the header first: a full disk fails here, before the summed blocks are drained */
	err = begin_file(r);
	rd.w = r->w;
	err = err ?: round__write(r, &rd);
	err = err ?: synthesize(r);
	err = err ?: end_file(r);
	if (!err) {
		r->snap_last = rd.newest;
	} else if (no_space(err) && !last) {
		skip_snapshot(r, err, &saved, lost_reported);
		err = 0;
	}
	if (last && skipped && !r->o.quiet)
		fprintf(stderr, "offcpu: %zu snapshot%s skipped for lack of space (said as each "
			"was); the next one after each holds what the buffers still held\n",
			skipped, skipped == 1 ? " was" : "s were");
	return err;
}
