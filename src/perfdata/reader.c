// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include "input.h"
#include "reader.h"

#define MAX_EVENTS 4096
#define MAX_ATTR_SIZE 512

/* Directory format: X/data's data section is stream 0, X/data.N stream N + 1. */
struct rstream {
	const uint8_t *data;
	size_t size;
	uint64_t pos, end, head_time;
	bool head_known;
	uint64_t cut; /* bytes at its end not read: a record the writer did not finish */
	long number; /* N of data.N; -1 for X/data */
};

struct id_entry {
	uint64_t id;
	size_t event;
};

struct perf_reader {
	const uint8_t *data; /* whole input */
	size_t size;
	const uint8_t *base; /* what pos and end index: data, or a data.N stream */
	struct rstream *st;
	size_t nr_st, cur_st;
	struct input_stream *streams; /* data.0 ... data.N, mapped */
	size_t nr_streams;
	bool mapped, pipe;
	struct perf_file_header hdr;
	struct perf_reader_event *events;
	size_t nr_events;
	struct id_entry *idx; /* sorted by id */
	size_t nr_idx;
	bool idx_dirty;
	uint64_t pos, end, cur;
	uint64_t records; /* returned by perf_reader__next() */
	/*
	 * A file-mode header without EVENT_DESC: the writer was killed before
	 * it finished (a checkpoint header), so the data it vouches for ends at
	 * the last checkpoint, @after bytes follow it unread, and a data.N
	 * stream may end inside a record.
	 */
	bool unfinished;
	uint64_t after;
	/* a finished file shorter than its header says: @want bytes of records claimed */
	bool truncated, feats_lost;
	uint64_t want, cut; /* @cut: bytes of a record cut short at the end of the data */
	struct perf_file_section feat[FEAT_MAX];
	/* pipe mode features arrive as records and are copied here */
	void *pipe_feat[FEAT_MAX];
	size_t pipe_feat_size[FEAT_MAX];
	union {
		uint64_t align;
		char bytes[65536 + 16];
	} scratch, peek;
	char err[512];
};

