/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Debug files from debuginfod servers (libdebuginfod, the client perf and
 * gdb use), for the symbolizer's binaries that have no symbols or DWARF of
 * their own and no debug file on this machine. On only when DEBUGINFOD_URLS
 * names a server; the client's cache is DEBUGINFOD_CACHE_PATH (else
 * ~/.cache/debuginfod_client), its bounds DEBUGINFOD_TIMEOUT,
 * DEBUGINFOD_RETRY_LIMIT, DEBUGINFOD_MAXTIME and DEBUGINFOD_MAXSIZE, set by
 * offcpu where the environment does not (10 s without data, no retry, 60 s
 * and 1 GiB a file; debuginfo.c), and all fetches of a report together at
 * most 120 s.
 *
 * Bounded: each build id is asked for once per report, whatever the number
 * of binaries or paths that carry it; a server that fails (no connection,
 * timeout, an HTTP error other than "not found") is not asked again in this
 * report, so a report waits for at most one timeout. A fetch that lasts more
 * than a second says so on stderr while it runs, and how long it took once
 * done. The caller checks the file's build id before it trusts it.
 */
#ifndef OFFCPU_REPORT_DEBUGINFO_H
#define OFFCPU_REPORT_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct debuginfo;

/* From the environment (DEBUGINFOD_URLS); NULL when out of memory. */
struct debuginfo *debuginfo__new(void);
void debuginfo__free(struct debuginfo *di);

/* DEBUGINFOD_URLS names a server and this build has the client. */
bool debuginfo__enabled(const struct debuginfo *di);

/*
 * The path, in the client's cache, of the debug file of build id @id (@len
 * bytes), for the binary @what (named in messages). NULL when there is
 * none, when the servers cannot be asked, or when @id was asked for before
 * and had none. The string is the debuginfo's (valid until it is freed).
 */
const char *debuginfo__fetch(struct debuginfo *di, const uint8_t *id, size_t len, const char *what);

/* What the report asked: fetches tried, files got, and whether the servers failed. */
struct debuginfo_stats {
	bool enabled; /* debuginfo__enabled() */
	unsigned tried, got;
	bool failed; /* a server error ended the fetches */
};
void debuginfo__stats(const struct debuginfo *di, struct debuginfo_stats *st);

#endif
