// SPDX-License-Identifier: GPL-2.0
/*
 * Blocks inside a signal handler: main raises SIGUSR1 ROUNDS times (default
 * 3); each time the handler sleeps 100 ms in sig_block(). The sleeps' stacks
 * run through the signal frame: clock_nanosleep, nanosleep, sig_block,
 * sig_handler, __restore_rt (glibc's sa_restorer), then the interrupted
 * code (raise) and main.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile int handled;

__attribute__((noinline)) static void sig_block(void)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	handled++;
}

__attribute__((noinline)) static void sig_handler(int sig)
{
	(void)sig;
	sig_block();
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	int rounds = argc > 1 ? atoi(argv[1]) : 3, i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sig_handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return 1;
	for (i = 0; i < rounds; i++)
		raise(SIGUSR1);
	return handled == rounds ? 0 : 1;
}
