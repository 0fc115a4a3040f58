// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include "sample.h"

#define ENC_SUPPORTED                                                                      \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |     \
	 PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |      \
	 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW | PERF_SAMPLE_WEIGHT | \
	 PERF_SAMPLE_CGROUP)

static uint64_t pack32(uint32_t lo, uint32_t hi)
{
	return (uint64_t)lo | ((uint64_t)hi << 32);
}

int perf_sample__encode(uint64_t st, const struct perf_sample *s, void *buf, size_t cap)
{
	size_t raw_words = 0, n = 0, need;
	uint64_t *out = (uint64_t *)((char *)buf + sizeof(struct perf_event_header));
	struct perf_event_header *h = buf;

	if (st & ~(uint64_t)ENC_SUPPORTED)
		return -EINVAL;
	if (st & PERF_SAMPLE_RAW)
		raw_words = PERF_ALIGN(s->raw_size + 4, 8) / 8;
	need = sizeof(*h) + 8 * (__builtin_popcountll(st) + raw_words) +
	       ((st & PERF_SAMPLE_CALLCHAIN) ? 8 * s->nr_ips : 0);
	if (st & PERF_SAMPLE_RAW)
		need -= 8; /* RAW's bit was counted once and again in raw_words */
	if (need > cap || need > 0xffff)
		return -ENOSPC;

	if (st & PERF_SAMPLE_IDENTIFIER)
		out[n++] = s->id;
	if (st & PERF_SAMPLE_IP)
		out[n++] = s->ip;
	if (st & PERF_SAMPLE_TID)
		out[n++] = pack32(s->pid, s->tid);
	if (st & PERF_SAMPLE_TIME)
		out[n++] = s->time;
	if (st & PERF_SAMPLE_ADDR)
		out[n++] = s->addr;
	if (st & PERF_SAMPLE_ID)
		out[n++] = s->id;
	if (st & PERF_SAMPLE_STREAM_ID)
		out[n++] = s->stream_id;
	if (st & PERF_SAMPLE_CPU)
		out[n++] = pack32(s->cpu, s->cpu_res);
	if (st & PERF_SAMPLE_PERIOD)
		out[n++] = s->period;
	if (st & PERF_SAMPLE_CALLCHAIN) {
		out[n++] = s->nr_ips;
		if (s->nr_ips)
			memcpy(&out[n], s->ips, 8 * s->nr_ips);
		n += s->nr_ips;
	}
	if (st & PERF_SAMPLE_RAW) {
		char *p = (char *)&out[n];

		memset(p, 0, raw_words * 8);
		memcpy(p, &s->raw_size, 4);
		if (s->raw_size)
			memcpy(p + 4, s->raw, s->raw_size);
		n += raw_words;
	}
	if (st & PERF_SAMPLE_WEIGHT)
		out[n++] = s->weight;
	if (st & PERF_SAMPLE_CGROUP)
		out[n++] = s->cgroup;

	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)(sizeof(*h) + 8 * n);
	return h->size;
}

/* A bounds-checked cursor over a record's u64 words. */
struct cursor {
	const uint64_t *p;
	size_t left; /* words */
	bool bad;
};

static uint64_t take(struct cursor *c)
{
	if (c->left == 0) {
		c->bad = true;
		return 0;
	}
	c->left--;
	return *c->p++;
}

static void skip(struct cursor *c, uint64_t words)
{
	if (words > c->left) {
		c->bad = true;
		c->left = 0;
		return;
	}
	c->left -= words;
	c->p += words;
}

static uint64_t read_format_words(uint64_t rf)
{
	uint64_t one = 1 + !!(rf & PERF_FORMAT_ID) + !!(rf & (1u << 4) /* LOST */);

	if (rf & PERF_FORMAT_GROUP)
		return 0; /* variable: handled by the caller */
	return one + !!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) +
	       !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING);
}

int perf_sample__parse(const struct perf_event_attr *attr, const struct perf_event_header *rec,
		       struct perf_sample *s, const char **why)
{
	uint64_t st = attr->sample_type, v;
	struct cursor c = {
		.p = (const uint64_t *)(rec + 1),
		.left = (rec->size - sizeof(*rec)) / 8,
	};

