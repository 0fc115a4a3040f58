// SPDX-License-Identifier: GPL-2.0
/*
 * JSON for scripts: {"events": [...], "rows": [...]}, one event or row per
 * line so line tools work too. A row is one (event, process, thread,
 * command, stack) with its value (ns off-CPU, else samples), its period sum
 * and sample count, and its stack root first.
 */
#include <errno.h>
#include "profile.h"

static void str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

int json__write(const struct profile *p, FILE *f)
{
	uint32_t i, k, nr;

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
	fprintf(f, "],\n\"lost_records\": %llu, \"lost_samples\": %llu,\n\"rows\": [\n",
		(unsigned long long)p->lost_records, (unsigned long long)p->lost_samples);
	for (i = 0; i < p->nr_rows; i++) {
		const struct profile_row *r = &p->rows[i];
		const uint32_t *fr = profile__stack_frames(p, r->stack, &nr);

		if (!r->period && !r->count)
			continue;

		fprintf(f, "  {\"event\": ");
		str(f, strtab__get(&p->str, p->events[r->event].name));
		fprintf(f, ", \"comm\": ");
		str(f, strtab__get(&p->str, r->comm));
		fprintf(f, ", \"pid\": %u, \"tid\": %u, \"value\": %llu, \"period\": %llu, "
			"\"samples\": %llu, \"stack\": [", r->pid, r->tid,
			(unsigned long long)profile__value(p, r->event, r->period, r->count),
			(unsigned long long)r->period, (unsigned long long)r->count);
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
		fprintf(f, "]}%s\n", i + 1 < p->nr_rows ? "," : "");
	}
	fprintf(f, "]}\n");
	return ferror(f) ? -EIO : 0;
}