static int fail(struct perf_reader *r, const char *fmt, ...)
{
	va_list ap;
	size_t n = 0;

	if (r->nr_st && r->cur_st)
		n = (size_t)snprintf(r->err, sizeof(r->err), "data.%ld: ", r->st[r->cur_st].number);
	va_start(ap, fmt);
	vsnprintf(r->err + n, sizeof(r->err) - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

const char *perf_reader__error(const struct perf_reader *r)
{
	return r->err;
}

bool perf_reader__is_pipe(const struct perf_reader *r)
{
	return r->pipe;
}

size_t perf_reader__nr_events(const struct perf_reader *r)
{
	return r->nr_events;
}

const struct perf_reader_event *perf_reader__event(const struct perf_reader *r, size_t i)
{
	return i < r->nr_events ? &r->events[i] : NULL;
}

uint64_t perf_reader__offset(const struct perf_reader *r)
{
	return r->cur;
}

static bool in_bounds(const struct perf_reader *r, uint64_t off, uint64_t size)
{
	return off <= r->size && size <= r->size - off;
}

int perf_string__decode(const void *p, size_t size, const char **out)
{
	uint32_t len;

	if (size < 4)
		return -EINVAL;
	memcpy(&len, p, 4);
	if (len == 0 || len > size - 4)
		return -EINVAL;
	if (!memchr((const char *)p + 4, 0, len))
		return -EINVAL;
	*out = (const char *)p + 4;
	return (int)(4 + len);
}

static const char *generic_name(const struct perf_event_attr *a, char *buf, size_t cap)
{
	static const char *sw[] = { "cpu-clock", "task-clock", "page-faults", "context-switches",
				    "cpu-migrations", "minor-faults", "major-faults",
				    "alignment-faults", "emulation-faults", "dummy", "bpf-output",
				    "cgroup-switches" };
	static const char *hw[] = { "cycles", "instructions", "cache-references", "cache-misses",
				    "branches", "branch-misses", "bus-cycles",
				    "stalled-cycles-frontend", "stalled-cycles-backend",
				    "ref-cycles" };

	if (a->type == PERF_TYPE_SOFTWARE && a->config < sizeof(sw) / sizeof(sw[0]))
		return sw[a->config];
	if (a->type == PERF_TYPE_HARDWARE && a->config < sizeof(hw) / sizeof(hw[0]))
		return hw[a->config];
	snprintf(buf, cap, "event-%u:%llu", a->type, (unsigned long long)a->config);
	return buf;
}

static int add_event(struct perf_reader *r, const void *attr, size_t attr_bytes,
		     const void *ids, size_t nr_ids)
{
	struct perf_reader_event *ev, *evs;
	char buf[64];

	if (r->nr_events >= MAX_EVENTS)
		return fail(r, "more than %d events", MAX_EVENTS);
	evs = realloc(r->events, (r->nr_events + 1) * sizeof(*evs));
	if (!evs)
		return -ENOMEM;
	r->events = evs;
	ev = &evs[r->nr_events];
	memset(ev, 0, sizeof(*ev));
	memcpy(&ev->attr, attr,
	       attr_bytes < sizeof(ev->attr) ? attr_bytes : sizeof(ev->attr));
	ev->ids = malloc((nr_ids ? nr_ids : 1) * sizeof(uint64_t));
	ev->name = strdup(generic_name(&ev->attr, buf, sizeof(buf)));
	if (!ev->ids || !ev->name) {
		free(ev->ids);
		free(ev->name);
		return -ENOMEM;
	}
	if (nr_ids)
		memcpy(ev->ids, ids, nr_ids * sizeof(uint64_t));
	ev->nr_ids = nr_ids;
	r->nr_events++;
	r->idx_dirty = true;
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	const struct id_entry *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static int build_index(struct perf_reader *r)
{
	size_t n = 0, i, k;

	for (i = 0; i < r->nr_events; i++)
		n += r->events[i].nr_ids;
	free(r->idx);
	r->idx = malloc((n ? n : 1) * sizeof(*r->idx));
	if (!r->idx)
		return -ENOMEM;
	r->nr_idx = 0;
	for (i = 0; i < r->nr_events; i++)
		for (k = 0; k < r->events[i].nr_ids; k++) {
			r->idx[r->nr_idx].id = r->events[i].ids[k];
			r->idx[r->nr_idx].event = i;
			r->nr_idx++;
		}
	qsort(r->idx, r->nr_idx, sizeof(*r->idx), cmp_id);
	r->idx_dirty = false;
	return 0;
}

static long event_of_id(struct perf_reader *r, uint64_t id)
{
	size_t lo = 0, hi;

	if (r->idx_dirty && build_index(r))
		return -1;
	hi = r->nr_idx;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->idx[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->nr_idx && r->idx[lo].id == id)
		return (long)r->idx[lo].event;
	return -1;
}

static void set_name(struct perf_reader_event *ev, const char *name)
{
	char *n = strdup(name);

	if (n) {
		free(ev->name);
		ev->name = n;
	}
}

/* EVENT_DESC: u32 nr, u32 attr_size, per event: attr, u32 nr_ids, string, ids */
static void apply_event_desc(struct perf_reader *r, const uint8_t *p, size_t size)
{
	uint32_t nr, asz, i, nids;
	size_t off = 8;

	if (size < 8)
		return;
	memcpy(&nr, p, 4);
	memcpy(&asz, p + 4, 4);
	for (i = 0; i < nr; i++) {
		const char *name;
		uint64_t first_id = 0;
		int n;
		long ev = -1;

		if (asz > size - off || size - off - asz < 4)
			return;
		off += asz;
		memcpy(&nids, p + off, 4);
		off += 4;
		n = perf_string__decode(p + off, size - off, &name);
		if (n < 0)
			return;
		off += (size_t)n;
		if (nids > (size - off) / 8)
			return;
		if (nids)
			memcpy(&first_id, p + off, 8);
		off += (size_t)nids * 8;
		if (nids)
			ev = event_of_id(r, first_id);
		if (ev < 0 && nr == r->nr_events)
			ev = (long)i;
		if (ev >= 0)
			set_name(&r->events[ev], name);
	}
}

static int open_file_mode(struct perf_reader *r)
{
	struct perf_file_header *h = &r->hdr;
	uint64_t nr, i, attr_bytes, data_end, tail;
	int bit;

	if (r->size < sizeof(*h))
		return fail(r, "file is %zu bytes, shorter than a perf.data header (104)", r->size);
	memcpy(h, r->data, sizeof(*h));
	if (h->size != sizeof(*h))
		return fail(r, "header size at offset 8 is %llu, expected 104",
			    (unsigned long long)h->size);
	if (h->attr_size < 64 + 16 || h->attr_size > MAX_ATTR_SIZE + 16)
		return fail(r, "attr_size %llu in the header at offset 16 is not plausible",
			    (unsigned long long)h->attr_size);
	if (!in_bounds(r, h->attrs.offset, h->attrs.size))
		return fail(r, "attrs section (offset %llu, size %llu) lies outside the file",
			    (unsigned long long)h->attrs.offset, (unsigned long long)h->attrs.size);
	if (h->data.offset < sizeof(*h) || h->data.offset > r->size ||
	    h->data.offset + h->data.size < h->data.offset)
		return fail(r, "data section (offset %llu, size %llu) lies outside the %zu-byte file "
			    "(truncated?)", (unsigned long long)h->data.offset,
			    (unsigned long long)h->data.size, r->size);
	data_end = h->data.offset + h->data.size;
	if (data_end > r->size) {
		/* cut short (a partial copy, a full disk): its whole records are read */
		r->truncated = true;
		r->want = h->data.size;
		data_end = r->size;
	}
	nr = h->attrs.size / h->attr_size;
	if (nr == 0)
		return fail(r, "the file declares no event (attrs section is empty)");
	attr_bytes = h->attr_size - 16;
	for (i = 0; i < nr; i++) {
		const uint8_t *a = r->data + h->attrs.offset + i * h->attr_size;
		struct perf_file_section ids;
		int err;

		memcpy(&ids, a + attr_bytes, sizeof(ids));
		if (!in_bounds(r, ids.offset, ids.size) || ids.size % 8)
			return fail(r, "ids of event %llu (offset %llu, size %llu) lie outside the file",
				    (unsigned long long)i, (unsigned long long)ids.offset,
				    (unsigned long long)ids.size);
		err = add_event(r, a, attr_bytes, r->data + ids.offset, ids.size / 8);
		if (err)
			return err;
	}
	/*
	 * perf never sets bit 0 (reserved) or a bit past 63 (it defines about
	 * 32): a header that does is damaged, and its index would be misread.
	 */
	if ((h->features[0] & 1) || h->features[1] || h->features[2] || h->features[3])
		return fail(r, "the feature bitmap at offset 72 has bits no perf sets (reserved bit "
			    "0, or bits past 63): damaged header");
	/* feature index right after the data */
	tail = data_end;
	if (!r->truncated) {
		uint64_t off = data_end;

		for (bit = 0; bit < FEAT_MAX; bit++) {
			if (!(h->features[bit / 64] & (1ULL << (bit % 64))))
				continue;
			if (!in_bounds(r, off, sizeof(struct perf_file_section))) {
				/* a truncated tail: keep the data readable, drop features */
				memset(r->feat, 0, sizeof(r->feat));
				r->feats_lost = true;
				break;
			}
			memcpy(&r->feat[bit], r->data + off, sizeof(r->feat[bit]));
			off += sizeof(struct perf_file_section);
			if (off > tail)
				tail = off;
			if (!in_bounds(r, r->feat[bit].offset, r->feat[bit].size)) {
				memset(&r->feat[bit], 0, sizeof(r->feat[bit]));
				r->feats_lost = true;
			} else if (r->feat[bit].size && r->feat[bit].offset < data_end) {
				return fail(r, "feature %d's section (offset %llu, size %llu) lies "
					    "before the end of the data: damaged header", bit,
					    (unsigned long long)r->feat[bit].offset,
					    (unsigned long long)r->feat[bit].size);
			} else if (r->feat[bit].offset + r->feat[bit].size > tail) {
				tail = r->feat[bit].offset + r->feat[bit].size;
			}
		}
	} else if (h->features[0]) {
		r->feats_lost = true;
	}
	/*
	 * Writers that finish (perf, offcpu) always write EVENT_DESC; offcpu's
	 * checkpoint headers never do: without it, the recording never finished.
	 */
	r->unfinished = !(h->features[0] & (1ULL << FEAT_EVENT_DESC));
	if (r->unfinished && !r->truncated && r->size > tail)
		r->after = r->size - tail;
	if (r->feat[FEAT_EVENT_DESC].size)
		apply_event_desc(r, r->data + r->feat[FEAT_EVENT_DESC].offset,
				 r->feat[FEAT_EVENT_DESC].size);
	r->pos = h->data.offset;
	r->end = data_end;
	return 0;
}

/* X/data.0 ... X/data.N next to X/data (input.c checks they are all there), merged by time. */
static int open_streams(struct perf_reader *r, const char *dir, unsigned flags, char *err,
			size_t errlen)
{
	struct input_stream *v;
	size_t n, i;
	int e;

	if (!r->feat[FEAT_DIR_FORMAT].size)
		return 0; /* as perf: without DIR_FORMAT, data.N are not part of the file */
	e = input__streams(dir, flags, &v, &n, err, errlen);
	if (e)
		return e;
	r->st = calloc(n + 1, sizeof(*r->st));
	if (!r->st) {
		input__free_streams(v, n);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->streams = v;
	r->nr_streams = n;
	r->st[0] = (struct rstream){ r->data, r->size, r->pos, r->end, 0, false, 0, -1 };
	for (i = 0; i < n; i++)
		r->st[i + 1] = (struct rstream){ v[i].data, v[i].size, 0, v[i].size, 0, false, 0,
						 v[i].number };
	r->nr_st = n + 1;
	return 0;
}

static int reader_init(struct perf_reader *r, const char *path, const char *dir, unsigned flags,
		       char *err, size_t errlen);

/*
 * @path does not exist: a recording of that name that never finished (or
 * is still being written) is under its temporary name, NAME.tmp.XXXXXXXX;
 * name it in @err.
 */
static void unfinished_hint(const char *path, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	char dir[4096], prefix[512];
	struct dirent *de;
	size_t n = strlen(err), found = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
	if ((size_t)snprintf(prefix, sizeof(prefix), "%s.tmp.", base) >= sizeof(prefix))
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)))
			continue;
		if (!found++ && n < errlen)
			snprintf(err + n, errlen - n, " (%s%s is a recording of that name that has "
				 "not finished, killed or still under way: offcpu report reads it)",
				 slash ? dir : "", de->d_name);
	}
	closedir(d);
}

