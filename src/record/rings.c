// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "rings.h"
#include "../util/util.h"

struct ring {
	int fd;
	void *base;
	size_t size; /* data area */
	char *copy; /* a record that wraps is reassembled here (one per ring: threads) */
};

struct perf_rings {
	struct perf_event_attr attr;
	bool overwrite;
	bool borrowed; /* perf_rings__wrap(): the memory is the caller's */
	struct ring *rings;
	size_t nr;
	uint64_t *ids;
	size_t page;
};

int online_cpus(int **cpus, size_t *nr)
{
	char buf[1024];
	ssize_t n;
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return parse_int_list(buf, cpus, nr);
}

static struct perf_rings *open_rings(const struct perf_event_attr *attr, const int *cpus,
				    size_t nr_cpus, size_t pages, int cgroup_fd, const char *what,
				    bool overwrite, char *msg, size_t len)
{
	struct perf_rings *r = calloc(1, sizeof(*r));
	unsigned long flags = PERF_FLAG_FD_CLOEXEC | (cgroup_fd >= 0 ? PERF_FLAG_PID_CGROUP : 0);
	int err = 0;
	size_t i;

	if (!r)
		return NULL;
	r->attr = *attr;
	r->overwrite = overwrite;
	if (overwrite)
		r->attr.write_backward = 1;
	r->page = (size_t)sysconf(_SC_PAGESIZE);
	r->rings = calloc(nr_cpus, sizeof(*r->rings));
	r->ids = calloc(nr_cpus, sizeof(*r->ids));
	if (!r->rings || !r->ids) {
		err = -ENOMEM;
		snprintf(msg, len, "out of memory");
		goto fail;
	}
	for (i = 0; i < nr_cpus; i++) {
		struct ring *g = &r->rings[i];

		g->fd = (int)syscall(__NR_perf_event_open, &r->attr, cgroup_fd >= 0 ? cgroup_fd : -1,
				     cpus[i], -1, flags);
		if (g->fd < 0) {
			err = -errno;
			snprintf(msg, len, "failed to open the %s event on cpu %d: %s", what, cpus[i],
				 strerror(errno));
			goto fail;
		}
		r->nr++;
		g->copy = malloc(65536);
		if (!g->copy) {
			err = -ENOMEM;
			snprintf(msg, len, "out of memory");
			goto fail;
		}
		g->size = pages * r->page;
		/* a read-only mapping is what makes the kernel overwrite old records */
		g->base = mmap(NULL, g->size + r->page, PROT_READ | (overwrite ? 0 : PROT_WRITE),
			       MAP_SHARED, g->fd, 0);
		if (g->base == MAP_FAILED) {
			g->base = NULL;
			err = -errno;
			snprintf(msg, len, "failed to map the %s buffer on cpu %d: %s", what, cpus[i],
				 strerror(errno));
			goto fail;
		}
		if (ioctl(g->fd, PERF_EVENT_IOC_ID, &r->ids[i])) {
			err = -errno;
			snprintf(msg, len, "failed to read the id of the %s event: %s", what,
				 strerror(-err));
			goto fail;
		}
	}
	return r;
fail:
	perf_rings__free(r);
	errno = -err;
	return NULL;
}

struct perf_rings *perf_rings__open(const struct perf_event_attr *attr, const int *cpus,
				    size_t nr_cpus, size_t pages, int cgroup_fd, const char *what,
				    char *msg, size_t len)
{
	return open_rings(attr, cpus, nr_cpus, pages, cgroup_fd, what, false, msg, len);
}

struct perf_rings *perf_rings__open_overwrite(const struct perf_event_attr *attr, const int *cpus,
					      size_t nr_cpus, size_t pages, const char *what,
					      char *msg, size_t len)
{
	return open_rings(attr, cpus, nr_cpus, pages, -1, what, true, msg, len);
}

/*
 * A backward ring holds whole records from its head on, newest first, up to
 * one ring size; past what was ever written the memory is zero.
 */
static long read_backward(struct perf_rings *r, struct ring *g,
			  int (*fn)(const struct perf_event_header *rec, void *arg), void *arg)
{
	struct perf_event_mmap_page *pg = g->base;
	const char *data = (const char *)g->base + r->page;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE), pos = head;
	long n = 0;
	int err;

	while (pos - head + sizeof(struct perf_event_header) <= g->size) {
		size_t off = pos % g->size;
		struct perf_event_header hdr;
		const struct perf_event_header *h;

		if (off + sizeof(hdr) <= g->size) {
			memcpy(&hdr, data + off, sizeof(hdr));
		} else {
			memcpy(&hdr, data + off, g->size - off);
			memcpy((char *)&hdr + (g->size - off), data, sizeof(hdr) - (g->size - off));
		}
		if (hdr.size < sizeof(hdr) || pos - head + hdr.size > g->size)
			break;
		if (off + hdr.size <= g->size) {
			h = (const void *)(data + off);
		} else {
			memcpy(g->copy, data + off, g->size - off);
			memcpy(g->copy + (g->size - off), data, hdr.size - (g->size - off));
			h = (const void *)g->copy;
		}
		err = fn(h, arg);
		if (err)
			return err;
		pos += hdr.size;
		n++;
	}
	return n;
}

