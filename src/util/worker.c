// SPDX-License-Identifier: GPL-2.0
/* Threads that read what other users control (worker.h). */
#include <errno.h>
#include <signal.h>
#include <time.h>
#include "worker.h"
#include "util.h"

int worker__start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

struct timespec worker__deadline(unsigned ms)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	return until;
}

bool worker__join_within(pthread_t t, unsigned ms, const char *what)
{
	struct timespec until = worker__deadline(ms);

	if (!pthread_timedjoin_np(t, NULL, &until))
		return true;
	pr_warn("%s did not stop within %u ms (a busy machine, or stuck on something another "
		"user controls): left behind, what it read is not waited for", what, ms);
	pthread_detach(t);
	return false;
}
