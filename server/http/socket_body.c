/* The socket upload path: a large upload body's rest received by us on the
 * connection's socket, past libmicrohttpd, and the replies that must then
 * go out on the socket too (also a refusal in the middle of a body). */
#include "socket_body.h"

#include <errno.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "body.h"
#include "conn_guard.h"
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
    unsigned s = hr->req.svc->cfg.connection_timeout_s;
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
           socket_body_allowed(hr, req->svc->cfg.socket_upload_min,
                               req->content_length - req->bytes_in);
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
    size_t recv_max = req->svc->cfg.socket_recv_max;
    int rc = 0;
    while (left && rc == 0) {
        char *space;
        size_t room;
        rc = ops->reserve(req, &hr->rep, &space, &room);
        if (rc)
            break;
        if (recv_max && room > recv_max)
            room = recv_max;
        ssize_t n = ghd_socket_recv(fd, space, room < left ? room : (size_t)left, timeout_ms);
        if (n <= 0) {
            ghd_log(GHD_LOG_INFO, "request %s: body cut off after %llu of %llu bytes (%s)",
                    req->request_id, (unsigned long long)req->bytes_in,
                    (unsigned long long)req->content_length,
                    n == 0 ? "closed by the client" : strerror(errno));
            return MHD_NO; /* as for a client gone mid-body: cleanup drops the upload */
        }
        req->bytes_in += (uint64_t)n;
        left -= (uint64_t)n;
        rc = ops->commit(req, &hr->rep, (size_t)n);
    }
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
