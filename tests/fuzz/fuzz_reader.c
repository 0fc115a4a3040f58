// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the perf.data reader: open the input (file or pipe
 * mode), walk every record, parse every sample and sample_id trailer, and
 * read the features the report uses. Build: make fuzz; run: see
 * tests/integration/report.sh (test_report_fuzz_reader).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "perfdata/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct perf_event_header *h;
	struct perf_reader *r;
	struct perf_sample s;
	char err[256];
	size_t ev, fsize, i;
	uint64_t sum = 0;
	int ret;

	r = perf_reader__open_mem(data, size, err, sizeof(err));
	if (!r)
		return 0;
	while ((ret = perf_reader__next(r, &h)) > 0) {
		if (h->type == PERF_RECORD_SAMPLE) {
			if (perf_reader__parse_sample(r, h, &s, &ev))
				continue;
			for (i = 0; i < s.nr_ips; i++)
				sum += s.ips[i];
			sum += s.period + perf_reader__event(r, ev)->attr.type;
		} else if (!perf_reader__parse_id(r, h, &s)) {
			sum += s.time;
		}
	}
	if (perf_reader__feature(r, FEAT_BUILD_ID, &fsize))
		sum += fsize;
	for (i = 0; i < perf_reader__nr_events(r); i++)
		sum += strlen(perf_reader__event(r, i)->name);
	(void)sum;
	perf_reader__close(r);
	return 0;
}
