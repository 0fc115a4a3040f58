// SPDX-License-Identifier: GPL-2.0
/*
 * The perf.data reader in file mode: the header, the attrs and their ids,
 * the feature index, the data section record by record, and in perf's
 * directory format (perf record --threads) the data.N streams next to it,
 * merged by time. The input is in memory (mapped, or read whole from a
 * stream) and stays there: features point into it.
 *
 * A file cut short is read up to its last whole record, a recording that
 * never finished (no EVENT_DESC: a checkpoint header) up to its last
 * checkpoint and its data.N streams up to their last whole record;
 * reader_file_warning() says what was not read. Anything else that does not
 * add up is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "reader_priv.h"

/* Give back the pages of a mapped input every this many bytes read. */
#define RELEASE_STEP (8ULL << 20)

static bool in_bounds(const struct perf_reader *r, uint64_t off, uint64_t size)
{
	return off <= r->size && size <= r->size - off;
}

int reader_file_open(struct perf_reader *r)
{
	struct perf_file_header *h = &r->hdr;
	uint64_t nr, i, attr_bytes, data_end, tail;
	int bit;

	if (r->size < sizeof(*h))
		return reader_fail(r, "file is %zu bytes, shorter than a perf.data header (104)",
				   r->size);
	memcpy(h, r->data, sizeof(*h));
	if (h->size != sizeof(*h))
		return reader_fail(r, "header size at offset 8 is %llu, expected 104",
				   (unsigned long long)h->size);
	if (h->attr_size < 64 + 16 || h->attr_size > MAX_ATTR_SIZE + 16)
		return reader_fail(r, "attr_size %llu in the header at offset 16 is not plausible",
				   (unsigned long long)h->attr_size);
	if (!in_bounds(r, h->attrs.offset, h->attrs.size))
		return reader_fail(r, "attrs section (offset %llu, size %llu) lies outside the "
				   "file", (unsigned long long)h->attrs.offset,
				   (unsigned long long)h->attrs.size);
	if (h->data.offset < sizeof(*h) || h->data.offset > r->size ||
	    h->data.offset + h->data.size < h->data.offset)
		return reader_fail(r, "data section (offset %llu, size %llu) lies outside the "
				   "%zu-byte file (truncated?)", (unsigned long long)h->data.offset,
				   (unsigned long long)h->data.size, r->size);
	data_end = h->data.offset + h->data.size;
	if (data_end > r->size) {
		/* cut short (a partial copy, a full disk): its whole records are read */
		r->truncated = true;
		r->want = h->data.size;
		data_end = r->size;
	}
	nr = h->attrs.size / h->attr_size;
	if (nr == 0)
		return reader_fail(r, "the file declares no event (attrs section is empty)");
	attr_bytes = h->attr_size - 16;
	for (i = 0; i < nr; i++) {
		const uint8_t *a = r->data + h->attrs.offset + i * h->attr_size;
		struct perf_file_section ids;
		int err;

		memcpy(&ids, a + attr_bytes, sizeof(ids));
		if (!in_bounds(r, ids.offset, ids.size) || ids.size % 8)
			return reader_fail(r, "ids of event %llu (offset %llu, size %llu) lie "
					   "outside the file", (unsigned long long)i,
					   (unsigned long long)ids.offset,
					   (unsigned long long)ids.size);
		err = reader_add_event(r, a, attr_bytes, r->data + ids.offset, ids.size / 8);
		if (err)
			return err;
	}
	/*
	 * perf never sets bit 0 (reserved) or a bit past 63 (it defines about
	 * 32): a header that does is damaged, and its index would be misread.
	 */
	if ((h->features[0] & 1) || h->features[1] || h->features[2] || h->features[3])
		return reader_fail(r, "the feature bitmap at offset 72 has bits no perf sets "
				   "(reserved bit 0, or bits past 63): damaged header");
	/* feature index right after the data */
	tail = data_end;
	if (!r->truncated) {
		uint64_t off = data_end;

		for (bit = 0; bit < FEAT_MAX; bit++) {
			if (!(h->features[bit / 64] & (1ULL << (bit % 64))))
				continue;
			if (!in_bounds(r, off, sizeof(struct perf_file_section))) {
				/* a truncated tail: keep the data readable, drop features */
				memset(r->feat, 0, sizeof(r->feat));
				r->feats_lost = true;
				break;
			}
			memcpy(&r->feat[bit], r->data + off, sizeof(r->feat[bit]));
			off += sizeof(struct perf_file_section);
			if (off > tail)
				tail = off;
			if (!in_bounds(r, r->feat[bit].offset, r->feat[bit].size)) {
				memset(&r->feat[bit], 0, sizeof(r->feat[bit]));
				r->feats_lost = true;
			} else if (r->feat[bit].size && r->feat[bit].offset < data_end) {
				return reader_fail(r, "feature %d's section (offset %llu, size "
						   "%llu) lies before the end of the data: damaged "
						   "header",
						   bit, (unsigned long long)r->feat[bit].offset,
						   (unsigned long long)r->feat[bit].size);
			} else if (r->feat[bit].offset + r->feat[bit].size > tail) {
				tail = r->feat[bit].offset + r->feat[bit].size;
			}
		}
	} else if (h->features[0]) {
		r->feats_lost = true;
	}
	/*
	 * Writers that finish (perf, offcpu) always write EVENT_DESC; offcpu's
	 * checkpoint headers never do: without it, the recording never finished.
	 */
	r->unfinished = !(h->features[0] & (1ULL << FEAT_EVENT_DESC));
	if (r->unfinished && !r->truncated && r->size > tail)
		r->after = r->size - tail;
	if (r->feat[FEAT_EVENT_DESC].size)
		reader_apply_event_desc(r, r->data + r->feat[FEAT_EVENT_DESC].offset,
					r->feat[FEAT_EVENT_DESC].size);
	r->pos = h->data.offset;
	r->end = data_end;
	return 0;
}

