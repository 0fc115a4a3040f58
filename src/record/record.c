// SPDX-License-Identifier: GPL-2.0
/*
 * offcpu record: choose targets, load the collector, stream side-band into a
 * perf.data file, and write the summed off-CPU samples when recording ends.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "record.h"
#include "collector.h"
#include "sideband.h"
#include "synth.h"
#include "target.h"
#include "buildids.h"
#include "../perfdata/writer.h"
#include "../perfdata/sample.h"
#include "../util/util.h"
#include "../util/intset.h"

#define CGROUP2_SUPER_MAGIC 0x63677270

struct record_opts {
	const char *output;
	int *pids, *tids, *cpus;
	size_t nr_pids, nr_tids, nr_cpus;
	bool system_wide;
	const char *cgroup;
	bool all_cgroups;
	uint64_t duration_ns;
	uint32_t state_mask;
	uint32_t max_entries;
	size_t mmap_pages;
	const char *btf_path;
	bool force_raw_tp;
	bool quiet;
	char **argv; /* workload */
	int argc;
};

struct record {
	struct record_opts o;
	struct collector *coll;
	struct sideband *sb;
	struct perf_writer *w;
	struct maptab *maps;
	struct workload wl;
	bool have_workload;
	int fd;
	char *tmp_path;
	struct intset tracked; /* processes whose side-band is kept */
	bool filter_sideband;
	bool follow;
	uint64_t offcpu_id;
	uint64_t sample_type;
	uint64_t sideband_lost;
	uint64_t sideband_records;
	/* a batch of side-band records, sorted by time before writing */
	char *batch;
	size_t batch_len, batch_cap;
	int err;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* options */

enum {
	OPT_ALL_CGROUPS = 1000,
	OPT_STATE,
	OPT_MAX_STACKS,
	OPT_BTF,
	OPT_RAW_TP,
};

static const struct argp_option record_options[] = {
	{ 0, 0, 0, 0, "Targets (a command after --, or -p, -t, -a, -C, -G):", 1 },
	{ "pid", 'p', "PID[,PID...]", 0, "Record these processes (all their threads) until they exit", 1 },
	{ "tid", 't', "TID[,TID...]", 0, "Record these threads only", 1 },
	{ "all-cpus", 'a', 0, 0, "Record every process on the system", 1 },
	{ "cpu", 'C', "CPU-LIST", 0, "Only blocks that begin on these CPUs, e.g. 0,2-3", 1 },
	{ "cgroup", 'G', "CGROUP", 0, "Only tasks in this cgroup v2 (path below the cgroup2 mount, or absolute)", 1 },
	{ 0, 0, 0, 0, "Recording:", 2 },
	{ "output", 'o', "FILE", 0, "Write to FILE (default offcpu.data; an existing one is kept as FILE.old)", 2 },
	{ "duration", 'd', "SECONDS", 0, "Stop after this long (also 500ms, 2m)", 2 },
	{ "state", OPT_STATE, "STATES", 0, "Task states to record: S (sleep), D (disk/uninterruptible), R (preempted), T (stopped), I (idle); default S,D", 2 },
	{ "all-cgroups", OPT_ALL_CGROUPS, 0, 0, "Record each sample's cgroup (perf report --sort cgroup)", 2 },
	{ "max-stacks", OPT_MAX_STACKS, "N", 0, "Size of the in-kernel stack and summary maps (default 16384)", 2 },
	{ "mmap-pages", 'm', "PAGES", 0, "Side-band buffer per CPU, in pages, a power of two (default 128)", 2 },
	{ 0, 0, 0, 0, "Environment:", 3 },
	{ "btf", OPT_BTF, "FILE", 0, "Kernel BTF to use instead of /sys/kernel/btf/vmlinux", 3 },
	{ "raw-tp", OPT_RAW_TP, 0, 0, "Attach with raw_tp instead of tp_btf (the automatic fallback)", 3 },
	{ "verbose", 'v', 0, 0, "More messages (twice: debug, libbpf's log)", 3 },
	{ "quiet", 'q', 0, 0, "No start line and no summary", 3 },
	{ 0 },
};

static const char record_doc[] =
	"Record where threads block (off-CPU time) into a perf.data file.\n"
	"\n"
	"At every context switch a BPF program notes when a thread of the targets\n"
	"blocks, in which state and with which user stack, and adds the blocked time\n"
	"to an in-kernel summary when it runs again. The file opens in offcpu report,\n"
	"perf report and perf script; the event is named offcpu-time and each sample's\n"
	"period is the blocked time in nanoseconds.\n"
	"\n"
	"Examples:\n"
	"  offcpu record -o app.data -- ./app --flag    record a command until it exits\n"
	"  offcpu record -p 1234 -d 10                  attach to a process for 10 s\n"
	"  offcpu record -a -d 5                        the whole system for 5 s\n"
	"  perf report -i app.data --stdio              read it with perf\n"
	"\n"
	"Needs root, or CAP_BPF and CAP_PERFMON, and a kernel with BTF (5.11 or newer)."
	"\vExit status: 0 when the file is complete, 1 on a runtime error, 2 on a usage error.";

static int usage_error(struct argp_state *st, const char *fmt, const char *arg)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, arg);
	argp_error(st, "%s", msg); /* prints, then exits with argp_err_exit_status (2) */
	return EINVAL;
}

