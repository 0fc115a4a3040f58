// SPDX-License-Identifier: GPL-2.0
/*
 * JSON for scripts: {"events": [...], "rows": [...]}, one event or row per
 * line so line tools work too. A row is one (event, process, thread,
 * command, stack) with its value (ns off-CPU, else samples), its period sum
 * and sample count, and its stack root first; off-CPU rows also say why they
 * waited when the file has it: "state", and "waker" (null: none recorded),
 * "chain" and "waker_stack"; "object" (what it waited on, its kind and
 * name: "mutex lk_mutex (app)"; null: not known) when it has offcpu-wait.
 *
 * "before_waits" (when the file has offcpu-before): the threads waiting
 * when the recording began, longest first, all of them; their samples are
 * in no row and no event's total unless --event offcpu-before chose them.
 * Each: comm, pid, tid, state, "function" and "dso" (where it waits in its
 * own code; null: no stack), "before_ns" (waited before the start; null:
 * not known), "during_ns", "end" (how the wait went on: "end" still waiting
 * at the recording's end, "ended" during_ns into it, "ended_within" within
 * during_ns, "not_seen"), "total_ns" and "bound" ("exact", "at_least",
 * "at_most", "none"), "since_wall_ns" (when it began, ns since the epoch;
 * null without the file's CLOCK_DATA or before_ns) and "stack".
 */
#include <errno.h>
#include <string.h>
#include "profile.h"
#include "waitobj.h"
#include "../util/util.h"

/*
 * The first @len bytes of @s as a JSON string. Valid UTF-8 is kept, the
 * characters a terminal acts on as \uNNNN (JSON's escapes, so the value is
 * exact), a byte that is not UTF-8 as the text \xNN: JSON cannot carry it,
 * and the output stays UTF-8 that every parser reads.
 */
static void strn(FILE *f, const char *s, size_t len)
{
	const char *end = s + len;

	fputc('"', f);
	while (s < end) {
		unsigned char c = (unsigned char)*s;
		uint32_t cp;
		size_t k;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else if (c < 0x80)
			fputc(c, f);
		else if (!(k = utf8_decode(s, (size_t)(end - s), &cp)))
			fprintf(f, "\\\\x%02x", c);
		else {
			if (unicode_unsafe(cp))
				fprintf(f, "\\u%04x", (unsigned)cp);
			else
				fwrite(s, 1, k, f);
			s += k;
			continue;
		}
		s++;
	}
	fputc('"', f);
}

static void str(FILE *f, const char *s)
{
	strn(f, s, strlen(s));
}

/* A stack as frames root first: [{"sym": ..., "dso": ...}, ...] */
static void stack(FILE *f, const struct profile *p, uint32_t st)
{
	uint32_t k, nr;
	const uint32_t *fr = profile__stack_frames(p, st, &nr);

	fputc('[', f);
	for (k = 0; k < nr; k++) {
		const struct profile_frame *fm = &p->frames[fr[k]];

		fprintf(f, "%s{\"sym\": ", k ? ", " : "");
		str(f, profile__frame_name(p, fr[k]));
		fprintf(f, ", \"dso\": ");
		str(f, profile__frame_dso(p, fr[k]));
		if (fm->file) {
			fprintf(f, ", \"file\": ");
			str(f, strtab__get(&p->str, fm->file));
			fprintf(f, ", \"line\": %u", fm->line);
		}
		if (fm->kernel)
			fprintf(f, ", \"kernel\": true");
		if (fm->inlined)
			fprintf(f, ", \"inlined\": true");
		fputc('}', f);
	}
	fputc(']', f);
}

/* Why an off-CPU row waited, when the file says: its state, and its waker, chain and stack. */
static void why(FILE *f, const struct profile *p, const struct profile_row *r)
{
	const char *c, *end;

	if (!p->events[r->event].offcpu)
		return;
	if (p->has_states) {
		fprintf(f, ", \"state\": ");
		str(f, profile__state_name(r->state));
	}
	if (p->has_waits) {
		char buf[600];

		fprintf(f, ", \"object\": ");
		if (r->wait)
			str(f, waitobj__text(p, r->wait, buf, sizeof(buf)));
		else
			fprintf(f, "null");
	}
	if (!p->has_wakers)
		return;
	fprintf(f, ", \"waker\": ");
	if (!r->waker) {
		fprintf(f, "null");
		return;
	}
	str(f, strtab__get(&p->str, r->waker));
	fprintf(f, ", \"chain\": [");
	for (c = strtab__get(&p->str, r->chain); *c; c = *end ? end + 1 : end) {
		end = strchrnul(c, ';');
		if (c != strtab__get(&p->str, r->chain))
			fprintf(f, ", ");
		strn(f, c, (size_t)(end - c));
	}
	fprintf(f, "], \"waker_stack\": ");
	if (r->waker_stack == UINT32_MAX)
		fprintf(f, "[]");
	else
		stack(f, p, r->waker_stack);
}