long perf_rings__snapshot(struct perf_rings *r,
			  int (*fn)(const struct perf_event_header *rec, void *arg), void *arg)
{
	long total = 0, n = 0;
	size_t i;

	for (i = 0; i < r->nr; i++)
		if (r->rings[i].fd >= 0)
			ioctl(r->rings[i].fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 1);
	for (i = 0; i < r->nr && n >= 0; i++) {
		n = read_backward(r, &r->rings[i], fn, arg);
		if (n > 0)
			total += n;
	}
	for (i = 0; i < r->nr; i++)
		if (r->rings[i].fd >= 0)
			ioctl(r->rings[i].fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 0);
	return n < 0 ? n : total;
}

const struct perf_event_attr *perf_rings__attr(const struct perf_rings *r)
{
	return &r->attr;
}

size_t perf_rings__ids(const struct perf_rings *r, const uint64_t **ids)
{
	*ids = r->ids;
	return r->nr;
}

size_t perf_rings__nr_fds(const struct perf_rings *r)
{
	return r->nr;
}

int perf_rings__fd(const struct perf_rings *r, size_t i)
{
	return r->rings[i].fd;
}

static long read_ring(struct perf_rings *r, struct ring *g,
		      int (*fn)(const struct perf_event_header *rec, void *arg), void *arg)
{
	struct perf_event_mmap_page *pg = g->base;
	char *data = (char *)g->base + r->page;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	long n = 0;
	int err = 0;

	while (tail < head) {
		size_t off = tail % g->size;
		const struct perf_event_header *h = (const void *)(data + off);
		struct perf_event_header hdr;

		if (off + sizeof(hdr) <= g->size) {
			hdr = *h;
		} else {
			size_t first = g->size - off;

			memcpy(&hdr, data + off, first);
			memcpy((char *)&hdr + first, data, sizeof(hdr) - first);
		}
		if (hdr.size < sizeof(hdr) || tail + hdr.size > head) {
			err = -EIO; /* a corrupt ring: stop rather than loop */
			break;
		}
		if (off + hdr.size > g->size) {
			size_t first = g->size - off;

			memcpy(g->copy, data + off, first);
			memcpy(g->copy + first, data, hdr.size - first);
			h = (const void *)g->copy;
		}
		err = fn(h, arg);
		if (err)
			break;
		tail += hdr.size;
		n++;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
	return err ? err : n;
}

long perf_rings__read(struct perf_rings *r, int (*fn)(const struct perf_event_header *rec, void *arg),
		      void *arg)
{
	long total = 0;
	size_t i;

	for (i = 0; i < r->nr; i++) {
		long n = read_ring(r, &r->rings[i], fn, arg);

		if (n < 0)
			return n;
		total += n;
	}
	return total;
}

long perf_rings__read_one(struct perf_rings *r, size_t i,
			  int (*fn)(const struct perf_event_header *rec, void *arg), void *arg)
{
	return i < r->nr ? read_ring(r, &r->rings[i], fn, arg) : 0;
}

struct perf_rings *perf_rings__wrap(void *base, size_t page, size_t size, bool overwrite)
{
	struct perf_rings *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->rings = calloc(1, sizeof(*r->rings));
	r->ids = calloc(1, sizeof(*r->ids));
	if (!r->rings || !r->ids || !(r->rings[0].copy = malloc(65536))) {
		perf_rings__free(r);
		return NULL;
	}
	r->borrowed = true;
	r->overwrite = overwrite;
	r->page = page;
	r->nr = 1;
	r->rings[0].fd = -1;
	r->rings[0].base = base;
	r->rings[0].size = size;
	return r;
}

void perf_rings__free(struct perf_rings *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nr; i++) {
		if (r->rings[i].base && !r->borrowed)
			munmap(r->rings[i].base, r->rings[i].size + r->page);
		if (r->rings[i].fd >= 0)
			close(r->rings[i].fd);
		free(r->rings[i].copy);
	}
	free(r->rings);
	free(r->ids);
	free(r);
}