	memset(s, 0, sizeof(*s));
	*why = NULL;
	if (st & PERF_SAMPLE_IDENTIFIER)
		s->id = take(&c);
	if (st & PERF_SAMPLE_IP)
		s->ip = take(&c);
	if (st & PERF_SAMPLE_TID) {
		v = take(&c);
		s->pid = (uint32_t)v;
		s->tid = (uint32_t)(v >> 32);
	}
	if (st & PERF_SAMPLE_TIME)
		s->time = take(&c);
	if (st & PERF_SAMPLE_ADDR)
		s->addr = take(&c);
	if (st & PERF_SAMPLE_ID)
		s->id = take(&c);
	if (st & PERF_SAMPLE_STREAM_ID)
		s->stream_id = take(&c);
	if (st & PERF_SAMPLE_CPU) {
		uint64_t v = take(&c);

		s->cpu = (uint32_t)v;
		s->cpu_res = (uint32_t)(v >> 32);
	}
	if (st & PERF_SAMPLE_PERIOD)
		s->period = take(&c);
	if (st & PERF_SAMPLE_READ) {
		uint64_t rf = attr->read_format;

		if (rf & PERF_FORMAT_GROUP) {
			uint64_t nr = take(&c), per = 1 + !!(rf & PERF_FORMAT_ID) + !!(rf & (1u << 4));

			skip(&c, !!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) +
					 !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING));
			if (nr > c.left / per) {
				*why = "read group larger than the record";
				return -EINVAL;
			}
			skip(&c, nr * per);
		} else {
			skip(&c, read_format_words(rf));
		}
	}
	if (st & PERF_SAMPLE_CALLCHAIN) {
		s->nr_ips = take(&c);
		if (s->nr_ips > c.left) {
			*why = "callchain longer than the record";
			return -EINVAL;
		}
		s->ips = c.p;
		skip(&c, s->nr_ips);
	}
	if (st & PERF_SAMPLE_RAW) {
		const uint32_t *raw = (const uint32_t *)c.p;

		if (c.left == 0 || raw[0] > c.left * 8 - 4) {
			*why = "raw data larger than the record";
			return -EINVAL;
		}
		s->raw_size = raw[0];
		s->raw = raw + 1;
		skip(&c, PERF_ALIGN((uint64_t)s->raw_size + 4, 8) / 8);
	}
	if (st & PERF_SAMPLE_BRANCH_STACK) {
		uint64_t nr = take(&c);

		if (attr->branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX)
			skip(&c, 1);
		if (nr > c.left / 3) {
			*why = "branch stack larger than the record";
			return -EINVAL;
		}
		skip(&c, nr * 3);
	}
	if (st & PERF_SAMPLE_REGS_USER) {
		s->regs_abi = take(&c);
		if (s->regs_abi) {
			s->regs_user = c.p;
			s->nr_regs_user = (uint32_t)__builtin_popcountll(attr->sample_regs_user);
			skip(&c, s->nr_regs_user);
		}
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		uint64_t size = take(&c);

		if (size) {
			if (size / 8 > c.left) {
				*why = "user stack larger than the record";
				return -EINVAL;
			}
			s->stack_user = c.p;
			skip(&c, PERF_ALIGN(size, 8) / 8);
			s->stack_user_size = take(&c); /* dyn_size */
			if (s->stack_user_size > size)
				s->stack_user_size = size;
		}
	}
	if (st & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT))
		s->weight = take(&c);
	if (st & PERF_SAMPLE_DATA_SRC)
		skip(&c, 1);
	if (st & PERF_SAMPLE_TRANSACTION)
		skip(&c, 1);
	if (st & PERF_SAMPLE_REGS_INTR) {
		if (take(&c))
			skip(&c, __builtin_popcountll(attr->sample_regs_intr));
	}
	if (st & PERF_SAMPLE_PHYS_ADDR)
		skip(&c, 1);
	if (st & PERF_SAMPLE_CGROUP)
		s->cgroup = take(&c);
	if (st & PERF_SAMPLE_DATA_PAGE_SIZE)
		skip(&c, 1);
	if (st & PERF_SAMPLE_CODE_PAGE_SIZE)
		skip(&c, 1);
	if (st & PERF_SAMPLE_AUX) {
		uint64_t size = take(&c);

		skip(&c, PERF_ALIGN(size, 8) / 8);
	}
	if (c.bad) {
		*why = "sample shorter than its sample_type says";
		return -EINVAL;
	}
	return 0;
}

int perf_sample__time(uint64_t st, const struct perf_event_header *rec, uint64_t *time)
{
	size_t at = !!(st & PERF_SAMPLE_IDENTIFIER) + !!(st & PERF_SAMPLE_IP) +
		    !!(st & PERF_SAMPLE_TID);

	*time = 0;
	if (!(st & PERF_SAMPLE_TIME))
		return 0;
	if (rec->size < sizeof(*rec) + 8 * (at + 1))
		return -EINVAL;
	memcpy(time, (const uint64_t *)(rec + 1) + at, sizeof(*time));
	return 0;
}

size_t perf_sample_id__size(uint64_t st)
{
	return 8 * __builtin_popcountll(st & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
					      PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
					      PERF_SAMPLE_IDENTIFIER));
}

void perf_sample_id__encode(uint64_t st, const struct perf_sample *s, void *buf)
{
	uint64_t *out = buf;
	size_t n = 0;

	if (st & PERF_SAMPLE_TID)
		out[n++] = pack32(s->pid, s->tid);
	if (st & PERF_SAMPLE_TIME)
		out[n++] = s->time;
	if (st & PERF_SAMPLE_ID)
		out[n++] = s->id;
	if (st & PERF_SAMPLE_STREAM_ID)
		out[n++] = s->stream_id;
	if (st & PERF_SAMPLE_CPU)
		out[n++] = pack32(s->cpu, s->cpu_res);
	if (st & PERF_SAMPLE_IDENTIFIER)
		out[n++] = s->id;
}

int perf_sample_id__parse(uint64_t st, const struct perf_event_header *rec, struct perf_sample *s)
{
	size_t size = perf_sample_id__size(st);
	const uint64_t *p;
	uint64_t v;

	memset(s, 0, sizeof(*s));
	if (rec->size < sizeof(*rec) + size)
		return -EINVAL;
	p = (const uint64_t *)((const char *)rec + rec->size - size);
	if (st & PERF_SAMPLE_TID) {
		v = *p++;
		s->pid = (uint32_t)v;
		s->tid = (uint32_t)(v >> 32);
	}
	if (st & PERF_SAMPLE_TIME)
		s->time = *p++;
	if (st & PERF_SAMPLE_ID)
		s->id = *p++;
	if (st & PERF_SAMPLE_STREAM_ID)
		s->stream_id = *p++;
	if (st & PERF_SAMPLE_CPU) {
		s->cpu = (uint32_t)*p;
		s->cpu_res = (uint32_t)(*p++ >> 32);
	}
	if (st & PERF_SAMPLE_IDENTIFIER)
		s->id = *p++;
	return 0;
}
