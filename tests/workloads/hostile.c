// SPDX-License-Identifier: GPL-2.0
/*
 * A local user attacking a root recorder through the files of their own
 * programs (tests/integration/hostile.sh runs it as nobody):
 *
 *   hostile truncate LIB DIR SECONDS   copies of LIB, each loaded by a child
 *       that blocks in it while the parent truncates the copy (to half, then
 *       to nothing) as the recorder builds its table; children die as they may
 *   hostile fifo LIB DIR SECONDS       LIB loaded from DIR/f.so, which then
 *       becomes a fifo, while the process keeps blocking in the mapped code
 *   hostile load LIB SECONDS           LIB loaded, blocking in it again and again
 *
 * LIB exports hostile_block(usec): it sleeps usec microseconds and returns.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

typedef void (*block_fn)(unsigned usec);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static block_fn load(const char *path)
{
	void *h = dlopen(path, RTLD_NOW);
	block_fn f = h ? (block_fn)dlsym(h, "hostile_block") : NULL;

	if (!f) {
		fprintf(stderr, "hostile: cannot load %s: %s\n", path, dlerror());
		exit(1);
	}
	return f;
}

static int copy(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);

	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -1;
	close(in);
	close(out);
	return 0;
}

static int truncate_loop(const char *lib, const char *dir, double secs)
{
	double end = now() + secs;
	unsigned n = 0, died = 0;
	char path[4096];

	while (now() < end) {
		struct stat st;
		pid_t pid;
		int status;

		snprintf(path, sizeof(path), "%s/t%u.so", dir, n++ % 8);
		unlink(path);
		if (copy(lib, path) || stat(path, &st))
			return 1;
		pid = fork();
		if (pid == 0) {
			block_fn f = load(path);

			for (;;)
				f(20000); /* returns into truncated code: SIGBUS, its own */
		}
		usleep(1000 + (n * 7919) % 8000);
		truncate(path, st.st_size / 2);
		usleep(2000);
		truncate(path, 0);
		usleep(30000);
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		died += WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS;
	}
	printf("hostile: %u copies truncated, %u children died of SIGBUS\n", n, died);
	return 0;
}

static int fifo_loop(const char *lib, const char *dir, double secs)
{
	double end = now() + secs;
	char path[4096];
	block_fn f;

	snprintf(path, sizeof(path), "%s/f.so", dir);
	if (copy(lib, path))
		return 1;
	f = load(path);
	f(10000);
	/* the mapping keeps the file; its name is a fifo now, no writer ever */
	if (unlink(path) || mkfifo(path, 0644))
		return 1;
	while (now() < end)
		f(50000);
	printf("hostile: %s is a fifo\n", path);
	return 0;
}

static int load_loop(const char *lib, double secs)
{
	double end = now() + secs;
	block_fn f = load(lib);

	while (now() < end)
		f(50000);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "truncate"))
		return truncate_loop(argv[2], argv[3], atof(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "fifo"))
		return fifo_loop(argv[2], argv[3], atof(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "load"))
		return load_loop(argv[2], atof(argv[3]));
	fprintf(stderr, "usage: hostile truncate|fifo LIB DIR SECONDS | hostile load LIB SECONDS\n");
	return 2;
}
