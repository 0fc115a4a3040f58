// SPDX-License-Identifier: GPL-2.0
/* offcpu: subcommand table. */
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "record/record.h"
#include "report/report.h"
#include "util/util.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
	{ "record", cmd_record, "record off-CPU time of a command, processes or the system into perf.data" },
	{ "report", cmd_report, "show where the time in a perf.data file went" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: offcpu COMMAND [OPTIONS]\n\n"
		   "offcpu finds where threads wait (locks, I/O, sleeps, the scheduler) and for how\n"
		   "long, with the stacks that led there, and writes perf.data that perf reads.\n\n"
		   "Commands:\n");
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n'offcpu COMMAND --help' shows a command's options.\n"
		   "Example: sudo offcpu record -o app.data -- ./app && offcpu report -i app.data\n");
}

int main(int argc, char **argv)
{
	char name[64], *sub_argv[argc + 1];
	size_t i;

	cmdline_argc = argc;
	cmdline_argv = argv;
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		/* the libbpf it runs with, which may be newer than the one it was built with */
		printf("offcpu %s\nlibbpf %s\n", OFFCPU_VERSION, libbpf_version_string());
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		if (strcmp(argv[1], commands[i].name))
			continue;
		/* argp names the program after argv[0] in its messages */
		snprintf(name, sizeof(name), "offcpu %s", commands[i].name);
		memcpy(sub_argv, argv + 1, (size_t)argc * sizeof(*argv)); /* argv[argc] is NULL */
		sub_argv[0] = name;
		return commands[i].fn(argc - 1, sub_argv);
	}
	fprintf(stderr, "offcpu: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
