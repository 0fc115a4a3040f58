// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "sideband.h"
#include "../perfdata/format.h"
#include "../util/util.h"

struct ring {
	int fd;
	void *base;
	size_t size; /* data area */
};

struct sideband {
	struct perf_event_attr attr;
	struct ring *rings;
	size_t nr;
	uint64_t *ids;
	int private_fd;
	uint64_t private_id;
	size_t page;
	char copy[65536]; /* a record that wraps is reassembled here */
};

static int perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			   unsigned long flags)
{
	return (int)syscall(__NR_perf_event_open, attr, pid, cpu, group, flags);
}

static int online_cpus(int **cpus, size_t *nr)
{
	char buf[1024];
	ssize_t n;
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY);

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

struct sideband *sideband__open(size_t pages, bool cgroup)
{
	struct sideband *sb = calloc(1, sizeof(*sb));
	int *cpus = NULL, err;
	size_t nr = 0, i;
	struct perf_event_attr bo = { 0 };

	if (!sb)
		return NULL;
	sb->private_fd = -1;
	sb->page = (size_t)sysconf(_SC_PAGESIZE);
	err = online_cpus(&cpus, &nr);
	if (err)
		goto fail;
	sb->rings = calloc(nr, sizeof(*sb->rings));
	sb->ids = calloc(nr, sizeof(*sb->ids));
	if (!sb->rings || !sb->ids) {
		err = -ENOMEM;
		goto fail;
	}

	sb->attr.size = sizeof(sb->attr);
	sb->attr.type = PERF_TYPE_SOFTWARE;
	sb->attr.config = PERF_COUNT_SW_DUMMY;
	sb->attr.sample_type = SIDEBAND_SAMPLE_TYPE;
	sb->attr.sample_id_all = 1;
	sb->attr.mmap = 1;
	sb->attr.mmap2 = 1;
	sb->attr.comm = 1;
	sb->attr.comm_exec = 1;
	sb->attr.task = 1;
	sb->attr.cgroup = cgroup;
	sb->attr.exclude_kernel = 1;
	sb->attr.exclude_hv = 1;
	sb->attr.use_clockid = 1;
	sb->attr.clockid = CLOCK_MONOTONIC;
	sb->attr.watermark = 1;
	sb->attr.wakeup_watermark = (uint32_t)(pages * sb->page / 4);

	for (i = 0; i < nr; i++) {
		struct ring *r = &sb->rings[i];

		r->fd = perf_event_open(&sb->attr, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
		if (r->fd < 0) {
			err = -errno;
			pr_err("failed to open side-band event on cpu %d: %s", cpus[i], strerror(errno));
			goto fail;
		}
		sb->nr++;
		r->size = pages * sb->page;
		r->base = mmap(NULL, r->size + sb->page, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
		if (r->base == MAP_FAILED) {
			r->base = NULL;
			err = -errno;
			pr_err("failed to map side-band buffer on cpu %d: %s", cpus[i], strerror(errno));
			goto fail;
		}
		if (ioctl(r->fd, PERF_EVENT_IOC_ID, &sb->ids[i])) {
			err = -errno;
			goto fail;
		}
	}

	/* A BPF-output event is never enabled; it only lends its kernel-unique id. */
	bo.size = sizeof(bo);
	bo.type = PERF_TYPE_SOFTWARE;
	bo.config = PERF_COUNT_SW_BPF_OUTPUT;
	bo.disabled = 1;
	sb->private_fd = perf_event_open(&bo, -1, cpus[0], -1, PERF_FLAG_FD_CLOEXEC);
	if (sb->private_fd < 0 || ioctl(sb->private_fd, PERF_EVENT_IOC_ID, &sb->private_id)) {
		err = -errno;
		pr_err("failed to open a BPF output event: %s", strerror(errno));
		goto fail;
	}
	free(cpus);
	return sb;
fail:
	free(cpus);
	sideband__free(sb);
	errno = -err;
	return NULL;
}

const struct perf_event_attr *sideband__attr(const struct sideband *sb)
{
	return &sb->attr;
}

size_t sideband__ids(const struct sideband *sb, const uint64_t **ids)
{
	*ids = sb->ids;
	return sb->nr;
}

uint64_t sideband__private_id(const struct sideband *sb)
{
	return sb->private_id;
}

size_t sideband__nr_fds(const struct sideband *sb)
{
	return sb->nr;
}

int sideband__fd(const struct sideband *sb, size_t i)
{
	return sb->rings[i].fd;
}

static long read_ring(struct sideband *sb, struct ring *r,
		      int (*fn)(const struct perf_event_header *rec, void *arg), void *arg)
{
	struct perf_event_mmap_page *pg = r->base;
	char *data = (char *)r->base + sb->page;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	long n = 0;
	int err = 0;

	while (tail < head) {
		size_t off = tail % r->size;
		const struct perf_event_header *h = (const void *)(data + off);
		struct perf_event_header hdr;

		if (off + sizeof(hdr) <= r->size) {
			hdr = *h;
		} else {
			size_t first = r->size - off;

			memcpy(&hdr, data + off, first);
			memcpy((char *)&hdr + first, data, sizeof(hdr) - first);
		}
		if (hdr.size < sizeof(hdr) || tail + hdr.size > head) {
			err = -EIO; /* a corrupt ring: stop reading rather than loop */
			break;
		}
		if (off + hdr.size > r->size) {
			size_t first = r->size - off;

			memcpy(sb->copy, data + off, first);
			memcpy(sb->copy + first, data, hdr.size - first);
			h = (const void *)sb->copy;
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

long sideband__read(struct sideband *sb, int (*fn)(const struct perf_event_header *rec, void *arg),
		    void *arg)
{
	long total = 0;
	size_t i;

	for (i = 0; i < sb->nr; i++) {
		long n = read_ring(sb, &sb->rings[i], fn, arg);

		if (n < 0)
			return n;
		total += n;
	}
	return total;
}

void sideband__free(struct sideband *sb)
{
	size_t i;

	if (!sb)
		return;
	for (i = 0; i < sb->nr; i++) {
		if (sb->rings[i].base)
			munmap(sb->rings[i].base, sb->rings[i].size + sb->page);
		close(sb->rings[i].fd);
	}
	if (sb->private_fd >= 0)
		close(sb->private_fd);
	free(sb->rings);
	free(sb->ids);
	free(sb);
}
