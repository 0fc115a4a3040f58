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
		/* a time is known only of blocks, and only of those that ended */
		CHECK(losses[i].ns_counter < 0 ||
		      (losses[i].unit == UNIT_BLOCKS && !losses[i].unseen));
		CHECK(losses[i].ns_counter < CNT_ALL);
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
	CHECK(out && strstr(out, "[time lost] 3 blocks lost: the summary map and the output buffer "
				"were full"));
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

/* The totals are the program's counts of every block, whatever was written. */
static void test_summary_totals(void)
{
	uint64_t cnt[CNT_ALL] = { 0 };
	struct summary s = { .cnt = cnt, .output = "x.data", .offcpu_ns = 278000000, .summed = 128,
			     .threads = 1 };
	char *out;

	cnt[OFFCPU_CNT_BLOCKS] = 1024;
	cnt[OFFCPU_CNT_BLOCKS_NS] = 1326000000;
	cnt[OFFCPU_CNT_DROP_MAP_FULL] = 852;
	cnt[OFFCPU_CNT_DROP_MAP_FULL_NS] = 1048000000;
	out = print(&s);
	CHECK(out && strstr(out, "offcpu: 1024 blocks seen (1.326 s off-CPU), 128 samples written "
				 "(0.278 s in 1 threads: 0 streamed, 128 summed)"));
	/* a large loss: no "slightly" */
	CHECK(out && strstr(out, "offcpu: WARNING: this recording is incomplete: 852 of 1,024 "
				 "blocks (83.2%) are missing, 1.05 s of 1.33 s off-CPU "
				 "(79.0%):\n"));
	CHECK(out && strstr(out, "[time lost] 852 blocks lost: the summary map and the output "
				 "buffer were full (raise --max-stacks or --buffer-size); 852 of "
				 "1,024 blocks (83.2%), 1.05 s of 1.33 s off-CPU (79.0%)\n"));
	free(out);
}

