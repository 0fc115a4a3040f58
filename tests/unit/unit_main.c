// SPDX-License-Identifier: GPL-2.0
/* Runs every unit test; prints one line per test and "N passed, N failed". */
#include <stdlib.h>
#include "unit.h"

int unit_failures;

int main(int argc, char **argv)
{
	const struct unit_test *suites[] = { perfdata_tests, queue_tests, util_tests, outfile_tests, options_tests,
					     summary_tests, rings_tests, push_tests, python_tests,
					     unwind_tests, oracle_tests,
					     report_tests, names_tests, locks_tests, critpath_tests };
	int passed = 0, failed = 0;
	size_t s;

	for (s = 0; s < sizeof(suites) / sizeof(suites[0]); s++) {
		const struct unit_test *t;

		for (t = suites[s]; t->name; t++) {
			if (argc > 1 && !strstr(t->name, argv[1]))
				continue;
			unit_failures = 0;
			t->fn();
			printf("%s %s\n", unit_failures ? "FAIL" : "ok  ", t->name);
			if (unit_failures)
				failed++;
			else
				passed++;
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