struct perf_reader *perf_reader__open(const char *path, unsigned flags, char *err, size_t errlen)
{
	struct perf_reader *r = calloc(1, sizeof(*r));
	struct stat st;
	int fd = -1, e = 0;
	const char *dir = NULL;
	char dpath[4096];

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!strcmp(path, "-")) {
		e = input__slurp(0, &r->data, &r->size);
	} else {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			e = errno;
			snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
			if (e == ENOENT)
				unfinished_hint(path, err, errlen);
			goto fail;
		}
		if (S_ISDIR(st.st_mode)) {
			close(fd);
			dir = path;
			snprintf(dpath, sizeof(dpath), "%s/data", path);
			path = dpath;
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || fstat(fd, &st)) {
				snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
				goto fail;
			}
		}
		/* a fifo or device another user made is theirs as much as a file */
		if (input__check_owner(&st, path, flags, err, errlen))
			goto fail;
		if (S_ISREG(st.st_mode) && st.st_size > 0) {
			void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

			if (m == MAP_FAILED) {
				snprintf(err, errlen, "cannot map %s: %s", path, strerror(errno));
				goto fail;
			}
			r->data = m;
			r->size = (size_t)st.st_size;
			r->mapped = true;
			input__guard(m, r->size, path);
		} else {
			e = input__slurp(fd, &r->data, &r->size);
		}
		close(fd);
		fd = -1;
	}
	if (e) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(-e));
		goto fail;
	}
	if (reader_init(r, path, dir, flags, err, errlen))
		goto fail;
	return r;
