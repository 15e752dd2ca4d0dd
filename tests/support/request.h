#ifndef GHD_TESTS_SUPPORT_REQUEST_H
#define GHD_TESTS_SUPPORT_REQUEST_H

/* One HTTP request on a libcurl handle the caller keeps (its connection
 * stays open between requests): the request helper of the programs that
 * drive a server at length, tests/reliability/soak.c and
 * tests/bench/bench_copies.c. (The suites' own helpers, support_do and
 * support_do_call, add what they check on top.) */
#include <stddef.h>

/* A response body, NUL-terminated; each request empties it and reuses its
 * memory, support_body_free frees it. Zero it before the first use. */
struct support_body {
    char *buf;
    size_t len, cap;
};

struct support_request {
    const char *method; /* GET when NULL; HEAD asks for no body */
    const char *path;   /* appended to the base URL */
    const char *token;  /* a Bearer token, or NULL */
    const char *ctype;  /* Content-Type, or NULL */
    const char *extra;  /* one more "Name: value" header, or NULL */
    const void *body;   /* NULL: none */
    size_t len;
    long timeout_s; /* 0: none */
};

/* Performs rq on `curl` (a CURL *, reset first) against `base`
 * ("http://127.0.0.1:PORT"), without Expect: 100-continue; the body into
 * *out. Returns the status, 0 when the transfer failed before one. */
long support_request_on(void *curl, const char *base, const struct support_request *rq,
                        struct support_body *out);
void support_body_free(struct support_body *b);

#endif
