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
 *   hostile deleted LIB DIR SECONDS    LIB loaded from DIR/d.so, which is then
 *       removed and replaced by a file named "DIR/d.so (deleted)", the name
 *       the mapping shows, under a write lease a child holds (an open for
 *       reading waits fs.lease-break-time for it); three threads block in
 *       LIB for SECONDS
 *   hostile mounts N SECONDS           in a user and mount namespace of its
 *       own, N bind mounts (a mount table of N lines), then blocks again and
 *       again for SECONDS
 *   hostile perfmaps N MB SECONDS      N processes, each with a perf map of MB
 *       megabytes of entries that keeps growing, blocking again and again
 *   hostile jitchurn SECONDS           short-lived processes one after the
 *       other, each with a 4 MB perf map, blocking a few times, then gone
 *
 * LIB exports hostile_block(usec): it sleeps usec microseconds and returns.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <stdint.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/mman.h>
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

static block_fn deleted_fn;
static unsigned deleted_usec;

static void *deleted_thread(void *arg)
{
	(void)arg;
	deleted_fn(deleted_usec);
	return NULL;
}

static int deleted(const char *lib, const char *dir, double secs)
{
	char path[4096], decoy[4200];
	pthread_t t[2];
	pid_t child;
	int fd, i;

	snprintf(path, sizeof(path), "%s/d.so", dir);
	snprintf(decoy, sizeof(decoy), "%s (deleted)", path);
	if (copy(lib, path))
		return 1;
	deleted_fn = load(path);
	deleted_usec = (unsigned)(secs * 1e6);
	if (unlink(path) || copy(lib, decoy))
		return 1;
	child = fork();
	if (child == 0) {
		/* a break of the lease is told with SIGIO: not a reason to let it go */
		signal(SIGIO, SIG_IGN);
		fd = open(decoy, O_RDONLY);
		if (fd < 0 || fcntl(fd, F_SETLEASE, F_WRLCK)) {
			perror("hostile: lease");
			_exit(1);
		}
		printf("hostile: lease held on %s\n", decoy);
		fflush(stdout);
		sleep((unsigned)secs + 10);
		_exit(0);
	}
	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, deleted_thread, NULL);
	deleted_fn(deleted_usec);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	unlink(decoy);
	return 0;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int mounts(unsigned n, double secs)
{
	char map[64], dir[] = "/tmp/offcpu-hostile-mnt.XXXXXX";
	unsigned uid = getuid(), gid = getgid(), i;
	double end;

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS)) {
		perror("hostile: unshare");
		return 1;
	}
	snprintf(map, sizeof(map), "0 %u 1", uid);
	if (write_file("/proc/self/setgroups", "deny") || write_file("/proc/self/uid_map", map))
		return 1;
	snprintf(map, sizeof(map), "0 %u 1", gid);
	if (write_file("/proc/self/gid_map", map) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) || !mkdtemp(dir)) {
		perror("hostile: namespace");
		return 1;
	}
	for (i = 0; i < n; i++)
		if (mount(dir, dir, NULL, MS_BIND, NULL)) {
			perror("hostile: mount");
			return 1;
		}
	printf("hostile: %u bind mounts\n", n);
	fflush(stdout);
	for (end = now() + secs; now() < end;)
		usleep(2000);
	return 0;
}

/* This process's perf map: @mb megabytes of entries, then more for @secs, blocking meanwhile. */
static void perfmap_proc(unsigned mb, double secs, unsigned blocks)
{
	char path[64], line[128];
	uint64_t addr = 0x7f0000000000ULL;
	size_t written = 0;
	unsigned k = 0;
	double end = now() + secs;
	FILE *f;

	/* code in anonymous memory, as a JIT's: what makes a recorder look for the map */
	void *jit = mmap(NULL, 1 << 20, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (jit != MAP_FAILED)
		addr = (uint64_t)(uintptr_t)jit;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		_exit(1);
	while (written < (size_t)mb << 20) {
		int n = snprintf(line, sizeof(line), "%llx 40 hostile_jit_function_%u\n",
				 (unsigned long long)addr, k++);

		fputs(line, f);
		written += (size_t)n;
		addr += 0x40;
	}
	fflush(f);
	while (blocks ? blocks-- > 0 : now() < end) {
		/* grows while it blocks: every look finds more to read */
		for (int i = 0; i < 2000; i++) {
			fprintf(f, "%llx 40 hostile_jit_function_%u\n", (unsigned long long)addr, k++);
			addr += 0x40;
		}
		fflush(f);
		usleep(5000);
	}
	fclose(f);
	unlink(path);
	_exit(0);
}

static int perfmaps(unsigned n, unsigned mb, double secs)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (fork() == 0)
			perfmap_proc(mb, secs, 0);
	while (wait(NULL) > 0)
		;
	printf("hostile: %u processes with perf maps of %u MB and more\n", n, mb);
	return 0;
}

static int jitchurn(double secs)
{
	double end = now() + secs;
	unsigned n = 0;
	pid_t pid;

	while (now() < end) {
		pid = fork();
		if (pid == 0)
			perfmap_proc(4, 0, 40);
		waitpid(pid, NULL, 0);
		n++;
	}
	printf("hostile: %u short-lived processes with perf maps\n", n);
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
	if (argc == 5 && !strcmp(argv[1], "deleted"))
		return deleted(argv[2], argv[3], atof(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "mounts"))
		return mounts((unsigned)atoi(argv[2]), atof(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "perfmaps"))
		return perfmaps((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]), atof(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "jitchurn"))
		return jitchurn(atof(argv[2]));
	fprintf(stderr, "usage: hostile truncate|fifo|deleted LIB DIR SECONDS | hostile load LIB "
		"SECONDS | hostile mounts N SECONDS | hostile perfmaps N MB SECONDS | hostile "
		"jitchurn SECONDS\n");
	return 2;
}
