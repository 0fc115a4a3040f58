// SPDX-License-Identifier: GPL-2.0
/*
 * The perf.data reader's events and records: the events and their ids, the
 * records that describe them (EVENT_DESC, HEADER_ATTR, EVENT_UPDATE,
 * HEADER_FEATURE), finding a record's event and time, parsing samples and
 * sample_id trailers, features, errors and warnings. Opening an input is
 * reader_open.c's; reading its records reader_file.c's (file mode,
 * directories) and reader_pipe.c's (pipe mode).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "reader_priv.h"

int reader_fail(struct perf_reader *r, const char *fmt, ...)
{
	va_list ap;
	size_t n = 0;

	if (r->nr_st && r->cur_st)
		n = (size_t)snprintf(r->err, sizeof(r->err), "data.%ld: ", r->st[r->cur_st].number);
	va_start(ap, fmt);
	vsnprintf(r->err + n, sizeof(r->err) - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

const char *perf_reader__error(const struct perf_reader *r)
{
	return r->err;
}

bool perf_reader__is_pipe(const struct perf_reader *r)
{
	return r->pipe;
}

size_t perf_reader__nr_events(const struct perf_reader *r)
{
	return r->nr_events;
}

const struct perf_reader_event *perf_reader__event(const struct perf_reader *r, size_t i)
{
	return i < r->nr_events ? &r->events[i] : NULL;
}

uint64_t perf_reader__offset(const struct perf_reader *r)
{
	return r->cur;
}

int perf_string__decode(const void *p, size_t size, const char **out)
{
	uint32_t len;

	if (size < 4)
		return -EINVAL;
	memcpy(&len, p, 4);
	if (len == 0 || len > size - 4)
		return -EINVAL;
	if (!memchr((const char *)p + 4, 0, len))
		return -EINVAL;
	*out = (const char *)p + 4;
	return (int)(4 + len);
}

static const char *generic_name(const struct perf_event_attr *a, char *buf, size_t cap)
{
	static const char *sw[] = { "cpu-clock", "task-clock", "page-faults", "context-switches",
				    "cpu-migrations", "minor-faults", "major-faults",
				    "alignment-faults", "emulation-faults", "dummy", "bpf-output",
				    "cgroup-switches" };
	static const char *hw[] = { "cycles", "instructions", "cache-references", "cache-misses",
				    "branches", "branch-misses", "bus-cycles",
				    "stalled-cycles-frontend", "stalled-cycles-backend",
				    "ref-cycles" };

	if (a->type == PERF_TYPE_SOFTWARE && a->config < sizeof(sw) / sizeof(sw[0]))
		return sw[a->config];
	if (a->type == PERF_TYPE_HARDWARE && a->config < sizeof(hw) / sizeof(hw[0]))
		return hw[a->config];
	snprintf(buf, cap, "event-%u:%llu", a->type, (unsigned long long)a->config);
	return buf;
}

int reader_add_event(struct perf_reader *r, const void *attr, size_t attr_bytes, const void *ids,
		     size_t nr_ids)
{
	struct perf_reader_event *ev, *evs;
	char buf[64];

	if (r->nr_events >= MAX_EVENTS)
		return reader_fail(r, "more than %d events", MAX_EVENTS);
	evs = realloc(r->events, (r->nr_events + 1) * sizeof(*evs));
	if (!evs)
		return -ENOMEM;
	r->events = evs;
	ev = &evs[r->nr_events];
	memset(ev, 0, sizeof(*ev));
	memcpy(&ev->attr, attr,
	       attr_bytes < sizeof(ev->attr) ? attr_bytes : sizeof(ev->attr));
	ev->ids = malloc((nr_ids ? nr_ids : 1) * sizeof(uint64_t));
	ev->name = strdup(generic_name(&ev->attr, buf, sizeof(buf)));
	if (!ev->ids || !ev->name) {
		free(ev->ids);
		free(ev->name);
		return -ENOMEM;
	}
	if (nr_ids)
		memcpy(ev->ids, ids, nr_ids * sizeof(uint64_t));
	ev->nr_ids = nr_ids;
	r->nr_events++;
	r->idx_dirty = true;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	const struct id_entry *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static int build_index(struct perf_reader *r)
{
	size_t n = 0, i, k;

	for (i = 0; i < r->nr_events; i++)
		n += r->events[i].nr_ids;
	free(r->idx);
	r->idx = malloc((n ? n : 1) * sizeof(*r->idx));
	if (!r->idx)
		return -ENOMEM;
	r->nr_idx = 0;
	for (i = 0; i < r->nr_events; i++)
		for (k = 0; k < r->events[i].nr_ids; k++) {
			r->idx[r->nr_idx].id = r->events[i].ids[k];
			r->idx[r->nr_idx].event = i;
			r->nr_idx++;
		}
	qsort(r->idx, r->nr_idx, sizeof(*r->idx), cmp_id);
	r->idx_dirty = false;
	return 0;
}

static long event_of_id(struct perf_reader *r, uint64_t id)
{
	size_t lo = 0, hi;

	if (r->idx_dirty && build_index(r))
		return -1;
	hi = r->nr_idx;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->idx[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->nr_idx && r->idx[lo].id == id)
		return (long)r->idx[lo].event;
	return -1;
}

static void set_name(struct perf_reader_event *ev, const char *name)
{
	char *n = strdup(name);

	if (n) {
		free(ev->name);
		ev->name = n;
	}
}

/* EVENT_DESC: u32 nr, u32 attr_size, per event: attr, u32 nr_ids, string, ids */
void reader_apply_event_desc(struct perf_reader *r, const uint8_t *p, size_t size)
{
	uint32_t nr, asz, i, nids;
	size_t off = 8;

	if (size < 8)
		return;
	memcpy(&nr, p, 4);
	memcpy(&asz, p + 4, 4);
	for (i = 0; i < nr; i++) {
		const char *name;
		uint64_t first_id = 0;
		int n;
		long ev = -1;

		if (asz > size - off || size - off - asz < 4)
			return;
		off += asz;
		memcpy(&nids, p + off, 4);
		off += 4;
		n = perf_string__decode(p + off, size - off, &name);
		if (n < 0)
			return;
		off += (size_t)n;
		if (nids > (size - off) / 8)
			return;
		if (nids)
			memcpy(&first_id, p + off, 8);
		off += (size_t)nids * 8;
		if (nids)
			ev = event_of_id(r, first_id);
		if (ev < 0 && nr == r->nr_events)
			ev = (long)i;
		if (ev >= 0)
			set_name(&r->events[ev], name);
	}
}

