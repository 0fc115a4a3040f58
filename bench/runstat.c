// SPDX-License-Identifier: GPL-2.0
/*
 * Run a command and report its resource use with microsecond CPU times, for
 * bench/overhead (GNU time rounds to 10 ms).
 *
 *   runstat [-g FIFO] -o FILE -- COMMAND [ARGS...]
 *
 * Writes "pid N" to FILE as soon as the child exists. With -g the child waits
 * until a line can be read from FIFO before it execs COMMAND, so a tracer can
 * attach to pid N before the command starts (the pid survives the exec).
 * When the child ends, appends one line:
 *
 *   rusage vol V invol I cpu_us C maxrss_kib M status S
 *
 * (context switches, user+system CPU, peak RSS of the child and what it
 * waited for; S is the exit status, or 128+signal).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

static int usage(void)
{
	fprintf(stderr, "usage: runstat [-g FIFO] -o FILE -- COMMAND [ARGS...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *gate = NULL, *out = NULL;
	struct rusage ru;
	FILE *f;
	pid_t pid;
	int opt, status, code;

	while ((opt = getopt(argc, argv, "+g:o:")) != -1) {
		switch (opt) {
		case 'g':
			gate = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		default:
			return usage();
		}
	}
	if (!out || optind >= argc)
		return usage();
	f = fopen(out, "w");
	if (!f) {
		fprintf(stderr, "runstat: cannot open %s: %s\n", out, strerror(errno));
		return 1;
	}

	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "runstat: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		char c;
		int fd;

		if (gate) {
			fd = open(gate, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || read(fd, &c, 1) < 0) {
				fprintf(stderr, "runstat: cannot read %s: %s\n", gate, strerror(errno));
				_exit(127);
			}
			close(fd);
		}
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "runstat: cannot run %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	fprintf(f, "pid %d\n", (int)pid);
	fflush(f);

	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "runstat: wait4: %s\n", strerror(errno));
			return 1;
		}
	}
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	fprintf(f, "rusage vol %ld invol %ld cpu_us %lld maxrss_kib %ld status %d\n", ru.ru_nvcsw,
		ru.ru_nivcsw,
		(long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL +
			ru.ru_utime.tv_usec + ru.ru_stime.tv_usec,
		ru.ru_maxrss, code);
	fclose(f);
	return code;
}
