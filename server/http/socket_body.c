/* The socket upload path: a large upload body's rest received by us on the
 * connection's socket, past libmicrohttpd, and the replies that must then
 * go out on the socket too (also a refusal in the middle of a body). */
#define _GNU_SOURCE /* sched_getaffinity */
#include "socket_body.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "base/stream_copy.h"
#include "body.h"
#include "conn_guard.h"
#include "core/metrics/metrics.h"
#include "core/service.h"
#include "socket_io.h"

/* Upload bodies of at least --socket-upload-min bytes skip libmicrohttpd:
 * their rest is received by us on the connection's socket, straight into
 * pinned chunks (no pass through libmicrohttpd's buffers, one chunk's device
 * copy overlapping the network on the other). The reply then closes the
 * connection, since libmicrohttpd never saw the body. Plain HTTP only: TLS
 * records need GnuTLS. */
static int socket_body_allowed(const struct ghd_http_request *hr, size_t min, uint64_t bytes)
{
    return min && bytes >= min && !ghd_tls_on(&hr->http->tls);
}

static int socket_timeout_ms(const struct ghd_http_request *hr)
{
    unsigned s = ghd_service_config(hr->req.svc)->connection_timeout_s;
    return s ? (int)s * 1000 : -1;
}

/* Writes the reply, whose body is in memory (an upload's answer or a
 * problem), on the socket; `early` before the body's end. The request counts
 * as sent only when all of it went out. */
static void reply_on_socket(struct ghd_http_request *hr, int fd, int early)
{
    struct ghd_reply *rep = &hr->rep;
    int timeout_ms = socket_timeout_ms(hr);
    hr->state = early ? GHD_HS_REPLIED_EARLY : GHD_HS_REPLIED;
    ghd_guard_send(hr->http->guard, hr->guard); /* the reply goes out */
    const char *reason = MHD_get_reason_phrase_for((unsigned)rep->status);
    if (ghd_socket_send_head(fd, rep, reason, &hr->req, rep->body_len, timeout_ms) != 0)
        return;
    if (rep->body_len && ghd_socket_send(fd, rep->body, rep->body_len, timeout_ms) != 0)
        return;
    hr->bytes_out += rep->body_len;
    hr->state = early ? GHD_HS_SOCKET_SENT_EARLY : GHD_HS_SOCKET_SENT;
}

int ghd_socket_upload_wanted(const struct ghd_http_request *hr)
{
    const struct ghd_request *req = &hr->req;
    return hr->state == GHD_HS_BODY_UPLOAD && req->has_content_length && hr->upload->reserve &&
           socket_body_allowed(hr, ghd_service_config(req->svc)->socket_upload_min,
                               req->content_length - req->bytes_in);
}

unsigned ghd_socket_bounce_uploads_max(const struct ghd_config *cfg)
{
    if (cfg->socket_bounce_uploads)
        return cfg->socket_bounce_uploads;
    cpu_set_t set;
    unsigned cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? (unsigned)CPU_COUNT(&set) : 2;
    return cpus >= 2 ? cpus / 2 : 1;
}

/* With --socket-bounce, the small buffer an upload's recv()s go into: it
 * stays in the CPU's caches, and streaming stores copy each piece into the
 * chunk. Received straight into the chunks, the device's reads of a chunk
 * the kernel's copy had just written cost the next writes into it their
 * cache hits (tcp_ceiling's copy+DMA pair read 0.6-0.8 of plain TCP at 8
 * connections on the H200 machine, 0.94-1.08 through 256 KiB and streaming
 * stores; tests/bench/RESULTS.md, run 40). Off by default: in the server it
 * reads 1.01-1.07x at 8 connections (runs 42-45), and its streaming copy's
 * CPU (about 0.07 s/GB) is missed at 16 connections on 16 cores unless
 * --socket-bounce-uploads turns it off there. NULL when off, or (logged)
 * without memory; *bounce_max is the most one recv() into it asks for. */
static char *bounce_buffer(const struct ghd_request *req, size_t *bounce_max)
{
    const struct ghd_config *cfg = ghd_service_config(req->svc);
    size_t size = cfg->socket_bounce, max = cfg->socket_recv_max;
    char *bounce = size ? malloc(size) : NULL;
    *bounce_max = max && max < size ? max : size;
    if (size && !bounce)
        ghd_log(GHD_LOG_WARN, "request %s: no memory for a %zu-byte receive buffer; receiving "
                "straight into the chunks", req->request_id, size);
    return bounce;
}

