/* SPDX-License-Identifier: GPL-2.0 */
/*
 * POSTs to the backend with libcurl (HTTP and HTTPS only, the system's CA
 * certificates, no redirect followed: a token goes to the URL given and
 * nowhere else), each bounded by --push-timeout and by a deadline another
 * thread may set (the end of the recording). The bearer token is read
 * from --push-token-file for each request, so a token rotated in place is
 * used from the next one; a file that cannot be used then keeps the last
 * token, said once. One struct http per thread: its connection is kept
 * between requests.
 */
#ifndef OFFCPU_PUSH_HTTP_H
#define OFFCPU_PUSH_HTTP_H

#include <stddef.h>
#include <stdint.h>

/* Once, before any thread uses libcurl. 0, or -1 with why in @msg. */
int http__global_init(char *msg, size_t len);

/* What became of a request. */
enum http_result {
	HTTP_SENT, /* 2xx */
	HTTP_RETRY, /* not answered, 408, 429, 502, 503, 504: try again later */
	HTTP_REJECTED, /* any other status: the backend will not take it */
};

struct http;

/*
 * A client for @url (the endpoint) that sends the token of @token_file (NULL:
 * none). Reads the token once now: NULL, with why in @msg, when it cannot.
 */
struct http *http__new(const char *url, const char *token_file, uint64_t timeout_ns, char *msg,
		       size_t len);
void http__free(struct http *h);

struct http_req {
	const char *query; /* appended after '?', or NULL */
	const char *content_type;
	const char *content_encoding; /* or NULL */
	const char *header; /* one more "Name: value", or NULL */
	const void *body;
	size_t len;
};

/*
 * POST @r. @why gets a line saying what happened when it was not HTTP_SENT
 * (the status and the start of the answer, or the transfer's error);
 * *@retry_after_ns the wait the backend asked for (Retry-After), else 0.
 */
enum http_result http__post(struct http *h, const struct http_req *r, char *why, size_t len,
			    uint64_t *retry_after_ns);

/* The start of the last answer's body (at most 512 bytes), as it came. */
const uint8_t *http__answer(const struct http *h, size_t *len);

/* From now on, no request of @h lasts past @deadline (CLOCK_MONOTONIC ns; 0: none). Any thread. */
void http__deadline(struct http *h, uint64_t deadline);

#endif
