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
};

struct debuginfo *debuginfo__new(void)
{
	struct debuginfo *di = calloc(1, sizeof(*di));
	const char *urls = getenv("DEBUGINFOD_URLS");

	if (!di)
		return NULL;
	if (urls && urls[strspn(urls, " \t")])
		di->urls = urls;
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

	if (di && !di->said && now_ns() - di->start >= SLOW_NS) {
		const char *t = getenv("DEBUGINFOD_TIMEOUT");

		di->said = true;
		say("fetching debug info for %s from debuginfod (%s; a try gives up after %s s "
		    "without data, DEBUGINFOD_TIMEOUT)...", di->what, di->urls, t && *t ? t : "90");
	}
	return 0; /* go on: the client's own timeouts bound the wait */
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
	if (di->failed || !client(di))
		return NULL;
	di->tried++;
	di->what = what;
	di->said = false;
	di->start = now_ns();
	fd = debuginfod_find_debuginfo(di->client, id, (int)len, &path);
	ms = (now_ns() - di->start) / 1000000;
	if (fd < 0) {
		free(path);
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
			"this report (DEBUGINFOD_TIMEOUT, DEBUGINFOD_RETRY_LIMIT and DEBUGINFOD_MAXTIME "
			"bound a fetch)", what, (unsigned long long)(ms / 1000),
			(unsigned long long)(ms % 1000 / 100), strerror(-fd));
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