/* Whether the next piece goes through the bounce buffer: only while no more
 * socket uploads are receiving than --socket-bounce-uploads. Past that the
 * cores are busy with the kernel's copies, and the streaming copy's CPU
 * costs more than its cache hits give back (runs 41-45). */
static int bounce_now(const struct ghd_http *http, const char *bounce)
{
    return bounce && atomic_load(&http->socket_uploads) <= http->bounce_uploads_max;
}

/* recv() of up to n bytes into space, through bounce when it is not NULL. */
static ssize_t recv_into_chunk(int fd, char *bounce, char *space, size_t n, int timeout_ms)
{
    if (!bounce)
        return ghd_socket_recv(fd, space, n, timeout_ms);
    ssize_t got = ghd_socket_recv(fd, bounce, n, timeout_ms);
    if (got > 0)
        ghd_stream_copy(space, bounce, (size_t)got);
    return got;
}

/* Receives the rest of a large upload into the upload's pinned chunks, runs
 * the handler and writes its reply on the socket. */
enum MHD_Result ghd_socket_finish_upload(struct MHD_Connection *conn,
                                         struct ghd_http_request *hr)
{
    struct ghd_request *req = &hr->req;
    int fd = ghd_http_connection_fd(conn);
    if (fd < 0)
        return MHD_YES; /* the body keeps coming through libmicrohttpd */
    int timeout_ms = socket_timeout_ms(hr);
    const struct ghd_upload_ops *ops = hr->upload;
    uint64_t left = req->content_length - req->bytes_in;
    /* 0: no bound */
    size_t bounce_max, straight_max = ghd_service_config(req->svc)->socket_recv_max;
    char *bounce = bounce_buffer(req, &bounce_max);
    atomic_fetch_add(&hr->http->socket_uploads, 1);
    int rc = 0, cut_off = 0;
    while (left && rc == 0) {
        char *space;
        size_t room;
        rc = ops->reserve(req, &hr->rep, &space, &room);
        if (rc)
            break;
        char *through = bounce_now(hr->http, bounce) ? bounce : NULL;
        size_t max = through ? bounce_max : straight_max;
        if (max && room > max)
            room = max;
        ssize_t n = recv_into_chunk(fd, through, space, room < left ? room : (size_t)left,
                                    timeout_ms);
        if (n <= 0) {
            ghd_log(GHD_LOG_INFO, "request %s: body cut off after %llu of %llu bytes (%s)",
                    req->request_id, (unsigned long long)req->bytes_in,
                    (unsigned long long)req->content_length,
                    n == 0 ? "closed by the client" : strerror(errno));
            cut_off = 1;
            break;
        }
        ghd_metrics_socket_upload(ghd_service_metrics(req->svc), through != NULL, (uint64_t)n);
        req->bytes_in += (uint64_t)n;
        left -= (uint64_t)n;
        rc = ops->commit(req, &hr->rep, (size_t)n);
    }
    atomic_fetch_sub(&hr->http->socket_uploads, 1);
    free(bounce);
    if (cut_off)
        return MHD_NO; /* as for a client gone mid-body: cleanup drops the upload */
    if (rc == 0) { /* else rep holds the problem */
        ghd_guard_handling(hr->http->guard, hr->guard);
        ghd_http_run_handler(hr);
    }
    ghd_body_end_upload(hr);
    reply_on_socket(hr, fd, left != 0);
    return MHD_NO; /* libmicrohttpd closes the connection; on_completed logs the reply */
}

/* A body refused while it arrives (past --max-json-body or the upload's
 * length, mostly chunked ones whose size nobody declared): libmicrohttpd
 * cannot queue a response before the body's end, and reading a body with no
 * end to the end holds its staging chunk and writer flag for as long as the
 * client likes. So the problem is written on the socket now (plain HTTP)
 * and the connection closed; on TLS it is only closed. */
enum MHD_Result ghd_socket_refuse_mid_body(struct MHD_Connection *conn,
                                           struct ghd_http_request *hr)
{
    ghd_body_end_upload(hr);
    int fd = ghd_http_connection_fd(conn);
    if (!ghd_tls_on(&hr->http->tls) && fd >= 0 && hr->rep.status)
        reply_on_socket(hr, fd, 1);
    else
        hr->state = GHD_HS_REPLIED_EARLY; /* no reply: on_completed drains and closes */
    return MHD_NO;
}
