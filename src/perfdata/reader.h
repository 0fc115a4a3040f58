/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perf.data reader: file mode (mapped; read whole when it comes on a
 * stream), a directory's data.N streams merged by time, and pipe mode (stdin,
 * a fifo or a file that starts with the 16-byte pipe header), read as it
 * comes in bounded memory. Every offset and size is checked before it is
 * used; errors name the offset and the record.
 *
 * A recording whose writer never finished (killed, crashed: a header without
 * EVENT_DESC, see writer.h) is read up to its last checkpoint, and its data.N
 * streams up to their last whole record; a file cut short, or a pipe-mode
 * stream that ends inside a record, up to its last whole record.
 * perf_reader__warning() then says what was not read. Anything else that
 * does not add up is refused with an error.
 */
#ifndef OFFCPU_PERFDATA_READER_H
#define OFFCPU_PERFDATA_READER_H

#include <stdbool.h>
#include "format.h"
#include "sample.h"

struct perf_reader_event {
	struct perf_event_attr attr;
	char *name; /* from EVENT_DESC or EVENT_UPDATE; a generic name otherwise */
	uint64_t *ids;
	size_t nr_ids;
};

struct perf_reader;

/*
 * PERF_READER_FORCE: read a file owned by another user (not root), and a
 * directory whose data.N streams are not exactly data.0 to data.N.
 */
#define PERF_READER_FORCE 1u

/*
 * Open @path ("-" for stdin; a directory in perf's directory format). Returns
 * NULL and fills @err on failure. A mapped file that shrinks while it is read
 * ends the process with an error naming it (exit 1), not with SIGBUS.
 */
struct perf_reader *perf_reader__open(const char *path, unsigned flags, char *err, size_t errlen);
void perf_reader__close(struct perf_reader *r);
/* Open a copy of @size bytes at @data (file or pipe mode), as from a file named "input". */
struct perf_reader *perf_reader__open_mem(const void *data, size_t size, char *err, size_t errlen);

bool perf_reader__is_pipe(const struct perf_reader *r);
size_t perf_reader__nr_events(const struct perf_reader *r);
const struct perf_reader_event *perf_reader__event(const struct perf_reader *r, size_t i);

/*
 * Next record of the data stream (8-byte aligned copy when needed). Returns 1
 * with *rec set, 0 at the end, or -EINVAL with perf_reader__error() set.
 * In pipe mode HEADER_ATTR, EVENT_UPDATE and HEADER_FEATURE records update
 * the reader's events and features before they are returned.
 */
int perf_reader__next(struct perf_reader *r, const struct perf_event_header **rec);

/* Offset of the record last returned by perf_reader__next(). */
uint64_t perf_reader__offset(const struct perf_reader *r);

/* Parse a SAMPLE record and find its event (index into the events). */
int perf_reader__parse_sample(struct perf_reader *r, const struct perf_event_header *rec,
			      struct perf_sample *s, size_t *event);

/*
 * What ordering records needs, without parsing a sample: the event of a
 * SAMPLE record and its time (its TIME word; 0 without), or the time of
 * another record's sample_id trailer (0 when it has none; *@event 0).
 * Returns 0, or -EINVAL with perf_reader__error() set.
 */
int perf_reader__record_time(struct perf_reader *r, const struct perf_event_header *rec,
			     size_t *event, uint64_t *time);

/*
 * Parse a SAMPLE record of event @event (perf_reader__record_time()'s), read
 * at @offset (perf_reader__offset() then): for a sample parsed after later
 * records were read. Errors name @offset.
 */
int perf_reader__parse_sample_of(struct perf_reader *r, const struct perf_event_header *rec,
				 size_t event, uint64_t offset, struct perf_sample *s);

/* Parse the sample_id trailer of a non-sample record (zeros if there is none). */
int perf_reader__parse_id(struct perf_reader *r, const struct perf_event_header *rec,
			  struct perf_sample *s);

/* A feature's payload, or NULL if the file has none. */
const void *perf_reader__feature(const struct perf_reader *r, int feat, size_t *size);

/* Bytes of record data consumed so far and in all (0: not known, a stream), for a progress line. */
void perf_reader__progress(const struct perf_reader *r, uint64_t *pos, uint64_t *total);

/* What was read: records handed out, SAMPLE records among them, and sample parses. */
struct perf_reader_stats {
	uint64_t records, samples, sample_parses;
};
void perf_reader__stats(const struct perf_reader *r, struct perf_reader_stats *st);

/*
 * What was not read, once perf_reader__next() returned 0: a recording that
 * never finished (read up to its last checkpoint; what follows it, and the
 * end of a data.N stream cut inside a record, are not), a file cut short,
 * or a pipe-mode stream that ends inside a record (their whole records
 * read). Fills @buf and returns its length; 0: nothing to say.
 */
size_t perf_reader__warning(const struct perf_reader *r, char *buf, size_t len);

/* The last error, naming the offset and record where it happened. */
const char *perf_reader__error(const struct perf_reader *r);

/* Decode a perf string at @p (u32 length, bytes) within @size bytes. Returns
 * bytes consumed or -EINVAL; *out points at the NUL-terminated text. */
int perf_string__decode(const void *p, size_t size, const char **out);

#endif
