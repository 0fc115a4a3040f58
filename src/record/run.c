// SPDX-License-Identifier: GPL-2.0
/*
 * The run of a recording, once everything is set up: the signals that end
 * it or switch files, the deadline, and the loops: the main loop, which
 * writes a round of every source as it comes, and the flight recorder's,
 * which reads nothing until a snapshot is asked for.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "record_int.h"
#include "../util/util.h"

volatile sig_atomic_t stop_signal, switch_requested;

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM };
static bool switch_on_usr2;

static void on_signal(int sig)
{
	if (sig == SIGUSR2 && switch_on_usr2)
		switch_requested = 1;
	else
		stop_signal = sig;
}

void run_signals(bool switch_on_usr2_)
{
	struct sigaction sa = { 0 };

	/*
	 * Every signal that would end offcpu by default ends the recording with a
	 * complete file instead: a dropped ssh session (SIGHUP), kill, timeout(1).
	 * SIGUSR2 switches files with --switch-output and stops otherwise.
	 */
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++) {
		struct sigaction old;

		/* a hang-up ignored from the start (nohup) stays ignored */
		if (stop_signals[i] == SIGHUP && !sigaction(SIGHUP, NULL, &old) &&
		    old.sa_handler == SIG_IGN)
			continue;
		sigaction(stop_signals[i], &sa, NULL);
	}
	switch_on_usr2 = switch_on_usr2_;
	signal(SIGPIPE, SIG_IGN);
}

void run_signals_hold(bool hold)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++)
		sigaddset(&set, stop_signals[i]);
	sigprocmask(hold ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

int wait_ms(uint64_t deadline, int max)
{
	uint64_t now;

	if (!deadline)
		return max;
	now = now_ns();
	if (now >= deadline)
		return -1;
	if ((deadline - now) / 1000000 < (uint64_t)max)
		return (int)((deadline - now) / 1000000) + 1;
	return max;
}

uint64_t record_deadline(const struct record *r)
{
	return r->o.duration_ns ? r->start_ns + r->o.duration_ns : 0;
}

void record_ended(struct record *r)
{
	uint64_t deadline = record_deadline(r);

	r->end_ns = now_ns();
	if (deadline && r->end_ns > deadline)
		r->end_ns = deadline;
}

bool targets_gone(struct record *r, struct pollfd *pfds, size_t first_pidfd)
{
	size_t i;

	if (r->have_workload)
		return workload__reap(&r->wl);
	/* -p's own processes: those found forked before (after them in pids) do not count */
	if (r->tg.given) {
		for (i = 0; i < r->tg.given; i++) {
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

int main_loop(struct record *r)
{
	/* with writer threads, the buffers are theirs: this loop only waits */
	size_t nsb = r->wt ? 0 : perf_rings__nr_fds(r->sb);
	size_t non = r->oncpu && !r->wt ? perf_rings__nr_fds(r->oncpu) : 0;
	size_t npid = r->have_workload ? 1 : r->tg.given, nfd = nsb + non + 1 + npid, i;
	struct pollfd *pfds = calloc(nfd, sizeof(*pfds));
	uint64_t deadline = record_deadline(r);
	/* tests: read the buffers late, so that a small one surely overflows */
	const char *slow = test_hook("FAULT_SLOW_READ_MS");
	int err = 0;

	if (!pfds)
		return -ENOMEM;
	for (i = 0; i < nfd; i++)
		pfds[i].events = POLLIN;
	for (i = 0; i < nsb; i++)
		pfds[i].fd = perf_rings__fd(r->sb, i);
	for (i = 0; i < non; i++)
		pfds[nsb + i].fd = perf_rings__fd(r->oncpu, i);
	pfds[nsb + non].fd = r->wt ? -1 : collector__events_fd(r->coll);
	for (i = 0; i < npid; i++)
		pfds[nsb + non + 1 + i].fd = r->have_workload ? r->wl.pidfd : pidfd_for(r->o.pids[i]);
	while (!stop_signal) {
		int timeout = wait_ms(deadline, 100);

		if (timeout < 0)
			break;
		/* wake for the next flush, so that its stamp is the interval's end */
		if (r->o.flush_ns && timeout > 0) {
			int f = wait_ms(r->next_flush_ns, timeout);

			timeout = f < 0 ? 0 : f;
		}
		if (poll(pfds, nfd, timeout) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (slow)
			usleep((useconds_t)atoi(slow) * 1000);
		err = flush_due_sums(r);
		/* a writer thread that failed (a full disk) ends the recording now, as
		 * the main loop's own write would, not when -d runs out */
		err = err ?: threads_error(r);
		if (err)
			break;
		if (targets_gone(r, pfds, nsb + non + 1))
			break;
		if (switch_due(r)) {
			switch_requested = 0;
			err = end_file(r);
			err = err ?: begin_file(r);
			if (err)
				break;
		}
	}
	record_ended(r);
	if (!r->have_workload)
		for (i = 0; i < npid; i++)
			if (pfds[nsb + non + 1 + i].fd >= 0)
				close(pfds[nsb + non + 1 + i].fd);
	free(pfds);
	return err;
}

int armed_loop(struct record *r)
{
	struct pollfd pfd = { .fd = r->have_workload ? r->wl.pidfd : -1, .events = POLLIN };
	uint64_t deadline = record_deadline(r);
	int err = 0;

	if (!r->o.quiet)
		fprintf(stderr, "offcpu: flight recorder armed: SIGUSR2 (kill -USR2 %d) writes a "
			"snapshot, Ctrl-C a last one\n", (int)getpid());
	while (!stop_signal) {
		int timeout = wait_ms(deadline, 1000); /* reads nothing while armed: only waits */

		if (timeout < 0)
			break;
		if (poll(&pfd, 1, timeout) < 0 && errno != EINTR)
			return -errno;
		if (switch_requested) {
			switch_requested = 0;
			err = snapshot(r);
			if (err)
				return err;
		}
		if (targets_gone(r, &pfd, 0))
			break;
	}
	record_ended(r);
	return 0;
}
