#ifndef GHD_TESTS_SUPPORT_HARNESS_H
#define GHD_TESTS_SUPPORT_HARNESS_H

/* The test harness (support_*): starts the real service in this process on
 * 127.0.0.1, port 0, and drives it with libcurl easy handles (as
 * libmicrohttpd's src/testcurl does): support_do (any request: header
 * lines, streamed bodies, keep-alive) and support_do_call (the short form),
 * both answering a struct support_resp. Tests keep in-process access to the
 * service, so they can read pool and staging statistics directly.
 *
 * The backend comes from GHD_TEST_BACKEND: "host" (the default) or "cuda".
 * With "cuda" and no usable device, support_start prints
 * "skipped: no CUDA device" and exits 77 (ctest's skip code).
 * GHD_TEST_DIRECT_COPY=0 turns --direct-copy off (every byte through the
 * staging ring); GHD_TEST_DEVICES sets --devices (the GPU variants run
 * with all); GHD_TEST_RUN_INLINE=0 sets --run-inline 0 (1 is the default);
 * GHD_TEST_LOG=debug|info|warn shows the server's log. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "request.h"
#include "server.h"
#include "small_config.h"

#define SUPPORT_SKIP 77

/* Overrides of the service defaults; zero fields keep the harness's own
 * small defaults (see harness.c). */
struct support_opts {
    size_t pool_limit; /* bytes; (size_t)-1 = no limit */
    size_t pool_slab;
    size_t pool_initial;
    size_t staging_chunk;
    unsigned staging_chunks;
    unsigned staging_timeout_ms;
    size_t connection_memory;
    const char *tokens;          /* "token:tenant,..." (--tokens): /v1 then needs a token */
    unsigned tenant_max_kernels; /* --tenant-max-kernels */
    /* Called last on the configuration, for anything else a suite sets. */
    void (*configure)(struct ghd_config *cfg);
    /* More gpuhttpd flags, separated by spaces ("--host-devices 3"), parsed
     * as gpuhttpd parses its command line; the harness's own settings above
     * apply over them. NULL: none. */
    const char *flags;
};

/* Starts the service and the HTTP server; fails the test (exit 1) on any
 * error other than a missing CUDA device (exit 77). */
void support_start(struct support_server *h, const struct support_opts *opts);
void support_stop(struct support_server *h);
/* curl_global_init, once for the process (every start calls it). */
void support_curl_init(void);

/* ---- cmocka fixtures -------------------------------------------------- */

/* Names the harness (and its options, NULL for the defaults) that the
 * fixtures below start, check and stop; call it in main before
 * cmocka_run_group_tests. h and opts must outlive the group. */
void support_suite_bind(struct support_server *h, const struct support_opts *opts);
/* Group setup: support_start on the bound harness. */
int support_group_setup(void **state);
/* Group teardown: support_stop on the bound harness. */
int support_group_teardown(void **state);
/* A suite's main: binds h and opts (support_suite_bind), then runs the
 * cmocka group `tests` (an array) between support_group_setup and
 * support_group_teardown; its result is main's. */
#define SUPPORT_RUN_GROUP(tests, h, opts)                                                     \
    (support_suite_bind(h, opts),                                                             \
     cmocka_run_group_tests(tests, support_group_setup, support_group_teardown))
/* Test teardown: after each test no transfer may still hold a staging
 * chunk (support_await_idle for up to 5 s, any pool use). */
int support_teardown_idle(void **state);

/* ---- requests --------------------------------------------------------- */

/* Produces up to `max` bytes of a request body at stream position `pos`;
 * returns the count, or 0 at the end. It may block (a slow client). */
typedef size_t (*support_body_fn)(void *ctx, uint64_t pos, char *buf, size_t max);
/* Receives response body bytes; returns 0 to go on, nonzero to abort. */
typedef int (*support_sink_fn)(void *ctx, const char *data, size_t len);

struct support_req {
    const char *method;  /* GET when NULL */
    const char *path;    /* e.g. "/v1/buffers" (with query) */
    const char *headers[16]; /* "Name: value" lines; NULL ends the list */
    /* Body from memory ... */
    const void *body;
    size_t body_len;
    int has_body; /* send body/body_len (also when body_len is 0) */
    /* ... or from a generator. */
    support_body_fn gen;
    void *gen_ctx;
    int64_t gen_len; /* Content-Length; -1 sends chunked */
    /* Streamed response body; when NULL it is collected in resp->body. */
    support_sink_fn sink;
    void *sink_ctx;
    long timeout_s; /* 0 = 120 s */
};