fail:
	if (fd >= 0)
		close(fd);
	perf_reader__close(r);
	return NULL;
}

struct perf_reader *perf_reader__open_mem(const void *data, size_t size, char *err, size_t errlen)
{
	struct perf_reader *r = calloc(1, sizeof(*r));
	uint8_t *copy = malloc(size ? size : 1);

	if (!r || !copy) {
		free(r);
		free(copy);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(copy, data, size);
	r->data = copy;
	r->size = size;
	if (reader_init(r, "input", NULL, 0, err, errlen)) {
		perf_reader__close(r);
		return NULL;
	}
	return r;
}

/* Header checks and event setup, once the input is in memory. */
static int reader_init(struct perf_reader *r, const char *path, const char *dir, unsigned flags,
		       char *err, size_t errlen)
{
	uint64_t magic = 0, hsize = 0;

	if (r->size >= 16) {
		memcpy(&magic, r->data, 8);
		memcpy(&hsize, r->data + 8, 8);
	}
	if (magic != PERF_MAGIC2) {
		snprintf(err, errlen, "%s is not a perf.data file (%s)",
			 strcmp(path, "-") ? path : "standard input",
			 r->size < 16 ? "too short" : "bad magic at offset 0");
		return -EINVAL;
	}
	if (hsize == sizeof(struct perf_pipe_file_header)) {
		r->pipe = true;
		r->pos = 16;
		r->end = r->size;
	} else if (open_file_mode(r)) {
		snprintf(err, errlen, "%s: %s", path, r->err);
		return -EINVAL;
	}
	r->base = r->data;
	/*
	 * An empty data section is legitimate in a directory, whose data.N
	 * streams hold the records (perf record --threads of a quiet command).
	 */
	if (!r->pipe && r->hdr.data.size == 0 && !r->truncated) {
		if (!r->feat[FEAT_DIR_FORMAT].size) {
			snprintf(err, errlen, "%s: data size is 0: the recording was not finished",
				 path);
			return -EINVAL;
		}
		if (!dir) {
			snprintf(err, errlen, "%s: data size is 0: the records are in the data.N "
				 "files next to it; read the directory that holds them", path);
			return -EINVAL;
		}
	}
	if (dir && !r->pipe && open_streams(r, dir, flags, err, errlen))
		return -EINVAL;
	r->err[0] = 0;
	return 0;
}

void perf_reader__close(struct perf_reader *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nr_events; i++) {
		free(r->events[i].name);
		free(r->events[i].ids);
	}
	free(r->events);
	free(r->idx);
	for (i = 0; i < FEAT_MAX; i++)
		free(r->pipe_feat[i]);
	input__free_streams(r->streams, r->nr_streams);
	free(r->st);
	if (r->mapped) {
		input__unguard(r->data);
		munmap((void *)r->data, r->size);
	}
	else
		free((void *)r->data);
	free(r);
}