/* Each loss with its share, and the warning worded by the losses' size. */
static void test_summary_shares(void)
{
	uint64_t cnt[CNT_ALL] = { 0 };
	struct summary s = { .cnt = cnt, .output = "x.data" };
	char *out;

	/* a few blocks missing of many: said, small, and no WARNING (under 0.1%) */
	cnt[OFFCPU_CNT_BLOCKS] = 12408;
	cnt[OFFCPU_CNT_BLOCKS_NS] = 14100000000ULL;
	cnt[OFFCPU_CNT_DROP_MAP_FULL] = 3;
	cnt[OFFCPU_CNT_DROP_MAP_FULL_NS] = 1500000;
	out = print(&s);
	CHECK(out && strstr(out, "offcpu: this recording is incomplete, if only "
				 "slightly: 3 of 12,408 blocks (0.02%) are missing, 1.5 ms of "
				 "14.1 s off-CPU (0.01%):\n"));
	CHECK(out && !strstr(out, "WARNING"));
	CHECK(out && strstr(out, "; 3 of 12,408 blocks (0.02%), 1.5 ms of 14.1 s off-CPU "
				 "(0.01%)\n"));
	free(out);
	/* 0.1% of the blocks or of the time: a WARNING */
	cnt[OFFCPU_CNT_DROP_MAP_FULL] = 13;
	cnt[OFFCPU_CNT_DROP_MAP_FULL_NS] = 1500000;
	out = print(&s);
	CHECK(out && strstr(out, "offcpu: WARNING: this recording is incomplete, if only "
				 "slightly: 13 of 12,408 blocks (0.10%) are missing"));
	free(out);
	cnt[OFFCPU_CNT_DROP_MAP_FULL] = 3;
	cnt[OFFCPU_CNT_DROP_MAP_FULL_NS] = 15000000;
	out = print(&s);
	CHECK(out && strstr(out, "offcpu: WARNING: this recording is incomplete"));
	free(out);

	/* one block without a user stack in thousands: no warning */
	memset(cnt, 0, sizeof(cnt));
	cnt[OFFCPU_CNT_BLOCKS] = 12408;
	cnt[OFFCPU_CNT_BLOCKS_NS] = 14100000000ULL;
	cnt[OFFCPU_CNT_STACK_FAIL] = 1;
	cnt[OFFCPU_CNT_STACK_FAIL_NS] = 40000;
	out = print(&s);
	CHECK(out && !strstr(out, "WARNING"));
	CHECK(out && strstr(out, "offcpu: nothing lost: every block is in the file, a few with "
				 "less detail:\n"));
	CHECK(out && strstr(out, "[degraded] 1 blocks kept without a user stack: the stack walk "
				 "failed or the stack map was full (raise --max-stacks); 1 of "
				 "12,408 blocks (<0.01%), 40 us of 14.1 s off-CPU (<0.01%)\n"));
	free(out);

	/* most blocks without a user stack: a warning */
	cnt[OFFCPU_CNT_STACK_FAIL] = 896;
	cnt[OFFCPU_CNT_STACK_FAIL_NS] = 976000000;
	out = print(&s);
	CHECK(out && strstr(out, "offcpu: WARNING: this recording is incomplete: no block is "
				 "missing, but some were kept with less detail:\n"));
	CHECK(out && strstr(out, "; 896 of 12,408 blocks (7.22%), 976 ms of 14.1 s off-CPU "
				 "(6.92%)\n"));
	free(out);

	/* a little of the time matters even when the blocks are few */
	cnt[OFFCPU_CNT_STACK_FAIL] = 2;
	cnt[OFFCPU_CNT_STACK_FAIL_NS] = 2000000000;
	out = print(&s);
	CHECK(out && strstr(out, "WARNING: this recording is incomplete: no block is missing"));
	free(out);

	/* blocks lost before they ended count among all blocks, their time unknown */
	memset(cnt, 0, sizeof(cnt));
	cnt[OFFCPU_CNT_BLOCKS] = 1234565;
	cnt[OFFCPU_CNT_BLOCKS_NS] = 3000000000ULL;
	cnt[OFFCPU_CNT_UNPAIRED] = 2;
	out = print(&s);
	CHECK(out && strstr(out, "incomplete, if only slightly: 2 of 1,234,567 blocks (<0.01%) are "
				 "missing, with the time of 2 of them not known:\n"));
	CHECK(out && strstr(out, "[time lost] 2 blocks lost: the thread blocked again before "
				 "its switch-in was seen; 2 of 1,234,567 blocks (<0.01%), their "
				 "time not known\n"));
	free(out);
	cnt[OFFCPU_CNT_UNPAIRED] = 1;
	cnt[OFFCPU_CNT_BLOCKS] = 99;
	out = print(&s);
	CHECK(out && strstr(out, "; 1 of 100 blocks (1.00%), its time not known\n"));
	CHECK(out && strstr(out, "WARNING: this recording is incomplete: 1 of 100 blocks (1.00%)"));
	free(out);

	/* wakers: a share of the wakeups; side-band records: no total, always a warning */
	memset(cnt, 0, sizeof(cnt));
	cnt[OFFCPU_CNT_BLOCKS] = 100;
	cnt[OFFCPU_CNT_WAKEUPS] = 4000;
	cnt[OFFCPU_CNT_CHAIN_FULL] = 4;
	out = print(&s);
	CHECK(out && strstr(out, "wakers not named: the chain map was full; 4 of 4,000 wakeups "
				 "(0.10%)\n"));
	CHECK(out && !strstr(out, "WARNING"));
	free(out);
	cnt[CNT_SIDEBAND_LOST] = 1;
	out = print(&s);
	CHECK(out && strstr(out, "WARNING: this recording is incomplete: no block is missing"));
	CHECK(out &&
	      strstr(out, "[degraded] 1 side-band records lost: buffers overran (raise -m)\n"));
	free(out);
}

const struct unit_test summary_tests[] = {
	{ "summary: one loss table", test_loss_table },
	{ "summary: lines and losses", test_summary_lines },
	{ "summary: totals of every block", test_summary_totals },
	{ "summary: shares of the losses", test_summary_shares },
	{ 0 },
};
