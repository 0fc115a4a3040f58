/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Getting a perf.data input in, safely: a regular file is mapped (a SIGBUS
 * from a file truncated while it is read becomes an error naming it and
 * exit 1); a pipe-mode stream (stdin, a fifo, a pipe-mode file) is read as
 * it comes through a window of bounded size (input_feed), so a stream of
 * any length is read in constant memory; a file-mode file that comes on a
 * stream is read whole, its header and record sizes checked as they come,
 * so what is not perf.data is refused after a few bytes; a file another
 * user owns is refused unless forced (perf's rule); a --threads directory's
 * data.N streams must be exactly data.0 to data.N, none a copy of another,
 * unless forced.
 */
#ifndef OFFCPU_PERFDATA_INPUT_H
#define OFFCPU_PERFDATA_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * A stream read as it comes: input_feed__want() makes the next bytes
 * available at input_feed__data(), keeping only what was not consumed. The
 * window holds INPUT_FEED_WINDOW bytes, and more only when asked for more at
 * once (a perf record is at most 64 KiB).
 */
#define INPUT_FEED_WINDOW (1u << 20)
struct input_feed {
	int fd; /* -1: the whole input is in buf */
	bool own_fd; /* closed by input_feed__close() */
	bool borrowed; /* buf is the caller's: not freed */
	bool eof;
	uint8_t *buf;
	size_t cap, pos, len; /* bytes [pos, len) of buf are read and not consumed */
	uint64_t off; /* offset in the input of buf[0] */
};

/* A feed on @fd (closed with it when @own_fd). Returns 0 or -ENOMEM. */
int input_feed__open(struct input_feed *f, int fd, bool own_fd);
/* A feed on @size bytes at @data, the caller's, which must outlive the feed. */
void input_feed__open_mem(struct input_feed *f, const uint8_t *data, size_t size);
/*
 * Make @n bytes available at input_feed__data(), reading as needed. Returns
 * how many are (fewer than @n only where the input ends), or -errno.
 */
ssize_t input_feed__want(struct input_feed *f, size_t n);
static inline const uint8_t *input_feed__data(const struct input_feed *f)
{
	return f->buf + f->pos;
}
/* @n bytes (available) are done with. */
static inline void input_feed__consume(struct input_feed *f, size_t n)
{
	f->pos += n;
}
/* The input offset of input_feed__data(). */
static inline uint64_t input_feed__offset(const struct input_feed *f)
{
	return f->off + f->pos;
}
void input_feed__close(struct input_feed *f);

/*
 * Read the rest of @f, from its first byte on (nothing consumed yet), into
 * a malloc'ed buffer, stopping early at what cannot be perf.data: for a
 * file-mode file on a stream, which must be read whole. Closes @f.
 */
int input__slurp(struct input_feed *f, const uint8_t **data, size_t *size);
/* Refuse (-EPERM, @err says why) a file owned by another user than us or root, unless @flags forces. */
int input__check_owner(const struct stat *st, const char *path, unsigned flags, char *err,
		       size_t errlen);
/* Turn a SIGBUS in [@start, @start + @size) into "@path shrank while it was being read", exit 1. */
void input__guard(const void *start, size_t size, const char *path);
void input__unguard(const void *start);

struct input_stream {
	const uint8_t *data; /* mapped, guarded */
	size_t size;
	long number; /* N of data.N */
};
/* Map @dir/data.0 ... data.N, checked complete and distinct (see above). */
int input__streams(const char *dir, unsigned flags, struct input_stream **out, size_t *nr,
		   char *err, size_t errlen);
void input__free_streams(struct input_stream *v, size_t nr);

#endif