struct support_resp {
    long status;  /* 0 when the transfer failed before a status */
    int curl_rc;  /* CURLcode */
    char *headers; /* the raw header block of the final response */
    size_t headers_len;
    char *body; /* NUL-terminated; NULL when empty (support_do) */
    size_t body_len;
    uint64_t body_total; /* bytes received, also when streamed to a sink */
    long connects;       /* new connections this request opened */
};

/* Performs one request on a fresh connection. */
void support_do(const struct support_server *h, const struct support_req *req,
                struct support_resp *resp);
/* The same on `curl` (a CURL * from curl_easy_init), which keeps its
 * connection between requests: consecutive calls reuse one keep-alive
 * connection where the server allows it. resp->connects is the number of
 * new connections the request opened. */
void support_do_on(const struct support_server *h, void *curl, const struct support_req *req,
                   struct support_resp *resp);
/* Frees the headers and the body; the status and curl_rc stay readable. */
void support_resp_free(struct support_resp *resp);

/* Performs the short form of a request (struct support_call, request.h)
 * on a fresh connection, within rq->timeout_ms (0: 10 s); out->body is
 * never NULL. *out must be released with support_resp_free. */
void support_do_call(const struct support_server *s, const struct support_call *rq,
                     struct support_resp *out);
/* Shorthand: method + path + token + optional JSON body. Returns the status. */
long support_json(const struct support_server *s, const char *method, const char *path,
                  const char *token, const char *json, struct support_resp *out);
/* The value of a response header (case-insensitive name), copied into buf
 * without surrounding whitespace: buf, or NULL (buf "") when absent. */
const char *support_header(const struct support_resp *resp, const char *name, char *buf,
                           size_t len);

/* Convenience wrappers: a request with just method, path and an optional
 * memory body with a content type. */
void support_simple(struct support_server *h, const char *method, const char *path,
                    const char *content_type, const void *body, size_t body_len,
                    struct support_resp *resp);

/* The value of one series ("name{labels}", as the exposition writes it) in
 * a /metrics text, or of a fresh GET /metrics; fails the test when the
 * series is not there. */
double support_metric_in(const char *text, const char *series);
double support_metric(const struct support_server *h, const char *series);
/* Whether a fresh GET /metrics has the series. */
int support_metric_has(const struct support_server *h, const char *series);

/* The response body parsed as JSON (the caller owns it); fails the test
 * when it is not JSON. */
json_t *support_body_json(const struct support_resp *resp);

/* Checks a problem reply: the status, Content-Type application/problem+json,
 * a JSON body with type, title, status (equal to the HTTP status) and
 * detail, and an X-Request-Id header. Fails the test otherwise. */
void support_expect_problem(const struct support_resp *resp, long status);

/* ---- buffers ---------------------------------------------------------- */

/* POST /v1/buffers {"size": size}; returns the new id in id (GHD_BUFFER_ID_LEN + 1 bytes). */
void support_buffer_create(struct support_server *h, size_t size, char id[GHD_BUFFER_ID_LEN + 1]);
/* PUT the whole body at offset 0; expects 200. */
void support_buffer_put(struct support_server *h, const char *id, const void *data, size_t len);
/* GET the whole buffer into a malloc'd array; expects 200. */
void *support_buffer_get(struct support_server *h, const char *id, size_t *len);
void support_buffer_delete(struct support_server *h, const char *id);

/* ---- data ------------------------------------------------------------- */

/* Deterministic pseudo-random bytes: the byte at position `pos` of stream
 * `seed`, so generators and checkers agree without keeping the data. */
void support_fill(uint64_t seed, uint64_t pos, void *buf, size_t len);
/* FNV-1a 64 over a stream: start with SUPPORT_SUM_INIT. */
#define SUPPORT_SUM_INIT 0xcbf29ce484222325ULL
uint64_t support_sum(uint64_t sum, const void *data, size_t len);

/* Polls until no staging ring has a busy chunk and the pools' in_use (of
 * every device, summed) is `in_use` (pass (size_t)-1 to skip that check),
 * for up to `timeout_ms`. Returns 0 when reached. */
int support_await_idle(struct support_server *h, size_t in_use, unsigned timeout_ms);


#endif
