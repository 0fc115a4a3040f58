// SPDX-License-Identifier: GPL-2.0
/* An interval as an OTLP ExportProfilesServiceRequest (otlp.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "otlp.h"
#include "../util/util.h"

/* Field numbers, from the official .proto files (package ...profiles.v1development). */
enum {
	REQ_RESOURCE_PROFILES = 1, REQ_DICTIONARY = 2,
	RP_RESOURCE = 1, RP_SCOPE_PROFILES = 2,
	RES_ATTRIBUTES = 1,
	SP_SCOPE = 1, SP_PROFILES = 2,
	SCOPE_NAME = 1, SCOPE_VERSION = 2,
	KV_KEY = 1, KV_VALUE = 2,
	ANY_STRING = 1, ANY_INT = 3,
	PROF_SAMPLE_TYPE = 1, PROF_SAMPLES = 2, PROF_TIME = 3, PROF_DURATION = 4, PROF_ID = 7,
	VT_TYPE = 1, VT_UNIT = 2,
	SAMPLE_STACK = 1, SAMPLE_ATTRS = 2, SAMPLE_VALUES = 4, SAMPLE_TIMESTAMPS = 5,
	DICT_MAPPINGS = 1, DICT_LOCATIONS = 2, DICT_FUNCTIONS = 3, DICT_LINKS = 4, DICT_STRINGS = 5,
	DICT_ATTRIBUTES = 6, DICT_STACKS = 7,
	MAP_LIMIT = 2, MAP_FILENAME = 4, MAP_ATTRS = 5,
	LOC_MAPPING = 1, LOC_ADDRESS = 2, LOC_LINES = 3, LOC_ATTRS = 4,
	LINE_FUNCTION = 1, LINE_LINE = 2,
	FN_NAME = 1, FN_SYSTEM_NAME = 2, FN_FILENAME = 3,
	STACK_LOCATIONS = 1,
	KVU_KEY = 1, KVU_VALUE = 2,
};

/* The request's dictionary as it is built: each table's entries, in index order. */
struct dict {
	const struct profile *p;
	struct hashmap str_idx, fn_idx, attr_idx;
	struct pb strs, fns, locs, stacks, attrs;
	uint32_t nr_strs, nr_fns, nr_locs, nr_stacks, nr_attrs, nr_maps;
	uint32_t *loc_of; /* frame -> location index; 0: none yet */
	uint32_t *stack_of; /* profile stack -> stack index; 0: none yet */
	uint32_t *map_of; /* dso -> mapping index; 0: none yet */
	uint32_t *map_dso; /* mapping index -> dso */
	uint64_t *map_limit; /* dso -> highest address seen + 1 */
	struct pb tmp, tmp2;
	int err;
};

static void empty_msg(struct pb *b, uint32_t field)
{
	pb_varint(b, ((uint64_t)field << 3) | 2);
	pb_varint(b, 0);
}

static uint32_t str_idx(struct dict *d, const char *s)
{
	int created;
	uint64_t *v = hashmap__upsert(&d->str_idx, s, strlen(s), &created);

	if (!v) {
		d->err = -ENOMEM;
		return 0;
	}
	if (created) {
		*v = d->nr_strs++;
		pb_str(&d->strs, DICT_STRINGS, s);
	}
	return (uint32_t)*v;
}

/* An attribute (key, string or int value) of the dictionary's table. */
static uint32_t attr_idx(struct dict *d, const char *key, const char *sval, int64_t ival)
{
	char buf[1024];
	int n, created;
	uint64_t *v;

	n = sval ? snprintf(buf, sizeof(buf), "s%s=%s", key, sval) :
		   snprintf(buf, sizeof(buf), "i%s=%lld", key, (long long)ival);
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1; /* a name that long is cut: the same cut is the same entry */
	v = hashmap__upsert(&d->attr_idx, buf, (size_t)n, &created);
	if (!v) {
		d->err = -ENOMEM;
		return 0;
	}
	if (created) {
		*v = d->nr_attrs++;
		pb_uint_nz(&d->tmp, KVU_KEY, str_idx(d, key));
		if (sval)
			pb_str(&d->tmp2, ANY_STRING, sval);
		else
			pb_uint(&d->tmp2, ANY_INT, (uint64_t)ival);
		pb_msg(&d->tmp, KVU_VALUE, &d->tmp2);
		pb_msg(&d->attrs, DICT_ATTRIBUTES, &d->tmp);
	}
	return (uint32_t)*v;
}

