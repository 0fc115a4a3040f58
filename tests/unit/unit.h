/* SPDX-License-Identifier: GPL-2.0 */
/* A minimal unit test harness: CHECK records a failure and goes on. */
#ifndef OFFCPU_UNIT_H
#define OFFCPU_UNIT_H

#include <stdio.h>
#include <string.h>

extern int unit_failures; /* failed checks in the current test */

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
				#cond);                                                    \
			unit_failures++;                                                   \
		}                                                                          \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                                 \
	do {                                                                               \
		unsigned long long _a = (unsigned long long)(a), _b = (unsigned long long)(b); \
		if (_a != _b) {                                                            \
			fprintf(stderr, "  %s:%d: %s == %s failed: %llu != %llu\n", __FILE__,  \
				__LINE__, #a, #b, _a, _b);                                 \
			unit_failures++;                                                   \
		}                                                                          \
	} while (0)

#define CHECK_STR(a, b)                                                                    \
	do {                                                                               \
		const char *_a = (a), *_b = (b);                                           \
		if (!_a || !_b || strcmp(_a, _b)) {                                        \
			fprintf(stderr, "  %s:%d: %s == \"%s\" failed: got \"%s\"\n",          \
				__FILE__, __LINE__, #a, _b ? _b : "(null)",                \
				_a ? _a : "(null)");                                       \
			unit_failures++;                                                   \
		}                                                                          \
	} while (0)

struct unit_test {
	const char *name;
	void (*fn)(void);
};

extern const struct unit_test perfdata_tests[];
extern const struct unit_test util_tests[];
extern const struct unit_test report_tests[];
extern const struct unit_test queue_tests[];
extern const struct unit_test outfile_tests[];
extern const struct unit_test options_tests[];
extern const struct unit_test summary_tests[];
extern const struct unit_test python_tests[];
extern const struct unit_test rings_tests[];
extern const struct unit_test unwind_tests[];
extern const struct unit_test oracle_tests[];
extern const struct unit_test names_tests[];
extern const struct unit_test locks_tests[];
extern const struct unit_test critpath_tests[];
extern const struct unit_test push_tests[];

#endif
