/* SPDX-License-Identifier: GPL-2.0 */
/*
 * JIT frames named from perf maps (issue 24): /tmp/perf-PID.map, the text
 * file of "START SIZE NAME" lines (hex) that node --perf-basic-prof, Java's
 * perf map agents, .NET, LuaJIT and Python 3.12's -X perf write. perf reads
 * it at report time, when the process is long gone and the file may be too;
 * offcpu reads it while the process lives, and names the JIT frames its
 * samples hit with "[jit] NAME" MMAP2 records of the process over each
 * entry's [START, START+SIZE) (offcpu.h, "Named frames"), written before the
 * first sample that needs them, once per file.
 *
 * - The file is another user's, in a world-writable directory: it is opened
 *   through /proc/PID/root (the process's own /tmp and pid, NSpid, in
 *   another pid namespace too) with no symbolic link followed and every
 *   mount checked before it is asked anything (objread_open(), mounts.h:
 *   never a file system a user serves), and read only if it is a regular
 *   file owned by the process's user.
 * - A thread of its own opens and reads the maps, never the thread that
 *   encodes a sample: that one looks up what was read, asks the reader to
 *   look again when a frame is in no entry (at most every
 *   PERFMAP_REFRESH_MS per process), and waits for it PERFMAP_WAIT_MS at
 *   most, and only when the reader had nothing else to do: a reader busy
 *   with other maps, or stuck, costs samples their names, never time. The
 *   reader is left behind at the end if it does not stop within
 *   PERFMAP_STOP_MS.
 * - A map is read as it grows, a bounded piece at a time, into sorted runs
 *   merged as they grow (no sort of the whole map at each look). Memory is
 *   bounded in all (PERFMAP_MEM_MAX) and per process (a quarter of it), and
 *   freed PERFMAP_GONE_MS after the process exits (perfmap__exit()); past a
 *   bound, a process's later entries stay unnamed, counted, said.
 * - Only entries that a sample's user frame hits get a record (node's map
 *   holds many thousands).
 * - A map written after the samples that need it (a JVM's
 *   -XX:+DumpPerfMapAtExit at its exit, jcmd Compiler.perfmap mid-run) still
 *   names them: the unnamed frames of a process that runs JIT code are kept
 *   (PERFMAP_UNRESOLVED_MAX, within the memory bound), and named when an
 *   entry read later holds them, by records written then
 *   (perfmap__flush_late(); offcpu report names a process's code whatever
 *   the time of its record). The process's /tmp is kept open while it lives
 *   (an O_PATH descriptor, PERFMAP_DIRS_MAX of them at most), and its map
 *   read once more after it exits, through it.
 *
 * Thread-safe: the frames are noted by the thread that encodes a sample,
 * and flushed by it into its queue.
 */
#ifndef OFFCPU_RECORD_PERFMAP_H
#define OFFCPU_RECORD_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

struct perfmap;
struct perf_queue;

#define PERFMAP_REFRESH_MS 20 /* a process's map is looked at again at most this often */
#define PERFMAP_RETRY_MS 1000 /* a process without a map: looked for again at most this often */
#define PERFMAP_WAIT_MS 20 /* a sample waits this long at most for a look it asked for */
#define PERFMAP_STOP_MS 1000
#define PERFMAP_GONE_MS 5000 /* an exited process's entries are kept this long after its exit */
#define PERFMAP_READ_MAX (4u << 20) /* bytes read per look */
#define PERFMAP_FILE_MAX (256ULL << 20) /* bytes of one map read at most */
#define PERFMAP_MEM_MAX (64ULL << 20) /* entries and names of all processes */
#define PERFMAP_PROCS_MAX 65536 /* processes looked at (one without a map costs no more) */
#define PERFMAP_NAME_LEN 512 /* of a record's name, "[jit] " included */
#define PERFMAP_DIRS_MAX 1024 /* processes whose /tmp is kept open to read their map at their exit */
#define PERFMAP_UNRESOLVED_MAX 65536 /* a process's frames kept for a map read later */
#define PERFMAP_SETTLE_MS 1000 /* the end of a file waits this long at most for maps read at exits */

struct perfmap_stats {
	uint64_t maps; /* processes whose map was read */
	uint64_t refused; /* maps not read: not a regular file, another owner, a link, a mount */
	uint64_t entries; /* entries read */
	uint64_t named; /* records written */
	uint64_t frames; /* frames named */
	uint64_t over; /* entries, or samples of processes, left out: over a bound */
	uint64_t cut; /* processes whose map was read only up to a memory bound */
	uint64_t freed; /* processes whose entries were freed after their exit */
	uint64_t waits, waits_missed; /* looks a sample waited for; of them, not answered in time */
	uint64_t late; /* records of entries read after the samples that needed them */
	uint64_t at_exit; /* processes whose map was read after they exited */
	uint64_t dirs_over; /* looks without a /tmp kept: PERFMAP_DIRS_MAX were */
	uint64_t bytes, bytes_peak; /* memory held by entries and names */
	uint32_t first_cut; /* the first process cut */
	uint32_t first_refused; /* the first process whose map was refused */
	int first_refused_err;
};

/* The reader thread is started; NULL with errno. */
struct perfmap *perfmap__new(void);
void perfmap__free(struct perfmap *pm);

/* Process @tgid runs JIT code: its map is looked for now, if there is one (optional: early). */
void perfmap__process(struct perfmap *pm, int tgid);
/* The same for unwinder__on_jit(): @pm is a struct perfmap. */
void perfmap__process_cb(void *pm, int tgid);
/* Process @tgid exited: its entries are freed PERFMAP_GONE_MS from now. NULL @pm: nothing. */
void perfmap__exit(struct perfmap *pm, int tgid);

/*
 * The user frames @uips, @nu of a sample of process @tgid: the entries of
 * its map that they hit are noted, for perfmap__flush() by this thread.
 * NULL @pm: nothing.
 */
void perfmap__name_frames(struct perfmap *pm, uint32_t tgid, const uint64_t *uips, uint32_t nu);

/*
 * Push the MMAP2 records of the entries noted on this thread that file @gen
 * has none of yet, at or before @time (the sample's), into @q: as @kind,
 * stamped @time, their sample id trailer carrying @sideband_id. An entry is
 * written again for a sample earlier than its record (samples are encoded
 * out of time order: summed ones, stamped at the end of their interval,
 * before streamed ones). Returns 0 or -errno.
 */
int perfmap__flush(struct perfmap *pm, struct perf_queue *q, uint64_t sideband_id, size_t gen,
		   uint64_t time, int kind);

/*
 * Push the MMAP2 records of entries read after the samples whose frames they
 * hold were written (a map written at the process's exit, or rewritten
 * mid-run), that file @gen has none of, into @q, stamped @time: offcpu
 * report names a process's code whatever the time. 0 or -errno.
 */
int perfmap__flush_late(struct perfmap *pm, struct perf_queue *q, uint64_t sideband_id, size_t gen,
			uint64_t time, int kind);

/*
 * Wait @ms at most for the maps of exited processes to be read (their last
 * look); returns how many records perfmap__flush_late() has to write.
 */
size_t perfmap__settle(struct perfmap *pm, unsigned ms);

void perfmap__stats(struct perfmap *pm, struct perfmap_stats *st);

#endif
