#ifndef GHD_HTTP_REQUEST_H
#define GHD_HTTP_REQUEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/trace.h"
#include "base/trace_span.h"
#include "core/tenancy/caller.h"

/* What a handler sees: a request and a reply, never MHD or CUDA types.
 * http.c fills the request and turns the reply into an HTTP response. */

struct ghd_service;
struct ghd_upload;

#define GHD_MAX_PATH_PARAMS 4
#define GHD_REQUEST_ID_MAX 64

struct ghd_request {
    struct ghd_service *svc;
    const char *method;
    const char *path;
    const char *route; /* the matched template, e.g. "/v1/buffers/{id}" */
    char params[GHD_MAX_PATH_PARAMS][128];
    unsigned param_count;
    char request_id[GHD_REQUEST_ID_MAX + 1];
    struct ghd_caller caller; /* who asks, for the core to decide (http/access.c) */
    char client_address[48]; /* the client's IP address; "" when unknown */
    json_t *json;       /* parsed JSON body for JSON routes */
    int has_body;
    int has_content_length;
    uint64_t content_length;
    uint64_t bytes_in;
    void *conn;  /* http.c's connection handle, for header and query lookups */
    struct ghd_upload *upload; /* the route's upload, from its ops' begin to their cleanup
                                * (defined by the handlers that stream bodies) */
    /* A run's request, for its access line: its kernels (the run's
     * ghd_run_kernel_label; "" for every other request) and its device time
     * when the reply waited for its end (< 0 otherwise). */
    char run_kernel[64];
    double run_device_ms;
    /* Its W3C trace context (base/trace.h): the trace it belongs to, its own
     * span id, whether it is sampled (http/trace_http.c). */
    struct ghd_trace_ctx trace_ctx;
    /* Its spans when sampled (base/trace_span.h), else NULL: every tracing
     * step of a request is one test of this pointer. */
    struct ghd_trace *trace;
    /* The URL of the instance that owns what the answer is about, sent as
     * Gpuhttpd-Owner-Url (http/owner_route.h); NULL: none known. */
    const char *owner_url;
    uint64_t arrived_ns; /* ghd_clock_ns() when the head was complete */
};

/* Header and query lookups; NULL when absent. */
const char *ghd_request_header(const struct ghd_request *req, const char *name);
const char *ghd_request_query(const struct ghd_request *req, const char *name);

/* Names the streamed response body's bytes from `pos` on: sets *data to
 * memory the reader owns and returns their count (> 0, at most `max`), or
 * a negative GHD_E* code to abort the response. The HTTP layer sends them
 * from there: they stay unchanged until the reader's next call (at the end
 * of them) or its ghd_reply_free. */
typedef ssize_t (*ghd_reply_reader)(void *ctx, uint64_t pos, const char **data, size_t max);
typedef void (*ghd_reply_free)(void *ctx);

#define GHD_REPLY_MAX_HEADERS 12

struct ghd_reply {
    int status;
    unsigned header_count;
    char *header_names[GHD_REPLY_MAX_HEADERS];
    char *header_values[GHD_REPLY_MAX_HEADERS];
    const char *content_type;
    char *body; /* owned, freed by http.c */
    size_t body_len;
    /* Streamed body (downloads). */
    ghd_reply_reader reader;
    ghd_reply_free reader_free;
    void *reader_ctx;
    uint64_t stream_len;
    /* The detail of the last problem set on this reply, for the access log. */
    char problem_detail[256];
};

/* Reply builders; each returns 0 or GHD_ENOHOSTMEM. A JSON body is compact
 * JSON followed by one newline. */
int ghd_reply_json(struct ghd_reply *rep, int status, json_t *obj /* steals */);
int ghd_reply_text(struct ghd_reply *rep, int status, const char *content_type,
                   const char *text, size_t len);
int ghd_reply_empty(struct ghd_reply *rep, int status);
/* A text/html reply from asprintf's result (`html` and its length `n`, < 0
 * when asprintf failed); steals `html`. Returns 0, or the problem's code
 * when out of memory (the reply is then that problem). */
int ghd_reply_html(struct ghd_reply *rep, const struct ghd_request *req, int status, char *html,
                   int n);
int ghd_reply_header(struct ghd_reply *rep, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* application/problem+json for a GHD_E* code; the detail (printf-style) has
 * CR and LF stripped, since it may echo input. Returns `code` so a handler
 * can `return ghd_reply_problem(...)`. */
int ghd_reply_problem(struct ghd_reply *rep, const struct ghd_request *req, int code,
                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The problem document ghd_reply_problem writes, as a value: for an answer
 * that carries several (a list of runs, each with its own). A new
 * reference (NULL when out of memory). */
json_t *ghd_problem_new(const struct ghd_request *req, int code, const char *detail);
/* A streamed body of `len` bytes produced by `reader`; `reader_free(ctx)` runs
 * once when the response is done or abandoned. */
int ghd_reply_stream(struct ghd_reply *rep, int status, const char *content_type,
                     uint64_t len, ghd_reply_reader reader, void *ctx,
                     ghd_reply_free reader_free);
/* Drops everything the reply owns (also the stream context). */
void ghd_reply_reset(struct ghd_reply *rep);
/* The header fields of the reply's head, the same whoever writes it
 * (libmicrohttpd, or the socket path): Content-Type, X-Request-Id,
 * Gpuhttpd-Instance (the instance that answers, base/owner.h), then the
 * reply's own, each passed to `emit`. The transport adds the framing ones
 * (Date, Content-Length, Connection). */
void ghd_reply_each_header(const struct ghd_reply *rep, const struct ghd_request *req,
                           void (*emit)(void *ctx, const char *name, const char *value),
                           void *ctx);

#endif