static const char *type_name(uint32_t type)
{
	switch (type) {
	case PERF_RECORD_MMAP: return "MMAP";
	case PERF_RECORD_LOST: return "LOST";
	case PERF_RECORD_COMM: return "COMM";
	case PERF_RECORD_EXIT: return "EXIT";
	case PERF_RECORD_FORK: return "FORK";
	case PERF_RECORD_SAMPLE: return "SAMPLE";
	case PERF_RECORD_MMAP2: return "MMAP2";
	case PERF_RECORD_HEADER_ATTR: return "HEADER_ATTR";
	case PERF_RECORD_EVENT_UPDATE: return "EVENT_UPDATE";
	case PERF_RECORD_HEADER_FEATURE: return "HEADER_FEATURE";
	default: return "record";
	}
}

static int pipe_meta(struct perf_reader *r, const struct perf_event_header *h)
{
	const uint8_t *p = (const uint8_t *)h + sizeof(*h);
	size_t body = h->size - sizeof(*h);

	switch (h->type) {
	case PERF_RECORD_HEADER_ATTR: {
		uint32_t asz;

		if (body < 8)
			return fail(r, "HEADER_ATTR at offset %llu is too short",
				    (unsigned long long)r->cur);
		memcpy(&asz, p + 4, 4);
		if (asz < 64 || asz > body || asz > MAX_ATTR_SIZE)
			return fail(r, "HEADER_ATTR at offset %llu has attr size %u",
				    (unsigned long long)r->cur, asz);
		return add_event(r, p, asz, p + asz, (body - asz) / 8);
	}
	case PERF_RECORD_EVENT_UPDATE: {
		uint64_t type, id;
		long ev;

		if (body < 17)
			return 0;
		memcpy(&type, p, 8);
		memcpy(&id, p + 8, 8);
		if (type != PERF_EVENT_UPDATE_NAME || !memchr(p + 16, 0, body - 16))
			return 0;
		ev = event_of_id(r, id);
		if (ev >= 0)
			set_name(&r->events[ev], (const char *)p + 16);
		return 0;
	}
	case PERF_RECORD_HEADER_FEATURE: {
		uint64_t feat;

		if (body < 8)
			return 0;
		memcpy(&feat, p, 8);
		if (feat >= FEAT_MAX)
			return 0;
		free(r->pipe_feat[feat]);
		r->pipe_feat[feat] = malloc(body - 8 ? body - 8 : 1);
		if (!r->pipe_feat[feat])
			return -ENOMEM;
		memcpy(r->pipe_feat[feat], p + 8, body - 8);
		r->pipe_feat_size[feat] = body - 8;
		if (feat == FEAT_EVENT_DESC)
			apply_event_desc(r, r->pipe_feat[feat], body - 8);
		return 0;
	}
	}
	return 0;
}

