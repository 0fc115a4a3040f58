// SPDX-License-Identifier: GPL-2.0
/* bench/late.sh: N threads (-t N) blocked in pthread_cond_wait until killed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	for (;;)
		pthread_cond_wait(&c, &m);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 1000, i;
	pthread_attr_t a;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	for (i = 0; i < n; i++) {
		pthread_t t;

		if (pthread_create(&t, &a, waiter, NULL)) {
			perror("pthread_create");
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	pause();
	return 0;
}
