// SPDX-License-Identifier: GPL-2.0
/*
 * pprof output: profile.proto encoded by hand (varints and length-delimited
 * fields) and gzip-compressed with zlib. Off-CPU events carry two sample
 * types, off-CPU nanoseconds and block count; sampling events carry samples
 * and their period. Each binary becomes a mapping (with its build id), each
 * distinct function a Function, each frame a Location; samples are labelled
 * with thread name, pid and tid, and off-CPU ones with their state and waker
 * when the file has them, and what they waited on ("object") where known. --states and --wakers give the stacks folded has
 * (profile__row_frames): their labels ([S], "--", a waker's name) are
 * Locations without a mapping. pprof__encode() makes it of some rows only,
 * with labels named as its caller says (record --push's Pyroscope profiles).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "pb.h"
#include "profile.h"
#include "waitobj.h"
#include "../util/util.h"

struct strs {
	struct hashmap idx;
	struct pb out; /* the string_table fields, in index order */
	uint64_t nr;
};

static uint64_t str_id(struct strs *s, const char *str)
{
	size_t n = strlen(str);
	int created;
	uint64_t *v = hashmap__upsert(&s->idx, str, n, &created);

	if (!v) {
		s->out.err = -ENOMEM;
		return 0;
	}
	if (created) {
		/* names go in escaped as on a terminal: pprof prints them there */
		*v = s->nr++;
		pb_str(&s->out, 6, str);
	}
	return *v;
}

static void value_type(struct pb *b, struct pb *sub, uint32_t field, struct strs *s,
		       const char *type, const char *unit)
{
	pb_uint_nz(sub, 1, str_id(s, type));
	pb_uint_nz(sub, 2, str_id(s, unit));
	pb_msg(b, field, sub);
}

static bool row_kept(const struct pprof_opts *o, const struct profile_row *r)
{
	return (r->event == (uint32_t)o->event ||
		(o->with_event && r->event == (uint32_t)(o->with_event - 1))) &&
	       (!o->keep || o->keep(r, o->arg));
}

/* The executable with the most of the rows' value (summed over its processes), or UINT32_MAX. */
static uint32_t main_exe(const struct profile *p, const struct pprof_opts *o)
{
	uint64_t *w = calloc(p->nr_dsos + 1, sizeof(*w));
	uint32_t i, best = UINT32_MAX;

	if (!w)
		return UINT32_MAX; /* only the order of the mappings is lost */
	for (i = 0; i < p->nr_rows; i++) {
		const struct profile_row *r = &p->rows[i];

		if (row_kept(o, r) && r->exe < p->nr_dsos)
			w[r->exe] += profile__value(p, r->event, r->period, r->count);
	}
	for (i = 0; i < p->nr_dsos; i++)
		if (w[i] && (best == UINT32_MAX || w[i] > w[best]))
			best = i;
	free(w);
	return best;
}

/* A string label @key = @val on the sample being built in @sub. */
static void str_label(struct pb *sub, struct pb *sub2, struct strs *s, const char *key,
		      const char *val)
{
	pb_uint_nz(sub2, 1, str_id(s, key));
	pb_uint_nz(sub2, 2, str_id(s, val));
	pb_msg(sub, 3, sub2);
}

