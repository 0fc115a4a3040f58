/* SPDX-License-Identifier: GPL-2.0 */
/*
 * On-disk definitions of perf.data, shared by the writer and the reader.
 * Facts from ../shared/docs/perf-data-format.md, checked against perf 6.1.
 */
#ifndef OFFCPU_PERFDATA_FORMAT_H
#define OFFCPU_PERFDATA_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <linux/perf_event.h>

#define PERF_MAGIC2 0x32454c4946524550ULL /* "PERFILE2" read as little-endian u64 */

/* perf 6.1 rejects attr.size > 128 in file mode. */
#define PERFDATA_ATTR_SIZE 128

struct perf_file_section {
	uint64_t offset;
	uint64_t size;
};

struct perf_file_header {
	uint64_t magic;
	uint64_t size; /* sizeof(struct perf_file_header) */
	uint64_t attr_size; /* attr.size + sizeof(struct perf_file_section) */
	struct perf_file_section attrs;
	struct perf_file_section data;
	struct perf_file_section event_types;
	uint64_t features[4];
};
_Static_assert(sizeof(struct perf_file_header) == 104, "perf file header is 104 bytes");

struct perf_pipe_file_header {
	uint64_t magic;
	uint64_t size; /* 16 */
};

/* Feature bits of the header bitmap. */
enum perf_feature {
	FEAT_TRACING_DATA = 1,
	FEAT_BUILD_ID = 2,
	FEAT_HOSTNAME = 3,
	FEAT_OSRELEASE = 4,
	FEAT_VERSION = 5,
	FEAT_ARCH = 6,
	FEAT_NRCPUS = 7,
	FEAT_CPUDESC = 8,
	FEAT_CPUID = 9,
	FEAT_TOTAL_MEM = 10,
	FEAT_CMDLINE = 11,
	FEAT_EVENT_DESC = 12,
	FEAT_CPU_TOPOLOGY = 13,
	FEAT_NUMA_TOPOLOGY = 14,
	FEAT_BRANCH_STACK = 15,
	FEAT_PMU_MAPPINGS = 16,
	FEAT_GROUP_DESC = 17,
	FEAT_AUXTRACE = 18,
	FEAT_STAT = 19,
	FEAT_CACHE = 20,
	FEAT_SAMPLE_TIME = 21,
	FEAT_MEM_TOPOLOGY = 22,
	FEAT_CLOCKID = 23,
	FEAT_DIR_FORMAT = 24,
	FEAT_BPF_PROG_INFO = 25,
	FEAT_BPF_BTF = 26,
	FEAT_COMPRESSED = 27,
	FEAT_CPU_PMU_CAPS = 28,
	FEAT_CLOCK_DATA = 29,
	FEAT_HYBRID_TOPOLOGY = 30,
	FEAT_PMU_CAPS = 31,
	FEAT_LAST = 32, /* perf 6.1's last marker: ids above it abort a pipe reader */
	FEAT_MAX = 256,
};

/* Record types written by tools rather than the kernel. */
enum perf_user_event_type {
	PERF_RECORD_HEADER_ATTR = 64,
	PERF_RECORD_HEADER_BUILD_ID = 67,
	PERF_RECORD_FINISHED_ROUND = 68,
	PERF_RECORD_ID_INDEX = 69,
	PERF_RECORD_THREAD_MAP = 73,
	PERF_RECORD_CPU_MAP = 74,
	PERF_RECORD_EVENT_UPDATE = 78,
	PERF_RECORD_TIME_CONV = 79,
	PERF_RECORD_HEADER_FEATURE = 80,
	PERF_RECORD_COMPRESSED = 81,
	PERF_RECORD_FINISHED_INIT = 82,
};

#define PERF_EVENT_UPDATE_NAME 2

/* misc bits */
#define PERF_RECORD_MISC_BUILD_ID_SIZE_FLAG (1 << 15) /* in BUILD_ID feature entries */

/* A BUILD_ID feature entry; the file name follows, NUL-padded to 64. */
struct perf_build_id_entry {
	struct perf_event_header header;
	int32_t pid;
	uint8_t build_id[20];
	uint8_t size;
	uint8_t reserved1;
	uint16_t reserved2;
};
_Static_assert(sizeof(struct perf_build_id_entry) == 36, "build id entry");

