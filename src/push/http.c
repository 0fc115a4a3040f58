// SPDX-License-Identifier: GPL-2.0
/* POSTs with libcurl (http.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <curl/curl.h>
#include "http.h"
#include "../util/util.h"

#define MAX_TOKEN 4096
#define MAX_ANSWER 512 /* what is kept of an answer, for messages */

struct http {
	CURL *curl;
	char *url;
	const char *token_file;
	char *token; /* the last good one, or NULL */
	bool token_warned;
	uint64_t timeout_ns;
	_Atomic uint64_t deadline;
	char answer[MAX_ANSWER + 1];
	size_t answer_len;
};

int http__global_init(char *msg, size_t len)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(msg, len, "cannot initialise libcurl");
		return -1;
	}
	return 0;
}

/*
 * The token in @path: root's (or ours), a regular file no one else may
 * write, at most 4 KiB, printable ASCII without spaces (a line break in it
 * would forge a header). Never blocks: no link followed, no fifo opened
 * for reading, no lease waited for. malloc'ed, or NULL with why in @msg.
 */
static char *read_token(const char *path, char *msg, size_t len)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	char buf[MAX_TOKEN + 1];
	struct stat st;
	ssize_t n;
	size_t i;

	if (fd < 0) {
		snprintf(msg, len, "cannot open --push-token-file %s: %s", path,
			 errno == ELOOP ? "a symbolic link (give the file itself)" : strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (st.st_uid && st.st_uid != geteuid()) ||
	    (st.st_mode & 022) || st.st_size > MAX_TOKEN) {
		snprintf(msg, len, "--push-token-file %s must be a regular file of root's (or "
			 "yours), writable by no one else, of at most 4 KiB", path);
		close(fd);
		return NULL;
	}
	n = read(fd, buf, MAX_TOKEN);
	close(fd);
	if (n < 0) {
		snprintf(msg, len, "cannot read --push-token-file %s: %s", path, strerror(errno));
		return NULL;
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
			 buf[n - 1] == '\t'))
		n--;
	buf[n] = 0;
	for (i = 0; i < (size_t)n; i++)
		if (buf[i] <= ' ' || buf[i] >= 127)
			break;
	if (!n || i < (size_t)n) {
		snprintf(msg, len, "--push-token-file %s: %s", path,
			 n ? "the token has a space, a control character or a non-ASCII byte" :
			     "empty");
		return NULL;
	}
	return strdup(buf);
}

static size_t on_answer(char *data, size_t size, size_t nmemb, void *arg)
{
	struct http *h = arg;
	size_t n = size * nmemb, room = MAX_ANSWER - h->answer_len;

	memcpy(h->answer + h->answer_len, data, n < room ? n : room);
	h->answer_len += n < room ? n : room;
	return n; /* the rest is read and dropped */
}

/* Ends a transfer that would last past the deadline another thread set. */
static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct http *h = arg;
	uint64_t d = atomic_load(&h->deadline);

	return d && now_ns() >= d;
}

struct http *http__new(const char *url, const char *token_file, uint64_t timeout_ns, char *msg,
		       size_t len)
{
	struct http *h = calloc(1, sizeof(*h));

	if (!h || !(h->url = strdup(url)) || !(h->curl = curl_easy_init())) {
		snprintf(msg, len, "out of memory");
		http__free(h);
		return NULL;
	}
	h->token_file = token_file;
	h->timeout_ns = timeout_ns;
	if (token_file && !(h->token = read_token(token_file, msg, len))) {
		http__free(h);
		return NULL;
	}
	return h;
}

void http__free(struct http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	free(h->url);
	free(h->token);
	free(h);
}

const uint8_t *http__answer(const struct http *h, size_t *len)
{
	*len = h->answer_len;
	return (const uint8_t *)h->answer;
}

void http__deadline(struct http *h, uint64_t deadline)
{
	atomic_store(&h->deadline, deadline);
}

/* The token for this request: read again, else the last good one (said once). */
static const char *token(struct http *h)
{
	char msg[512];
	char *t;

	if (!h->token_file)
		return NULL;
	t = read_token(h->token_file, msg, sizeof(msg));
	if (!t) {
		if (!h->token_warned)
			pr_warn("push: %s; the token read before is sent", msg);
		h->token_warned = true;
		return h->token;
	}
	h->token_warned = false;
	free(h->token);
	return h->token = t;
}

