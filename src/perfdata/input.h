/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Getting a perf.data input into memory, safely: a regular file is mapped
 * (a SIGBUS from a file truncated while it is read becomes an error naming
 * it and exit 1); a stream (stdin, a fifo, a device) is read with its
 * header and record sizes checked as it comes, so what is not perf.data is
 * refused after a few bytes; a file another user owns is refused unless
 * forced (perf's rule); a --threads directory's data.N streams must be
 * exactly data.0 to data.N, none a copy of another, unless forced.
 */
#ifndef OFFCPU_PERFDATA_INPUT_H
#define OFFCPU_PERFDATA_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Read @fd into a malloc'ed buffer, stopping early at what cannot be perf.data. */
int input__slurp(int fd, const uint8_t **data, size_t *size);
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