static int parse_states(const char *s, uint32_t *mask)
{
	static const char letters[OFFCPU_STATE_NR] = { 'R', 'S', 'D', 'T', 'I' };
	uint32_t m = 0;
	int i;

	if (!strcmp(s, "all")) {
		*mask = (1u << OFFCPU_STATE_NR) - 1;
		return 0;
	}
	for (; *s; s++) {
		if (*s == ',')
			continue;
		for (i = 0; i < OFFCPU_STATE_NR; i++)
			if (*s == letters[i] || *s == letters[i] + 32)
				break;
		if (i == OFFCPU_STATE_NR)
			return -EINVAL;
		m |= OFFCPU_STATE_MASK(i);
	}
	if (!m)
		return -EINVAL;
	*mask = m;
	return 0;
}

static error_t record_parse(int key, char *arg, struct argp_state *st)
{
	struct record_opts *o = st->input;
	uint64_t v;

	switch (key) {
	case 'p':
		if (parse_int_list(arg, &o->pids, &o->nr_pids) || !o->nr_pids || o->pids[0] <= 0)
			return usage_error(st, "invalid pid list '%s'", arg);
		break;
	case 't':
		if (parse_int_list(arg, &o->tids, &o->nr_tids) || !o->nr_tids || o->tids[0] <= 0)
			return usage_error(st, "invalid thread id list '%s'", arg);
		break;
	case 'a':
		o->system_wide = true;
		break;
	case 'C':
		if (parse_int_list(arg, &o->cpus, &o->nr_cpus))
			return usage_error(st, "invalid cpu list '%s'", arg);
		break;
	case 'G':
		o->cgroup = arg;
		break;
	case 'o':
		if (!*arg)
			return usage_error(st, "empty output file name%s", "");
		if (!strcmp(arg, "-"))
			return usage_error(st, "pipe output (-o -) is not supported yet%s", "");
		o->output = arg;
		break;
	case 'd':
		if (parse_duration_ns(arg, &o->duration_ns) || !o->duration_ns)
			return usage_error(st, "invalid duration '%s' (examples: 10, 1.5s, 500ms)", arg);
		break;
	case OPT_STATE:
		if (parse_states(arg, &o->state_mask))
			return usage_error(st, "invalid state list '%s' (letters of S,D,R,T,I)", arg);
		break;
	case OPT_ALL_CGROUPS:
		o->all_cgroups = true;
		break;
	case OPT_MAX_STACKS:
		if (parse_u64(arg, &v) || v < 64 || v > (1u << 24))
			return usage_error(st, "invalid --max-stacks '%s' (64 to 16777216)", arg);
		o->max_entries = (uint32_t)v;
		break;
	case 'm':
		if (parse_u64(arg, &v) || v < 1 || v > (1u << 20) || (v & (v - 1)))
			return usage_error(st, "invalid --mmap-pages '%s' (a power of two)", arg);
		o->mmap_pages = (size_t)v;
		break;
	case OPT_BTF:
		o->btf_path = arg;
		break;
	case OPT_RAW_TP:
		o->force_raw_tp = true;
		break;
	case 'v':
		log_verbosity++;
		break;
	case 'q':
		o->quiet = true;
		break;
	case ARGP_KEY_ARG:
		/* The command and everything after it belong to the workload. */
		o->argv = st->argv + st->next - 1;
		o->argc = st->argc - st->next + 1;
		st->next = st->argc;
		break;
	case ARGP_KEY_END:
		if (o->nr_pids && o->nr_tids)
			return usage_error(st, "-p and -t cannot be combined%s", "");
		if (o->argc && (o->nr_pids || o->nr_tids))
			return usage_error(st, "a command cannot be combined with -p or -t%s", "");
		if (o->system_wide && (o->nr_pids || o->nr_tids))
			return usage_error(st, "-a cannot be combined with -p or -t%s", "");
		if (!o->argc && !o->nr_pids && !o->nr_tids && !o->system_wide && !o->nr_cpus &&
		    !o->cgroup)
			return usage_error(st, "no target: give a command after --, or -p, -t, -a, -C or -G%s", "");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* environment checks */

static bool have_capabilities(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &h, d))
		return false;
	/* CAP_PERFMON is 38 and CAP_BPF 39: bits 6 and 7 of the second word. */
	return (d[1].effective & (1u << 6)) && (d[1].effective & (1u << 7));
}

