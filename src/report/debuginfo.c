// SPDX-License-Identifier: GPL-2.0
/*
 * Debug files from debuginfod servers (debuginfo.h says when and how often).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <elfutils/debuginfod.h>
#include "debuginfo.h"
#include "../util/hashmap.h"
#include "../util/util.h"

/*
 * The client is referenced weakly: offcpu links libdebuginfod (the Makefile's
 * LIBS), while a build that does not (a fuzz target) still links, without
 * debuginfod. NULL here means "not in this build".
 */
#pragma weak debuginfod_begin
#pragma weak debuginfod_end
#pragma weak debuginfod_find_debuginfo
#pragma weak debuginfod_set_progressfn
#pragma weak debuginfod_set_user_data
#pragma weak debuginfod_get_user_data

#define SLOW_NS 1000000000ULL /* a fetch this long is said while it runs */

/*
 * The client's bounds where the environment sets none (its own defaults:
 * 90 s for the first 100 KB, two retries, no bound on time or size, so a
 * server that accepts and never answers held a report 271 s, and one that
 * sends 1.5 GB had it cached whole): a report waits for a server at most
 * DEBUGINFOD_TIMEOUT once (no more fetches after a failure), a file at most
 * DEBUGINFOD_MAXTIME, and takes none over DEBUGINFOD_MAXSIZE; all fetches
 * together at most DEBUGINFO_TOTAL_MS, after which none is begun.
 */
static const struct {
	const char *name, *value;
} client_defaults[] = {
	{ "DEBUGINFOD_TIMEOUT", "10" },
	{ "DEBUGINFOD_RETRY_LIMIT", "0" },
	{ "DEBUGINFOD_MAXTIME", "60" },
	{ "DEBUGINFOD_MAXSIZE", "1073741824" },
};
#define DEBUGINFO_TOTAL_MS 120000

struct debuginfo {
	const char *urls; /* DEBUGINFOD_URLS, NULL when unset or empty */
	debuginfod_client *client;
	bool client_failed, failed;
	struct hashmap asked; /* build id -> index into paths + 1; 0: none */
	char **paths;
	size_t nr_paths, cap_paths;
	unsigned tried, got;
	/* the fetch under way, for the progress callback */
	const char *what;
	uint64_t start;
	bool said;
	uint64_t spent_ns; /* in fetches so far */
	uint64_t maxsize; /* DEBUGINFOD_MAXSIZE, 0: none */
	bool over; /* the total bound was reached: no more fetches */
	bool too_large; /* the fetch under way was stopped: more than DEBUGINFOD_MAXSIZE */
};

struct debuginfo *debuginfo__new(void)
{
	struct debuginfo *di = calloc(1, sizeof(*di));
	const char *urls = getenv("DEBUGINFOD_URLS");

	const char *max;
	size_t i;

	if (!di)
		return NULL;
	if (urls && urls[strspn(urls, " \t")])
		di->urls = urls;
	for (i = 0; di->urls && i < sizeof(client_defaults) / sizeof(client_defaults[0]); i++)
		setenv(client_defaults[i].name, client_defaults[i].value, 0);
	max = getenv("DEBUGINFOD_MAXSIZE");
	di->maxsize = max ? strtoull(max, NULL, 10) : 0;
	return di;
}

void debuginfo__free(struct debuginfo *di)
{
	size_t i;

	if (!di)
		return;
	if (di->client)
		debuginfod_end(di->client);
	hashmap__free(&di->asked);
	for (i = 0; i < di->nr_paths; i++)
		free(di->paths[i]);
	free(di->paths);
	free(di);
}

bool debuginfo__enabled(const struct debuginfo *di)
{
	return di && di->urls && debuginfod_begin;
}

void debuginfo__stats(const struct debuginfo *di, struct debuginfo_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!di)
		return;
	st->enabled = debuginfo__enabled(di);
	st->tried = di->tried;
	st->got = di->got;
	st->failed = di->failed;
}

/* A message on stderr as offcpu's logger writes them, without its "warning: ". */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char msg[1024], out[4096];
	va_list ap;

	if (log_verbosity < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	str_escape(out, sizeof(out), msg); /* a path is another user's name */
	/* on a terminal, over the session's progress line ("reading 42%") */
	fprintf(stderr, "%soffcpu: %s\n", isatty(2) ? "\r\033[K" : "", out);
}

