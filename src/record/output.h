/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a recording goes: a file written under a temporary name and renamed
 * when complete (an existing one of ours kept as NAME.old), stdout in pipe
 * mode, a fifo (pipe format) or character device written in place, a
 * directory for --threads, and uniquely named files for --switch-output.
 * Every file is made through outfile (src/util/outfile.h): nothing another
 * user planted is followed, replaced or removed.
 */
#ifndef OFFCPU_OUTPUT_H
#define OFFCPU_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../util/outfile.h"

struct output {
	const char *base; /* -o NAME */
	bool pipe; /* perf's pipe format: -o -, or NAME is a fifo */
	bool to_stdout; /* -o - */
	bool dir; /* --threads: NAME is a directory */
	bool rotate; /* --switch-output: files are NAME.<timestamp> */
	bool hand_off; /* --push: a committed file is push's, not kept nor pruned here */
	size_t max_files; /* --switch-max-files, 0: keep all */
	int fd; /* the main file being written */
	struct outfile file; /* the file or directory being written */
	bool open; /* file holds a file being written */
	struct outfile_ref *kept; /* rotated files still on disk, oldest first */
	struct outfile_ref *kept_names; /* and their symbol files (named.h; name NULL: none) */
	size_t nr_kept;
	struct outfile_ref names; /* the symbol file of the file being committed (name NULL: none) */
	size_t written; /* files committed */
	size_t removed; /* rotated files deleted to keep max_files */
	size_t vanished; /* rotated files someone else removed or replaced */
	char *last; /* path of the last committed file: where it is, should its directory move */
	char *moved_to; /* where the directory was moved during the recording, once said */
	char *error; /* why the last call failed, when it was the output's fault */
	char last_stamp[24]; /* the last rotated file's time stamp */
	unsigned same_stamp; /* files before this one with that stamp */
};

/*
 * Start the next file (or directory): its final name is @base, or
 * @base.YYYYMMDDHHMMSScc (made unique with .N) when rotating. Checks first
 * that whatever is at the name may be replaced. Returns 0 or -errno, with
 * output__error() set.
 */
int output__begin(struct output *o);
/* For --threads: open stream @i (NAME/data.i) inside the directory being written. */
int output__open_stream(struct output *o, int i);
/* Rename the finished file into place; prune old ones. Returns 0 or -errno. */
int output__commit(struct output *o);
/*
 * The path of the symbol file of the file being written (named.h:
 * .NAME.names beside it, hidden from NAME.* globs; NAME/names in a
 * directory), absolute, into @buf;
 * false for a pipe, a fifo, a device or stdout.
 */
bool output__names_path(const struct output *o, char *buf, size_t len);
/*
 * Write the symbol file of the file being written through @fill (given a
 * descriptor; 0 or -errno): created next to it as offcpu creates every file
 * (.NAME.names kept as .NAME.names.old), before the file is committed;
 * removed with it by --switch-max-files. 0, or -errno with output__error().
 */
int output__write_names(struct output *o, int (*fill)(void *arg, int fd), void *arg);
/* Remove what output__begin() created in this run, and nothing else. */
void output__discard(struct output *o);
/*
 * The path of the last committed file (or "-"): where it really is, also when
 * its directory was moved during the recording (a warning says so).
 */
const char *output__last(const struct output *o);
/* Rotated files of this run still on disk as offcpu wrote them. */
size_t output__on_disk(const struct output *o);
/* Why the last output call failed, or NULL when it was not the output. */
const char *output__error(const struct output *o);
void output__free(struct output *o);

#endif