static uint32_t fn_idx(struct dict *d, const struct profile_frame *f)
{
	uint32_t key[2] = { f->sym, f->file };
	int created;
	uint64_t *v = hashmap__upsert(&d->fn_idx, key, sizeof(key), &created);

	if (!v) {
		d->err = -ENOMEM;
		return 0;
	}
	if (created) {
		uint32_t name = str_idx(d, strtab__get(&d->p->str, f->sym));

		*v = d->nr_fns++;
		pb_uint_nz(&d->tmp, FN_NAME, name);
		pb_uint_nz(&d->tmp, FN_SYSTEM_NAME, name);
		if (f->file)
			pb_uint_nz(&d->tmp, FN_FILENAME, str_idx(d, strtab__get(&d->p->str, f->file)));
		pb_msg(&d->fns, DICT_FUNCTIONS, &d->tmp);
	}
	return (uint32_t)*v;
}

/* The frame's profile.frame.type; NULL for JIT code (of no runtime offcpu knows). */
static const char *frame_type(const struct profile *p, const struct profile_frame *f)
{
	const char *dso = profile__frame_dso(p, (uint32_t)(f - p->frames));

	if (f->kernel)
		return "kernel";
	if (!strcmp(dso, "[python]")) /* offcpu record's named Python frames (threads.c) */
		return "cpython";
	if (!strcmp(dso, "[js]")) /* its named JavaScript frames of V8 */
		return "v8js";
	if (!strcmp(dso, "[jit]"))
		return NULL;
	return "native";
}

static uint32_t loc_idx(struct dict *d, uint32_t frame)
{
	const struct profile_frame *f = &d->p->frames[frame];
	uint32_t fn, type;

	if (d->loc_of[frame])
		return d->loc_of[frame];
	fn = fn_idx(d, f);
	type = frame_type(d->p, f) ? attr_idx(d, "profile.frame.type", frame_type(d->p, f), 0) : 0;
	if (f->dso != UINT32_MAX && f->dso < d->p->nr_dsos) {
		if (!d->map_of[f->dso]) {
			d->map_dso[d->nr_maps] = f->dso;
			d->map_of[f->dso] = d->nr_maps++;
		}
		if (f->addr >= d->map_limit[f->dso])
			d->map_limit[f->dso] = f->addr + 1;
		pb_uint_nz(&d->tmp, LOC_MAPPING, d->map_of[f->dso]);
	}
	pb_uint_nz(&d->tmp, LOC_ADDRESS, f->addr);
	pb_uint_nz(&d->tmp2, LINE_FUNCTION, fn);
	pb_uint_nz(&d->tmp2, LINE_LINE, f->line);
	pb_msg(&d->tmp, LOC_LINES, &d->tmp2);
	if (type) {
		pb_varint(&d->tmp2, type);
		pb_msg(&d->tmp, LOC_ATTRS, &d->tmp2); /* packed */
	}
	pb_msg(&d->locs, DICT_LOCATIONS, &d->tmp);
	return d->loc_of[frame] = d->nr_locs++;
}

/* The stack's index: its locations leaf first (the profile's stacks are root first). */
static uint32_t stack_idx(struct dict *d, uint32_t stack)
{
	const uint32_t *fr;
	uint32_t nr, i;
	struct pb ids = { 0 };

	if (stack >= d->p->nr_stacks)
		return 0; /* no stack: the empty one */
	if (d->stack_of[stack])
		return d->stack_of[stack];
	fr = profile__stack_frames(d->p, stack, &nr);
	if (!nr)
		return 0;
	for (i = nr; i-- > 0;)
		pb_varint(&ids, loc_idx(d, fr[i]));
	pb_msg(&d->tmp, STACK_LOCATIONS, &ids);
	free(ids.d);
	pb_msg(&d->stacks, DICT_STACKS, &d->tmp);
	return d->stack_of[stack] = d->nr_stacks++;
}

static void kv_str(struct pb *b, struct pb *kv, struct pb *any, const char *k, const char *v)
{
	pb_str(kv, KV_KEY, k);
	pb_str(any, ANY_STRING, v);
	pb_msg(kv, KV_VALUE, any);
	pb_msg(b, RES_ATTRIBUTES, kv);
}

static void kv_int(struct pb *b, struct pb *kv, struct pb *any, const char *k, int64_t v)
{
	pb_str(kv, KV_KEY, k);
	pb_uint(any, ANY_INT, (uint64_t)v);
	pb_msg(kv, KV_VALUE, any);
	pb_msg(b, RES_ATTRIBUTES, kv);
}

