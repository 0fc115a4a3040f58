// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include "summary.h"
#include "python.h"
#include "../util/objread.h"
#include "../util/util.h"

#define NO_NS (-1)

const struct loss losses[] = {
	{ OFFCPU_CNT_DROP_MAP_FULL, OFFCPU_CNT_DROP_MAP_FULL_NS, LOSS_TIME, UNIT_BLOCKS,
	  false, true,
	  "blocks lost: the summary map and the output buffer were full (raise --max-stacks or "
	  "--buffer-size)" },
	{ OFFCPU_CNT_NO_STORAGE, NO_NS, LOSS_TIME, UNIT_BLOCKS, true, true,
	  "blocks missed: no per-task storage" },
	{ OFFCPU_CNT_UNPAIRED, NO_NS, LOSS_TIME, UNIT_BLOCKS, true, true,
	  "blocks lost: the thread blocked again before its switch-in was seen" },
	{ OFFCPU_CNT_MISSED_OUT, NO_NS, LOSS_TIME, UNIT_BLOCKS, true, true,
	  "blocks lost: the kernel did not run offcpu's program when their thread blocked" },
	{ OFFCPU_CNT_OPEN_LOST, NO_NS, LOSS_TIME, UNIT_BLOCKS, true, true,
	  "blocks under way at the start lost: their thread ran before offcpu had noted them" },
	{ CNT_PROG_MISSES, NO_NS, LOSS_TIME, UNIT_OTHER, false, true,
	  "context switches not seen: the kernel skipped the BPF program (recursion)" },
	/* summed with their time, only without their own sample and timestamp */
	{ OFFCPU_CNT_OUTPUT_FULL, OFFCPU_CNT_OUTPUT_FULL_NS, LOSS_DEGRADED, UNIT_BLOCKS,
	  false, false,
	  "long blocks not streamed: the output buffer was full; summed instead, without their "
	  "time (raise --buffer-size)" },
	/* written with their time, each as its own sample */
	{ OFFCPU_CNT_SUMMED_FULL, OFFCPU_CNT_SUMMED_FULL_NS, LOSS_DEGRADED, UNIT_BLOCKS,
	  false, false,
	  "short blocks written one by one: the summary map was full (raise --max-stacks)" },
	{ OFFCPU_CNT_STACK_FAIL, OFFCPU_CNT_STACK_FAIL_NS, LOSS_DEGRADED, UNIT_BLOCKS,
	  false, false,
	  "blocks kept without a user stack: the stack walk failed or the stack map was full "
	  "(raise --max-stacks)" },
	{ OFFCPU_CNT_KSTACK_FAIL, OFFCPU_CNT_KSTACK_FAIL_NS, LOSS_DEGRADED, UNIT_BLOCKS,
	  false, false,
	  "blocks kept without a kernel stack (stack map full?)" },
	{ OFFCPU_CNT_FILTER_FULL, NO_NS, LOSS_DEGRADED, UNIT_OTHER, false, false,
	  "child processes not followed: the process filter was full" },
	{ OFFCPU_CNT_CHAIN_FULL, NO_NS, LOSS_DEGRADED, UNIT_WAKEUPS, false, false,
	  "wakers not named: the chain map was full" },
	{ OFFCPU_CNT_WAKEUP_FULL, NO_NS, LOSS_DEGRADED, UNIT_WAKEUPS, false, false,
	  "blocks kept without their waker: the wakeup map was full (raise --max-stacks)" },
	{ OFFCPU_CNT_WAKER_STACK_FAIL, NO_NS, LOSS_DEGRADED, UNIT_WAKEUPS, false, false,
	  "wakers kept without a stack: the stack walk failed or the stack map was full" },
	{ CNT_WAKEUP_UNKNOWN, NO_NS, LOSS_DEGRADED, UNIT_OTHER, false, false,
	  "blocks kept without their waker: it was gone from the wakeup map when read" },
	{ CNT_SIDEBAND_LOST, NO_NS, LOSS_DEGRADED, UNIT_OTHER, false, false,
	  "side-band records lost: buffers overran (raise -m)" },
	{ CNT_ONCPU_LOST, NO_NS, LOSS_DEGRADED, UNIT_ONCPU, false, false,
	  "on-CPU samples lost: buffers overran (raise -m)" },
	{ OFFCPU_CNT_FAULTS, NO_NS, LOSS_TEST, UNIT_OTHER, false, false,
	  "switch-outs ignored on purpose" },
};
const size_t nr_losses = ARRAY_SIZE(losses);

