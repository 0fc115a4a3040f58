// SPDX-License-Identifier: GPL-2.0
/* The text of a perf map, parsed (pmtext.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pmtext.h"

int pmtext__grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap + *cap / 4;
	void *q;

	if (need <= *cap)
		return 0;
	if (n < need)
		n = need;
	q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* One "START SIZE NAME" line into @b; false past a bound. */
static bool parse_line(struct pmtext *b, char *line, size_t len)
{
	unsigned long long start, size;
	char *end, *name;
	size_t nlen;

	line[len] = 0;
	start = strtoull(line, &end, 16);
	if (end == line || *end != ' ')
		return true; /* not an entry: skipped */
	name = end + 1;
	size = strtoull(name, &end, 16);
	if (end == name || *end != ' ' || !size || size > UINT32_MAX || start + size < start)
		return true;
	name = end + 1;
	nlen = strlen(name);
	if (nlen && name[nlen - 1] == '\r')
		name[--nlen] = 0;
	if (pmtext__grow((void **)&b->e, &b->cap, b->nr + 1, sizeof(*b->e)) ||
	    pmtext__grow((void **)&b->names, &b->names_cap, b->names_len + nlen + 1, 1))
		return false;
	memcpy(b->names + b->names_len, name, nlen + 1);
	b->e[b->nr++] = (struct pmtext_entry){ .start = start, .size = (uint32_t)size,
					   .name = (uint32_t)b->names_len };
	b->names_len += nlen + 1;
	return true;
}

void pmtext__read(int fd, uint64_t off, uint64_t file_max, size_t read_max, struct pmtext *b,
		  volatile int *stop)
{
	char *buf;
	ssize_t n;
	size_t at = 0, i;

	if (off >= file_max) {
		b->over = true;
		return;
	}
	buf = malloc(read_max + 1);
	if (!buf)
		return;
	n = pread(fd, buf, read_max, (off_t)off);
	for (i = 0; n > 0 && i < (size_t)n; i++) {
		if (buf[i] != '\n')
			continue;
		if (!(b->nr & 0xffff) && stop && *stop)
			break;
		/* a line too long to be an entry is skipped whole */
		if (i - at < PMTEXT_LINE_MAX && !parse_line(b, buf + at, i - at)) {
			b->over = true;
			break;
		}
		at = i + 1;
	}
	/* a line longer than a whole read is no entry: skip what was read */
	if (n > 0 && !at && (size_t)n == read_max)
		at = (size_t)n;
	b->consumed = at; /* a partial last line is read again, whole, next time */
	free(buf);
}

void pmtext__free(struct pmtext *b)
{
	free(b->e);
	free(b->names);
	memset(b, 0, sizeof(*b));
}
