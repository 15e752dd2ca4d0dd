#define _GNU_SOURCE
#include "loadgen.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lg_worker_fail(struct worker *w, const char *what)
{
    snprintf(w->err, sizeof w->err, "conn %u: %s: %s", w->index, what, w->conn.err);
    w->conn.must_close = true; /* its state is unknown now: the next request reconnects */
    return -1;
}

int lg_worker_connect(struct worker *w)
{
    const struct options *opt = w->shared->opt;
    if (w->conn_open && !w->conn.must_close)
        return 0;
    if (w->conn_open)
        lg_conn_close(&w->conn);
    w->conn_open = true;
    int port = w->direct_port ? w->direct_port : opt->ports[w->index % opt->nports];
    if (lg_conn_open(&w->conn, opt->host, port, opt->sockbuf, opt->recv_buf) != 0)
        return lg_worker_fail(w, "connect");
    w->conn.default_headers = opt->auth_header[0] ? opt->auth_header : NULL;
    return 0;
}

/* Reads a response and fails unless its status is in [lo, hi]; the body lands in text. */
int lg_expect_status(struct worker *w, const char *what, int lo, int hi, struct lg_response *resp,
                     struct lg_text *text)
{
    if (lg_conn_read_head(&w->conn, resp) != 0)
        return lg_worker_fail(w, what);
    if (lg_conn_read_body(&w->conn, resp, false, lg_text_sink, text) != 0)
        return lg_worker_fail(w, what);
    if (resp->status < lo || resp->status > hi) {
        snprintf(w->err, sizeof w->err, "conn %u: %s: HTTP %d: %.200s", w->index, what,
                 resp->status, text->data);
        return -1;
    }
    return 0;
}

/* --direct: from now on the connection talks to the owner of the buffer it just made,
 * at the port its Gpuhttpd-Owner-Url names. */
static int go_direct(struct worker *w, const struct lg_response *resp)
{
    const char *colon = strrchr(resp->owner_url, ':');
    int port = colon ? atoi(colon + 1) : 0;
    if (strncmp(resp->owner_url, "http://", 7) != 0 || port <= 0 || port > 65535) {
        snprintf(w->err, sizeof w->err,
                 "conn %u: --direct: no usable Gpuhttpd-Owner-Url in the creation's answer "
                 "('%s'; the instances need --advertise-url)",
                 w->index, resp->owner_url);
        return -1;
    }
    w->direct_port = port;
    w->conn.must_close = true; /* the next request connects to the owner */
    return 0;
}

int lg_create_buffer(struct worker *w, uint64_t size, char *id, size_t id_cap)
{
    char body[64], reply[4096];
    int n = snprintf(body, sizeof body, "{\"size\":%" PRIu64 "}", size);
    struct lg_text text = {reply, sizeof reply, 0};
    struct lg_response resp;
    reply[0] = '\0';
    if (lg_worker_connect(w) != 0)
        return -1;
    if (lg_conn_send_request(&w->conn, "POST", "/v1/buffers", "application/json", NULL, body,
                             (size_t)n) != 0)
        return lg_worker_fail(w, "POST /v1/buffers");
    if (lg_expect_status(w, "POST /v1/buffers", 200, 201, &resp, &text) != 0)
        return -1;
    if (lg_parse_buffer_id(&resp, reply, id, id_cap) != 0) {
        snprintf(w->err, sizeof w->err, "conn %u: no buffer id in the reply: %.200s", w->index,
                 reply);
        return -1;
    }
    return w->shared->opt->direct && !w->direct_port ? go_direct(w, &resp) : 0;
}

int lg_delete_buffer(struct worker *w, const char *id)
{
    char path[192], reply[1024];
    struct lg_text text = {reply, sizeof reply, 0};
    struct lg_response resp;
    reply[0] = '\0';
    snprintf(path, sizeof path, "/v1/buffers/%s", id);
    if (lg_worker_connect(w) != 0)
        return -1;
    if (lg_conn_send_head(&w->conn, "DELETE", path, -1, NULL, NULL) != 0)
        return lg_worker_fail(w, "DELETE");
    return lg_expect_status(w, "DELETE", 200, 204, &resp, &text);
}

/* A small PUT goes out in one send(), head and body together. */
static int put_small(struct worker *w, const char *path, struct lg_stream *stream, uint64_t length)
{
    unsigned char body[LG_SMALL_BODY_MAX];
    char reply[1024];
    struct lg_text text = {reply, sizeof reply, 0};
    struct lg_response resp;
    size_t got = 0, n;
    const unsigned char *piece;
    reply[0] = '\0';
    while ((piece = lg_stream_next(stream, sizeof body - got, &n)) != NULL) {
        memcpy(body + got, piece, n);
        got += n;
    }
    if (lg_conn_send_request(&w->conn, "PUT", path, "application/octet-stream", NULL, body,
                             (size_t)length) != 0)
        return lg_worker_fail(w, "PUT");
    return lg_expect_status(w, "PUT", 200, 299, &resp, &text);
}

