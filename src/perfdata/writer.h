/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perf.data writer. Records are streamed into the data section as they come.
 *
 * A file-mode file is readable from its first checkpoint on, whatever ends
 * the writer (SIGKILL, the OOM killer, a crash): when every event is declared
 * before the first record, the ids and attrs go right after the header (perf's
 * own layout), each event's name follows as an EVENT_UPDATE record at the
 * start of the data, and perf_writer__checkpoint() flushes what is buffered
 * and rewrites the header with data.size covering the whole records on disk.
 * A checkpoint header carries no feature but DIR_FORMAT (perf merges a
 * directory's data.N streams only with it), whose index and payload follow
 * the data and are taken out of the header before data overwrites them.
 * perf_writer__finish() writes the features after the data and the header
 * last: a file without EVENT_DESC in its header is one that never finished.
 *
 * Events may also be declared after records (allowed): the finish then puts
 * every event's attrs after the features, and until then checkpoints
 * describe only the events declared before the first record (with none,
 * they only flush).
 */
#ifndef OFFCPU_PERFDATA_WRITER_H
#define OFFCPU_PERFDATA_WRITER_H

#include <stdbool.h>
#include "format.h"

struct perf_writer;

/* Buffer for feature payloads in perf's encodings. */
struct featbuf {
	char *data;
	size_t len, cap;
	int err; /* first allocation error, sticky */
};

void featbuf__u32(struct featbuf *b, uint32_t v);
void featbuf__u64(struct featbuf *b, uint64_t v);
void featbuf__bytes(struct featbuf *b, const void *p, size_t n);
/* A perf string: u32 length (NUL included, padded to 64), then the bytes. */
void featbuf__string(struct featbuf *b, const char *s);
void featbuf__free(struct featbuf *b);

/*
 * Open a file-mode writer on @fd (a regular file, positioned anywhere; the
 * writer uses offsets from 0). Returns NULL with errno set.
 */
struct perf_writer *perf_writer__new(int fd);

/*
 * Open a pipe-mode writer on @fd (stdout, a pipe): the 16-byte header, then
 * records only. Events, features and build ids are written as records when
 * they are declared, so declare events before any record that uses them.
 */
struct perf_writer *perf_writer__new_pipe(int fd);
/* A headerless record stream: the data.N files of the directory format. */
struct perf_writer *perf_writer__new_stream(int fd);
/* The SAMPLE_TIME range noted so far (UINT64_MAX, 0 when empty). */
void perf_writer__time_range(const struct perf_writer *w, uint64_t *first, uint64_t *last);
/* Write out what is buffered (pipe readers see records as they come). */
int perf_writer__flush(struct perf_writer *w);

/*
 * Make what was written so far readable if the writer dies now: flush, then
 * (file mode) rewrite the header for the records on disk. Call it at the end
 * of a round: a reader of a file that never finished reads up to the last
 * checkpoint. Costs nothing when nothing was written since the last one; two
 * writes otherwise (four with DIR_FORMAT). Returns 0 or a negative errno.
 */
int perf_writer__checkpoint(struct perf_writer *w);

/*
 * Declare an event: its attr (sample_type etc.), name and the ids its records
 * carry. Must come before perf_writer__close(); may come after records.
 */
int perf_writer__add_event(struct perf_writer *w, const struct perf_event_attr *attr,
			   const char *name, const uint64_t *ids, size_t nr_ids);

/* Append one record; @rec->size must be a multiple of 8. */
int perf_writer__write(struct perf_writer *w, const struct perf_event_header *rec);

/* Widen the SAMPLE_TIME range to include @t. */
void perf_writer__note_time(struct perf_writer *w, uint64_t t);

/* Set a feature's payload (copied). EVENT_DESC and SAMPLE_TIME are made by the writer. */
int perf_writer__set_feature(struct perf_writer *w, int feat, const void *data, size_t size);

/* Add one BUILD_ID feature entry. */
int perf_writer__add_build_id(struct perf_writer *w, int32_t pid, bool kernel,
			      const uint8_t *id, size_t id_len, const char *filename);

/* Bytes of record data written so far. */
uint64_t perf_writer__data_size(const struct perf_writer *w);

/*
 * Write attrs, ids and features, patch the header and flush. Returns 0 or a
 * negative errno from the first failed write (ENOSPC...). Does not close fd.
 */
int perf_writer__finish(struct perf_writer *w);

/* Free the writer (without finishing); NULL is a no-op. */
void perf_writer__free(struct perf_writer *w);

/* Add the host features perf record writes: HOSTNAME, OSRELEASE, VERSION,
 * ARCH, NRCPUS, CPUDESC, CPUID, TOTAL_MEM, CMDLINE. */
int perf_writer__add_host_features(struct perf_writer *w, int argc, char **argv);

#endif