int pprof__encode(const struct profile *p, const struct pprof_opts *o, struct pb *out)
{
	const struct profile_event *ev = &p->events[o->event];
	struct pb b = { 0 }, sub = { 0 }, sub2 = { 0 };
	struct strs s = { 0 };
	uint8_t *seen = NULL, *fseen = NULL;
	uint64_t *dso_max = NULL, *fn_of = NULL;
	struct hashmap fn_idx = { 0 };
	uint64_t nr_fns = 0;
	uint32_t i, k, main, *frames = NULL, fcap = 0;
	const char *ename = strtab__get(&p->str, ev->name);
	int err;

	str_id(&s, "");
	seen = calloc(p->nr_frames + 1, 1);
	fseen = calloc(p->nr_dsos + 1, 1);
	dso_max = calloc(p->nr_dsos + 1, sizeof(*dso_max));
	fn_of = calloc(p->nr_frames + 1, sizeof(*fn_of));
	if (!seen || !fseen || !dso_max || !fn_of) {
		err = -ENOMEM;
		goto out;
	}
	if (ev->offcpu) {
		value_type(&b, &sub, 1, &s, "offcpu", "nanoseconds");
		value_type(&b, &sub, 1, &s, "blocks", "count");
	} else {
		bool clock = !strcmp(ename, "cpu-clock") || !strcmp(ename, "task-clock");

		value_type(&b, &sub, 1, &s, "samples", "count");
		value_type(&b, &sub, 1, &s, clock ? "cpu" : ename, clock ? "nanoseconds" : "count");
	}
	/* samples, marking the frames they use */
	for (i = 0; i < p->nr_rows; i++) {
		const struct profile_row *r = &p->rows[i];
		uint32_t comm_at;
		int n;

		if (!row_kept(o, r) || profile__row_empty(r))
			continue;
		/* the stack folded draws, without the command (the "thread" label) */
		n = profile__row_frames(p, r, &frames, &fcap, &comm_at);
		if (n < 0) {
			err = n;
			goto out;
		}
		for (k = (uint32_t)n; k-- > 0;) { /* leaf first */
			pb_varint(&sub2, frames[k] + 1);
			seen[frames[k]] = 1;
		}
		if (sub2.len)
			pb_msg(&sub, 1, &sub2);
		if (ev->offcpu) {
			pb_varint(&sub2, r->period);
			pb_varint(&sub2, r->count);
		} else {
			pb_varint(&sub2, r->count);
			pb_varint(&sub2, r->period);
		}
		pb_msg(&sub, 2, &sub2);
		if (o->thread)
			str_label(&sub, &sub2, &s, o->thread, strtab__get(&p->str, r->comm));
		if (o->pid) {
			pb_uint_nz(&sub2, 1, str_id(&s, o->pid));
			pb_uint_nz(&sub2, 3, r->pid);
			pb_msg(&sub, 3, &sub2);
		}
		if (o->tid) {
			pb_uint_nz(&sub2, 1, str_id(&s, o->tid));
			pb_uint_nz(&sub2, 3, r->tid);
			pb_msg(&sub, 3, &sub2);
		}
		/* why it waited, for pprof -tagfocus and friends */
		if (o->state && p->has_states && ev->offcpu)
			str_label(&sub, &sub2, &s, o->state, profile__state_name(r->state));
		if (o->waker && p->has_wakers && ev->offcpu) {
			char buf[256];

			if (!o->waker_name_only)
				str_label(&sub, &sub2, &s, o->waker,
					  profile__waker_text(p, r, buf, sizeof(buf)));
			else if (r->waker)
				str_label(&sub, &sub2, &s, o->waker, strtab__get(&p->str, r->waker));
		}
		if (o->waker_function && ev->offcpu && r->waker_stack != UINT32_MAX) {
			uint32_t own = profile__own_frame(p, r->waker_stack);

			/* a user frame: the wakeup's own kernel frames name none of the waker's */
			if (own != UINT32_MAX && !p->frames[own].kernel)
				str_label(&sub, &sub2, &s, o->waker_function,
					  profile__frame_name(p, own));
		}
		/* what it waited on: a label of its own, only where known */
		if (r->wait && ev->offcpu) {
			char buf[600];

			pb_uint_nz(&sub2, 1, str_id(&s, "object"));
			pb_uint_nz(&sub2, 2, str_id(&s, waitobj__text(p, r->wait, buf, sizeof(buf))));
			pb_msg(&sub, 3, &sub2);
		}
		pb_msg(&b, 2, &sub);
	}
	/* functions: one per (name, file) */
	for (i = 0; i < p->nr_frames; i++) {
		const struct profile_frame *f = &p->frames[i];
		uint32_t key[2] = { f->sym, f->file };
		uint64_t *v;
		int created;

		if (!seen[i])
			continue;
		if (f->dso != UINT32_MAX && f->dso < p->nr_dsos) {
			fseen[f->dso] = 1;
			if (f->addr >= dso_max[f->dso])
				dso_max[f->dso] = f->addr + 1;
		}
		v = hashmap__upsert(&fn_idx, key, sizeof(key), &created);
		if (!v) {
			err = -ENOMEM;
			goto out;
		}
		if (created) {
			*v = ++nr_fns;
			pb_uint_nz(&sub, 1, *v);
			pb_uint_nz(&sub, 2, str_id(&s, strtab__get(&p->str, f->sym)));
			pb_uint_nz(&sub, 3, str_id(&s, strtab__get(&p->str, f->sym)));
			if (f->file)
				pb_uint_nz(&sub, 4, str_id(&s, strtab__get(&p->str, f->file)));
			pb_msg(&b, 5, &sub);
		}
		fn_of[i] = *v;
	}
	/* locations: one per frame */
	for (i = 0; i < p->nr_frames; i++) {
		const struct profile_frame *f = &p->frames[i];

		if (!seen[i])
			continue;
		pb_uint_nz(&sub, 1, i + 1);
		if (f->dso != UINT32_MAX && f->dso < p->nr_dsos)
			pb_uint_nz(&sub, 2, f->dso + 1);
		pb_uint_nz(&sub, 3, f->addr);
		pb_uint_nz(&sub2, 1, fn_of[i]);
		pb_uint_nz(&sub2, 2, f->line);
		pb_msg(&sub, 4, &sub2);
		pb_msg(&b, 4, &sub);
	}
	/*
	 * mappings: one per binary, addresses relative to the file. The first is
	 * the main binary (pprof's File:): the executable whose processes carry
	 * the most of the event, as perf's converters put each process's own
	 * executable first, not the first binary the file happened to map.
	 */
	main = main_exe(p, o);
	for (k = 0; k <= p->nr_dsos; k++) {
		const struct profile_dso *d;
		char hex[41];
		uint32_t j;

		i = k == 0 ? main : k - 1;
		if (i >= p->nr_dsos || (k && i == main) || (!fseen[i] && i != main))
			continue;
		d = &p->dsos[i];
		pb_uint_nz(&sub, 1, i + 1);
		pb_uint_nz(&sub, 3, dso_max[i] ? dso_max[i] : 1);
		pb_uint_nz(&sub, 5, str_id(&s, strtab__get(&p->str, d->name)));
		if (d->build_id_len) {
			for (j = 0; j < d->build_id_len; j++)
				sprintf(hex + 2 * j, "%02x", d->build_id[j]);
			pb_uint_nz(&sub, 6, str_id(&s, hex));
		}
		pb_uint_nz(&sub, 7, 1); /* has_functions */
		pb_uint_nz(&sub, 8, 1); /* has_filenames */
		pb_uint_nz(&sub, 9, 1); /* has_line_numbers */
		pb_uint_nz(&sub, 10, 1); /* has_inline_frames */
		pb_msg(&b, 3, &sub);
	}
	if (p->end_time > p->start_time)
		pb_uint_nz(&b, 10, p->end_time - p->start_time);
	if (ev->offcpu) {
		value_type(&b, &sub, 11, &s, "offcpu", "nanoseconds");
		pb_uint_nz(&b, 14, str_id(&s, "offcpu"));
	} else {
		value_type(&b, &sub, 11, &s, "samples", "count");
		pb_uint_nz(&b, 12, 1);
	}
	err = b.err ? b.err : sub.err ? sub.err : sub2.err ? sub2.err : s.out.err;
	if (err)
		goto out;
	pb_raw(&b, s.out.d, s.out.len);
	err = b.err ? b.err : pb_gzip(b.d, b.len, out);
out:
	free(b.d);
	free(sub.d);
	free(sub2.d);
	free(s.out.d);
	hashmap__free(&s.idx);
	hashmap__free(&fn_idx);
	free(seen);
	free(fseen);
	free(dso_max);
	free(fn_of);
	free(frames);
	return err;
}

int pprof__write(const struct profile *p, int event, int fd)
{
	struct pprof_opts o = { .event = event, .thread = "thread", .pid = "pid", .tid = "tid",
				.state = "state", .waker = "waker" };
	struct pb out = { 0 };
	int err = pprof__encode(p, &o, &out);

	err = err ?: write_full(fd, out.d, out.len);
	free(out.d);
	return err;
}