static const char *dso_path(const struct profile *p, uint32_t dso)
{
	return dso < p->nr_dsos ? strtab__get(&p->str, p->dsos[dso].name) : NULL;
}

static const char *dso_base(const struct profile *p, uint32_t dso)
{
	return dso < p->nr_dsos ? strtab__get(&p->str, p->dsos[dso].short_name) : NULL;
}

/* The Resource of group @g. */
static void resource(const struct interval *iv, const struct ivl_group *g,
		     const struct push_meta *pm, struct pb *res)
{
	const struct profile *p = &iv->p;
	const char *cg = g->cgroup ? interval__cgroup_path(iv, g->cgroup) : NULL;
	const char *exe = dso_base(p, g->exe), *comm = strtab__get(&p->str, g->comm);
	struct pb kv = { 0 }, any = { 0 };
	struct cgroup_meta m;
	char svc[160];
	size_t i;

	cgroup_meta(cg ? cg : "", &m);
	if (m.service[0])
		snprintf(svc, sizeof(svc), "%s", m.service);
	else /* the semantic conventions' default */
		snprintf(svc, sizeof(svc), "unknown_service:%s",
			 iv->by == PUSH_BY_PROCESS ? (exe ? exe : comm) : "cgroup");
#define BUILTIN(k) (!push_meta__user_key(pm, k))
	if (BUILTIN("host.name"))
		kv_str(res, &kv, &any, "host.name", pm->host);
	if (BUILTIN("service.name"))
		kv_str(res, &kv, &any, "service.name", svc);
	if (iv->by == PUSH_BY_PROCESS) {
		if (BUILTIN("process.pid"))
			kv_int(res, &kv, &any, "process.pid", g->pid);
		if (BUILTIN("process.executable.name"))
			kv_str(res, &kv, &any, "process.executable.name", exe ? exe : comm);
		if (exe && BUILTIN("process.executable.path"))
			kv_str(res, &kv, &any, "process.executable.path", dso_path(p, g->exe));
		if (g->main_comm && BUILTIN("process.command"))
			kv_str(res, &kv, &any, "process.command", comm);
	}
	if (m.container[0] && BUILTIN("container.id"))
		kv_str(res, &kv, &any, "container.id", m.container);
	if (m.pod[0] && BUILTIN("k8s.pod.uid"))
		kv_str(res, &kv, &any, "k8s.pod.uid", m.pod);
	if (cg && BUILTIN("linux.cgroup.path"))
		kv_str(res, &kv, &any, "linux.cgroup.path", cg);
#undef BUILTIN
	for (i = 0; i < pm->o->nr_labels; i++)
		kv_str(res, &kv, &any, pm->o->label_keys[i], pm->o->label_values[i]);
	if (kv.err || any.err)
		res->err = -ENOMEM;
	free(kv.d);
	free(any.d);
}

/* Row @r as a Sample into @out. */
static void sample(struct dict *d, const struct interval *iv, const struct ivl_row *r,
		   struct pb *out)
{
	const struct profile *p = &iv->p;
	struct pb s = { 0 }, packed = { 0 };
	uint32_t k;

	pb_uint_nz(&s, SAMPLE_STACK, stack_idx(d, r->stack));
	pb_varint(&packed, attr_idx(d, "thread.id", NULL, r->tid));
	pb_varint(&packed, attr_idx(d, "thread.name", strtab__get(&p->str, r->comm), 0));
	if (iv->by == PUSH_BY_CGROUP) {
		pb_varint(&packed, attr_idx(d, "process.pid", NULL, r->pid));
		if (r->exe != UINT32_MAX)
			pb_varint(&packed, attr_idx(d, "process.executable.name", dso_base(p, r->exe), 0));
	}
	if (r->state)
		pb_varint(&packed, attr_idx(d, "linux.sched.state", profile__state_name(r->state), 0));
	if (r->waker) {
		pb_varint(&packed, attr_idx(d, "linux.sched.waker.thread.name",
					    strtab__get(&p->str, r->waker), 0));
		if (r->waker_fn != UINT32_MAX)
			pb_varint(&packed, attr_idx(d, "linux.sched.waker.function",
						    profile__frame_name(p, r->waker_fn), 0));
		if (r->chain)
			pb_varint(&packed, attr_idx(d, "linux.sched.waker.chain",
						    strtab__get(&p->str, r->chain), 0));
	}
	pb_msg(&s, SAMPLE_ATTRS, &packed);
	if (iv->obs_cut || !r->nr_obs) {
		pb_varint(&packed, r->ns);
		pb_msg(&s, SAMPLE_VALUES, &packed);
	} else {
		for (k = 0; k < r->nr_obs; k++)
			pb_varint(&packed, iv->obs[r->first_obs + k].value);
		pb_msg(&s, SAMPLE_VALUES, &packed);
		for (k = 0; k < r->nr_obs; k++) {
			uint64_t t = interval__unix(iv, iv->obs[r->first_obs + k].time);
			uint8_t le[8];
			int b;

			for (b = 0; b < 8; b++)
				le[b] = (uint8_t)(t >> (8 * b));
			pb_raw(&packed, le, 8);
		}
		pb_msg(&s, SAMPLE_TIMESTAMPS, &packed);
	}
	pb_msg(out, PROF_SAMPLES, &s);
	free(s.d);
	free(packed.d);
}