const char *const unwind_end_names[UNW_REASONS] = {
	[OFFCPU_UNW_COMPLETE] = "complete",
	[OFFCPU_UNW_NO_PROC] = "process not loaded yet, frame pointers from the first frame",
	[OFFCPU_UNW_NO_MAPPING] = "pc in no mapping known yet, frame pointers from there",
	[OFFCPU_UNW_NO_TABLE] = "object without a table, frame pointers from there",
	[OFFCPU_UNW_NO_RULE] = "ended: no rule for a pc",
	[OFFCPU_UNW_BAD_FRAME] = "ended: impossible frame",
	[OFFCPU_UNW_READ_FAULT] = "ended: stack not readable",
	[OFFCPU_UNW_DEPTH] = "ended: depth limit",
	[OFFCPU_UNW_BUILDING] = "table being built, frame pointers from there",
	[OFFCPU_UNW_GO_SCHED] = "ended at Go's scheduler (a thread waiting for no goroutine of its own)",
	[UNW_FINISHED_LATE] = "complete, finished in user space (no table yet at the block, or "
			      "under way at the start)",
};

/* Off-CPU time by how its user stack's table walk ended, and the tables' cost. */
static void print_unwind(FILE *f, const struct summary *s)
{
	const struct unwinder_stats *u = s->unw;
	uint64_t all = 0;
	char used[32], cap[32];
	int i;

	for (i = 0; i < UNW_REASONS; i++)
		all += s->unwind_ns[i];
	fprintf_escaped(f, "offcpu: user stacks by unwind tables: ");
	if (!all)
		fprintf_escaped(f, "none walked");
	for (i = 0; i < UNW_REASONS && all; i++) {
		uint64_t walks;

		if (!s->unwind_ns[i] && i != OFFCPU_UNW_COMPLETE)
			continue;
		/* a walk finished in user space is counted there, not where it stopped */
		if (i == UNW_FINISHED_LATE)
			walks = s->late ? s->late->deferred_unwound + s->late->start_unwound -
						  s->late->short_walks : 0;
		else
			walks = s->cnt[OFFCPU_CNT_UNW_END + i] -
				(s->late ? s->late->finished[i] : 0);
		/* where libdw stopped short, a finished walk ends as one not readable */
		if (i == OFFCPU_UNW_READ_FAULT && s->late)
			walks += s->late->short_walks;
		fprintf_escaped(f, "%s%.1f%% of the time (%llu walks) %s", i ? "; " : "",
			100.0 * (double)s->unwind_ns[i] / (double)all, (unsigned long long)walks,
			unwind_end_names[i]);
	}
	fprintf_escaped(f, "\n");
	if (s->late && (s->late->start || s->late->deferred))
		fprintf_escaped(f, "offcpu: user stacks finished in user space (libdw): %llu threads blocked at "
			"the start (%llu with a stack, %llu ran before it was read, %llu with their "
			"stack in a mapped file, not read; %llu knew since "
			"when; %.0f us each); %llu walks that met code with no table yet (%llu "
			"finished, %llu not: the process gone or not unwound; %.0f us each); %llu not "
			"sent (buffer full)\n",
			(unsigned long long)s->late->start, (unsigned long long)s->late->start_unwound,
			(unsigned long long)s->late->start_ran,
			(unsigned long long)s->late->start_in_file, (unsigned long long)s->late->start_began,
			s->late->start ? (double)s->late->start_ns / 1e3 / (double)s->late->start : 0,
			(unsigned long long)s->late->deferred,
			(unsigned long long)s->late->deferred_unwound,
			(unsigned long long)s->late->deferred_failed,
			s->late->deferred ? (double)s->late->deferred_ns / 1e3 /
					    (double)s->late->deferred : 0,
			(unsigned long long)s->cnt[OFFCPU_CNT_SNAP_LOST]);
	if (s->late && s->late->first_began && s->late->first_began < s->start_ns) {
		/* the name is another user's: escaped */
		fprintf_escaped(f, "offcpu: %llu threads were already waiting when the recording began; the "
			"longest, ", (unsigned long long)s->late->start);
		fput_escaped(f, s->late->first_comm, 0);
		fprintf_escaped(f, " (tid %u), for %.1f s before it (offcpu report shows where each waits)\n",
			s->late->first_tid, (double)(s->start_ns - s->late->first_began) / 1e9);
	}
	fmt_size(u->rows * sizeof(struct offcpu_unw_row), used, sizeof(used));
	fmt_size(u->bytes, cap, sizeof(cap));
	fprintf_escaped(f, "offcpu: unwind tables: %llu objects (%llu without a table), %llu rows (%s), "
		"%llu rules; %s of kernel memory (--unwind-mem); built in %.0f ms for %llu process "
		"loads\n", (unsigned long long)u->objects, (unsigned long long)u->no_table,
		(unsigned long long)u->rows, used, (unsigned long long)u->rules, cap,
		(double)u->build_ns / 1e6, (unsigned long long)u->processes);
	if (u->no_table) {
		fprintf_escaped(f, "offcpu: objects without an unwind table (frame pointers there): ");
		for (uint64_t i = 0; i < u->no_table && i < UNWINDER_NAMED; i++) {
			fput_escaped(f, u->no_table_first[i], 0); /* another user's path */
			fputs(i + 1 < u->no_table && i + 1 < UNWINDER_NAMED ? "; " : "", f);
		}
		if (u->no_table > UNWINDER_NAMED)
			fprintf(f, "; and %llu more (-v names each)",
				(unsigned long long)(u->no_table - UNWINDER_NAMED));
		fputc('\n', f);
	}
	if (s->verify_stacks)
		fprintf_escaped(f, "offcpu: verified %llu table walks against libdw's DWARF unwinding of the "
			"same stack copy: %llu the same, %llu the same as far as the copy reached, %llu "
			"differed, %llu ended before libdw's, %llu not unwound by libdw (process gone); "
			"%llu walks not sent (buffer full)\n",
			(unsigned long long)u->verified, (unsigned long long)u->verify_same,
			(unsigned long long)u->verify_prefix, (unsigned long long)u->verify_differ,
			(unsigned long long)u->verify_shorter, (unsigned long long)u->verify_failed,
			(unsigned long long)s->cnt[OFFCPU_CNT_UNW_VERIFY_LOST]);
	if (u->mem_full)
		fprintf_escaped(f, "offcpu: WARNING: %llu objects were left without a table: the table "
			"memory is full (raise --unwind-mem); frame pointers were followed there\n",
			(unsigned long long)u->mem_full);
	if (u->reclaimed)
		fprintf_escaped(f, "offcpu: unwind tables of %llu objects no process used any more were taken "
			"back (%llu rows) to make room for others\n", (unsigned long long)u->reclaimed,
			(unsigned long long)u->reclaimed_rows);
	if (u->over_budget)
		fprintf_escaped(f, "offcpu: %llu objects were over their budget (what one object may cost in "
			"rows, rules, bytes or time; the first: %s): frame pointers were followed "
			"there\n", (unsigned long long)u->over_budget, u->first_over);
	if (u->rules_full)
		fprintf_escaped(f, "offcpu: WARNING: %llu objects were left without a table: the shared rule "
			"array (%d rules) is full; frame pointers were followed there\n",
			(unsigned long long)u->rules_full, OFFCPU_UNW_RULES);
	if (u->owner_full)
		fprintf_escaped(f, "offcpu: %llu objects of user %u (and maybe others) were left without a "
			"table: the files of one user other than root hold a quarter of the table "
			"memory at most; frame pointers were followed there\n",
			(unsigned long long)u->owner_full, u->first_owner);
	if (u->unreadable)
		fprintf_escaped(f, "offcpu: %llu objects changed or shrank while their table was read: "
			"frame pointers were followed there\n", (unsigned long long)u->unreadable);
	if (u->procs_full)
		fprintf_escaped(f, "offcpu: WARNING: %llu process loads did not fit the kernel's process map "
			"(%d processes); their stacks were walked by frame pointers\n",
			(unsigned long long)u->procs_full, OFFCPU_UNW_PROCS);
	if (u->truncated)
		fprintf_escaped(f, "offcpu: WARNING: %llu process loads had more than %d executable "
			"mappings; the rest were walked by frame pointers\n",
			(unsigned long long)u->truncated, OFFCPU_UNW_MAPS);
}

