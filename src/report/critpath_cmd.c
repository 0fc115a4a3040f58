// SPDX-License-Identifier: GPL-2.0
/*
 * report --critical-path: the session read without thread or time filters
 * (the path crosses every thread and goes back before the window), the
 * critical path of the roots those filters name, and its outputs.
 */
#include <errno.h>
#include <string.h>
#include "critpath.h"
#include "report.h"
#include "session.h"
#include "../util/util.h"

int critpath__report(const struct session_opts *so, const struct critpath_report *r)
{
	struct critpath_opts co = { .pids = so->pids, .nr_pids = so->nr_pids, .tids = so->tids,
				    .nr_tids = so->nr_tids, .comms = so->comms,
				    .nr_comms = so->nr_comms, .time_filter = so->time_filter,
				    .time_start = so->time_start, .time_end = so->time_end };
	struct session_opts s = *so;
	struct sample_consumer *cs;
	struct critpath *c;
	struct profile p;
	int err, ev = -1;

	s.nr_pids = s.nr_tids = s.nr_comms = 0;
	s.time_filter = false;
	s.event = NULL;
	c = critpath__new(&p, &co);
	if (!c) {
		pr_err("cannot make the critical path: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	cs = critpath__consumer(c);
	err = session__run(&s, &p, &cs, 1);
	if (err)
		goto out;
	err = critpath__walk(c);
	if (!err && (r->folded || r->svg || r->pprof)) {
		ev = critpath__rows(c);
		err = ev < 0 ? ev : 0;
	}
	if (err) {
		pr_err("cannot make the critical path: %s", strerror(-err));
		goto out;
	}
	if (r->folded && (err = folded__write(&p, ev, stdout)))
		pr_err("cannot write folded stacks: %s", strerror(-err));
	if (!err && r->pprof)
		err = write_output(&p, ev, r->pprof, so->input, false);
	if (!err && r->svg)
		err = write_output(&p, ev, r->svg, so->input, true);
	if (!err && !r->folded && !r->svg && !r->pprof)
		err = critpath__text(c, r->min_percent, stdout);
	if (!err && (fflush(stdout) || ferror(stdout))) {
		pr_err("cannot write the report: %s", strerror(errno));
		err = -EIO;
	}
	if (!err)
		critpath__warn(c);
out:
	critpath__free(c);
	profile__free(&p);
	return err;
}