static long find_event(struct perf_reader *r, const struct perf_event_header *rec, bool sample);

/* The time of the record at the head of stream @s; 0 when it has none. */
static uint64_t head_time(struct perf_reader *r, const struct rstream *s)
{
	struct perf_event_header h;
	struct perf_sample smp;
	const char *why;
	long ev;

	if (s->end - s->pos < sizeof(h))
		return 0;
	memcpy(&h, s->data + s->pos, sizeof(h));
	if (h.size < sizeof(h) || h.size > s->end - s->pos || h.size % 8)
		return 0;
	memcpy(r->peek.bytes, s->data + s->pos, h.size);
	memset(r->peek.bytes + h.size, 0, 8);
	if (h.type >= PERF_RECORD_HEADER_ATTR)
		return 0;
	ev = find_event(r, (const void *)r->peek.bytes, h.type == PERF_RECORD_SAMPLE);
	if (ev < 0 || !(r->events[ev].attr.sample_type & PERF_SAMPLE_TIME))
		return 0;
	if (h.type == PERF_RECORD_SAMPLE) {
		if (perf_sample__parse(&r->events[ev].attr, (const void *)r->peek.bytes, &smp, &why))
			return 0;
	} else if (!r->events[ev].attr.sample_id_all ||
		   perf_sample_id__parse(r->events[ev].attr.sample_type,
					 (const void *)r->peek.bytes, &smp)) {
		return 0;
	}
	return smp.time;
}

/* Directory format: continue with the stream whose next record is oldest. */
static int pick_stream(struct perf_reader *r)
{
	size_t i, best = SIZE_MAX;

	r->st[r->cur_st].pos = r->pos;
	for (i = 0; i < r->nr_st; i++) {
		struct rstream *s = &r->st[i];

		if (s->pos >= s->end)
			continue;
		if (!s->head_known) {
			s->head_time = head_time(r, s);
			s->head_known = true;
		}
		if (best == SIZE_MAX || s->head_time < r->st[best].head_time)
			best = i;
	}
	if (best == SIZE_MAX)
		return 0;
	r->cur_st = best;
	r->base = r->st[best].data;
	r->pos = r->st[best].pos;
	r->end = r->st[best].end;
	r->st[best].head_known = false;
	return 1;
}

/*
 * The stream being read ends inside a record. Tolerated where the writer is
 * known not to have finished it: a data.N stream of a recording that never
 * finished, a file cut short, or a pipe-mode stream (which has no end to
 * finish: one cut inside a record was cut when its writer died); the rest
 * of that stream is not read.
 */
static bool cut_short(struct perf_reader *r)
{
	bool stream = r->nr_st && r->cur_st;

	if (stream ? !r->unfinished : !r->truncated && !r->pipe)
		return false;
	if (stream)
		r->st[r->cur_st].cut = r->end - r->pos;
	else
		r->cut = r->end - r->pos;
	r->pos = r->end;
	return true;
}