/* Printable text of the answer's start, for a message. */
static const char *answer_text(struct http *h)
{
	size_t i;

	h->answer[h->answer_len] = 0;
	for (i = 0; i < h->answer_len; i++)
		if (h->answer[i] == '\n' || h->answer[i] == '\r' || h->answer[i] == '\t')
			h->answer[i] = ' ';
		else if ((unsigned char)h->answer[i] < ' ' || (unsigned char)h->answer[i] >= 127)
			h->answer[i] = '?';
	while (i > 0 && h->answer[i - 1] == ' ')
		h->answer[--i] = 0;
	return h->answer;
}

enum http_result http__post(struct http *h, const struct http_req *r, char *why, size_t len,
			    uint64_t *retry_after_ns)
{
	struct curl_slist *hdr = NULL, *t;
	char line[MAX_TOKEN + 64], *url = NULL, err[CURL_ERROR_SIZE] = "";
	const char *tok = token(h);
	uint64_t deadline = atomic_load(&h->deadline), timeout_ms = h->timeout_ns / 1000000;
	enum http_result res = HTTP_RETRY;
	curl_off_t retry = 0;
	long status = 0;
	CURLcode rc;

	*retry_after_ns = 0;
	why[0] = 0;
	if (deadline) {
		uint64_t now = now_ns();

		if (now >= deadline) {
			snprintf(why, len, "no time left to send");
			return HTTP_RETRY;
		}
		if ((deadline - now) / 1000000 + 1 < timeout_ms)
			timeout_ms = (deadline - now) / 1000000 + 1;
	}
	if (asprintf(&url, "%s%s%s", h->url, r->query ? "?" : "", r->query ? r->query : "") < 0) {
		snprintf(why, len, "out of memory");
		return HTTP_RETRY;
	}
	snprintf(line, sizeof(line), "Content-Type: %s", r->content_type);
	hdr = curl_slist_append(hdr, line);
	if (hdr && r->content_encoding) {
		snprintf(line, sizeof(line), "Content-Encoding: %s", r->content_encoding);
		hdr = (t = curl_slist_append(hdr, line)) ? t : hdr;
	}
	if (hdr && r->header)
		hdr = (t = curl_slist_append(hdr, r->header)) ? t : hdr;
	if (hdr && tok) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", tok);
		hdr = (t = curl_slist_append(hdr, line)) ? t : hdr;
	}
	/* no "Expect: 100-continue": a second's wait on backends that do not answer it */
	if (hdr)
		hdr = (t = curl_slist_append(hdr, "Expect:")) ? t : hdr;
	curl_easy_reset(h->curl);
	curl_easy_setopt(h->curl, CURLOPT_URL, url);
	curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L); /* threads: no alarm for DNS */
	curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
	curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h->curl, CURLOPT_USERAGENT, "offcpu/" OFFCPU_VERSION);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_answer);
	curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h->curl, CURLOPT_XFERINFODATA, h);
	curl_easy_setopt(h->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h->curl, CURLOPT_ERRORBUFFER, err);
	h->answer_len = 0;
	rc = hdr ? curl_easy_perform(h->curl) : CURLE_OUT_OF_MEMORY;
	if (rc == CURLE_OK) {
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &status);
		if (status >= 200 && status < 300) {
			res = HTTP_SENT;
		} else {
			res = status == 408 || status == 429 || status == 502 || status == 503 ||
					      status == 504 ?
				      HTTP_RETRY :
				      HTTP_REJECTED;
			if (!curl_easy_getinfo(h->curl, CURLINFO_RETRY_AFTER, &retry) && retry > 0)
				*retry_after_ns = (uint64_t)retry * 1000000000ULL;
			snprintf(why, len, "HTTP %ld%s%s", status, h->answer_len ? ": " : "",
				 answer_text(h));
		}
	} else if (rc == CURLE_ABORTED_BY_CALLBACK) {
		snprintf(why, len, "the recording ended before the backend answered");
	} else {
		snprintf(why, len, "%s", err[0] ? err : curl_easy_strerror(rc));
	}
	curl_slist_free_all(hdr);
	free(url);
	return res;
}
