// SPDX-License-Identifier: GPL-2.0
/* The files of --svg and --pprof, for the report and the critical path (writeout.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "writeout.h"
#include "profile.h"
#include "../util/outfile.h"
#include "../util/util.h"

/*
 * --svg and --pprof files: made through outfile, so a planted symlink or
 * another user's file at the name is refused, not followed or overwritten.
 */
int write_output(const struct profile *p, int ev, const char *path, const char *input, bool svg)
{
	struct outfile f;
	FILE *fp;
	int err;

	if (!strcmp(path, "-")) { /* standard output, as the other outputs */
		if (svg)
			return svg__write(p, ev, input, stdout);
		fflush(stdout);
		return pprof__write(p, ev, STDOUT_FILENO);
	}
	err = outfile__open(&f, path, OUTFILE_DEVICE, 0644);
	if (err) {
		pr_err("%s", f.msg);
		return err;
	}
	if (svg) {
		fp = fdopen(f.fd, "w");
		if (!fp) {
			err = -errno;
			goto fail;
		}
		f.fd = -1; /* fclose closes it */
		err = svg__write(p, ev, input, fp);
		if (fclose(fp) && !err)
			err = -errno;
	} else {
		err = pprof__write(p, ev, f.fd);
	}
	if (err)
		goto fail;
	err = outfile__commit(&f);
	if (err)
		pr_err("%s", f.msg);
	outfile__free(&f);
	return err;
fail:
	pr_err("cannot write %s: %s", path, strerror(-err));
	outfile__discard(&f);
	outfile__free(&f);
	return err;
}
