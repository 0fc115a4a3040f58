// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the whole report path: the input becomes a file
 * (memfd), a session reads it (side-band state, ordering, symbolization of
 * whatever binaries the input names), and every output is written to
 * /dev/null; then the critical path of every thread (a session of its own).
 * Kernel symbols come from /dev/null so runs stay fast.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "report/critpath.h"
#include "report/profile.h"
#include "report/session.h"
#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct session_opts o = { .sym = { .kallsyms = "/dev/null", .demangle = true } };
	struct text_opts t = { .keys = { SORT_COMM, SORT_DSO, SORT_SYM }, .nr_keys = 3, .top = 3 };
	struct profile p;
	char path[64];
	FILE *null;
	int fd, ev;

	log_verbosity = -1;
	fd = memfd_create("fuzz", MFD_CLOEXEC);
	if (fd < 0 || write_full(fd, data, size)) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	o.input = path;
	null = fopen("/dev/null", "w");
	if (!session__load(&o, &p) && null) {
		text__write(&p, &t, null);
		json__write(&p, null);
		ev = profile__pick_event(&p, NULL);
		if (ev >= 0) {
			folded__write(&p, ev, null);
			svg__write(&p, ev, "fuzz", null);
			pprof__write(&p, ev, fileno(null));
		}
	}
	profile__free(&p);
	if (null) { /* every thread a root: no --tid, --pid or --comm */
		struct critpath_opts co = { 0 };
		struct critpath *c = critpath__new(&p, &co);
		struct sample_consumer *cs = c ? critpath__consumer(c) : NULL;

		if (c && !session__run(&o, &p, &cs, 1) && !critpath__walk(c)) {
			critpath__text(c, 0, null);
			ev = critpath__rows(c);
			if (ev >= 0)
				folded__write(&p, ev, null);
		}
		critpath__free(c);
		profile__free(&p);
	}
	if (null)
		fclose(null);
	close(fd);
	return 0;
}
