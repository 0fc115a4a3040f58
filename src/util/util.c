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

/*
 * @fmt formatted and escaped (str_escape()), but for one newline it may end
 * with (*@nl): malloc'd, or NULL without memory.
 */
static char *format_escaped(const char *fmt, va_list ap, bool *nl)
{
	char small[512], *msg = small, *out = NULL;
	size_t len, need;
	va_list aq;
	int n;

	*nl = false;
	va_copy(aq, ap);
	n = vsnprintf(small, sizeof(small), fmt, aq);
	va_end(aq);
	if (n >= (int)sizeof(small)) {
		msg = malloc((size_t)n + 1);
		if (msg)
			vsnprintf(msg, (size_t)n + 1, fmt, ap);
	}
	if (n >= 0 && msg) {
		len = (size_t)n;
		if (len && msg[len - 1] == '\n') {
			len--;
			*nl = true;
		}
		need = str_escape_n(NULL, 0, msg, len);
		out = malloc(need + 1);
		if (out)
			str_escape_n(out, need + 1, msg, len);
	}
	if (msg != small)
		free(msg);
	return out;
}

static void vlog(const char *prefix, const char *fmt, va_list ap)
{
	bool nl;
	char *out = format_escaped(fmt, ap, &nl);

	/* one call: the line is written whole, not interleaved with another thread's
	 * (the one newline a message may end with is the logger's) */
	fprintf(stderr, "offcpu: %s%s\n", prefix,
		out ? out : "(a message was lost: out of memory)");
	free(out);
}

void fprintf_escaped(FILE *f, const char *fmt, ...)
{
	va_list ap;
	bool nl;
	char *out;

	va_start(ap, fmt);
	out = format_escaped(fmt, ap, &nl);
	va_end(ap);
	fprintf(f, "%s%s", out ? out : "(a message was lost: out of memory)", nl ? "\n" : "");
	free(out);
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

	/*
	 * A decimal number only: strtod() also takes "nan", "inf", "infinity",
	 * hexadecimal ("0x1p4") and leading blanks and signs, and a NaN converts
	 * to no defined integer ("-d nan" once meant no limit at all).
	 */
	if (!s || !((s[0] >= '0' && s[0] <= '9') || (s[0] == '.' && s[1] >= '0' && s[1] <= '9')) ||
	    strpbrk(s, "xX"))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v != v || v < 0) /* v != v: a NaN, kept out above already */
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

bool int_list_has(const int *l, size_t n, uint32_t v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((uint32_t)l[i] == v)
			return true;
	return false;
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

size_t utf8_decode(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c, min;
	size_t len, i;

	if (!n)
		return 0;
	if (u[0] < 0x80) {
		*cp = u[0];
		return 1;
	}
	if (u[0] >= 0xc2 && u[0] <= 0xdf) {
		len = 2, c = u[0] & 0x1f, min = 0x80;
	} else if ((u[0] & 0xf0) == 0xe0) {
		len = 3, c = u[0] & 0x0f, min = 0x800;
	} else if (u[0] >= 0xf0 && u[0] <= 0xf4) {
		len = 4, c = u[0] & 0x07, min = 0x10000;
	} else {
		return 0; /* a continuation byte, 0xc0/0xc1 (always overlong) or 0xf5.. */
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((u[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (u[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

bool unicode_unsafe(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
	       cp == 0xfffe || cp == 0xffff;
}

/* Terminal columns of a code point: enough of wcwidth() to keep a table aligned. */
static size_t cp_width(uint32_t cp)
{
	static const uint32_t zero[][2] = {
		{ 0x0300, 0x036f }, { 0x1ab0, 0x1aff }, { 0x1dc0, 0x1dff }, { 0x200b, 0x200d },
		{ 0x20d0, 0x20ff }, { 0xfe00, 0xfe0f }, { 0xfe20, 0xfe2f },
	};
	static const uint32_t wide[][2] = {
		{ 0x1100, 0x115f },   { 0x2e80, 0x303e },   { 0x3041, 0x33ff },
		{ 0x3400, 0x4dbf },   { 0x4e00, 0x9fff },   { 0xa000, 0xa4cf },
		{ 0xac00, 0xd7a3 },   { 0xf900, 0xfaff },   { 0xfe30, 0xfe4f },
		{ 0xff00, 0xff60 },   { 0xffe0, 0xffe6 },   { 0x1f300, 0x1f64f },
		{ 0x1f900, 0x1f9ff }, { 0x20000, 0x3fffd },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(zero); i++)
		if (cp >= zero[i][0] && cp <= zero[i][1])
			return 0;
	for (i = 0; i < ARRAY_SIZE(wide); i++)
		if (cp >= wide[i][0] && cp <= wide[i][1])
			return 2;
	return 1;
}

/*
 * The escaped form of the character at @s (@n >= 1 bytes left) into @buf (at
 * least 8 bytes); returns its length, with the bytes it stands for in *@used
 * and the terminal columns it takes in *@cols.
 */
static size_t esc_char(const char *s, size_t n, char *buf, size_t *used, size_t *cols)
{
	unsigned char c = (unsigned char)*s;
	uint32_t cp;
	size_t k;

	*used = 1;
	if (c >= 0x20 && c < 0x7f && c != '\\') {
		buf[0] = (char)c;
		*cols = 1;
		return 1;
	}
	if (c == '\\' || c == '\n' || c == '\t' || c == '\r') {
		buf[0] = '\\';
		buf[1] = c == '\\' ? '\\' : c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
		*cols = 2;
		return 2;
	}
	k = c < 0x80 ? 0 : utf8_decode(s, n, &cp);
	if (!k) { /* a control byte, DEL, or a byte that is not UTF-8 */
		snprintf(buf, 8, "\\x%02x", c);
		*cols = 4;
		return 4;
	}
	*used = k;
	if (unicode_unsafe(cp)) {
		snprintf(buf, 8, "\\u%04x", (unsigned)cp);
		*cols = 6;
		return 6;
	}
	memcpy(buf, s, k);
	*cols = cp_width(cp);
	return k;
}

size_t str_escape_n(char *out, size_t cap, const char *s, size_t len)
{
	size_t total = 0, at = 0, used, cols, k;
	bool full = false;
	char buf[8];

	while (at < len) {
		k = esc_char(s + at, len - at, buf, &used, &cols);
		at += used;
		/* a character that does not fit ends the copy: never half of one */
		if (!full && total + k < cap)
			memcpy(out + total, buf, k);
		else if (!full) {
			full = true;
			if (cap)
				out[total] = 0;
		}
		total += k;
	}
	if (!full && cap)
		out[total] = 0;
	return total;
}

size_t str_escape(char *out, size_t cap, const char *s)
{
	return str_escape_n(out, cap, s, strlen(s));
}

char *str_escape_dup(const char *s)
{
	size_t need = str_escape(NULL, 0, s);
	char *out = malloc(need + 1);

	if (out)
		str_escape(out, need + 1, s);
	return out;
}

size_t fput_escaped(FILE *f, const char *s, size_t width)
{
	size_t len = strlen(s), at = 0, used, cols, total = 0, k;
	char buf[8];

	while (at < len) {
		k = esc_char(s + at, len - at, buf, &used, &cols);
		fwrite(buf, 1, k, f);
		at += used;
		total += cols;
	}
	for (; total < width; total++)
		fputc(' ', f);
	return total;
}
