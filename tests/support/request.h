#ifndef GHD_TESTS_SUPPORT_REQUEST_H
#define GHD_TESTS_SUPPORT_REQUEST_H

/* One HTTP request on a libcurl handle the caller keeps (its connection
 * stays open between requests): the request helper of the programs that
 * drive a server at length, tests/reliability/soak.c and
 * tests/bench/bench_copies.c; the same request as support_do_call
 * (harness.h), which answers with the headers too. */
#include <stddef.h>

/* A response body, NUL-terminated; each request empties it and reuses its
 * memory, support_body_free frees it. Zero it before the first use. */
struct support_body {
    char *buf;
    size_t len, cap;
};

/* The short form of a request: a token, a content type, one more header,
 * a body sent at once (no Expect: 100-continue), another base URL or TLS
 * settings where a suite needs them. */
struct support_call {
    const char *method;
    const char *path; /* appended to the base URL */
    const char *token;  /* Bearer token, or NULL */
    const char *ctype;  /* Content-Type, or NULL */
    const void *body;
    size_t len;
    const char *extra_header; /* one more "Name: value", or NULL */
    long timeout_ms;          /* 0: support_do_call's 10 s, support_do_call_on's none */
    const char *base;         /* NULL = the server's */
    const char *cainfo;       /* HTTPS: CA file */
    long sslversion;          /* CURLOPT_SSLVERSION, 0 = curl's default */
};

/* Sets rq on `curl` (a CURL *): its URL (rq->base, else `base`, then
 * rq->path), headers (without Expect: 100-continue), method, body, timeout
 * and TLS settings. Returns the header list, which the caller frees
 * (curl_slist_free_all) once the transfer is over. */
void *support_call_setopt(void *curl, const char *base, const struct support_call *rq);
/* Performs rq on `curl` (reset first) against `base`
 * ("http://127.0.0.1:PORT"); the body into *out. Returns the status, 0 when
 * the transfer failed before one. */
long support_do_call_on(void *curl, const char *base, const struct support_call *rq,
                        struct support_body *out);
void support_body_free(struct support_body *b);

#endif