static void before_waits(FILE *f, const struct profile *p)
{
	static const char *const ends[] = { "end", "ended", "ended_within", "not_seen" };
	static const char *const bounds[] = { "exact", "at_least", "at_most", "none" };
	uint32_t i;

	fprintf(f, ",\n\"before_waits\": [");
	for (i = 0; i < p->nr_befores; i++) {
		const struct profile_before *b = &p->befores[i];

		fprintf(f, "%s\n  {\"comm\": ", i ? "," : "");
		str(f, strtab__get(&p->str, b->comm));
		fprintf(f, ", \"pid\": %u, \"tid\": %u, \"state\": ", b->pid, b->tid);
		str(f, profile__state_name(b->state));
		fprintf(f, ", \"function\": ");
		if (b->own == UINT32_MAX) {
			fprintf(f, "null, \"dso\": null");
		} else {
			str(f, profile__frame_name(p, b->own));
			fprintf(f, ", \"dso\": ");
			str(f, profile__frame_dso(p, b->own));
		}
		fprintf(f, ", \"before_ns\": ");
		if (b->before)
			fprintf(f, "%llu", (unsigned long long)b->before);
		else
			fprintf(f, "null");
		fprintf(f, ", \"during_ns\": %llu, \"end\": \"%s\", \"total_ns\": %llu, "
			"\"bound\": \"%s\", \"since_wall_ns\": ", (unsigned long long)b->during,
			ends[b->end], (unsigned long long)profile__before_total(b),
			bounds[profile__before_bound(b)]);
		if (p->has_clock && b->before)
			fprintf(f, "%lld", (long long)p->clock_wall_ns +
						   ((long long)(b->start - b->before) -
						    (long long)p->clock_mono_ns));
		else
			fprintf(f, "null");
		fprintf(f, ", \"stack\": ");
		stack(f, p, b->stack);
		fputc('}', f);
	}
	fprintf(f, "\n]");
}

int json__write(const struct profile *p, FILE *f)
{
	uint32_t i;
	bool first = true;

	fprintf(f, "{\"events\": [\n");
	for (i = 0; i < p->nr_events; i++) {
		const struct profile_event *e = &p->events[i];

		fprintf(f, "  {\"name\": ");
		str(f, strtab__get(&p->str, e->name));
		fprintf(f, ", \"unit\": \"%s\", \"value\": %llu, \"period\": %llu, \"samples\": %llu}%s\n",
			e->offcpu ? "ns" : "samples",
			(unsigned long long)profile__value(p, i, e->period, e->count),
			(unsigned long long)e->period, (unsigned long long)e->count,
			i + 1 < p->nr_events ? "," : "");
	}
	fprintf(f, "],\n\"lost_records\": %llu, \"lost_samples\": %llu,\n\"rows\": [",
		(unsigned long long)p->lost_records, (unsigned long long)p->lost_samples);
	for (i = 0; i < p->nr_rows; i++) {
		const struct profile_row *r = &p->rows[i];

		if (profile__row_empty(r))
			continue;
		fprintf(f, "%s\n  {\"event\": ", first ? "" : ",");
		first = false;
		str(f, strtab__get(&p->str, p->events[r->event].name));
		fprintf(f, ", \"comm\": ");
		str(f, strtab__get(&p->str, r->comm));
		fprintf(f, ", \"pid\": %u, \"tid\": %u, \"value\": %llu, \"period\": %llu, "
			"\"samples\": %llu, \"stack\": ", r->pid, r->tid,
			(unsigned long long)profile__value(p, r->event, r->period, r->count),
			(unsigned long long)r->period, (unsigned long long)r->count);
		stack(f, p, r->stack);
		why(f, p, r);
		fputc('}', f);
	}
	fprintf(f, "\n]");
	if (p->has_before)
		before_waits(f, p);
	fprintf(f, "}\n");
	return ferror(f) ? -EIO : 0;
}
