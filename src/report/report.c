// SPDX-License-Identifier: GPL-2.0
/*
 * offcpu report: read perf.data (offcpu's or perf's) and show, per event,
 * where the time went, grouped by the --sort keys.
 */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"
#include "../perfdata/reader.h"
#include "../util/util.h"
#include "../util/hashmap.h"

enum sort_key { SORT_COMM, SORT_PID, SORT_TID, SORT_NR };

struct report_opts {
	const char *input;
	int keys[SORT_NR];
	size_t nr_keys;
	const char *event;
	double min_percent;
};

struct row {
	size_t event;
	char comm[16];
	uint32_t pid, tid;
	uint64_t period, count;
};

struct report {
	struct report_opts o;
	struct perf_reader *r;
	struct hashmap comms; /* tid -> index into comm_names */
	char (*comm_names)[16];
	size_t nr_comms;
	struct hashmap rows_idx;
	struct row *rows;
	size_t nr_rows, cap_rows;
	uint64_t *ev_period, *ev_count;
	uint64_t lost;
};

static const struct argp_option report_options[] = {
	{ "input", 'i', "FILE", 0, "Read FILE (default offcpu.data; - for stdin)", 0 },
	{ "sort", 's', "KEYS", 0, "Group by these keys: comm, pid, tid (default comm,pid,tid)", 0 },
	{ "event", 'e', "NAME", 0, "Only this event (e.g. offcpu-time)", 0 },
	{ "min-percent", 'm', "PCT", 0, "Hide rows below this share of their event", 0 },
	{ "verbose", 'v', 0, 0, "More messages", 0 },
	{ 0 },
};

static const char report_doc[] =
	"Show where the time in a perf.data file went.\n"
	"\n"
	"Reads files written by offcpu record or perf record, without root. Off-CPU\n"
	"events (offcpu-time) are shown as blocked time, sampling events as samples.\n"
	"\n"
	"Examples:\n"
	"  offcpu report -i app.data\n"
	"  offcpu report -i app.data --sort comm";

static int parse_sort(struct report_opts *o, const char *arg)
{
	char *copy = strdup(arg), *tok, *save = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	o->nr_keys = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int k;

		if (!strcmp(tok, "comm"))
			k = SORT_COMM;
		else if (!strcmp(tok, "pid"))
			k = SORT_PID;
		else if (!strcmp(tok, "tid"))
			k = SORT_TID;
		else {
			err = -EINVAL;
			break;
		}
		if (o->nr_keys < SORT_NR)
			o->keys[o->nr_keys++] = k;
	}
	free(copy);
	return err ? err : (o->nr_keys ? 0 : -EINVAL);
}