int perf_reader__next(struct perf_reader *r, const struct perf_event_header **rec)
{
	struct perf_event_header h;
	const uint8_t *p;

next:
	if (r->nr_st) {
		int e = pick_stream(r);

		if (e <= 0)
			return e;
	}
	if (r->pos >= r->end)
		return 0;
	r->cur = r->pos;
	if (r->end - r->pos < sizeof(h)) {
		if (cut_short(r))
			goto next;
		return fail(r, "%llu stray bytes at the end of the data at offset %llu (truncated?)",
			    (unsigned long long)(r->end - r->pos), (unsigned long long)r->pos);
	}
	p = r->base + r->pos;
	memcpy(&h, p, sizeof(h));
	if (h.size < sizeof(h))
		return fail(r, "%s (type %u) at offset %llu has size %u", type_name(h.type), h.type,
			    (unsigned long long)r->pos, h.size);
	if (h.size > r->end - r->pos) {
		if (cut_short(r))
			goto next;
		return fail(r, "%s (type %u, %u bytes) at offset %llu runs past the end of the data "
			    "(truncated?)", type_name(h.type), h.type, h.size,
			    (unsigned long long)r->pos);
	}
	r->pos += h.size;
	r->records++;
	/* Hand out an 8-aligned, 8-padded copy so every u64 read is in bounds. */
	memcpy(r->scratch.bytes, p, h.size);
	memset(r->scratch.bytes + h.size, 0, 8);
	*rec = (const void *)r->scratch.bytes;
	/* file mode names events with EVENT_UPDATE too: a file that never got its EVENT_DESC */
	if (r->pipe || h.type == PERF_RECORD_EVENT_UPDATE) {
		int err = pipe_meta(r, *rec);

		if (err)
			return err;
	}
	return 1;
}