/* Called by the client while it waits and downloads: says once that a fetch is slow. */
static int progress(debuginfod_client *c, long done, long total)
{
	struct debuginfo *di = debuginfod_get_user_data(c);

	if (!di)
		return 0;
	if (!di->said && now_ns() - di->start >= SLOW_NS) {
		const char *t = getenv("DEBUGINFOD_TIMEOUT"), *m = getenv("DEBUGINFOD_MAXTIME");

		di->said = true;
		say("fetching debug info for %s from debuginfod (%s; it gives up after %s s "
		    "without data, DEBUGINFOD_TIMEOUT, or %s s in all, DEBUGINFOD_MAXTIME)...",
		    di->what, di->urls, t && *t ? t : "90", m && *m ? m : "no bound of");
	}
	/* what a server sends past the size it may (one it announces, the client
	 * refuses itself: DEBUGINFOD_MAXSIZE) */
	if (di->maxsize && done > 0 && (uint64_t)done > di->maxsize) {
		di->too_large = true;
		return 1;
	}
	/* all fetches of this report together */
	if (di->spent_ns + (now_ns() - di->start) > DEBUGINFO_TOTAL_MS * 1000000ULL) {
		di->over = true;
		return 1;
	}
	return 0;
}

static bool client(struct debuginfo *di)
{
	if (di->client)
		return true;
	if (di->client_failed)
		return false;
	di->client = debuginfod_begin();
	if (!di->client) {
		di->client_failed = true;
		pr_warn("cannot start the debuginfod client: DEBUGINFOD_URLS is ignored");
		return false;
	}
	debuginfod_set_user_data(di->client, di);
	debuginfod_set_progressfn(di->client, progress);
	return true;
}

const char *debuginfo__fetch(struct debuginfo *di, const uint8_t *id, size_t len, const char *what)
{
	char *path = NULL;
	uint64_t *v, ms;
	int created, fd;

	if (!di || !di->urls || !len || len > 20)
		return NULL;
	if (!debuginfod_begin) {
		if (!di->client_failed)
			pr_warn("this offcpu was built without libdebuginfod: DEBUGINFOD_URLS is ignored");
		di->client_failed = true;
		return NULL;
	}
	v = hashmap__upsert(&di->asked, id, len, &created);
	if (!v)
		return NULL;
	if (!created) /* one attempt per build id */
		return *v ? di->paths[*v - 1] : NULL;
	if (di->failed || di->over || !client(di))
		return NULL;
	di->tried++;
	di->what = what;
	di->said = false;
	di->too_large = false;
	di->start = now_ns();
	fd = debuginfod_find_debuginfo(di->client, id, (int)len, &path);
	di->spent_ns += now_ns() - di->start;
	ms = (now_ns() - di->start) / 1000000;
	if (fd < 0 && di->over) {
		free(path);
		pr_warn("debuginfod: fetches stopped after %u s in all (no more in this report): %s "
			"stays without debug info", DEBUGINFO_TOTAL_MS / 1000, what);
		return NULL;
	}
	if (fd < 0) {
		free(path);
		if (di->too_large)
			fd = -EFBIG; /* stopped here: whatever the client says */
		if (fd == -ENOENT) { /* the server has none: it is not the server's fault */
			if (di->said)
				say("debuginfod has no debug info for %s (%llu.%llu s)", what,
				    (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000 / 100));
			else
				pr_info("debuginfod has no debug info for %s", what);
			return NULL;
		}
		di->failed = true;
		pr_warn("debuginfod: no debug info for %s after %llu.%llu s: %s; no more fetches in "
			"this report (DEBUGINFOD_TIMEOUT, DEBUGINFOD_RETRY_LIMIT, DEBUGINFOD_MAXTIME "
			"and DEBUGINFOD_MAXSIZE bound a fetch)", what, (unsigned long long)(ms / 1000),
			(unsigned long long)(ms % 1000 / 100),
			fd == -EFBIG ? "larger than DEBUGINFOD_MAXSIZE" : strerror(-fd));
		return NULL;
	}
	close(fd);
	if (!path || grow_array((void **)&di->paths, &di->cap_paths, di->nr_paths + 1,
				sizeof(*di->paths)))
		goto fail;
	di->paths[di->nr_paths] = path;
	*v = ++di->nr_paths;
	di->got++;
	if (di->said)
		say("got debug info for %s from debuginfod in %llu.%llu s", what,
		    (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000 / 100));
	else
		pr_info("debug info for %s from debuginfod: %s", what, path);
	return path;
fail:
	free(path);
	return NULL;
}
