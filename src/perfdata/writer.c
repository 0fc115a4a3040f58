// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "writer.h"
#include "../util/util.h"

#define WBUF_SIZE (256 * 1024)

struct wevent {
	struct perf_event_attr attr; /* stored with size PERFDATA_ATTR_SIZE */
	char *name;
	uint64_t *ids;
	size_t nr_ids;
};

/* The only feature a checkpoint header carries: perf needs it to read a directory at all. */
#define CKPT_FEATURE FEAT_DIR_FORMAT

struct perf_writer {
	int fd;
	bool pipe; /* perf's pipe format: sequential, metadata as records */
	bool stream; /* a headerless record stream (directory format data.N) */
	uint64_t off; /* file offset of the next byte to write */
	char *buf;
	size_t buf_len;
	int err;
	uint64_t data_size;
	/* file mode: where the data starts, once the first record fixed it */
	bool laid_out;
	uint64_t data_off;
	size_t nr_front; /* events whose attrs sit before the data (0: none) */
	uint64_t front_attrs; /* offset of that attrs table */
	bool ckpt_done; /* a checkpoint header was written */
	uint64_t ckpt_size; /* data.size in that header */
	bool ckpt_index; /* it points at a feature index right after the data */
	struct wevent *events;
	size_t nr_events;
	struct featbuf feats[FEAT_MAX];
	bool have_feat[FEAT_MAX];
	struct featbuf build_ids;
	uint64_t first_time, last_time;
};

/* featbuf */

static void featbuf__reserve(struct featbuf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->err || b->len + n <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->err = -ENOMEM;
		return;
	}
	b->data = p;
	b->cap = cap;
}