#define PERF_ALIGN(x, a) (((x) + (a)-1) & ~((uint64_t)(a)-1))

/*
 * The kernel's records, one struct each, as perf's tools/lib/perf/event.h
 * has them: the fixed part; a name, where there is one, follows it and the
 * sample_id trailer follows that. Read them with perf_record__copy(): a
 * record in a buffer may not be aligned for a direct cast.
 */
struct perf_record_comm {
	struct perf_event_header header;
	uint32_t pid, tid;
	/* char comm[]: NUL-terminated, padded to 8 */
};

struct perf_record_mmap {
	struct perf_event_header header;
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	/* char filename[] */
};

struct perf_record_mmap2 {
	struct perf_event_header header;
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	union {
		struct {
			uint32_t maj, min;
			uint64_t ino, ino_generation;
		};
		struct { /* with PERF_RECORD_MISC_MMAP_BUILD_ID */
			uint8_t build_id_size;
			uint8_t reserved[3];
			uint8_t build_id[20];
		};
	};
	uint32_t prot, flags;
	/* char filename[] */
};

/* FORK and EXIT */
struct perf_record_task {
	struct perf_event_header header;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct perf_record_lost {
	struct perf_event_header header;
	uint64_t id, lost;
};

struct perf_record_lost_samples {
	struct perf_event_header header;
	uint64_t lost;
};

struct perf_record_cgroup {
	struct perf_event_header header;
	uint64_t id;
	/* char path[] */
};

_Static_assert(sizeof(struct perf_record_comm) == 16, "COMM name at 16");
_Static_assert(sizeof(struct perf_record_mmap) == 40, "MMAP filename at 40");
_Static_assert(sizeof(struct perf_record_mmap2) == 72, "MMAP2 filename at 72");
_Static_assert(offsetof(struct perf_record_mmap2, build_id) == 44, "MMAP2 build id at 44");
_Static_assert(offsetof(struct perf_record_mmap2, prot) == 64, "MMAP2 prot at 64");
_Static_assert(sizeof(struct perf_record_task) == 32, "FORK/EXIT");
_Static_assert(sizeof(struct perf_record_lost) == 24, "LOST");
_Static_assert(sizeof(struct perf_record_lost_samples) == 16, "LOST_SAMPLES");
_Static_assert(sizeof(struct perf_record_cgroup) == 16, "CGROUP path at 16");

/*
 * Copy the fixed part of record @h (@size bytes of a struct perf_record_*)
 * into @out; false when the record is too short to hold it.
 */
static inline bool perf_record__copy(const struct perf_event_header *h, void *out, size_t size)
{
	if (h->size < size)
		return false;
	memcpy(out, h, size);
	return true;
}

/*
 * The NUL-terminated name that follows a fixed part of @fixed bytes (COMM,
 * MMAP, MMAP2, CGROUP), or NULL when the record holds none.
 */
static inline const char *perf_record__name(const struct perf_event_header *h, size_t fixed)
{
	const char *name = (const char *)h + fixed;

	if (h->size <= fixed || !memchr(name, 0, h->size - fixed))
		return NULL;
	return name;
}

/* The off-CPU event exactly as perf writes it. */
#define OFFCPU_EVENT_NAME "offcpu-time"
/*
 * offcpu's: one sample per thread blocked when the recording began, at the
 * recording's start, its period how long the block had lasted by then (0:
 * not known), its call chain the block's, its weight its state as
 * offcpu-time's. Its time during the recording is offcpu-time's, as any
 * block's: totals never count it.
 */
#define OFFCPU_BEFORE_EVENT_NAME "offcpu-before"
#define OFFCPU_SAMPLE_TYPE                                                                 \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |     \
	 PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)

/* The sample_id trailer offcpu's side-band records carry. */
#define SIDEBAND_SAMPLE_TYPE                                                               \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |     \
	 PERF_SAMPLE_CPU)

#endif /* OFFCPU_PERFDATA_FORMAT_H */
