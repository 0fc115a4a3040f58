// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "util.h"

int log_verbosity;
int cmdline_argc;
char **cmdline_argv;

static void vlog(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "offcpu: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

#define DEFINE_LOG(name, level, prefix)                                                    \
	void name(const char *fmt, ...)                                                    \
	{                                                                                  \
		va_list ap;                                                                \
		if (log_verbosity < (level))                                               \
			return;                                                            \
		va_start(ap, fmt);                                                         \
		vlog(prefix, fmt, ap);                                                     \
		va_end(ap);                                                                \
	}

DEFINE_LOG(pr_err, 0, "error: ")
DEFINE_LOG(pr_warn, 0, "warning: ")
DEFINE_LOG(pr_info, 1, "")
DEFINE_LOG(pr_debug, 2, "debug: ")

int write_full_at(int fd, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_duration_ns(const char *s, uint64_t *out)
{
	char *end;
	double v, mult = 1e9;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		mult = 1e9;
	else if (!strcmp(end, "ms"))
		mult = 1e6;
	else if (!strcmp(end, "us"))
		mult = 1e3;
	else if (!strcmp(end, "ns"))
		mult = 1;
	else if (!strcmp(end, "m"))
		mult = 60e9;
	else if (!strcmp(end, "h"))
		mult = 3600e9;
	else
		return -EINVAL;
	if (v * mult > 1.8e19)
		return -ERANGE;
	*out = (uint64_t)(v * mult + 0.5);
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

int parse_int_list(const char *s, int **out, size_t *nr)
{
	int *v = NULL;
	size_t n = 0, cap = 0, i, k;
	const char *p = s;

	if (!s || !*s)
		return -EINVAL;
	while (*p) {
		char *end;
		long a, b;

		errno = 0;
		if (*p < '0' || *p > '9')
			goto bad;
		a = strtol(p, &end, 10);
		if (errno || a < 0 || a > 0x3fffffff)
			goto bad;
		b = a;
		if (*end == '-') {
			p = end + 1;
			if (*p < '0' || *p > '9')
				goto bad;
			b = strtol(p, &end, 10);
			if (errno || b < a || b > 0x3fffffff || b - a > 65536)
				goto bad;
		}
		for (; a <= b; a++) {
			if (grow_array((void **)&v, &cap, n + 1, sizeof(*v))) {
				free(v);
				return -ENOMEM;
			}
			v[n++] = (int)a;
		}
		if (*end == ',' && end[1])
			p = end + 1;
		else if (*end == 0)
			p = end;
		else
			goto bad;
	}
	qsort(v, n, sizeof(*v), cmp_int);
	for (i = 0, k = 0; i < n; i++)
		if (k == 0 || v[k - 1] != v[i])
			v[k++] = v[i];
	*out = v;
	*nr = k;
	return 0;
bad:
	free(v);
	return -EINVAL;
}

int grow_array(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

const char *fmt_size(uint64_t bytes, char *buf, size_t cap)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, cap, "%.1f %s", v, units[u]);
	return buf;
}
