/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers shared by every part: logging, full writes, number and list parsing. */
#ifndef OFFCPU_UTIL_H
#define OFFCPU_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef OFFCPU_VERSION
#define OFFCPU_VERSION "0.1.0"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The whole command line, for the CMDLINE feature. */
extern int cmdline_argc;
extern char **cmdline_argv;

/* Log levels: errors and warnings always print; info with -v, debug with -vv. */
extern int log_verbosity;
void pr_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pr_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

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

/* Current CLOCK_MONOTONIC time in nanoseconds, the clock bpf_ktime_get_ns() uses. */
uint64_t now_ns(void);

/* Human readable size: "1.2 MiB". */
const char *fmt_size(uint64_t bytes, char *buf, size_t cap);

#endif