/* Append to @buf at *@n what printf makes of @fmt, within @len. */
static void say(char *buf, size_t len, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void say(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (*n >= len)
		return;
	va_start(ap, fmt);
	k = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	if (k > 0)
		*n += (size_t)k;
}

size_t perf_reader__warning(const struct perf_reader *r, char *buf, size_t len)
{
	uint64_t read, cut = 0;
	size_t n = 0, i, cuts = 0;

	if (!len)
		return 0;
	buf[0] = 0;
	if (r->pipe) {
		if (r->cut)
			say(buf, len, &n, "the stream ends inside a record (its writer was "
			    "killed, or it was cut short): read %llu records; not read: the last "
			    "%llu bytes", (unsigned long long)r->records,
			    (unsigned long long)r->cut);
		return n < len ? n : len - 1;
	}
	/* with streams, r->end is the current stream's */
	read = (r->nr_st ? r->st[0].end : r->end) - r->hdr.data.offset;
	for (i = 1; i < r->nr_st; i++) {
		read += r->st[i].end - r->st[i].cut;
		cut += r->st[i].cut;
		cuts += r->st[i].cut > 0;
	}
	if (r->unfinished) {
		say(buf, len, &n, "the recording did not finish (its writer was killed or crashed "
		    "before it wrote the end of the file): read %llu records (%llu bytes)",
		    (unsigned long long)r->records, (unsigned long long)(read - r->cut));
		if (r->nr_st > 1)
			say(buf, len, &n, ": data up to its last checkpoint, %zu data.N "
			    "stream%s to the last whole record", r->nr_st - 1,
			    r->nr_st == 2 ? "" : "s");
		else
			say(buf, len, &n, " up to its last checkpoint");
		if (r->after || cut)
			say(buf, len, &n, "; not read:");
		if (r->after)
			say(buf, len, &n, " %llu bytes written after that checkpoint",
			    (unsigned long long)r->after);
		if (cut)
			say(buf, len, &n, "%s the last %llu bytes of %zu data.N stream%s (a record "
			    "cut short)", r->after ? " and" : "", (unsigned long long)cut, cuts,
			    cuts == 1 ? "" : "s");
		say(buf, len, &n, "; missing: what is written at the end (build ids, the host's "
		    "description, the samples' time range)");
	} else if (r->truncated) {
		say(buf, len, &n, "the file is cut short: its header announces %llu bytes of "
		    "records, it holds %llu: read the %llu whole records in them",
		    (unsigned long long)r->want, (unsigned long long)(read - r->cut),
		    (unsigned long long)r->records);
		if (r->cut)
			say(buf, len, &n, "; not read: a record cut short (%llu bytes)",
			    (unsigned long long)r->cut);
		if (r->feats_lost)
			say(buf, len, &n, "; its features (event names, build ids, sample times) "
			    "are lost");
	} else if (r->feats_lost) {
		say(buf, len, &n, "the file is cut short after its records: some of its features "
		    "(event names, build ids, sample times) are lost");
	}
	return n < len ? n : len - 1;
}

static long find_event(struct perf_reader *r, const struct perf_event_header *rec, bool sample)
{
	const struct perf_event_attr *a0;
	const uint64_t *w = (const void *)(rec + 1);
	size_t words = (rec->size - sizeof(*rec)) / 8, pos;
	long ev;

	if (r->nr_events == 0)
		return -1;
	if (r->nr_events == 1)
		return 0;
	a0 = &r->events[0].attr;
	if (a0->sample_type & PERF_SAMPLE_IDENTIFIER) {
		if (words == 0)
			return -1;
		pos = sample ? 0 : words - 1;
	} else if (a0->sample_type & PERF_SAMPLE_ID) {
		uint64_t st = a0->sample_type;

		if (sample) {
			pos = !!(st & PERF_SAMPLE_IP) + !!(st & PERF_SAMPLE_TID) +
			      !!(st & PERF_SAMPLE_TIME) + !!(st & PERF_SAMPLE_ADDR);
		} else {
			size_t after = !!(st & PERF_SAMPLE_STREAM_ID) + !!(st & PERF_SAMPLE_CPU) + 1;

			if (words < after)
				return -1;
			pos = words - after;
		}
		if (pos >= words)
			return -1;
	} else {
		return 0;
	}
	ev = event_of_id(r, w[pos]);
	return ev >= 0 ? ev : 0;
}

int perf_reader__parse_sample(struct perf_reader *r, const struct perf_event_header *rec,
			      struct perf_sample *s, size_t *event)
{
	const char *why;
	long ev = find_event(r, rec, true);

	if (ev < 0)
		return fail(r, "SAMPLE at offset %llu: the file declares no event",
			    (unsigned long long)r->cur);
	if (rec->size % 8)
		return fail(r, "SAMPLE at offset %llu has size %u, not a multiple of 8",
			    (unsigned long long)r->cur, rec->size);
	if (perf_sample__parse(&r->events[ev].attr, rec, s, &why))
		return fail(r, "SAMPLE at offset %llu (%u bytes): %s", (unsigned long long)r->cur,
			    rec->size, why);
	*event = (size_t)ev;
	return 0;
}

int perf_reader__parse_id(struct perf_reader *r, const struct perf_event_header *rec,
			  struct perf_sample *s)
{
	long ev = find_event(r, rec, false);

	memset(s, 0, sizeof(*s));
	if (ev < 0 || !r->events[ev].attr.sample_id_all)
		return 0;
	if (rec->size % 8)
		return fail(r, "%s at offset %llu has size %u, not a multiple of 8",
			    type_name(rec->type), (unsigned long long)r->cur, rec->size);
	if (perf_sample_id__parse(r->events[ev].attr.sample_type, rec, s))
		return fail(r, "%s at offset %llu is too short for its sample_id",
			    type_name(rec->type), (unsigned long long)r->cur);
	return 0;
}

const void *perf_reader__feature(const struct perf_reader *r, int feat, size_t *size)
{
	if (feat <= 0 || feat >= FEAT_MAX)
		return NULL;
	if (r->pipe) {
		*size = r->pipe_feat_size[feat];
		return r->pipe_feat[feat];
	}
	if (!r->feat[feat].size)
		return NULL;
	*size = r->feat[feat].size;
	return r->data + r->feat[feat].offset;
}

void perf_reader__progress(const struct perf_reader *r, uint64_t *pos, uint64_t *total)
{
	size_t i;

	*pos = r->pos;
	*total = r->end;
	if (r->nr_st) {
		*pos = *total = 0;
		for (i = 0; i < r->nr_st; i++) {
			*pos += (i == r->cur_st ? r->pos : r->st[i].pos) - (i ? 0 : r->hdr.data.offset);
			*total += r->st[i].end - (i ? 0 : r->hdr.data.offset);
		}
	}
}