static int cgroup2_mount(char *out, size_t cap)
{
	char line[4096], dev[256], dir[2048], type[64];
	FILE *f = fopen("/proc/self/mounts", "re");
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %2047s %63s", dev, dir, type) != 3)
			continue;
		if (!strcmp(type, "cgroup2")) {
			snprintf(out, cap, "%s", dir);
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

static int open_cgroup(const char *arg)
{
	char root[2048], path[PATH_MAX];
	struct statfs sfs;
	int fd;

	if (arg[0] == '/' && statfs(arg, &sfs) == 0 && sfs.f_type == CGROUP2_SUPER_MAGIC) {
		snprintf(path, sizeof(path), "%s", arg);
	} else {
		if (cgroup2_mount(root, sizeof(root))) {
			pr_err("cgroup '%s': no cgroup v2 hierarchy is mounted", arg);
			return -ENOENT;
		}
		snprintf(path, sizeof(path), "%s/%s", root, arg[0] == '/' ? arg + 1 : arg);
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		pr_err("cgroup '%s': cannot open %s: %s", arg, path, strerror(errno));
		return -errno;
	}
	if (fstatfs(fd, &sfs) || sfs.f_type != CGROUP2_SUPER_MAGIC) {
		pr_err("cgroup '%s': %s is not a cgroup v2 directory", arg, path);
		close(fd);
		return -EINVAL;
	}
	return fd;
}

/* side-band: batch, sort by time, filter, write */

static uint64_t record_time(const struct perf_event_header *h)
{
	struct perf_sample s;

	if (h->type == PERF_RECORD_SAMPLE ||
	    perf_sample_id__parse(SIDEBAND_SAMPLE_TYPE, h, &s))
		return 0;
	return s.time;
}

static int batch_add(const struct perf_event_header *h, void *arg)
{
	struct record *r = arg;

	if (r->batch_len + h->size > r->batch_cap) {
		size_t cap = r->batch_cap ? r->batch_cap * 2 : 1 << 20;
		char *p;

		while (cap < r->batch_len + h->size)
			cap *= 2;
		p = realloc(r->batch, cap);
		if (!p)
			return -ENOMEM;
		r->batch = p;
		r->batch_cap = cap;
	}
	memcpy(r->batch + r->batch_len, h, h->size);
	r->batch_len += h->size;
	return 0;
}

struct batch_ref {
	uint64_t time;
	size_t off;
};

static int cmp_ref(const void *a, const void *b)
{
	const struct batch_ref *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->off < y->off ? -1 : (x->off > y->off);
}

static bool keep_sideband(struct record *r, const struct perf_event_header *h)
{
	const char *p = (const char *)h;
	int pid;

	switch (h->type) {
	case PERF_RECORD_LOST:
		r->sideband_lost += *(const uint64_t *)(p + 16);
		return true;
	case PERF_RECORD_FORK:
		pid = *(const int *)(p + 8);
		if (r->follow && intset__has(&r->tracked, *(const int *)(p + 12)))
			intset__add(&r->tracked, pid);
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_EXIT:
		pid = *(const int *)(p + 8);
		break;
	default:
		return true;
	}
	return !r->filter_sideband || intset__has(&r->tracked, pid);
}

static int write_record(struct record *r, const struct perf_event_header *h)
{
	int err = maptab__observe(r->maps, h);

	return err ? err : perf_writer__write(r->w, h);
}

static int flush_sideband(struct record *r)
{
	struct batch_ref *refs = NULL;
	size_t nr = 0, cap = 0, off, i;
	long n;
	int err = 0;

	r->batch_len = 0;
	n = sideband__read(r->sb, batch_add, r);
	if (n < 0)
		return (int)n;
	if (n == 0)
		return 0;
	refs = malloc((size_t)n * sizeof(*refs));
	if (!refs)
		return -ENOMEM;
	cap = (size_t)n;
	for (off = 0; off < r->batch_len && nr < cap;) {
		const struct perf_event_header *h = (const void *)(r->batch + off);

		refs[nr].time = record_time(h);
		refs[nr].off = off;
		nr++;
		off += h->size;
	}
	qsort(refs, nr, sizeof(*refs), cmp_ref);
	for (i = 0; i < nr && !err; i++) {
		const struct perf_event_header *h = (const void *)(r->batch + refs[i].off);

		if (!keep_sideband(r, h))
			continue;
		r->sideband_records++;
		err = write_record(r, h);
	}
	free(refs);
	return err;
}

static int emit_synth(const struct perf_event_header *h, void *arg)
{
	return write_record(arg, h);
}

/* samples from the in-kernel summary */

struct drain_ctx {
	struct record *r;
	uint64_t time;
	uint64_t samples, total_ns, blocks;
	struct intset threads;
};

static int write_summed(const struct collector_entry *e, void *arg)
{
	struct drain_ctx *d = arg;
	struct record *r = d->r;
	uint64_t chain[OFFCPU_MAX_STACK_DEPTH + 1];
	char buf[sizeof(chain) + 256];
	struct perf_sample s = {
		.id = r->offcpu_id,
		.pid = e->key->tgid,
		.tid = e->key->pid,
		.time = d->time,
		.cpu = e->val->last_cpu,
		.period = e->val->total_ns,
		.cgroup = e->key->cgroup_id,
		.ips = chain,
	};
	uint32_t i;
	int size;

	if (e->nr_user_ips) {
		chain[0] = PERF_CONTEXT_USER;
		for (i = 0; i < e->nr_user_ips; i++) {
			chain[i + 1] = e->user_ips[i];
			maptab__mark(r->maps, (int)e->key->tgid, e->user_ips[i]);
		}
		s.nr_ips = e->nr_user_ips + 1;
		s.ip = e->user_ips[0];
	}
	size = perf_sample__encode(r->sample_type, &s, buf, sizeof(buf));
	if (size < 0)
		return size;
	perf_writer__note_time(r->w, d->time);
	d->samples++;
	d->total_ns += e->val->total_ns;
	d->blocks += e->val->count;
	intset__add(&d->threads, (int)e->key->pid);
	return perf_writer__write(r->w, (const void *)buf);
}

/* lifecycle */

static int open_output(struct record *r)
{
	size_t len = strlen(r->o.output) + 32;

	r->tmp_path = malloc(len);
	if (!r->tmp_path)
		return -ENOMEM;
	snprintf(r->tmp_path, len, "%s.tmp.%d", r->o.output, (int)getpid());
	r->fd = open(r->tmp_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (r->fd < 0) {
		int err = -errno;

		pr_err("cannot create %s: %s", r->tmp_path, strerror(errno));
		free(r->tmp_path);
		r->tmp_path = NULL;
		return err;
	}
	return 0;
}

static void discard_output(struct record *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (r->tmp_path)
		unlink(r->tmp_path);
}

static int commit_output(struct record *r)
{
	char old[PATH_MAX];
	struct stat st;

	if (close(r->fd)) {
		r->fd = -1;
		return -errno;
	}
	r->fd = -1;
	if (stat(r->o.output, &st) == 0 && S_ISREG(st.st_mode)) {
		snprintf(old, sizeof(old), "%s.old", r->o.output);
		if (rename(r->o.output, old))
			pr_warn("cannot keep the old %s as %s: %s", r->o.output, old, strerror(errno));
	}
	if (rename(r->tmp_path, r->o.output))
		return -errno;
	return 0;
}

static int setup_targets(struct record *r, struct collector_opts *co, int *cgroup_fd)
{
	struct record_opts *o = &r->o;
	size_t i;
	int tgid;

	for (i = 0; i < o->nr_pids; i++) {
		tgid = tid_to_tgid(o->pids[i]);
		if (tgid < 0) {
			pr_err("process %d does not exist", o->pids[i]);
			return -ESRCH;
		}
		if (tgid != o->pids[i])
			pr_warn("%d is a thread of process %d: recording the whole process",
				o->pids[i], tgid);
		o->pids[i] = tgid;
		intset__add(&r->tracked, tgid);
	}
	for (i = 0; i < o->nr_tids; i++) {
		tgid = tid_to_tgid(o->tids[i]);
		if (tgid < 0) {
			pr_err("thread %d does not exist", o->tids[i]);
			return -ESRCH;
		}
		intset__add(&r->tracked, tgid);
	}
	r->filter_sideband = !o->system_wide && !o->nr_cpus && !o->cgroup;
	/* -C and -G alone mean "everything on those cpus / in that cgroup" */
	r->follow = o->argc > 0;
	co->state_mask = o->state_mask;
	co->user_stacks = true;
	co->record_cgroup = o->all_cgroups;
	co->follow_forks = r->follow && !o->system_wide;
	co->tgids = o->pids;
	co->nr_tgids = o->nr_pids;
	co->filter_tgid = o->argc > 0 && !o->system_wide;
	co->tids = o->tids;
	co->nr_tids = o->nr_tids;
	co->cpus = o->cpus;
	co->nr_cpus = o->nr_cpus;
	co->max_entries = o->max_entries;
	co->force_raw_tp = o->force_raw_tp;
	co->btf_path = o->btf_path;
	co->cgroup_fd = -1;
	if (o->cgroup) {
		*cgroup_fd = open_cgroup(o->cgroup);
		if (*cgroup_fd < 0)
			return *cgroup_fd;
		co->cgroup_fd = *cgroup_fd;
	}
	return 0;
}

static int synthesize(struct record *r)
{
	struct synth s = {
		.sample_type = SIDEBAND_SAMPLE_TYPE,
		.id = 0,
		.time = 0, /* at or before every sample, as perf does */
		.emit = emit_synth,
		.arg = r,
	};
	const uint64_t *ids;
	char root[2048];
	size_t i;
	int err = 0;

	sideband__ids(r->sb, &ids);
	s.id = ids[0];
	if (!r->filter_sideband) {
		err = synth__all(&s);
	} else {
		for (i = 0; i < r->o.nr_pids && !err; i++)
			err = synth__process(&s, r->o.pids[i]);
		for (i = 0; i < r->o.nr_tids && !err; i++) {
			int tgid = tid_to_tgid(r->o.tids[i]);

			if (tgid > 0)
				err = synth__process(&s, tgid);
		}
	}
	if (!err && r->o.all_cgroups && cgroup2_mount(root, sizeof(root)) == 0)
		err = synth__cgroups(&s, root);
	return err;
}

static bool targets_gone(struct record *r, struct pollfd *pfds, size_t first_pidfd)
{
	size_t i;

	if (r->have_workload)
		return workload__reap(&r->wl);
	if (r->o.nr_pids) {
		for (i = 0; i < r->o.nr_pids; i++) {
			struct pollfd *p = &pfds[first_pidfd + i];

			if (p->fd >= 0 && !(p->revents & POLLIN) && kill(r->o.pids[i], 0) == 0)
				return false;
		}
		return true;
	}
	if (r->o.nr_tids) {
		for (i = 0; i < r->o.nr_tids; i++) {
			int tgid = tid_to_tgid(r->o.tids[i]);

			if (tgid > 0 && thread_alive(tgid, r->o.tids[i]))
				return false;
		}
		return true;
	}
	return false;
}

static int main_loop(struct record *r)
{
	size_t nsb = sideband__nr_fds(r->sb), npid = r->have_workload ? 1 : r->o.nr_pids, i;
	struct pollfd *pfds = calloc(nsb + npid, sizeof(*pfds));
	uint64_t deadline = r->o.duration_ns ? now_ns() + r->o.duration_ns : 0;
	int err = 0;

	if (!pfds)
		return -ENOMEM;
	for (i = 0; i < nsb; i++) {
		pfds[i].fd = sideband__fd(r->sb, i);
		pfds[i].events = POLLIN;
	}
	for (i = 0; i < npid; i++) {
		pfds[nsb + i].fd = r->have_workload ? r->wl.pidfd : pidfd_for(r->o.pids[i]);
		pfds[nsb + i].events = POLLIN;
	}
	while (!stop_signal) {
		int timeout = 200;

		if (deadline) {
			uint64_t now = now_ns();

			if (now >= deadline)
				break;
			if ((deadline - now) / 1000000 < (uint64_t)timeout)
				timeout = (int)((deadline - now) / 1000000) + 1;
		}
		if (poll(pfds, nsb + npid, timeout) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		err = flush_sideband(r);
		if (err)
			break;
		if (targets_gone(r, pfds, nsb))
			break;
	}
	if (!r->have_workload)
		for (i = 0; i < npid; i++)
			if (pfds[nsb + i].fd >= 0)
				close(pfds[nsb + i].fd);
	free(pfds);
	return err;
}

static void print_summary(struct record *r, struct drain_ctx *d, const uint64_t *cnt,
			  uint64_t prog_misses, uint64_t file_size)
{
	char size[32];
	uint64_t dropped = cnt[OFFCPU_CNT_DROP_MAP_FULL] + cnt[OFFCPU_CNT_NO_STORAGE] +
			   cnt[OFFCPU_CNT_FILTER_FULL] + cnt[OFFCPU_CNT_STACK_FAIL] +
			   cnt[OFFCPU_CNT_UNPAIRED] + prog_misses + r->sideband_lost;

	fprintf(stderr,
		"offcpu: %llu blocks seen (%.3f s off-CPU in %zu threads), %llu samples written, "
		"%llu distinct stacks\n",
		(unsigned long long)cnt[OFFCPU_CNT_BLOCKS], d->total_ns / 1e9, d->threads.len,
		(unsigned long long)d->samples,
		(unsigned long long)collector__distinct_stacks(r->coll));
	fprintf(stderr, "offcpu: wrote %s (%s)\n", r->o.output, fmt_size(file_size, size, sizeof(size)));
	if (!dropped) {
		fprintf(stderr, "offcpu: nothing dropped\n");
		return;
	}
	fprintf(stderr, "offcpu: WARNING: this recording is incomplete:\n");
	if (cnt[OFFCPU_CNT_DROP_MAP_FULL])
		fprintf(stderr, "offcpu:   %llu blocks lost: the summary map was full (raise --max-stacks)\n",
			(unsigned long long)cnt[OFFCPU_CNT_DROP_MAP_FULL]);
	if (cnt[OFFCPU_CNT_STACK_FAIL])
		fprintf(stderr, "offcpu:   %llu blocks kept without a user stack: the stack walk failed "
			"(stack map full or unreadable stack)\n",
			(unsigned long long)cnt[OFFCPU_CNT_STACK_FAIL]);
	if (cnt[OFFCPU_CNT_NO_STORAGE])
		fprintf(stderr, "offcpu:   %llu blocks missed: no per-task storage\n",
			(unsigned long long)cnt[OFFCPU_CNT_NO_STORAGE]);
	if (cnt[OFFCPU_CNT_UNPAIRED])
		fprintf(stderr, "offcpu:   %llu blocks lost: their end was not seen (per-task storage "
			"was busy)\n", (unsigned long long)cnt[OFFCPU_CNT_UNPAIRED]);
	if (prog_misses)
		fprintf(stderr, "offcpu:   %llu context switches not seen: the kernel skipped the "
			"BPF program (recursion)\n", (unsigned long long)prog_misses);
	if (cnt[OFFCPU_CNT_FILTER_FULL])
		fprintf(stderr, "offcpu:   %llu child processes not followed: the process filter was full\n",
			(unsigned long long)cnt[OFFCPU_CNT_FILTER_FULL]);
	if (r->sideband_lost)
		fprintf(stderr, "offcpu:   %llu side-band records lost: buffers overran (raise -m)\n",
			(unsigned long long)r->sideband_lost);
}

static int finish(struct record *r)
{
	struct drain_ctx d = { .r = r };
	uint64_t cnt[OFFCPU_CNT_NR] = { 0 };
	const uint64_t *ids;
	size_t nids;
	struct perf_event_attr attr = { 0 };
	struct stat st;
	long n;
	int err;

	collector__detach(r->coll);
	err = flush_sideband(r);
	if (err)
		return err;
	d.time = now_ns();
	n = collector__drain(r->coll, write_summed, &d);
	if (n < 0) {
		intset__free(&d.threads);
		return (int)n;
	}
	collector__counters(r->coll, cnt);

	nids = sideband__ids(r->sb, &ids);
	attr.size = PERFDATA_ATTR_SIZE;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_BPF_OUTPUT;
	attr.sample_period = 1;
	attr.sample_type = r->sample_type;
	attr.sample_id_all = 1;
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	attr.exclude_kernel = 1;
	attr.exclude_callchain_kernel = 1;
	err = perf_writer__add_event(r->w, &attr, OFFCPU_EVENT_NAME, &r->offcpu_id, 1);
	if (!err)
		err = perf_writer__add_event(r->w, sideband__attr(r->sb), "dummy:u", ids, nids);
	if (!err)
		err = perf_writer__add_host_features(r->w, cmdline_argc, cmdline_argv);
	if (!err) {
		int nb = maptab__write_build_ids(r->maps, r->w);

		err = nb < 0 ? nb : 0;
	}
	if (!err)
		err = perf_writer__finish(r->w);
	if (err) {
		intset__free(&d.threads);
		return err;
	}
	err = commit_output(r);
	if (err) {
		pr_err("cannot rename %s to %s: %s", r->tmp_path, r->o.output, strerror(-err));
		intset__free(&d.threads);
		return err;
	}
	if (!r->o.quiet)
		print_summary(r, &d, cnt, collector__prog_misses(r->coll), stat(r->o.output, &st) == 0 ? (uint64_t)st.st_size : 0);
	intset__free(&d.threads);
	return 0;
}

int cmd_record(int argc, char **argv)
{
	struct argp argp = { record_options, record_parse, "[-- COMMAND [ARGS...]]", record_doc };
	struct record r = { .fd = -1 };
	struct collector_opts co = { 0 };
	struct sigaction sa = { 0 };
	int cgroup_fd = -1, err, argi;

	r.o.output = "offcpu.data";
	r.o.state_mask = OFFCPU_DEFAULT_STATES;
	r.o.mmap_pages = 128;
	argp_err_exit_status = 2;
	if (argp_parse(&argp, argc, argv, ARGP_IN_ORDER, &argi, &r.o))
		return 2;

	if (!have_capabilities()) {
		pr_err("recording needs root, or the CAP_BPF and CAP_PERFMON capabilities");
		return 1;
	}
	if (r.o.btf_path ? access(r.o.btf_path, R_OK) : access("/sys/kernel/btf/vmlinux", R_OK)) {
		pr_err("kernel BTF not found at %s: offcpu needs a kernel built with "
		       "CONFIG_DEBUG_INFO_BTF=y (5.11 or newer), or --btf FILE",
		       r.o.btf_path ? r.o.btf_path : "/sys/kernel/btf/vmlinux");
		return 1;
	}

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	r.sample_type = OFFCPU_SAMPLE_TYPE | (r.o.all_cgroups ? PERF_SAMPLE_CGROUP : 0);
	r.maps = maptab__new();
	if (!r.maps) {
		err = -ENOMEM;
		goto out;
	}
	err = setup_targets(&r, &co, &cgroup_fd);
	if (err)
		goto out;
	err = open_output(&r);
	if (err)
		goto out;
	r.sb = sideband__open(r.o.mmap_pages, r.o.all_cgroups);
	if (!r.sb) {
		err = -errno;
		goto out;
	}
	r.offcpu_id = sideband__private_id(r.sb);
	r.coll = collector__open(&co);
	if (!r.coll) {
		err = -errno;
		goto out;
	}
	r.w = perf_writer__new(r.fd);
	if (!r.w) {
		err = -errno;
		goto out;
	}
	if (r.o.argc) {
		err = workload__prepare(&r.wl, r.o.argv);
		if (err) {
			pr_err("cannot start '%s': %s", r.o.argv[0], strerror(-err));
			goto out;
		}
		r.have_workload = true;
		intset__add(&r.tracked, r.wl.pid);
		if (!r.o.system_wide) {
			err = collector__add_tgid(r.coll, r.wl.pid);
			if (err) {
				pr_err("cannot track process %d: %s", r.wl.pid, strerror(-err));
				goto out;
			}
		}
	}
	err = synthesize(&r);
	if (err) {
		pr_err("cannot write %s: %s", r.tmp_path, strerror(-err));
		goto out;
	}
	if (r.have_workload) {
		err = workload__start(&r.wl);
		if (err) {
			pr_err("cannot execute '%s': %s", r.o.argv[0], strerror(-err));
			goto out;
		}
	}
	if (!r.o.quiet && !r.have_workload)
		fprintf(stderr, "offcpu: recording (%s); Ctrl-C to stop\n",
			collector__attach_kind(r.coll));
	pr_info("attached with %s", collector__attach_kind(r.coll));

	err = main_loop(&r);
	if (!err)
		err = finish(&r);
	if (err && err != -ENOSPC && !r.err)
		pr_err("recording failed: %s", strerror(-err));
	else if (err == -ENOSPC)
		pr_err("cannot write %s: %s", r.o.output, strerror(ENOSPC));
out:
	if (r.have_workload && !workload__reap(&r.wl)) {
		/* stopped by a signal or an error while the command still runs */
		workload__kill(&r.wl, SIGTERM);
	} else if (r.have_workload) {
		workload__kill(&r.wl, 0);
	}
	if (r.have_workload && !err && r.wl.reaped && WIFEXITED(r.wl.status) &&
	    WEXITSTATUS(r.wl.status) && !r.o.quiet)
		fprintf(stderr, "offcpu: the command exited with status %d\n",
			WEXITSTATUS(r.wl.status));
	if (err)
		discard_output(&r);
	perf_writer__free(r.w);
	collector__free(r.coll);
	sideband__free(r.sb);
	maptab__free(r.maps);
	intset__free(&r.tracked);
	free(r.batch);
	free(r.tmp_path);
	free(r.o.pids);
	free(r.o.tids);
	free(r.o.cpus);
	if (cgroup_fd >= 0)
		close(cgroup_fd);
	return err ? 1 : 0;
}