/* PUTs length bytes of this connection's stream to path. */
int lg_put_stream(struct worker *w, const char *path, uint64_t length)
{
    const struct options *opt = w->shared->opt;
    char reply[4096];
    struct lg_text text = {reply, sizeof reply, 0};
    struct lg_response resp;
    struct lg_stream stream;
    reply[0] = '\0';
    if (lg_worker_connect(w) != 0)
        return -1;
    lg_stream_init(&stream, &w->shared->pattern, w->index, length);
    if (length <= LG_SMALL_BODY_MAX)
        return put_small(w, path, &stream, length);
    if (lg_conn_send_head(&w->conn, "PUT", path, (int64_t)length, "application/octet-stream",
                          NULL) != 0)
        return lg_worker_fail(w, "PUT head");
    size_t n;
    const unsigned char *piece;
    while ((piece = lg_stream_next(&stream, opt->send_chunk, &n)) != NULL) {
        if (lg_conn_send_all(&w->conn, piece, n) != 0) {
            /* The server may have answered early (an error) and closed; show its reply. */
            if (lg_expect_status(w, "PUT (body cut short)", 200, 299, &resp, &text) == 0)
                snprintf(w->err, sizeof w->err, "conn %u: PUT: send failed: %s", w->index,
                         w->conn.err);
            w->conn.must_close = true;
            return -1;
        }
    }
    return lg_expect_status(w, "PUT", 200, 299, &resp, &text);
}

static int verify_sink(void *ctx, const unsigned char *data, size_t len)
{
    lg_verify_feed(ctx, data, len);
    return 0;
}

/* GETs path, expecting length bytes; checks them against this connection's stream when
 * check is true, and records the result in w. */
int lg_get_stream(struct worker *w, const char *path, uint64_t length, bool check)
{
    const struct options *opt = w->shared->opt;
    struct lg_response resp;
    struct lg_verify verify;
    if (lg_worker_connect(w) != 0)
        return -1;
    if (lg_conn_send_head(&w->conn, "GET", path, -1, NULL, NULL) != 0)
        return lg_worker_fail(w, "GET");
    if (lg_conn_read_head(&w->conn, &resp) != 0)
        return lg_worker_fail(w, "GET");
    if (resp.status != 200) {
        char reply[1024];
        struct lg_text text = {reply, sizeof reply, 0};
        reply[0] = '\0';
        lg_conn_read_body(&w->conn, &resp, false, lg_text_sink, &text);
        snprintf(w->err, sizeof w->err, "conn %u: GET %s: HTTP %d: %.200s", w->index, path,
                 resp.status, reply);
        return -1;
    }
    lg_verify_init(&verify, &w->shared->pattern, w->index, length, check && opt->compare,
                   check && opt->hash);
    if (lg_conn_read_body(&w->conn, &resp, false, verify_sink, &verify) != 0)
        return lg_worker_fail(w, "GET body");
    if (verify.seen != length) {
        snprintf(w->err, sizeof w->err, "conn %u: GET returned %" PRIu64 " bytes, not %" PRIu64,
                 w->index, verify.seen, length);
        return -1;
    }
    if (!check)
        return 0;
    w->checksum_got = opt->hash ? lg_hash_final(&verify.hash) : 0;
    w->bytes_ok = lg_verify_complete(&verify, length) && w->checksum_got == w->checksum_want;
    if (!w->bytes_ok) {
        if (verify.bad)
            snprintf(w->err, sizeof w->err, "conn %u: wrong bytes from offset %" PRIu64, w->index,
                     verify.first_bad);
        else
            snprintf(w->err, sizeof w->err,
                     "conn %u: checksum 0x%016" PRIx64 ", expected 0x%016" PRIx64, w->index,
                     w->checksum_got, w->checksum_want);
    }
    return 0;
}

/* Runs fn unless this worker already failed, then waits for the others. */
void lg_step(struct worker *w, int (*fn)(struct worker *))
{
    if (!w->failed && fn(w) != 0)
        w->failed = true;
    pthread_barrier_wait(&w->shared->barrier);
}

/* Like step, and then one thread runs hook while the others wait for it. */
void lg_step_then(struct worker *w, int (*fn)(struct worker *), void (*hook)(struct shared *))
{
    if (!w->failed && fn(w) != 0)
        w->failed = true;
    if (pthread_barrier_wait(&w->shared->barrier) == PTHREAD_BARRIER_SERIAL_THREAD)
        hook(w->shared);
    pthread_barrier_wait(&w->shared->barrier);
}

const struct worker *lg_first_failure(const struct worker *workers, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (workers[i].failed || (workers[i].err[0] && !workers[i].bytes_ok))
            return &workers[i];
    return NULL;
}
