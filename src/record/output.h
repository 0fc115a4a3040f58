/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a recording goes: a file written under a temporary name and renamed
 * when complete (an existing one kept as NAME.old), stdout in pipe mode, a
 * directory for --threads, and timestamped files for --switch-output.
 */
#ifndef OFFCPU_OUTPUT_H
#define OFFCPU_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct output {
	const char *base; /* -o NAME */
	bool pipe; /* -o - */
	bool dir; /* --threads: NAME is a directory */
	bool rotate; /* --switch-output: files are NAME.<timestamp> */
	size_t max_files; /* --switch-max-files, 0: keep all */
	int fd; /* the main file being written */
	char *tmp_path, *final_path;
	char **kept; /* files written so far, oldest first */
	size_t nr_kept;
	size_t removed; /* rotated files deleted to keep max_files */
};

/*
 * Start the next file (or directory): its final name is @base, or
 * @base.YYYYMMDDHHMMSScc when rotating. Returns 0 or -errno (logged).
 */
int output__begin(struct output *o);
/* For --threads: open stream @i (NAME/data.i) inside the directory being written. */
int output__open_stream(struct output *o, int i);
/* Rename the finished file into place; prune old ones. Returns 0 or -errno. */
int output__commit(struct output *o);
/* Remove what output__begin() created. */
void output__discard(struct output *o);
/* The path of the last committed file (or "-"). */
const char *output__last(const struct output *o);
void output__free(struct output *o);

#endif