void featbuf__bytes(struct featbuf *b, const void *p, size_t n)
{
	featbuf__reserve(b, n);
	if (b->err)
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void featbuf__u32(struct featbuf *b, uint32_t v)
{
	featbuf__bytes(b, &v, sizeof(v));
}

void featbuf__u64(struct featbuf *b, uint64_t v)
{
	featbuf__bytes(b, &v, sizeof(v));
}

void featbuf__string(struct featbuf *b, const char *s)
{
	static const char zeros[64];
	size_t len = strlen(s) + 1, padded = PERF_ALIGN(len, 64);

	featbuf__u32(b, (uint32_t)padded);
	featbuf__bytes(b, s, len - 1);
	featbuf__bytes(b, zeros, padded - len + 1);
}

void featbuf__free(struct featbuf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* raw output */

static int write_header(struct perf_writer *w, uint64_t attrs_off, size_t nr_attrs,
			uint64_t data_size, const uint64_t features[4])
{
	struct perf_file_header hdr = { 0 };

	hdr.magic = PERF_MAGIC2;
	hdr.size = sizeof(hdr);
	hdr.attr_size = PERFDATA_ATTR_SIZE + sizeof(struct perf_file_section);
	hdr.attrs.offset = attrs_off;
	hdr.attrs.size = nr_attrs * hdr.attr_size;
	hdr.data.offset = w->data_off;
	hdr.data.size = data_size;
	if (features)
		memcpy(hdr.features, features, sizeof(hdr.features));
	return write_full_at(w->fd, &hdr, sizeof(hdr), 0);
}

/*
 * The next data overwrites the checkpoint's feature index: take it out of
 * the header first, so that no header ever points at records as features.
 */
static int retract_index(struct perf_writer *w)
{
	int err;

	if (!w->ckpt_index)
		return 0;
	err = write_header(w, w->front_attrs, w->nr_front, w->ckpt_size, NULL);
	if (err)
		return err;
	w->ckpt_index = false;
	return 0;
}

static int flush_buf(struct perf_writer *w)
{
	if (w->err)
		return w->err;
	if (w->buf_len && !w->pipe && (w->err = retract_index(w)))
		return w->err;
	if (w->buf_len) {
		int err = w->pipe ? write_full(w->fd, w->buf, w->buf_len) :
				    write_full_at(w->fd, w->buf, w->buf_len, w->off - w->buf_len);

		if (err)
			w->err = err;
		w->buf_len = 0;
	}
	return w->err;
}

static int out(struct perf_writer *w, const void *p, size_t n)
{
	if (w->err)
		return w->err;
	if (n > WBUF_SIZE) {
		if (flush_buf(w) || (!w->pipe && (w->err = retract_index(w))))
			return w->err;
		w->off += n;
		w->err = w->pipe ? write_full(w->fd, p, n) : write_full_at(w->fd, p, n, w->off - n);
		return w->err;
	}
	if (w->buf_len + n > WBUF_SIZE && flush_buf(w))
		return w->err;
	memcpy(w->buf + w->buf_len, p, n);
	w->buf_len += n;
	w->off += n;
	return 0;
}

struct perf_writer *perf_writer__new(int fd)
{
	struct perf_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->buf = malloc(WBUF_SIZE);
	if (!w->buf) {
		free(w);
		errno = ENOMEM;
		return NULL;
	}
	w->fd = fd;
	w->first_time = UINT64_MAX;
	/* The header is written at checkpoints and last; reserve its place now. */
	w->off = sizeof(struct perf_file_header);
	w->data_off = w->off;
	return w;
}

struct perf_writer *perf_writer__new_pipe(int fd)
{
	struct perf_writer *w = perf_writer__new(fd);
	struct perf_pipe_file_header h = { PERF_MAGIC2, sizeof(h) };

	if (!w)
		return NULL;
	w->pipe = true;
	w->off = 0;
	out(w, &h, sizeof(h));
	return w;
}

int perf_writer__flush(struct perf_writer *w)
{
	return flush_buf(w);
}

struct perf_writer *perf_writer__new_stream(int fd)
{
	struct perf_writer *w = perf_writer__new(fd);

	if (!w)
		return NULL;
	w->stream = true;
	w->off = 0;
	return w;
}

void perf_writer__time_range(const struct perf_writer *w, uint64_t *first, uint64_t *last)
{
	*first = w->first_time;
	*last = w->last_time;
}

/* Pipe mode: metadata travels as records, in the data stream. */
static int pipe_feature(struct perf_writer *w, int feat, const void *data, size_t size)
{
	struct perf_event_header h = { PERF_RECORD_HEADER_FEATURE, 0, 0 };
	uint64_t id = (uint64_t)feat;
	static const char zeros[8];
	size_t total = sizeof(h) + 8 + PERF_ALIGN(size, 8);

	if (total > 0xffff)
		return -E2BIG;
	h.size = (uint16_t)total;
	out(w, &h, sizeof(h));
	out(w, &id, 8);
	out(w, data, size);
	return out(w, zeros, PERF_ALIGN(size, 8) - size);
}

/*
 * An event's name as an EVENT_UPDATE record: perf 6.1 names pipe-mode
 * events from it, not from EVENT_DESC, and in file mode it names the events
 * of a file that never got its EVENT_DESC. Returns its size (0 for an event
 * without ids, which nothing can name) or -errno.
 */
static int event_update(struct perf_writer *w, const struct wevent *ev)
{
	struct perf_event_header u = { PERF_RECORD_EVENT_UPDATE, 0, 0 };
	uint64_t type = PERF_EVENT_UPDATE_NAME;
	static const char zeros[8];
	size_t name_len = strlen(ev->name) + 1, name_pad = PERF_ALIGN(name_len, 8);

	if (!ev->nr_ids)
		return 0;
	if (sizeof(u) + 16 + name_pad > 0xffff)
		return -E2BIG;
	u.size = (uint16_t)(sizeof(u) + 16 + name_pad);
	out(w, &u, sizeof(u));
	out(w, &type, 8);
	out(w, &ev->ids[0], 8);
	out(w, ev->name, name_len);
	out(w, zeros, name_pad - name_len);
	return w->err ?: u.size;
}

static int pipe_event(struct perf_writer *w, const struct wevent *ev)
{
	struct perf_event_header h = { PERF_RECORD_HEADER_ATTR, 0, 0 };
	int n;

	h.size = (uint16_t)(sizeof(h) + PERFDATA_ATTR_SIZE + ev->nr_ids * 8);
	out(w, &h, sizeof(h));
	out(w, &ev->attr, PERFDATA_ATTR_SIZE);
	out(w, ev->ids, ev->nr_ids * 8);
	n = event_update(w, ev);
	return n < 0 ? n : w->err;
}

/*
 * File mode, before the first record: with events declared, their ids and
 * attrs go right after the header, as perf lays a file out, and their names
 * open the data; a checkpoint can then describe the file at any time.
 */
static int lay_out(struct perf_writer *w)
{
	uint64_t ids_off = w->off;
	size_t i;
	int n;

	w->laid_out = true;
	if (!w->nr_events)
		return 0; /* events come later: their attrs go after the features */
	for (i = 0; i < w->nr_events; i++)
		out(w, w->events[i].ids, w->events[i].nr_ids * sizeof(uint64_t));
	w->front_attrs = w->off;
	for (i = 0; i < w->nr_events; i++) {
		struct perf_file_section ids = { ids_off, w->events[i].nr_ids * sizeof(uint64_t) };

		out(w, &w->events[i].attr, PERFDATA_ATTR_SIZE);
		out(w, &ids, sizeof(ids));
		ids_off += ids.size;
	}
	w->nr_front = w->nr_events;
	w->data_off = w->off;
	for (i = 0; i < w->nr_events; i++) {
		n = event_update(w, &w->events[i]);
		if (n < 0)
			return n;
		w->data_size += (uint64_t)n;
	}
	return w->err;
}

int perf_writer__checkpoint(struct perf_writer *w)
{
	uint64_t feats[4] = { 0 };
	struct perf_file_section index;
	const struct featbuf *dir = &w->feats[CKPT_FEATURE];
	int err;

	if (w->pipe || w->stream)
		return flush_buf(w);
	if (!w->laid_out && (err = lay_out(w)))
		return err;
	if (!w->nr_front)
		return flush_buf(w); /* no attrs to point at yet */
	if (w->ckpt_done && w->ckpt_size == w->data_size && !w->buf_len)
		return w->err;
	err = flush_buf(w);
	if (err)
		return err;
	if (w->have_feat[CKPT_FEATURE] && !dir->err && !w->ckpt_index) {
		char tail[sizeof(index) + 64];

		/* the index, then the payload, right after the data */
		index.offset = w->off + sizeof(index);
		index.size = dir->len;
		if (dir->len <= 64) {
			memcpy(tail, &index, sizeof(index));
			memcpy(tail + sizeof(index), dir->data, dir->len);
			err = write_full_at(w->fd, tail, sizeof(index) + dir->len, w->off);
			if (err)
				return w->err = err;
			feats[CKPT_FEATURE / 64] |= 1ULL << (CKPT_FEATURE % 64);
		}
	}
	err = write_header(w, w->front_attrs, w->nr_front, w->data_size, feats);
	if (err)
		return w->err = err;
	w->ckpt_done = true;
	w->ckpt_size = w->data_size;
	w->ckpt_index = feats[CKPT_FEATURE / 64] != 0;
	return 0;
}

void perf_writer__free(struct perf_writer *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->nr_events; i++) {
		free(w->events[i].name);
		free(w->events[i].ids);
	}
	free(w->events);
	for (i = 0; i < FEAT_MAX; i++)
		featbuf__free(&w->feats[i]);
	featbuf__free(&w->build_ids);
	free(w->buf);
	free(w);
}

int perf_writer__add_event(struct perf_writer *w, const struct perf_event_attr *attr,
			   const char *name, const uint64_t *ids, size_t nr_ids)
{
	struct wevent *ev, *events;

	events = realloc(w->events, (w->nr_events + 1) * sizeof(*events));
	if (!events)
		return -ENOMEM;
	w->events = events;
	ev = &events[w->nr_events];
	memset(ev, 0, sizeof(*ev));
	memcpy(&ev->attr, attr, attr->size && attr->size < sizeof(*attr) ? attr->size : sizeof(*attr));
	ev->attr.size = PERFDATA_ATTR_SIZE;
	ev->name = strdup(name);
	ev->ids = malloc((nr_ids ? nr_ids : 1) * sizeof(uint64_t));
	if (!ev->name || !ev->ids) {
		free(ev->name);
		free(ev->ids);
		return -ENOMEM;
	}
	memcpy(ev->ids, ids, nr_ids * sizeof(uint64_t));
	ev->nr_ids = nr_ids;
	w->nr_events++;
	if (w->stream)
		return 0;
	return w->pipe ? pipe_event(w, ev) : 0;
}

int perf_writer__write(struct perf_writer *w, const struct perf_event_header *rec)
{
	int err;

	if (rec->size < sizeof(*rec) || rec->size % 8)
		return -EINVAL;
	if (!w->pipe && !w->stream && !w->laid_out && (err = lay_out(w)))
		return err;
	w->data_size += rec->size;
	return out(w, rec, rec->size);
}

void perf_writer__note_time(struct perf_writer *w, uint64_t t)
{
	if (t < w->first_time)
		w->first_time = t;
	if (t > w->last_time)
		w->last_time = t;
}

uint64_t perf_writer__data_size(const struct perf_writer *w)
{
	return w->data_size;
}

int perf_writer__set_feature(struct perf_writer *w, int feat, const void *data, size_t size)
{
	if (feat <= 0 || feat >= FEAT_MAX)
		return -EINVAL;
	if (w->pipe)
		return pipe_feature(w, feat, data, size);
	featbuf__free(&w->feats[feat]);
	featbuf__bytes(&w->feats[feat], data, size);
	w->have_feat[feat] = true;
	return w->feats[feat].err;
}

int perf_writer__add_build_id(struct perf_writer *w, int32_t pid, bool kernel,
			      const uint8_t *id, size_t id_len, const char *filename)
{
	static const char zeros[64];
	struct perf_build_id_entry e = { 0 };
	size_t name_len = strlen(filename) + 1, padded = PERF_ALIGN(name_len, 64);

	if (id_len > sizeof(e.build_id))
		return -EINVAL;
	e.header.type = w->pipe ? PERF_RECORD_HEADER_BUILD_ID : 0;
	e.header.misc = (kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER) |
			PERF_RECORD_MISC_BUILD_ID_SIZE_FLAG;
	e.header.size = (uint16_t)(sizeof(e) + padded);
	e.pid = pid;
	memcpy(e.build_id, id, id_len);
	e.size = (uint8_t)id_len;
	if (w->pipe) {
		out(w, &e, sizeof(e));
		out(w, filename, name_len);
		return out(w, zeros, padded - name_len);
	}
	featbuf__bytes(&w->build_ids, &e, sizeof(e));
	featbuf__bytes(&w->build_ids, filename, name_len);
	featbuf__bytes(&w->build_ids, zeros, padded - name_len);
	w->have_feat[FEAT_BUILD_ID] = true;
	return w->build_ids.err;
}

static int make_event_desc(struct perf_writer *w, struct featbuf *b)
{
	size_t i;

	featbuf__u32(b, (uint32_t)w->nr_events);
	featbuf__u32(b, PERFDATA_ATTR_SIZE);
	for (i = 0; i < w->nr_events; i++) {
		featbuf__bytes(b, &w->events[i].attr, PERFDATA_ATTR_SIZE);
		featbuf__u32(b, (uint32_t)w->events[i].nr_ids);
		featbuf__string(b, w->events[i].name);
		featbuf__bytes(b, w->events[i].ids, w->events[i].nr_ids * sizeof(uint64_t));
	}
	return b->err;
}

int perf_writer__finish(struct perf_writer *w)
{
	struct perf_file_section *index;
	uint64_t data_end, *id_offs, attrs_off, features[4] = { 0 };
	size_t nfeat = 0, i, k;
	int err;

	if (w->stream)
		return flush_buf(w);
	if (w->pipe) {
		if (w->last_time) {
			uint64_t t[2] = { w->first_time, w->last_time };

			pipe_feature(w, FEAT_SAMPLE_TIME, t, sizeof(t));
		}
		return flush_buf(w);
	}
	if (!w->laid_out && (err = lay_out(w)))
		return err;
	/* the features overwrite a checkpoint's index: out of the header first */
	if (flush_buf(w) || (w->err = retract_index(w)))
		return w->err;
	data_end = w->off;

	if (w->nr_events && !w->have_feat[FEAT_EVENT_DESC]) {
		err = make_event_desc(w, &w->feats[FEAT_EVENT_DESC]);
		if (err)
			return err;
		w->have_feat[FEAT_EVENT_DESC] = true;
	}
	if (w->last_time) {
		featbuf__free(&w->feats[FEAT_SAMPLE_TIME]);
		featbuf__u64(&w->feats[FEAT_SAMPLE_TIME], w->first_time);
		featbuf__u64(&w->feats[FEAT_SAMPLE_TIME], w->last_time);
		w->have_feat[FEAT_SAMPLE_TIME] = true;
	}
	if (w->have_feat[FEAT_BUILD_ID]) {
		featbuf__free(&w->feats[FEAT_BUILD_ID]);
		featbuf__bytes(&w->feats[FEAT_BUILD_ID], w->build_ids.data, w->build_ids.len);
	}

	/* The feature index sits right after the data; payloads follow it. */
	for (i = 0; i < FEAT_MAX; i++)
		nfeat += w->have_feat[i];
	index = calloc(nfeat ? nfeat : 1, sizeof(*index));
	id_offs = calloc(w->nr_events ? w->nr_events : 1, sizeof(*id_offs));
	if (!index || !id_offs) {
		free(index);
		free(id_offs);
		return -ENOMEM;
	}
	{
		uint64_t off = data_end + nfeat * sizeof(*index);

		for (i = 0, k = 0; i < FEAT_MAX; i++) {
			if (!w->have_feat[i])
				continue;
			index[k].offset = off;
			index[k].size = w->feats[i].len;
			off += w->feats[i].len;
			k++;
		}
	}
	out(w, index, nfeat * sizeof(*index));
	for (i = 0; i < FEAT_MAX; i++) {
		if (w->have_feat[i]) {
			if (w->feats[i].err)
				w->err = w->feats[i].err;
			out(w, w->feats[i].data, w->feats[i].len);
		}
	}
	attrs_off = w->front_attrs;
	if (w->nr_front != w->nr_events) {
		/* events declared after the data began: ids, then the attrs table, here */
		for (i = 0; i < w->nr_events; i++) {
			id_offs[i] = w->off;
			out(w, w->events[i].ids, w->events[i].nr_ids * sizeof(uint64_t));
		}
		attrs_off = w->off;
		for (i = 0; i < w->nr_events; i++) {
			struct perf_file_section ids = { id_offs[i],
							 w->events[i].nr_ids * sizeof(uint64_t) };

			out(w, &w->events[i].attr, PERFDATA_ATTR_SIZE);
			out(w, &ids, sizeof(ids));
		}
	}
	free(index);
	free(id_offs);
	if (flush_buf(w))
		return w->err;

	for (i = 0; i < FEAT_MAX; i++)
		if (w->have_feat[i])
			features[i / 64] |= 1ULL << (i % 64);
	err = write_header(w, attrs_off, w->nr_events, w->data_size, features);
	if (err)
		return err;
	if (fsync(w->fd) && errno != EINVAL && errno != EROFS)
		return -errno;
	return 0;
}

/* host features */

static int set_string_feature(struct perf_writer *w, int feat, const char *s)
{
	struct featbuf b = { 0 };
	int err;

	featbuf__string(&b, s);
	err = b.err ? b.err : perf_writer__set_feature(w, feat, b.data, b.len);
	featbuf__free(&b);
	return err;
}

static void cpuinfo_field(const char *key, char *out, size_t cap)
{
	char line[512];
	FILE *f = fopen("/proc/cpuinfo", "r");
	size_t klen = strlen(key);

	out[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon;

		if (strncmp(line, key, klen) || (line[klen] != ' ' && line[klen] != '\t' &&
						 line[klen] != ':'))
			continue;
		colon = strchr(line, ':');
		if (!colon)
			continue;
		colon++;
		while (*colon == ' ')
			colon++;
		colon[strcspn(colon, "\n")] = 0;
		snprintf(out, cap, "%s", colon);
		break;
	}
	fclose(f);
}

int perf_writer__add_host_features(struct perf_writer *w, int argc, char **argv)
{
	struct utsname u;
	struct featbuf b = { 0 };
	char host[256], desc[256], vendor[64], fam[16], model[16], step[16], cpuid[160];
	long conf = sysconf(_SC_NPROCESSORS_CONF), onl = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned long long mem_kb = 0;
	char line[256];
	FILE *f;
	int i, err = 0;

	if (uname(&u) == 0) {
		err = err ?: set_string_feature(w, FEAT_OSRELEASE, u.release);
		err = err ?: set_string_feature(w, FEAT_ARCH, u.machine);
	}
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = 0;
		err = err ?: set_string_feature(w, FEAT_HOSTNAME, host);
	}
	err = err ?: set_string_feature(w, FEAT_VERSION, "offcpu-" OFFCPU_VERSION);

	cpuinfo_field("model name", desc, sizeof(desc));
	err = err ?: set_string_feature(w, FEAT_CPUDESC, desc[0] ? desc : "unknown");
	cpuinfo_field("vendor_id", vendor, sizeof(vendor));
	cpuinfo_field("cpu family", fam, sizeof(fam));
	cpuinfo_field("model", model, sizeof(model));
	cpuinfo_field("stepping", step, sizeof(step));
	if (vendor[0]) {
		snprintf(cpuid, sizeof(cpuid), "%s,%s,%s,%s", vendor, fam, model, step);
		err = err ?: set_string_feature(w, FEAT_CPUID, cpuid);
	}

	featbuf__u32(&b, (uint32_t)(conf > 0 ? conf : 1));
	featbuf__u32(&b, (uint32_t)(onl > 0 ? onl : 1));
	err = err ?: (b.err ?: perf_writer__set_feature(w, FEAT_NRCPUS, b.data, b.len));
	featbuf__free(&b);

	f = fopen("/proc/meminfo", "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "MemTotal: %llu kB", &mem_kb) == 1)
				break;
		fclose(f);
	}
	featbuf__u64(&b, mem_kb);
	err = err ?: (b.err ?: perf_writer__set_feature(w, FEAT_TOTAL_MEM, b.data, b.len));
	featbuf__free(&b);

	featbuf__u32(&b, (uint32_t)argc);
	for (i = 0; i < argc; i++)
		featbuf__string(&b, argv[i]);
	err = err ?: (b.err ?: perf_writer__set_feature(w, FEAT_CMDLINE, b.data, b.len));
	featbuf__free(&b);
	return err;
}
