/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers shared by every part: logging, full writes, number and list parsing. */
#ifndef OFFCPU_UTIL_H
#define OFFCPU_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#ifndef OFFCPU_VERSION
#define OFFCPU_VERSION "0.1.0"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The whole command line, for the CMDLINE feature. */
extern int cmdline_argc;
extern char **cmdline_argv;

/*
 * Log levels: errors and warnings always print; info with -v, debug with -vv.
 * Messages embed names and paths other users chose: each is printed escaped
 * as str_escape() does (a trailing newline, which the logger adds anyway, is
 * dropped), so no message can forge a line or send a terminal a sequence.
 */
extern int log_verbosity;
void pr_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * fprintf() @fmt to @f, escaped as the logger's messages are (str_escape()),
 * but for one newline it may end with: for what the summary prints, which
 * names other users' objects and processes.
 */
void fprintf_escaped(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* pwrite() all of @buf at @off, retrying short writes. Returns 0 or -errno. */
int write_full_at(int fd, const void *buf, size_t len, uint64_t off);
/* write() all of @buf, retrying short writes and EINTR. Returns 0 or -errno. */
int write_full(int fd, const void *buf, size_t len);

/* Parse a non-negative integer; the whole string must be consumed. */
int parse_u64(const char *s, uint64_t *out);
/* Parse a duration "1.5", "1.5s", "200ms", "3m" into nanoseconds (plain number: seconds). */
int parse_duration_ns(const char *s, uint64_t *out);
/* Parse "1,3-5" into a sorted, de-duplicated list; *out is malloc'ed. */
int parse_int_list(const char *s, int **out, size_t *nr);
/* Whether @v is one of the @n ints of @l (--pid, --tid lists). */
bool int_list_has(const int *l, size_t n, uint32_t v);

/*
 * Make room for @need elements of @elem bytes in the array *@p of capacity
 * *@cap (doubling, at least 16). Returns 0 or -ENOMEM (the array unchanged).
 */
int grow_array(void **p, size_t *cap, size_t need, size_t elem);

/*
 * Index of the last element of @arr[0..@n), sorted by @field, whose @field is
 * at most @x; SIZE_MAX when there is none. ("Which mapping, symbol or ORC
 * entry holds this address?")
 */
#define last_at_or_below(arr, n, field, x)                                                 \
	({                                                                                 \
		size_t lo_ = 0, hi_ = (n);                                                 \
		while (lo_ < hi_) {                                                        \
			size_t mid_ = lo_ + (hi_ - lo_) / 2;                               \
			if ((arr)[mid_].field <= (x))                                      \
				lo_ = mid_ + 1;                                            \
			else                                                               \
				hi_ = mid_;                                                \
		}                                                                          \
		lo_ ? lo_ - 1 : SIZE_MAX;                                                  \
	})

/*
 * Names other users choose (process and thread names, paths, symbol and file
 * names from their ELF files, event names in their perf.data) made safe to
 * show on a terminal, and unambiguous:
 *   \n \t \r and \\ for a newline, tab, carriage return and backslash;
 *   \xNN for other bytes below 0x20, for DEL (0x7f), and for each byte that
 *     is not part of valid UTF-8 (a lone 0x9b is CSI to a Latin-1 terminal);
 *   \uNNNN for the code points terminals act on or that reorder a line: the
 *     C1 controls U+0080..U+009F (xterm takes U+009B as CSI), the bidi
 *     controls (U+061C, U+200E/F, U+202A..U+202E, U+2066..U+2069), the
 *     line and paragraph separators U+2028/U+2029, and U+FFFE/U+FFFF (not
 *     characters: an XML parser, the SVG's, stops at them);
 *   everything else, valid UTF-8 included, as it is: names in other scripts
 *   stay readable.
 * Different names never escape to the same text.
 */
/* Escape @len bytes of @s into @out of @cap bytes (always terminated when
 * @cap > 0, cut at a character); returns the length the whole escaped text
 * needs, as snprintf() does. */
size_t str_escape_n(char *out, size_t cap, const char *s, size_t len);
/* The same for a string. */
size_t str_escape(char *out, size_t cap, const char *s);
/* The escaped text in a malloc'ed string, or NULL without memory. */
char *str_escape_dup(const char *s);
/*
 * Print @s escaped to @f, then spaces up to @width terminal columns (0: no
 * padding); returns the columns printed. A character of a wide script
 * counts two columns, a combining mark none.
 */
size_t fput_escaped(FILE *f, const char *s, size_t width);
/*
 * The code point of the UTF-8 sequence at @s (at most @n bytes) in *@cp;
 * returns its length, or 0 when it is not valid UTF-8 (overlong, a
 * surrogate, past U+10FFFF, cut short, or a stray continuation byte).
 */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);
/* Is @cp a code point str_escape() writes as \uNNNN? */
bool unicode_unsafe(uint32_t cp);

/*
 * A test hook: the OFFCPU_<@name> environment variable in a test build
 * (OFFCPU_TEST_HOOKS: make check builds one in build/test), NULL in any
 * other, which holds neither the names nor what they switch on (faults the
 * tests inject, knobs the benchmarks turn).
 */
#ifdef OFFCPU_TEST_HOOKS
#define test_hook(name) getenv("OFFCPU_" name)
#else
#define test_hook(name) ((const char *)NULL)
#endif
/* Whether test hook @v (test_hook()) is set to @want. */
static inline bool test_hook_is(const char *v, const char *want)
{
	return v && !strcmp(v, want);
}

/* Current CLOCK_MONOTONIC time in nanoseconds, the clock bpf_ktime_get_ns() uses. */
uint64_t now_ns(void);

/* Human readable size: "1.2 MiB". */
const char *fmt_size(uint64_t bytes, char *buf, size_t cap);

#endif
