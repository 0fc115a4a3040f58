// SPDX-License-Identifier: GPL-2.0
/* --push's option values, checked without I/O (config.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "config.h"

#define INVALID(...) (snprintf(msg, len, __VA_ARGS__), -EINVAL)

void push_opts__defaults(struct push_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->format = PUSH_OTLP;
	o->by = PUSH_BY_PROCESS;
	o->interval_ns = PUSH_DEFAULT_INTERVAL_NS;
	o->timeout_ns = PUSH_DEFAULT_TIMEOUT_NS;
	o->spool_bytes = PUSH_DEFAULT_SPOOL_BYTES;
}

void push_opts__free(struct push_opts *o)
{
	size_t i;

	for (i = 0; i < o->nr_labels; i++) {
		free(o->label_keys[i]);
		free(o->label_values[i]);
		o->label_keys[i] = o->label_values[i] = NULL;
	}
	o->nr_labels = 0;
}

int push_check_url(const char *url, char *msg, size_t len)
{
	const char *p, *host, *end;
	size_t n = strlen(url);

	if (n > 2048)
		return INVALID("--push URL longer than 2048 bytes");
	for (p = url; *p; p++)
		if (*p <= ' ' || *p >= 127)
			return INVALID("--push URL with a space, a control character or a non-ASCII "
				       "byte: give it %%-encoded");
	if (!strncasecmp(url, "http://", 7))
		host = url + 7;
	else if (!strncasecmp(url, "https://", 8))
		host = url + 8;
	else
		return INVALID("--push URL '%s' is not http:// or https://", url);
	end = host + strcspn(host, "/?#");
	if (end == host)
		return INVALID("--push URL '%s' has no host", url);
	if (memchr(host, '@', (size_t)(end - host)))
		return INVALID("--push URL with a user or password: they would show in ps; put a "
			       "token in a file for --push-token-file");
	if (strpbrk(url, "?#"))
		return INVALID("--push URL with a query or fragment: give the backend's base URL");
	return 0;
}

static bool key_ok(const char *k, size_t n)
{
	size_t i;

	if (!n || n > 64 || !(k[0] == '_' || (k[0] >= 'a' && k[0] <= 'z') ||
			      (k[0] >= 'A' && k[0] <= 'Z')))
		return false;
	for (i = 1; i < n; i++)
		if (!(k[i] == '_' || k[i] == '.' || (k[i] >= 'a' && k[i] <= 'z') ||
		      (k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= '0' && k[i] <= '9')))
			return false;
	return true;
}

static bool value_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("_.:/@+-", c));
}

int push_opts__add_label(struct push_opts *o, const char *kv, char *msg, size_t len)
{
	const char *eq = strchr(kv, '='), *v;
	size_t i, kn;

	if (!eq)
		return INVALID("invalid --push-label '%s': give KEY=VALUE", kv);
	kn = (size_t)(eq - kv);
	v = eq + 1;
	if (!key_ok(kv, kn))
		return INVALID("invalid --push-label key in '%s': a letter or '_', then letters, "
			       "digits, '_' or '.' (at most 64)", kv);
	if (!*v || strlen(v) > 256)
		return INVALID("invalid --push-label value in '%s': 1 to 256 characters", kv);
	for (i = 0; v[i]; i++)
		if (!value_char(v[i]))
			return INVALID("invalid --push-label value in '%s': letters, digits and "
				       "_.:/@+- only", kv);
	for (i = 0; i < o->nr_labels; i++)
		if (strlen(o->label_keys[i]) == kn && !strncmp(o->label_keys[i], kv, kn))
			return INVALID("--push-label '%.*s' given twice", (int)kn, kv);
	if (o->nr_labels == PUSH_MAX_LABELS)
		return INVALID("more than %d --push-label", PUSH_MAX_LABELS);
	o->label_keys[o->nr_labels] = strndup(kv, kn);
	o->label_values[o->nr_labels] = strdup(v);
	if (!o->label_keys[o->nr_labels] || !o->label_values[o->nr_labels]) {
		free(o->label_keys[o->nr_labels]);
		free(o->label_values[o->nr_labels]);
		return INVALID("out of memory");
	}
	o->nr_labels++;
	return 0;
}

char *push_endpoint(const char *url, enum push_format f)
{
	const char *path = f == PUSH_OTLP ? "/v1development/profiles" : "/ingest";
	size_t n = strlen(url), pn = strlen(path);
	char *out;

	while (n && url[n - 1] == '/')
		n--;
	if (n >= pn && !strncmp(url + n - pn, path, pn))
		return strndup(url, n);
	out = malloc(n + pn + 1);
	if (out) {
		memcpy(out, url, n);
		memcpy(out + n, path, pn + 1);
	}
	return out;
}

void push_label_value(const char *s, char *out, size_t cap)
{
	size_t i;

	if (!cap)
		return;
	for (i = 0; s[i] && i + 1 < cap; i++)
		out[i] = value_char(s[i]) ? s[i] : '_';
	if (!i && cap > 1)
		out[i++] = '_';
	out[i] = 0;
}