const char *reader_type_name(uint32_t type)
{
	switch (type) {
	case PERF_RECORD_MMAP: return "MMAP";
	case PERF_RECORD_LOST: return "LOST";
	case PERF_RECORD_COMM: return "COMM";
	case PERF_RECORD_EXIT: return "EXIT";
	case PERF_RECORD_FORK: return "FORK";
	case PERF_RECORD_SAMPLE: return "SAMPLE";
	case PERF_RECORD_MMAP2: return "MMAP2";
	case PERF_RECORD_HEADER_ATTR: return "HEADER_ATTR";
	case PERF_RECORD_EVENT_UPDATE: return "EVENT_UPDATE";
	case PERF_RECORD_HEADER_FEATURE: return "HEADER_FEATURE";
	default: return "record";
	}
}

int reader_meta(struct perf_reader *r, const struct perf_event_header *h)
{
	const uint8_t *p = (const uint8_t *)h + sizeof(*h);
	size_t body = h->size - sizeof(*h);

	switch (h->type) {
	case PERF_RECORD_HEADER_ATTR: {
		uint32_t asz;

		if (body < 8)
			return reader_fail(r, "HEADER_ATTR at offset %llu is too short",
					   (unsigned long long)r->cur);
		memcpy(&asz, p + 4, 4);
		if (asz < 64 || asz > body || asz > MAX_ATTR_SIZE)
			return reader_fail(r, "HEADER_ATTR at offset %llu has attr size %u",
					   (unsigned long long)r->cur, asz);
		return reader_add_event(r, p, asz, p + asz, (body - asz) / 8);
	}
	case PERF_RECORD_EVENT_UPDATE: {
		uint64_t type, id;
		long ev;

		if (body < 17)
			return 0;
		memcpy(&type, p, 8);
		memcpy(&id, p + 8, 8);
		if (type != PERF_EVENT_UPDATE_NAME || !memchr(p + 16, 0, body - 16))
			return 0;
		ev = event_of_id(r, id);
		if (ev >= 0)
			set_name(&r->events[ev], (const char *)p + 16);
		return 0;
	}
	case PERF_RECORD_HEADER_FEATURE: {
		uint64_t feat;

		if (body < 8)
			return 0;
		memcpy(&feat, p, 8);
		if (feat >= FEAT_MAX)
			return 0;
		free(r->pipe_feat[feat]);
		r->pipe_feat[feat] = malloc(body - 8 ? body - 8 : 1);
		if (!r->pipe_feat[feat])
			return -ENOMEM;
		memcpy(r->pipe_feat[feat], p + 8, body - 8);
		r->pipe_feat_size[feat] = body - 8;
		if (feat == FEAT_EVENT_DESC)
			reader_apply_event_desc(r, r->pipe_feat[feat], body - 8);
		return 0;
	}
	}
	return 0;
}

void reader_say(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (*n >= len)
		return;
	va_start(ap, fmt);
	k = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	if (k > 0)
		*n += (size_t)k;
}