static const char *const kind_tag[] = {
	[LOSS_TIME] = "[time lost]",
	[LOSS_DEGRADED] = "[degraded]",
	[LOSS_TEST] = "(test)",
};

uint64_t losses__lost_samples(const uint64_t *cnt)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < nr_losses; i++)
		if (losses[i].lost_samples)
			n += cnt[losses[i].counter];
	return n;
}

/* @n with a comma every three digits: 12,408 */
static const char *fmt_count(uint64_t n, char *buf, size_t len)
{
	char digits[32];
	size_t nd, i, o = 0;

	nd = (size_t)snprintf(digits, sizeof(digits), "%llu", (unsigned long long)n);
	for (i = 0; i < nd && o + 2 < len; i++) {
		if (i && (nd - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

/* @part of @all in percent, with the digits a small share needs: 0.02%, 83.2% */
static const char *fmt_pct(uint64_t part, uint64_t all, char *buf, size_t len)
{
	double p = all ? 100.0 * (double)part / (double)all : 0;

	if (!part)
		snprintf(buf, len, "0%%");
	else if (part >= all)
		snprintf(buf, len, "100%%");
	else if (p < 0.01)
		snprintf(buf, len, "<0.01%%");
	else if (p < 10)
		snprintf(buf, len, "%.2f%%", p);
	else if (p < 99.95)
		snprintf(buf, len, "%.1f%%", p);
	else
		snprintf(buf, len, ">99.9%%");
	return buf;
}

/* A time to three digits: 1.2 ms, 14.1 s */
static const char *fmt_time(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000)
		snprintf(buf, len, "%llu ns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.3g us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.3g ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.3g s", (double)ns / 1e9);
	return buf;
}

/* What the losses' shares are of. */
struct totals {
	uint64_t blocks, ns; /* every block, the lost ones too; the time of those that ended */
	uint64_t wakeups, oncpu;
};

/* A loss's share, after its sentence: "; 3 of 12,408 blocks (0.02%), 1.2 ms of 14.1 s
 * off-CPU (0.01%)" */
static void print_share(FILE *f, const struct loss *l, const uint64_t *cnt, const struct totals *t)
{
	uint64_t n = cnt[l->counter], all = 0;
	const char *what = NULL;
	char a[32], b[32], c[32];

	switch (l->unit) {
	case UNIT_BLOCKS: all = t->blocks, what = "blocks"; break;
	case UNIT_WAKEUPS: all = t->wakeups, what = "wakeups"; break;
	case UNIT_ONCPU: all = t->oncpu, what = "on-CPU samples"; break;
	case UNIT_OTHER: break;
	}
	if (!what || all < n)
		return;
	fprintf_escaped(f, "; %s of %s %s (%s)", fmt_count(n, a, sizeof(a)), fmt_count(all, b, sizeof(b)),
		what, fmt_pct(n, all, c, sizeof(c)));
	if (l->unit != UNIT_BLOCKS)
		return;
	if (l->ns_counter >= 0 && t->ns >= cnt[l->ns_counter])
		fprintf_escaped(f, ", %s of %s off-CPU (%s)", fmt_time(cnt[l->ns_counter], a, sizeof(a)),
			fmt_time(t->ns, b, sizeof(b)),
			fmt_pct(cnt[l->ns_counter], t->ns, c, sizeof(c)));
	else if (l->ns_counter < 0)
		fprintf_escaped(f, ", %s time not known", n == 1 ? "its" : "their");
}

/* A share that matters: 1% or more of its total, or one that cannot be told. */
static bool loss_matters(const struct loss *l, const uint64_t *cnt, const struct totals *t)
{
	uint64_t n = cnt[l->counter], all = l->unit == UNIT_BLOCKS ? t->blocks :
					     l->unit == UNIT_WAKEUPS ? t->wakeups :
					     l->unit == UNIT_ONCPU ? t->oncpu : 0;

	if (!n || l->kind == LOSS_TEST)
		return false;
	if (l->unit == UNIT_OTHER || n * 100 >= all)
		return true;
	return l->unit == UNIT_BLOCKS && l->ns_counter >= 0 && cnt[l->ns_counter] * 100 >= t->ns;
}

/*
 * The line above the losses, by their size: blocks missing from the file
 * are always said, with how many, as a WARNING when they are
 * LOSS_WARN_PERMILLE or more of the blocks or of the time (a few blocks of a
 * long recording are not); blocks kept with less detail warn only when they
 * are 1% or more of the blocks or the time.
 */
static void print_losses(FILE *f, const struct summary *s)
{
	const uint64_t *cnt = s->cnt;
	struct totals t = { cnt[OFFCPU_CNT_BLOCKS], cnt[OFFCPU_CNT_BLOCKS_NS],
			    cnt[OFFCPU_CNT_WAKEUPS], s->oncpu_samples + cnt[CNT_ONCPU_LOST] };
	uint64_t lost = 0, lost_ns = 0, unknown = 0;
	bool any = false, time_lost = false, matters = false;
	char a[32], b[32], c[32];
	size_t i;

	for (i = 0; i < nr_losses; i++)
		if (losses[i].unseen && losses[i].unit == UNIT_BLOCKS)
			t.blocks += cnt[losses[i].counter];
	for (i = 0; i < nr_losses; i++) {
		const struct loss *l = &losses[i];

		if (!cnt[l->counter] || l->kind == LOSS_TEST)
			continue;
		any = true;
		matters |= loss_matters(l, cnt, &t);
		if (l->kind != LOSS_TIME)
			continue;
		time_lost = true;
		if (l->unit != UNIT_BLOCKS)
			continue;
		lost += cnt[l->counter];
		if (l->ns_counter >= 0)
			lost_ns += cnt[l->ns_counter];
		else
			unknown += cnt[l->counter];
	}
	if (!any) {
		fprintf_escaped(f, "offcpu: nothing dropped\n");
	} else if (time_lost && lost) {
		bool warn = lost * 1000 >= t.blocks * LOSS_WARN_PERMILLE ||
			    lost_ns * 1000 >= t.ns * LOSS_WARN_PERMILLE;

		fprintf_escaped(f, "offcpu: %sthis recording is incomplete%s: %s of %s blocks (%s) "
			"are missing", warn ? "WARNING: " : "", matters ? "" : ", if only slightly",
			fmt_count(lost, a, sizeof(a)), fmt_count(t.blocks, b, sizeof(b)),
			fmt_pct(lost, t.blocks, c, sizeof(c)));
		if (lost_ns)
			fprintf_escaped(f, ", %s of %s off-CPU (%s)", fmt_time(lost_ns, a, sizeof(a)),
				fmt_time(t.ns, b, sizeof(b)), fmt_pct(lost_ns, t.ns, c, sizeof(c)));
		if (unknown)
			fprintf_escaped(f, "%s the time of %s of them not known", lost_ns ? "," : ", with",
				fmt_count(unknown, a, sizeof(a)));
		fprintf_escaped(f, ":\n");
	} else if (time_lost) {
		fprintf_escaped(f, "offcpu: WARNING: this recording is incomplete:\n");
	} else if (matters) {
		fprintf_escaped(f, "offcpu: WARNING: this recording is incomplete: no block is missing, "
			"but some were kept with less detail:\n");
	} else {
		fprintf_escaped(f, "offcpu: nothing lost: every block is in the file, a few with less "
			"detail:\n");
	}
	for (i = 0; i < nr_losses; i++) {
		if (!cnt[losses[i].counter])
			continue;
		fprintf_escaped(f, "offcpu:   %s %llu %s", kind_tag[losses[i].kind],
			(unsigned long long)cnt[losses[i].counter], losses[i].sentence);
		if (losses[i].kind != LOSS_TEST)
			print_share(f, &losses[i], cnt, &t);
		fputc('\n', f);
	}
}

void summary__print(FILE *f, const struct summary *s)
{
	const uint64_t *cnt = s->cnt;
	char size[32];

	/* the blocks and time seen are the program's counts: all of them, the
	 * ones lost too; what was written can be less (losses, snapshots) */
	fprintf_escaped(f,
		"offcpu: %llu blocks seen (%.3f s off-CPU), %llu samples written (%.3f s in %zu "
		"threads: %llu streamed, %llu summed), %s%llu distinct stacks\n",
		(unsigned long long)cnt[OFFCPU_CNT_BLOCKS], cnt[OFFCPU_CNT_BLOCKS_NS] / 1e9,
		(unsigned long long)(s->streamed + s->summed), s->offcpu_ns / 1e9, s->threads,
		(unsigned long long)s->streamed, (unsigned long long)s->summed,
		s->distinct_stacks_more ? "over " : "", (unsigned long long)s->distinct_stacks);
	if (s->freq)
		fprintf_escaped(f, "offcpu: %llu on-CPU samples (cpu-clock, %llu Hz)\n",
			(unsigned long long)s->oncpu_samples, (unsigned long long)s->freq);
	fmt_size(s->file_size, size, sizeof(size));
	if (s->procs_given)
		fprintf_escaped(f, "offcpu: followed %zu processes: %zu given with -p, %zu they had "
			"forked before the recording, %zu forked since\n", s->procs_followed,
			s->procs_given, s->procs_before,
			s->procs_followed > s->procs_given + s->procs_before ?
				s->procs_followed - s->procs_given - s->procs_before : 0);
	if (s->pushed)
		; /* push's own summary follows */
	else if (s->to_stdout)
		fprintf_escaped(f, "offcpu: wrote the recording to standard output\n");
	else if (s->fifo)
		fprintf_escaped(f, "offcpu: wrote the recording into the fifo %s (perf's pipe format)\n",
			s->output);
	else if (s->rotate)
		fprintf_escaped(f, "offcpu: wrote %zu files, %zu of them on disk now (%zu removed by "
			"--switch-max-files%s), the last %s (%s)\n", s->files_written,
			s->files_on_disk, s->files_removed,
			s->files_vanished ? ", others removed or replaced by someone else" : "",
			s->output, size);
	else
		fprintf_escaped(f, "offcpu: wrote %s (%s)\n", s->output, size);
	if (s->verify_stacks)
		fprintf_escaped(f, "offcpu: verified %llu stacks against the kernel's helpers: %llu user "
			"and %llu kernel stacks differed; the helpers walked %llu user and %llu kernel "
			"stacks offcpu's walks left to them\n",
			(unsigned long long)cnt[OFFCPU_CNT_VERIFIED],
			(unsigned long long)cnt[OFFCPU_CNT_VERIFY_USER_BAD],
			(unsigned long long)cnt[OFFCPU_CNT_VERIFY_KERNEL_BAD],
			(unsigned long long)cnt[OFFCPU_CNT_USER_HELPER],
			(unsigned long long)cnt[OFFCPU_CNT_KERNEL_HELPER]);
	if (cnt[OFFCPU_CNT_OPEN_START] || cnt[OFFCPU_CNT_OPEN_END])
		fprintf_escaped(f, "offcpu: blocks under way: %llu were already when the recording began "
			"(%.3f s, counted from then, %s), %llu still were when it ended "
			"(%.3f s, counted up to then)\n",
			(unsigned long long)cnt[OFFCPU_CNT_OPEN_START],
			cnt[OFFCPU_CNT_OPEN_START_NS] / 1e9,
			/* their user stacks: read while they slept (userstacks.c), or not known */
			!s->late ? "user stacks unknown" :
			s->late->start_unwound >= s->late->start ? "user stacks read as they slept" :
			"user stacks read as they slept where they had not run since",
			(unsigned long long)cnt[OFFCPU_CNT_OPEN_END], cnt[OFFCPU_CNT_OPEN_END_NS] / 1e9);
	if (cnt[OFFCPU_CNT_WAKEUPS] || cnt[OFFCPU_CNT_RUNQ]) {
		fprintf_escaped(f, "offcpu: ");
		if (cnt[OFFCPU_CNT_WAKEUPS])
			fprintf_escaped(f, "wakeups of recorded blocks: %llu seen (%llu by an interrupt)%s",
				(unsigned long long)cnt[OFFCPU_CNT_WAKEUPS],
				(unsigned long long)cnt[OFFCPU_CNT_WAKER_IRQ],
				cnt[OFFCPU_CNT_RUNQ] ? "; " : "");
		if (cnt[OFFCPU_CNT_RUNQ])
			fprintf_escaped(f, "%llu blocks split at their wakeup, %.3f s waiting for a CPU after it",
				(unsigned long long)cnt[OFFCPU_CNT_RUNQ], cnt[OFFCPU_CNT_RUNQ_NS] / 1e9);
		fputc('\n', f);
	}
	fmt_size(s->map_bytes, size, sizeof(size));
	fprintf_escaped(f, "offcpu: kernel maps: %u stacks and summed contexts between flushes (%s, "
		"--max-stacks); summed blocks written ", s->max_stacks, size);
	if (s->flush_ns)
		fprintf_escaped(f, "every %.3g s (%llu flushes), ", s->flush_ns / 1e9,
			(unsigned long long)s->flushes);
	else
		fprintf_escaped(f, "at the end of each file, ");
	fprintf_escaped(f, "%llu stack entries pruned\n", (unsigned long long)s->pruned);
	if (s->unwind_ns && s->unw)
		print_unwind(f, s);
	if (s->fallbacks)
		fprintf_escaped(f, "offcpu: FALLBACK: %s\n", s->fallbacks);
	if (cnt[OFFCPU_CNT_RECOVERED])
		fprintf_escaped(f, "offcpu: %llu blocks recovered: offcpu's program was not called when their "
			"thread ran again; their time comes from the thread's CPU time%s\n",
			(unsigned long long)cnt[OFFCPU_CNT_RECOVERED],
			s->kernel_stacks ? ", their kernel stacks are missing" : "");
	print_losses(f, s);
}

/* (declared in python.h) */
void summary__print_python(FILE *f, const struct python_stats *st)
{
	static const char *const why[PYTHON_WHY_NR] = {
		[PYTHON_UNKNOWN] = "an interpreter whose version is not known",
		[PYTHON_UNSUPPORTED] = "a CPython offcpu has no layout of (it reads 3.10 to 3.13)",
		[PYTHON_CHECK] = "a CPython whose own type sizes disagree with offcpu's layout of "
				 "its version",
		[PYTHON_KEY] = "a CPython whose thread-state key offcpu cannot read",
	};
	uint64_t not_read = 0;
	int i;

	for (i = 0; i < PYTHON_WHY_NR; i++)
		not_read += st->not_read[i];
	if (!st->walks && !st->procs && !not_read)
		return;
	if (st->walks || st->procs) {
		fprintf_escaped(f, "offcpu: Python frames: %llu walks in %llu Python processes, %llu "
			"frames, %llu code objects named (%llu at the address of a freed one, named "
			"anew); %llu walks cut by a read that faulted (memory paged out), %llu at %d "
			"frames or a full stack; %llu code objects left unnamed",
			(unsigned long long)st->walks, (unsigned long long)st->procs,
			(unsigned long long)st->frames, (unsigned long long)st->names,
			(unsigned long long)st->renamed, (unsigned long long)st->faults,
			(unsigned long long)st->cut, OFFCPU_PY_FRAMES,
			(unsigned long long)st->names_lost);
		if (st->start_threads)
			fprintf_escaped(f, "; %llu threads blocked at the start with their Python "
				"frames read from their memory (%llu frames)",
				(unsigned long long)st->start_threads,
				(unsigned long long)st->start_frames);
		fprintf_escaped(f, "\n");
	}
	if (st->procs_cut)
		fprintf_escaped(f, "offcpu: WARNING: %llu Python processes cut off (the first: pid %u): they "
			"named %u code objects, or filled their share of the names' memory, and their "
			"later ones stay unnamed; %llu names not kept\n",
			(unsigned long long)st->procs_cut, st->first_cut, OFFCPU_PY_IDS_MAX,
			(unsigned long long)st->names_dropped);
	/* what was not read, and why: at normal verbosity, never silently */
	for (i = 0; i < PYTHON_WHY_NR; i++)
		if (st->not_read[i])
			fprintf_escaped(f, "offcpu: Python frames not read in %llu processes running %s "
				"(the first: pid %u %s, %s): their stacks have native frames only\n",
				(unsigned long long)st->not_read[i], why[i], st->first[i].pid,
				st->first[i].comm[0] ? st->first[i].comm : "?", st->first[i].detail);
}

void summary__print_perfmap(FILE *f, const struct perfmap_stats *st)
{
	char peak[32], all[32];

	if (!st->maps && !st->refused && !st->cut)
		return;
	fmt_size(st->bytes_peak, peak, sizeof(peak));
	fmt_size(PERFMAP_MEM_MAX, all, sizeof(all));
	fprintf_escaped(f, "offcpu: perf maps: %llu read, %llu entries, %llu JIT frames named by %llu "
		"records; %s at most of the %s they may hold", (unsigned long long)st->maps,
		(unsigned long long)st->entries, (unsigned long long)st->frames,
		(unsigned long long)st->named, peak, all);
	if (st->late)
		fprintf_escaped(f, ", %llu of them written after the samples they name (a map read later: "
			"%llu at a process's exit)", (unsigned long long)st->late,
			(unsigned long long)st->at_exit);
	if (st->freed)
		fprintf_escaped(f, ", %llu processes' freed after they exited", (unsigned long long)st->freed);
	fprintf_escaped(f, "\n");
	if (st->cut)
		fprintf_escaped(f, "offcpu: WARNING: perf maps of %llu processes read only up to what one "
			"process's may hold (a quarter of %s) or what all may (the first: pid %u): "
			"their later JIT frames are unnamed\n", (unsigned long long)st->cut, all,
			st->first_cut);
	if (st->refused)
		fprintf_escaped(f, "offcpu: perf maps of %llu processes not read (the first, pid %u: %s)\n",
			(unsigned long long)st->refused, st->first_refused,
			st->first_refused_err == -EPERM ? "not a regular file of its user" :
							   objread_why(st->first_refused_err));
}
