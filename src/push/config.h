/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What offcpu record --push is told (its options, parsed in
 * src/record/options.c's table) and the pure checks of their values: the
 * URL, the labels, the endpoint a format posts to. No I/O here: the unit
 * tests call all of it.
 */
#ifndef OFFCPU_PUSH_CONFIG_H
#define OFFCPU_PUSH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum push_format { PUSH_OTLP, PUSH_PYROSCOPE };
/* One profile an interval for each process, or for each cgroup. */
enum push_by { PUSH_BY_PROCESS, PUSH_BY_CGROUP };

#define PUSH_MAX_LABELS 32
#define PUSH_DEFAULT_INTERVAL_NS (60ULL * 1000000000ULL)
#define PUSH_MIN_INTERVAL_NS 1000000000ULL
#define PUSH_MAX_INTERVAL_NS (3600ULL * 1000000000ULL)
#define PUSH_DEFAULT_TIMEOUT_NS (10ULL * 1000000000ULL)
#define PUSH_DEFAULT_SPOOL_BYTES (256ULL << 20)

struct push_opts {
	const char *url; /* --push as given; NULL: no push */
	enum push_format format;
	enum push_by by;
	uint64_t interval_ns; /* --push-interval */
	uint64_t timeout_ns; /* --push-timeout: one request's limit */
	const char *token_file; /* --push-token-file: a bearer token */
	const char *spool_dir; /* --push-spool */
	uint64_t spool_bytes; /* --push-spool-size */
	bool spool_bytes_given;
	/* --push-label K=V, repeatable: copies, freed by push_opts__free() */
	char *label_keys[PUSH_MAX_LABELS], *label_values[PUSH_MAX_LABELS];
	size_t nr_labels;
	const char *first_other; /* the first --push-* option given, for "needs --push" */
};

void push_opts__defaults(struct push_opts *o);
void push_opts__free(struct push_opts *o);

/*
 * Check --push's URL: http:// or https://, a host, no user or password in it
 * (they would show in ps: --push-token-file is for secrets), no query or
 * fragment, nothing but printable ASCII. 0, or -EINVAL with why in @msg.
 */
int push_check_url(const char *url, char *msg, size_t len);

/*
 * Add "K=V" to @o's labels. K: a letter or '_', then letters, digits, '_'
 * and '.'; V: 1 to 256 of letters, digits and "_.:/@+-" (what both OTLP and
 * Pyroscope's application names take as they are). 0, or -EINVAL with why.
 */
int push_opts__add_label(struct push_opts *o, const char *kv, char *msg, size_t len);

/*
 * The URL a format posts to: @url as given when its path already ends in the
 * format's own path (/v1development/profiles, /ingest), else that path
 * appended to it (as OpenTelemetry's exporters take a base URL). malloc'ed;
 * NULL when out of memory.
 */
char *push_endpoint(const char *url, enum push_format f);

/*
 * @s made a label value both formats take: every byte that V above may not
 * hold becomes '_', at most @cap - 1 bytes, "_" when empty. Into @out.
 */
void push_label_value(const char *s, char *out, size_t cap);

#endif