/* The ResourceProfiles of group @gi into @out. */
static void resource_profiles(struct dict *d, const struct interval *iv, uint32_t gi,
			      const struct push_meta *pm, struct pb *out)
{
	struct pb rp = { 0 }, a = { 0 }, b = { 0 };
	uint8_t id[16];
	uint32_t i;

	resource(iv, &iv->groups[gi], pm, &a);
	pb_msg(&rp, RP_RESOURCE, &a);
	/* the profile */
	pb_uint_nz(&a, VT_TYPE, str_idx(d, "off_cpu"));
	pb_uint_nz(&a, VT_UNIT, str_idx(d, "nanoseconds"));
	pb_msg(&b, PROF_SAMPLE_TYPE, &a);
	for (i = 0; i < iv->nr_rows; i++)
		if (iv->rows[i].group == gi)
			sample(d, iv, &iv->rows[i], &b);
	pb_fixed64(&b, PROF_TIME, iv->start);
	pb_uint_nz(&b, PROF_DURATION, iv->end - iv->start);
	if (getrandom(id, sizeof(id), 0) != sizeof(id))
		memset(id, 0, sizeof(id)); /* leave it out: all zeroes is "not set" */
	if (memcmp(id, (uint8_t[16]){ 0 }, sizeof(id)))
		pb_bytes(&b, PROF_ID, id, sizeof(id));
	/* the scope: offcpu */
	pb_str(&a, SCOPE_NAME, "offcpu");
	pb_str(&a, SCOPE_VERSION, OFFCPU_VERSION);
	{
		struct pb sp = { 0 };

		pb_msg(&sp, SP_SCOPE, &a);
		pb_msg(&sp, SP_PROFILES, &b);
		pb_msg(&rp, RP_SCOPE_PROFILES, &sp);
		free(sp.d);
	}
	pb_msg(out, REQ_RESOURCE_PROFILES, &rp);
	free(rp.d);
	free(a.d);
	free(b.d);
}

/* The mappings: each binary, addresses relative to its file, its build id. */
static void mappings(struct dict *d, struct pb *dict)
{
	const struct profile *p = d->p;
	uint32_t i, j;

	empty_msg(dict, DICT_MAPPINGS);
	for (i = 1; i < d->nr_maps; i++) {
		const struct profile_dso *ds = &p->dsos[d->map_dso[i]];
		uint32_t id = 0;

		if (ds->build_id_len) {
			char hex[41];

			for (j = 0; j < ds->build_id_len; j++)
				sprintf(hex + 2 * j, "%02x", ds->build_id[j]);
			id = attr_idx(d, "process.executable.build_id.gnu", hex, 0);
		}
		pb_uint_nz(&d->tmp, MAP_LIMIT, d->map_limit[d->map_dso[i]]);
		pb_uint_nz(&d->tmp, MAP_FILENAME, str_idx(d, strtab__get(&p->str, ds->name)));
		if (id) {
			pb_varint(&d->tmp2, id);
			pb_msg(&d->tmp, MAP_ATTRS, &d->tmp2);
		}
		pb_msg(dict, DICT_MAPPINGS, &d->tmp);
	}
}

static void dict_free(struct dict *d)
{
	hashmap__free(&d->str_idx);
	hashmap__free(&d->fn_idx);
	hashmap__free(&d->attr_idx);
	free(d->strs.d);
	free(d->fns.d);
	free(d->locs.d);
	free(d->stacks.d);
	free(d->attrs.d);
	free(d->loc_of);
	free(d->stack_of);
	free(d->map_of);
	free(d->map_dso);
	free(d->map_limit);
	free(d->tmp.d);
	free(d->tmp2.d);
}

