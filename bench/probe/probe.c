// SPDX-License-Identifier: GPL-2.0
/*
 * Loader of the bare probes for bench/overhead.
 *
 *   probe [--empty | --blocks] -p PID
 *
 * Attaches to sched_switch for the process PID (all its threads) and walks the
 * user stack of each of its switch-outs (--blocks: only those into S or D;
 * --empty: an empty program), prints
 * "probe: attached" on stderr, and runs until PID exits or SIGINT/SIGTERM.
 * Before detaching it prints the program's kernel run statistics (nonzero
 * only with kernel.bpf_stats_enabled=1) and the number of user stack walks:
 *
 *   probe: runs N run_time_ns T walks W failed F
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "probe.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int usage(void)
{
	fprintf(stderr, "usage: probe [--empty | --blocks] -p PID\n");
	return 2;
}

/* Sum a per-cpu counter. */
static unsigned long long counter(int fd, __u32 idx)
{
	int ncpu = libbpf_num_possible_cpus(), i;
	unsigned long long sum = 0;
	__u64 *v;

	if (ncpu <= 0)
		return 0;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (v && !bpf_map_lookup_elem(fd, &idx, v))
		for (i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}

int main(int argc, char **argv)
{
	struct bpf_prog_info info = { 0 };
	__u32 info_len = sizeof(info);
	struct bpf_program *prog;
	struct probe_bpf *skel = NULL;
	struct bpf_link *link = NULL;
	struct sigaction sa = { 0 };
	struct pollfd pfd = { .fd = -1, .events = POLLIN };
	bool empty = false, blocks = false;
	__u8 one = 1;
	__u32 tgid = 0;
	int i, err = 1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--empty"))
			empty = true;
		else if (!strcmp(argv[i], "--blocks"))
			blocks = true;
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			tgid = (__u32)strtoul(argv[++i], NULL, 10);
		else
			return usage();
	}
	if (!tgid)
		return usage();

	libbpf_set_print(libbpf_log);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	pfd.fd = (int)syscall(SYS_pidfd_open, (pid_t)tgid, 0);
	if (pfd.fd < 0) {
		fprintf(stderr, "probe: cannot open process %u: %s\n", tgid, strerror(errno));
		return 1;
	}
	skel = probe_bpf__open();
	if (!skel) {
		fprintf(stderr, "probe: failed to open the BPF object: %s\n", strerror(errno));
		goto out;
	}
	prog = empty ? skel->progs.probe_empty : skel->progs.probe_stack;
	bpf_program__set_autoload(prog, true);
	skel->rodata->only_blocks = blocks;
	if (probe_bpf__load(skel)) {
		fprintf(stderr, "probe: failed to load the BPF object: %s\n", strerror(errno));
		goto out;
	}
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.tgid_filter), &tgid, &one, BPF_ANY)) {
		fprintf(stderr, "probe: failed to set the process filter: %s\n", strerror(errno));
		goto out;
	}
	link = bpf_program__attach(prog);
	if (!link) {
		fprintf(stderr, "probe: failed to attach sched_switch: %s\n", strerror(errno));
		goto out;
	}
	fprintf(stderr, "probe: attached\n");

	while (!stop) {
		int n = poll(&pfd, 1, 1000);

		if (n > 0)
			break; /* the process exited */
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "probe: poll: %s\n", strerror(errno));
			goto out;
		}
	}

	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &info_len)) {
		fprintf(stderr, "probe: cannot read program info: %s\n", strerror(errno));
		goto out;
	}
	fprintf(stderr, "probe: runs %llu run_time_ns %llu walks %llu failed %llu\n",
		(unsigned long long)info.run_cnt, (unsigned long long)info.run_time_ns,
		counter(bpf_map__fd(skel->maps.counters), 0),
		counter(bpf_map__fd(skel->maps.counters), 1));
	err = 0;
out:
	bpf_link__destroy(link);
	probe_bpf__destroy(skel);
	if (pfd.fd >= 0)
		close(pfd.fd);
	return err;
}
