/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The perf.data reader's insides, shared by its parts and by nothing else:
 * reader_open.c (which kind of input it is), reader.c (events, ids,
 * samples, features), reader_file.c (file mode, mapped or read whole, and a
 * directory's data.N streams merged by time) and reader_pipe.c (pipe mode,
 * read as it comes in bounded memory). Every record they hand out is an
 * 8-aligned copy with 8 zero bytes after it, in scratch.
 */
#ifndef OFFCPU_PERFDATA_READER_PRIV_H
#define OFFCPU_PERFDATA_READER_PRIV_H

#include "input.h"
#include "reader.h"

#define MAX_EVENTS 4096
#define MAX_ATTR_SIZE 512

/* Directory format: X/data's data section is stream 0, X/data.N stream N + 1. */
struct rstream {
	const uint8_t *data;
	size_t size;
	uint64_t pos, end, head_time;
	bool head_known;
	uint64_t cut; /* bytes at its end not read: a record the writer did not finish */
	long number; /* N of data.N; -1 for X/data */
	uint64_t released; /* bytes from its start whose pages were given back */
};

struct id_entry {
	uint64_t id;
	size_t event;
};

struct perf_reader {
	/* file mode: the whole input, mapped or read whole from a stream */
	const uint8_t *data;
	size_t size;
	const uint8_t *base; /* what pos and end index: data, or a data.N stream */
	struct rstream *st;
	size_t nr_st, cur_st;
	struct input_stream *streams; /* data.0 ... data.N, mapped */
	size_t nr_streams;
	bool mapped, pipe;
	/* pipe mode: the stream, read as it comes */
	struct input_feed feed;
	struct perf_file_header hdr;
	struct perf_reader_event *events;
	size_t nr_events;
	struct id_entry *idx; /* sorted by id */
	size_t nr_idx;
	bool idx_dirty;
	uint64_t pos, end, cur;
	uint64_t released; /* bytes of a mapped file whose pages were given back (no streams) */
	struct perf_reader_stats stats;
	/*
	 * A file-mode header without EVENT_DESC: the writer was killed before
	 * it finished (a checkpoint header), so the data it vouches for ends at
	 * the last checkpoint, @after bytes follow it unread, and a data.N
	 * stream may end inside a record.
	 */
	bool unfinished;
	uint64_t after;
	/* a finished file shorter than its header says: @want bytes of records claimed */
	bool truncated, feats_lost;
	uint64_t want, cut; /* @cut: bytes of a record cut short at the end of the data */
	struct perf_file_section feat[FEAT_MAX];
	/* pipe mode features arrive as records and are copied here */
	void *pipe_feat[FEAT_MAX];
	size_t pipe_feat_size[FEAT_MAX];
	union {
		uint64_t align;
		char bytes[65536 + 16];
	} scratch, peek;
	char err[512];
};

/* reader.c */
int reader_fail(struct perf_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *reader_type_name(uint32_t type);
int reader_add_event(struct perf_reader *r, const void *attr, size_t attr_bytes, const void *ids,
		     size_t nr_ids);
/* EVENT_DESC: names the events. */
void reader_apply_event_desc(struct perf_reader *r, const uint8_t *p, size_t size);
/* The event of @rec (a SAMPLE when @sample, else a record with a sample_id trailer); -1: none. */
long reader_find_event(struct perf_reader *r, const struct perf_event_header *rec, bool sample);
/* HEADER_ATTR, EVENT_UPDATE, HEADER_FEATURE: what they say of the events and features. */
int reader_meta(struct perf_reader *r, const struct perf_event_header *h);
/* Append to @buf at *@n what printf makes of @fmt, within @len. */
void reader_say(char *buf, size_t len, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* reader_file.c: r->data and r->size hold the input; check the header, find the data. */
int reader_file_open(struct perf_reader *r);
/* The directory @dir's data.N streams, when the header says it has them. */
int reader_dir_open(struct perf_reader *r, const char *dir, unsigned flags, char *err,
		    size_t errlen);
int reader_file_next(struct perf_reader *r, const struct perf_event_header **rec);
size_t reader_file_warning(const struct perf_reader *r, char *buf, size_t len);

/* reader_pipe.c: r->feed is past the 16-byte header. */
int reader_pipe_next(struct perf_reader *r, const struct perf_event_header **rec);
size_t reader_pipe_warning(const struct perf_reader *r, char *buf, size_t len);

#endif