static error_t report_parse(int key, char *arg, struct argp_state *st)
{
	struct report_opts *o = st->input;
	char *end;

	switch (key) {
	case 'i':
		o->input = arg;
		break;
	case 's':
		if (parse_sort(o, arg))
			argp_error(st, "invalid sort keys '%s' (comm, pid, tid)", arg);
		break;
	case 'e':
		o->event = arg;
		break;
	case 'm':
		o->min_percent = strtod(arg, &end);
		if (*end || o->min_percent < 0 || o->min_percent > 100)
			argp_error(st, "invalid --min-percent '%s'", arg);
		break;
	case 'v':
		log_verbosity++;
		break;
	case ARGP_KEY_ARG:
		argp_error(st, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static bool is_offcpu(const struct perf_reader_event *ev)
{
	return !strcmp(ev->name, "offcpu-time");
}

static void note_comm(struct report *rp, uint32_t tid, const char *comm)
{
	int created;
	uint64_t *v = hashmap__upsert(&rp->comms, &tid, sizeof(tid), &created);

	if (!v)
		return;
	if (created) {
		char (*n)[16] = realloc(rp->comm_names, (rp->nr_comms + 1) * sizeof(*n));

		if (!n)
			return;
		rp->comm_names = n;
		*v = rp->nr_comms++;
	}
	snprintf(rp->comm_names[*v], 16, "%s", comm);
}

static void comm_of(struct report *rp, uint32_t pid, uint32_t tid, char *out)
{
	uint64_t *v = hashmap__find(&rp->comms, &tid, sizeof(tid));

	if (!v)
		v = hashmap__find(&rp->comms, &pid, sizeof(pid));
	if (v)
		memcpy(out, rp->comm_names[*v], 16);
	else
		snprintf(out, 16, ":%u", tid);
}

static int add_sample(struct report *rp, size_t ev, const struct perf_sample *s)
{
	struct row key = { .event = ev };
	size_t i;
	int created;
	uint64_t *idx;

	for (i = 0; i < rp->o.nr_keys; i++) {
		switch (rp->o.keys[i]) {
		case SORT_COMM:
			comm_of(rp, s->pid, s->tid, key.comm);
			break;
		case SORT_PID:
			key.pid = s->pid;
			break;
		case SORT_TID:
			key.tid = s->tid;
			break;
		}
	}
	idx = hashmap__upsert(&rp->rows_idx, &key, sizeof(key), &created);
	if (!idx)
		return -ENOMEM;
	if (created) {
		if (rp->nr_rows == rp->cap_rows) {
			size_t cap = rp->cap_rows ? rp->cap_rows * 2 : 256;
			struct row *n = realloc(rp->rows, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			rp->rows = n;
			rp->cap_rows = cap;
		}
		*idx = rp->nr_rows;
		rp->rows[rp->nr_rows++] = key;
	}
	rp->rows[*idx].period += s->period;
	rp->rows[*idx].count++;
	return 0;
}

static int read_all(struct report *rp)
{
	const struct perf_event_header *h;
	struct perf_sample s;
	size_t ev;
	int ret;

	while ((ret = perf_reader__next(rp->r, &h)) > 0) {
		const char *p = (const char *)h;

		switch (h->type) {
		case PERF_RECORD_COMM:
			if (h->size > 16)
				note_comm(rp, *(const uint32_t *)(p + 12), p + 16);
			break;
		case PERF_RECORD_LOST:
			if (h->size >= 24)
				rp->lost += *(const uint64_t *)(p + 16);
			break;
		case PERF_RECORD_SAMPLE:
			if (perf_reader__parse_sample(rp->r, h, &s, &ev))
				return -EINVAL;
			if (rp->o.event &&
			    strcmp(perf_reader__event(rp->r, ev)->name, rp->o.event))
				break;
			if (add_sample(rp, ev, &s))
				return -ENOMEM;
			break;
		}
	}
	return ret;
}

static struct report *cmp_ctx;

static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	bool off = is_offcpu(perf_reader__event(cmp_ctx->r, x->event));
	uint64_t vx = off ? x->period : x->count, vy = off ? y->period : y->count;

	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	return (vx < vy) - (vx > vy);
}

static void print_table(struct report *rp)
{
	size_t nev = perf_reader__nr_events(rp->r), e, i, k;

	rp->ev_period = calloc(nev, sizeof(uint64_t));
	rp->ev_count = calloc(nev, sizeof(uint64_t));
	if (!rp->ev_period || !rp->ev_count)
		return;
	for (i = 0; i < rp->nr_rows; i++) {
		rp->ev_period[rp->rows[i].event] += rp->rows[i].period;
		rp->ev_count[rp->rows[i].event] += rp->rows[i].count;
	}
	cmp_ctx = rp;
	qsort(rp->rows, rp->nr_rows, sizeof(*rp->rows), cmp_rows);
	for (e = 0; e < nev; e++) {
		const struct perf_reader_event *ev = perf_reader__event(rp->r, e);
		bool off = is_offcpu(ev);
		uint64_t total = off ? rp->ev_period[e] : rp->ev_count[e];

		if (!rp->ev_count[e])
			continue;
		if (off)
			printf("# %s: %.3f ms off-CPU in %llu samples\n", ev->name,
			       rp->ev_period[e] / 1e6, (unsigned long long)rp->ev_count[e]);
		else
			printf("# %s: %llu samples\n", ev->name,
			       (unsigned long long)rp->ev_count[e]);
		printf("# %12s %8s", off ? "ms" : "samples", "%");
		for (k = 0; k < rp->o.nr_keys; k++)
			printf(rp->o.keys[k] == SORT_COMM ? "  %-16s" : " %8s",
			       rp->o.keys[k] == SORT_COMM ? "comm" :
			       rp->o.keys[k] == SORT_PID ? "pid" : "tid");
		printf("\n");
		for (i = 0; i < rp->nr_rows; i++) {
			const struct row *r = &rp->rows[i];
			uint64_t v = off ? r->period : r->count;
			double pct = total ? 100.0 * (double)v / (double)total : 0;

			if (r->event != e || pct < rp->o.min_percent)
				continue;
			if (off)
				printf("  %12.3f %7.2f%%", r->period / 1e6, pct);
			else
				printf("  %12llu %7.2f%%", (unsigned long long)r->count, pct);
			for (k = 0; k < rp->o.nr_keys; k++) {
				if (rp->o.keys[k] == SORT_COMM)
					printf("  %-16s", r->comm);
				else
					printf(" %8u", rp->o.keys[k] == SORT_PID ? r->pid : r->tid);
			}
			printf("\n");
		}
		printf("\n");
	}
	if (rp->lost)
		printf("# WARNING: %llu records were lost while recording\n",
		       (unsigned long long)rp->lost);
}

int cmd_report(int argc, char **argv)
{
	struct argp argp = { report_options, report_parse, NULL, report_doc };
	struct report rp = { 0 };
	char err[1024];
	int ret;

	rp.o.input = "offcpu.data";
	rp.o.keys[0] = SORT_COMM;
	rp.o.keys[1] = SORT_PID;
	rp.o.keys[2] = SORT_TID;
	rp.o.nr_keys = 3;
	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, 0, NULL, &rp.o))
		return 2;
	rp.r = perf_reader__open(rp.o.input, err, sizeof(err));
	if (!rp.r) {
		pr_err("%s", err);
		return 1;
	}
	ret = read_all(&rp);
	if (ret < 0) {
		pr_err("%s: %s", rp.o.input, perf_reader__error(rp.r));
	} else {
		print_table(&rp);
		if (fflush(stdout) || ferror(stdout)) {
			pr_err("cannot write the report: %s", strerror(errno));
			ret = -EIO;
		}
	}
	hashmap__free(&rp.comms);
	hashmap__free(&rp.rows_idx);
	free(rp.comm_names);
	free(rp.rows);
	free(rp.ev_period);
	free(rp.ev_count);
	perf_reader__close(rp.r);
	return ret < 0 ? 1 : 0;
}