/* A varint at *@p (before @end): 0, or -EINVAL. */
static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	int shift;

	*v = 0;
	for (shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t c = *(*p)++;

		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
	}
	return -EINVAL;
}

/* The fields of the message in [@p, @end): each one's number, wire type, value or bytes. */
static int next_field(const uint8_t **p, const uint8_t *end, uint32_t *field, uint64_t *v,
		      const uint8_t **bytes)
{
	uint64_t key;

	if (get_varint(p, end, &key))
		return -EINVAL;
	*field = (uint32_t)(key >> 3);
	*bytes = NULL;
	switch (key & 7) {
	case 0:
		return get_varint(p, end, v);
	case 1:
		if (end - *p < 8)
			return -EINVAL;
		*p += 8;
		return 0;
	case 5:
		if (end - *p < 4)
			return -EINVAL;
		*p += 4;
		return 0;
	case 2:
		if (get_varint(p, end, v) || *v > (uint64_t)(end - *p))
			return -EINVAL;
		*bytes = *p;
		*p += *v;
		return 0;
	}
	return -EINVAL;
}

int otlp__partial_success(const uint8_t *b, size_t n, int64_t *rejected, char *msg, size_t cap)
{
	const uint8_t *p = b, *end = b + n, *ps = NULL, *bytes;
	uint64_t v, ps_len = 0;
	uint32_t f;

	*rejected = 0;
	if (cap)
		msg[0] = 0;
	while (p < end) {
		if (next_field(&p, end, &f, &v, &bytes))
			return -EINVAL;
		if (f == 1 && bytes) {
			ps = bytes;
			ps_len = v;
		}
	}
	if (!ps)
		return -ENOENT;
	for (p = ps, end = ps + ps_len; p < end;) {
		if (next_field(&p, end, &f, &v, &bytes))
			return -EINVAL;
		if (f == 1 && !bytes) {
			*rejected = (int64_t)v;
		} else if (f == 2 && bytes && cap) {
			char raw[512];
			size_t k = v < sizeof(raw) - 1 ? v : sizeof(raw) - 1;

			memcpy(raw, bytes, k);
			raw[k] = 0;
			str_escape(msg, cap, raw);
		}
	}
	return *rejected || (cap && msg[0]) ? 0 : -ENOENT;
}

int otlp__encode(const struct interval *iv, const uint32_t *groups, size_t n,
		 const struct push_meta *pm, struct pb *out)
{
	const struct profile *p = &iv->p;
	struct dict d = { .p = p };
	struct pb dict = { 0 };
	size_t i;
	int err;

	d.loc_of = calloc(p->nr_frames + 1, sizeof(*d.loc_of));
	d.stack_of = calloc(p->nr_stacks + 1, sizeof(*d.stack_of));
	d.map_of = calloc(p->nr_dsos + 1, sizeof(*d.map_of));
	d.map_dso = calloc(p->nr_dsos + 2, sizeof(*d.map_dso));
	d.map_limit = calloc(p->nr_dsos + 1, sizeof(*d.map_limit));
	if (!d.loc_of || !d.stack_of || !d.map_of || !d.map_dso || !d.map_limit) {
		dict_free(&d);
		return -ENOMEM;
	}
	/* every table's index 0: its zero value */
	str_idx(&d, "");
	empty_msg(&d.fns, DICT_FUNCTIONS);
	empty_msg(&d.locs, DICT_LOCATIONS);
	empty_msg(&d.stacks, DICT_STACKS);
	empty_msg(&d.attrs, DICT_ATTRIBUTES);
	d.nr_fns = d.nr_locs = d.nr_stacks = d.nr_attrs = d.nr_maps = 1;
	for (i = 0; i < n; i++)
		resource_profiles(&d, iv, groups[i], pm, out);
	mappings(&d, &dict);
	pb_raw(&dict, d.locs.d, d.locs.len);
	pb_raw(&dict, d.fns.d, d.fns.len);
	empty_msg(&dict, DICT_LINKS);
	pb_raw(&dict, d.strs.d, d.strs.len);
	pb_raw(&dict, d.attrs.d, d.attrs.len);
	pb_raw(&dict, d.stacks.d, d.stacks.len);
	pb_msg(out, REQ_DICTIONARY, &dict);
	err = d.err ?: d.strs.err ?: d.fns.err ?: d.locs.err ?: d.stacks.err ?: d.attrs.err ?:
	      d.tmp.err ?: d.tmp2.err ?: dict.err ?: out->err;
	free(dict.d);
	dict_free(&d);
	return err;
}