long reader_find_event(struct perf_reader *r, const struct perf_event_header *rec, bool sample)
{
	const struct perf_event_attr *a0;
	const uint64_t *w = (const void *)(rec + 1);
	size_t words = (rec->size - sizeof(*rec)) / 8, pos;
	long ev;

	if (r->nr_events == 0)
		return -1;
	if (r->nr_events == 1)
		return 0;
	a0 = &r->events[0].attr;
	if (a0->sample_type & PERF_SAMPLE_IDENTIFIER) {
		if (words == 0)
			return -1;
		pos = sample ? 0 : words - 1;
	} else if (a0->sample_type & PERF_SAMPLE_ID) {
		uint64_t st = a0->sample_type;

		if (sample) {
			pos = !!(st & PERF_SAMPLE_IP) + !!(st & PERF_SAMPLE_TID) +
			      !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ADDR);
		} else {
			size_t after = !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU) + 1;

			if (words < after)
				return -1;
			pos = words - after;
		}
		if (pos >= words)
			return -1;
	} else {
		return 0;
	}
	ev = event_of_id(r, w[pos]);
	return ev >= 0 ? ev : 0;
}

int perf_reader__parse_sample_of(struct perf_reader *r, const struct perf_event_header *rec,
				 size_t event, uint64_t offset, struct perf_sample *s)
{
	const char *why;

	r->stats.sample_parses++;
	if (event >= r->nr_events)
		return reader_fail(r, "SAMPLE at offset %llu: the file declares no event",
				   (unsigned long long)offset);
	if (rec->size % 8)
		return reader_fail(r, "SAMPLE at offset %llu has size %u, not a multiple of 8",
				   (unsigned long long)offset, rec->size);
	if (perf_sample__parse(&r->events[event].attr, rec, s, &why))
		return reader_fail(r, "SAMPLE at offset %llu (%u bytes): %s",
				   (unsigned long long)offset, rec->size, why);
	return 0;
}

int perf_reader__parse_sample(struct perf_reader *r, const struct perf_event_header *rec,
			      struct perf_sample *s, size_t *event)
{
	long ev = reader_find_event(r, rec, true);

	if (ev < 0)
		return reader_fail(r, "SAMPLE at offset %llu: the file declares no event",
				   (unsigned long long)r->cur);
	*event = (size_t)ev;
	return perf_reader__parse_sample_of(r, rec, (size_t)ev, r->cur, s);
}

int perf_reader__record_time(struct perf_reader *r, const struct perf_event_header *rec,
			     size_t *event, uint64_t *time)
{
	struct perf_sample s;
	long ev;

	*event = 0;
	*time = 0;
	if (rec->type >= PERF_RECORD_HEADER_ATTR)
		return 0;
	if (rec->type != PERF_RECORD_SAMPLE) {
		if (perf_reader__parse_id(r, rec, &s))
			return -EINVAL;
		*time = s.time;
		return 0;
	}
	ev = reader_find_event(r, rec, true);
	if (ev < 0)
		return reader_fail(r, "SAMPLE at offset %llu: the file declares no event",
				   (unsigned long long)r->cur);
	if (rec->size % 8)
		return reader_fail(r, "SAMPLE at offset %llu has size %u, not a multiple of 8",
				   (unsigned long long)r->cur, rec->size);
	if (perf_sample__time(r->events[ev].attr.sample_type, rec, time))
		return reader_fail(r, "SAMPLE at offset %llu (%u bytes): sample shorter than its "
				   "sample_type says", (unsigned long long)r->cur, rec->size);
	*event = (size_t)ev;
	return 0;
}

int perf_reader__parse_id(struct perf_reader *r, const struct perf_event_header *rec,
			  struct perf_sample *s)
{
	long ev = reader_find_event(r, rec, false);

	memset(s, 0, sizeof(*s));
	if (ev < 0 || !r->events[ev].attr.sample_id_all)
		return 0;
	if (rec->size % 8)
		return reader_fail(r, "%s at offset %llu has size %u, not a multiple of 8",
				   reader_type_name(rec->type), (unsigned long long)r->cur,
				   rec->size);
	if (perf_sample_id__parse(r->events[ev].attr.sample_type, rec, s))
		return reader_fail(r, "%s at offset %llu is too short for its sample_id",
				   reader_type_name(rec->type), (unsigned long long)r->cur);
	return 0;
}

const void *perf_reader__feature(const struct perf_reader *r, int feat, size_t *size)
{
	if (feat <= 0 || feat >= FEAT_MAX)
		return NULL;
	if (r->pipe) {
		*size = r->pipe_feat_size[feat];
		return r->pipe_feat[feat];
	}
	if (!r->feat[feat].size)
		return NULL;
	*size = r->feat[feat].size;
	return r->data + r->feat[feat].offset;
}

void perf_reader__progress(const struct perf_reader *r, uint64_t *pos, uint64_t *total)
{
	size_t i;

	if (r->pipe) {
		*pos = input_feed__offset(&r->feed);
		*total = r->feed.fd < 0 ? r->size : 0;
		return;
	}
	*pos = r->pos;
	*total = r->end;
	if (r->nr_st) {
		*pos = *total = 0;
		for (i = 0; i < r->nr_st; i++) {
			*pos += (i == r->cur_st ? r->pos : r->st[i].pos) - (i ? 0 : r->hdr.data.offset);
			*total += r->st[i].end - (i ? 0 : r->hdr.data.offset);
		}
	}
}

void perf_reader__stats(const struct perf_reader *r, struct perf_reader_stats *st)
{
	*st = r->stats;
}
