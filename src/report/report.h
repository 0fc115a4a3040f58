/* SPDX-License-Identifier: GPL-2.0 */
#ifndef OFFCPU_REPORT_H
#define OFFCPU_REPORT_H

#include <stdbool.h>

struct profile;

/* offcpu report: returns the process exit status. */
int cmd_report(int argc, char **argv);
/*
 * --svg and --pprof of event @ev to @path ("-": stdout), made through
 * outfile (no symlink followed, no other user's file replaced); messages
 * printed. 0 or -errno.
 */
int write_output(const struct profile *p, int ev, const char *path, const char *input, bool svg);

#endif