/* X/data.0 ... X/data.N next to X/data (input.c checks they are all there), merged by time. */
int reader_dir_open(struct perf_reader *r, const char *dir, unsigned flags, char *err,
		    size_t errlen)
{
	struct input_stream *v;
	size_t n, i;
	int e;

	if (!r->feat[FEAT_DIR_FORMAT].size)
		return 0; /* as perf: without DIR_FORMAT, data.N are not part of the file */
	e = input__streams(dir, flags, &v, &n, err, errlen);
	if (e)
		return e;
	r->st = calloc(n + 1, sizeof(*r->st));
	if (!r->st) {
		input__free_streams(v, n);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->streams = v;
	r->nr_streams = n;
	r->st[0] = (struct rstream){ r->data, r->size, r->pos, r->end, 0, false, 0, -1 };
	for (i = 0; i < n; i++)
		r->st[i + 1] = (struct rstream){ v[i].data, v[i].size, 0, v[i].size, 0, false, 0,
						 v[i].number };
	r->nr_st = n + 1;
	return 0;
}

/* The time of the record at the head of stream @s; 0 when it has none. */
static uint64_t head_time(struct perf_reader *r, const struct rstream *s)
{
	const struct perf_event_header *rec = (const void *)r->peek.bytes;
	struct perf_event_header h;
	struct perf_sample smp;
	uint64_t t;
	long ev;

	if (s->end - s->pos < sizeof(h))
		return 0;
	memcpy(&h, s->data + s->pos, sizeof(h));
	if (h.size < sizeof(h) || h.size > s->end - s->pos || h.size % 8)
		return 0;
	memcpy(r->peek.bytes, s->data + s->pos, h.size);
	memset(r->peek.bytes + h.size, 0, 8);
	if (h.type >= PERF_RECORD_HEADER_ATTR)
		return 0;
	ev = reader_find_event(r, rec, h.type == PERF_RECORD_SAMPLE);
	if (ev < 0 || !(r->events[ev].attr.sample_type & PERF_SAMPLE_TIME))
		return 0;
	/* only the time: the sample is parsed once, when it is used */
	if (h.type == PERF_RECORD_SAMPLE)
		return perf_sample__time(r->events[ev].attr.sample_type, rec, &t) ? 0 : t;
	if (!r->events[ev].attr.sample_id_all ||
	    perf_sample_id__parse(r->events[ev].attr.sample_type, rec, &smp))
		return 0;
	return smp.time;
}

/* Directory format: continue with the stream whose next record is oldest. */
static int pick_stream(struct perf_reader *r)
{
	size_t i, best = SIZE_MAX;

	r->st[r->cur_st].pos = r->pos;
	for (i = 0; i < r->nr_st; i++) {
		struct rstream *s = &r->st[i];

		if (s->pos >= s->end)
			continue;
		if (!s->head_known) {
			s->head_time = head_time(r, s);
			s->head_known = true;
		}
		if (best == SIZE_MAX || s->head_time < r->st[best].head_time)
			best = i;
	}
	if (best == SIZE_MAX)
		return 0;
	r->cur_st = best;
	r->base = r->st[best].data;
	r->pos = r->st[best].pos;
	r->end = r->st[best].end;
	r->st[best].head_known = false;
	return 1;
}

/*
 * The stream being read ends inside a record. Tolerated where the writer is
 * known not to have finished it: a data.N stream of a recording that never
 * finished, or a file cut short; the rest of that stream is not read.
 */
static bool cut_short(struct perf_reader *r)
{
	bool stream = r->nr_st && r->cur_st;

	if (stream ? !r->unfinished : !r->truncated)
		return false;
	if (stream)
		r->st[r->cur_st].cut = r->end - r->pos;
	else
		r->cut = r->end - r->pos;
	r->pos = r->end;
	return true;
}

/*
 * What was read of a mapped input is not read again (records are handed
 * out as copies; a feature asked for later faults its pages back in from
 * the file): its pages are given back as the reading goes, so a long file
 * costs no more memory than a short one. Not for an input read whole into
 * memory, whose pages would be lost.
 */
static void release_read(struct perf_reader *r)
{
	bool stream = r->nr_st && r->cur_st;
	uint64_t *released = r->nr_st ? &r->st[r->cur_st].released : &r->released;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), upto;

	if ((!stream && !r->mapped) || r->pos - *released < RELEASE_STEP)
		return;
	upto = r->pos & ~(page - 1);
	madvise((void *)(r->base + *released), upto - *released, MADV_DONTNEED);
	*released = upto;
}

