// SPDX-License-Identifier: GPL-2.0
/*
 * The perf.data reader in pipe mode (perf record -o -, offcpu record -o -):
 * after the 16-byte header, records only, events and features among them
 * as records (reader_meta() reads those). The stream is read as it comes
 * through input.c's bounded window, whatever its length: nothing of a
 * record is kept once the next is asked for, so a stream of any length is
 * read in constant memory.
 *
 * A stream that ends inside a record was cut when its writer died: its
 * whole records are read, and reader_pipe_warning() says what was not.
 */
#include <errno.h>
#include <string.h>
#include "reader_priv.h"

int reader_pipe_next(struct perf_reader *r, const struct perf_event_header **rec)
{
	struct perf_event_header h;
	ssize_t n = input_feed__want(&r->feed, sizeof(h));

	r->cur = input_feed__offset(&r->feed);
	if (n == -ENOMEM)
		return -ENOMEM;
	if (n < 0)
		return reader_fail(r, "cannot read the stream at offset %llu: %s",
				   (unsigned long long)r->cur, strerror((int)-n));
	if ((size_t)n < sizeof(h)) {
		if (n) /* else the end, between two records */
			r->cut = (uint64_t)n;
		input_feed__consume(&r->feed, (size_t)n);
		return 0;
	}
	memcpy(&h, input_feed__data(&r->feed), sizeof(h));
	if (h.size < sizeof(h))
		return reader_fail(r, "%s (type %u) at offset %llu has size %u",
				   reader_type_name(h.type), h.type, (unsigned long long)r->cur,
				   h.size);
	n = input_feed__want(&r->feed, h.size);
	if (n == -ENOMEM)
		return -ENOMEM;
	if (n < 0)
		return reader_fail(r, "cannot read the stream at offset %llu: %s",
				   (unsigned long long)r->cur, strerror((int)-n));
	if ((size_t)n < h.size) {
		r->cut = (uint64_t)n;
		input_feed__consume(&r->feed, (size_t)n);
		return 0;
	}
	/* Hand out an 8-aligned, 8-padded copy so every u64 read is in bounds. */
	memcpy(r->scratch.bytes, input_feed__data(&r->feed), h.size);
	memset(r->scratch.bytes + h.size, 0, 8);
	input_feed__consume(&r->feed, h.size);
	*rec = (const void *)r->scratch.bytes;
	return 1;
}

size_t reader_pipe_warning(const struct perf_reader *r, char *buf, size_t len)
{
	size_t n = 0;

	if (r->cut)
		reader_say(buf, len, &n, "the stream ends inside a record (its writer was killed, "
			   "or it was cut short): read %llu records; not read: the last %llu bytes",
			   (unsigned long long)r->stats.records, (unsigned long long)r->cut);
	return n < len ? n : len - 1;
}
