// SPDX-License-Identifier: GPL-2.0
/* The loss table and the summary that reads it. No root needed. */
#include <stdlib.h>
#include "unit.h"
#include "record/summary.h"

static char *print(const struct summary *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	summary__print(f, s);
	fclose(f);
	return buf;
}

static void test_loss_table(void)
{
	bool seen[CNT_ALL] = { false };
	size_t i;

	for (i = 0; i < nr_losses; i++) {
		CHECK(losses[i].counter >= 0 && losses[i].counter < CNT_ALL);
		CHECK(!seen[losses[i].counter]); /* each counter named once */
		seen[losses[i].counter] = true;
		/* only blocks missing from the file go into perf's LOST_SAMPLES */
		CHECK(losses[i].lost_samples == (losses[i].kind == LOSS_TIME));
		CHECK(losses[i].sentence && *losses[i].sentence);
	}
	/* every counter that can lose or degrade is in the table */
	CHECK(seen[OFFCPU_CNT_DROP_MAP_FULL] && seen[OFFCPU_CNT_OUTPUT_FULL] &&
	      seen[OFFCPU_CNT_STACK_FAIL] && seen[CNT_PROG_MISSES] && seen[CNT_SIDEBAND_LOST] &&
	      seen[OFFCPU_CNT_UNPAIRED] && seen[OFFCPU_CNT_MISSED_OUT] && seen[OFFCPU_CNT_NO_STORAGE]);
}

static void test_summary_lines(void)
{
	uint64_t cnt[CNT_ALL] = { 0 };
	struct summary s = { .cnt = cnt, .output = "x.data", .file_size = 2048 };
	char *out;

	cnt[OFFCPU_CNT_BLOCKS] = 10;
	out = print(&s);
	CHECK(out && strstr(out, "offcpu: 10 blocks seen"));
	CHECK(out && strstr(out, "offcpu: wrote x.data (2.0 KiB)"));
	CHECK(out && strstr(out, "nothing dropped"));
	free(out);
	/* a block summed because the buffer was full is not lost time */
	cnt[OFFCPU_CNT_OUTPUT_FULL] = 7;
	CHECK_EQ_U64(losses__lost_samples(cnt), 0);
	out = print(&s);
	CHECK(out && strstr(out, "WARNING: this recording is incomplete"));
	CHECK(out && strstr(out, "[degraded] 7 long blocks not streamed"));
	CHECK(out && !strstr(out, "[time lost]"));
	free(out);
	cnt[OFFCPU_CNT_DROP_MAP_FULL] = 3;
	cnt[CNT_PROG_MISSES] = 2;
	CHECK_EQ_U64(losses__lost_samples(cnt), 5);
	out = print(&s);
	CHECK(out && strstr(out, "[time lost] 3 blocks lost: the summary map was full"));
	CHECK(out && strstr(out, "[time lost] 2 context switches not seen"));
	free(out);
	/* test faults alone are no loss */
	memset(cnt, 0, sizeof(cnt));
	cnt[OFFCPU_CNT_FAULTS] = 3;
	out = print(&s);
	CHECK(out && strstr(out, "nothing dropped") && strstr(out, "(test) 3 switch-outs"));
	free(out);
	s.rotate = true;
	s.files_written = 5;
	s.files_on_disk = 2;
	s.files_removed = 3;
	out = print(&s);
	CHECK(out && strstr(out, "wrote 5 files, 2 of them on disk now (3 removed by"));
	free(out);
}

const struct unit_test summary_tests[] = {
	{ "summary: one loss table", test_loss_table },
	{ "summary: lines and losses", test_summary_lines },
	{ 0 },
};