int reader_file_next(struct perf_reader *r, const struct perf_event_header **rec)
{
	struct perf_event_header h;
	const uint8_t *p;

next:
	if (r->nr_st) {
		int e = pick_stream(r);

		if (e <= 0)
			return e;
	}
	if (r->pos >= r->end)
		return 0;
	r->cur = r->pos;
	if (r->end - r->pos < sizeof(h)) {
		if (cut_short(r))
			goto next;
		return reader_fail(r, "%llu stray bytes at the end of the data at offset %llu "
				   "(truncated?)", (unsigned long long)(r->end - r->pos),
				   (unsigned long long)r->pos);
	}
	p = r->base + r->pos;
	memcpy(&h, p, sizeof(h));
	if (h.size < sizeof(h))
		return reader_fail(r, "%s (type %u) at offset %llu has size %u",
				   reader_type_name(h.type), h.type, (unsigned long long)r->pos,
				   h.size);
	if (h.size > r->end - r->pos) {
		if (cut_short(r))
			goto next;
		return reader_fail(r, "%s (type %u, %u bytes) at offset %llu runs past the end of "
				   "the data (truncated?)", reader_type_name(h.type), h.type,
				   h.size, (unsigned long long)r->pos);
	}
	r->pos += h.size;
	/* Hand out an 8-aligned, 8-padded copy so every u64 read is in bounds. */
	memcpy(r->scratch.bytes, p, h.size);
	memset(r->scratch.bytes + h.size, 0, 8);
	*rec = (const void *)r->scratch.bytes;
	release_read(r);
	return 1;
}

size_t reader_file_warning(const struct perf_reader *r, char *buf, size_t len)
{
	uint64_t read, cut = 0, records = r->stats.records;
	size_t n = 0, i, cuts = 0;

	/* with streams, r->end is the current stream's */
	read = (r->nr_st ? r->st[0].end : r->end) - r->hdr.data.offset;
	for (i = 1; i < r->nr_st; i++) {
		read += r->st[i].end - r->st[i].cut;
		cut += r->st[i].cut;
		cuts += r->st[i].cut > 0;
	}
	if (r->unfinished) {
		reader_say(buf, len, &n, "the recording did not finish (its writer was killed or "
			   "crashed before it wrote the end of the file): read %llu records (%llu "
			   "bytes)", (unsigned long long)records,
			   (unsigned long long)(read - r->cut));
		if (r->nr_st > 1)
			reader_say(buf, len, &n, ": data up to its last checkpoint, %zu data.N "
				   "stream%s to the last whole record", r->nr_st - 1,
				   r->nr_st == 2 ? "" : "s");
		else
			reader_say(buf, len, &n, " up to its last checkpoint");
		if (r->after || cut)
			reader_say(buf, len, &n, "; not read:");
		if (r->after)
			reader_say(buf, len, &n, " %llu bytes written after that checkpoint",
				   (unsigned long long)r->after);
		if (cut)
			reader_say(buf, len, &n, "%s the last %llu bytes of %zu data.N stream%s (a "
				   "record cut short)", r->after ? " and" : "",
				   (unsigned long long)cut, cuts, cuts == 1 ? "" : "s");
		reader_say(buf, len, &n, "; missing: what is written at the end (build ids, the "
			   "host's description, the samples' time range)");
	} else if (r->truncated) {
		reader_say(buf, len, &n, "the file is cut short: its header announces %llu bytes "
			   "of records, it holds %llu: read the %llu whole records in them",
			   (unsigned long long)r->want, (unsigned long long)(read - r->cut),
			   (unsigned long long)records);
		if (r->cut)
			reader_say(buf, len, &n, "; not read: a record cut short (%llu bytes)",
				   (unsigned long long)r->cut);
		if (r->feats_lost)
			reader_say(buf, len, &n, "; its features (event names, build ids, sample "
				   "times) are lost");
	} else if (r->feats_lost) {
		reader_say(buf, len, &n, "the file is cut short after its records: some of its "
			   "features (event names, build ids, sample times) are lost");
	}
	return n < len ? n : len - 1;
}
