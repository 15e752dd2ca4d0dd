#ifndef GHD_HTTP_HTTP_REQUEST_H
#define GHD_HTTP_HTTP_REQUEST_H

/* The HTTP layer's own state, shared by its files (http.c: the daemon and
 * its callbacks; head.c, access.c, body.c, socket_body.c, tls.c,
 * request_log.c, probe.c): the server and one request as libmicrohttpd
 * carries it. Nothing outside server/http/ includes this. */

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "core/tenancy/auth.h"
#include "router.h"
#include "tls.h"

struct ghd_guard;
struct ghd_guard_conn;

struct ghd_http {
    struct MHD_Daemon *daemon;
    struct ghd_service *svc;
    const struct ghd_routes *routes;
    unsigned port;
    atomic_uint in_flight; /* requests between their headers and their completion */
    atomic_int draining;   /* quiesced: replies say Connection: close */
    struct ghd_tls tls; /* certificate and key, alive as long as the daemon */
    struct ghd_guard *guard; /* header deadline and minimum transfer rate */
    struct ghd_conn_limit *limit; /* connections per client address */
    int probe_only; /* the probe listener (probe.h): plain HTTP, probe routes only */
    atomic_uint socket_uploads; /* uploads receiving on their socket now (socket_body.c) */
    unsigned bounce_uploads_max; /* --socket-bounce-uploads, 0 resolved to half the CPUs */
};

/* Where a request stands: how its body is being read, then how it was
 * answered. Once answered it never goes back. */
enum ghd_http_state {
    GHD_HS_BODY_IGNORED, /* the head is accepted; a body, if any, is read and dropped */
    GHD_HS_BODY_JSON,    /* gathering a JSON body */
    GHD_HS_BODY_UPLOAD,  /* streaming the body to the upload ops: their cleanup is owed */
    GHD_HS_REPLIED,      /* a response is queued (or going out on the socket) after
                            the whole body */
    GHD_HS_REPLIED_EARLY, /* answered, or to be closed unanswered, before the body's end:
                             the rest is dropped and the connection closes */
    GHD_HS_SOCKET_SENT,   /* the whole reply was written on the socket by us */
    GHD_HS_SOCKET_SENT_EARLY, /* the same, before the body's end (rest dropped) */
};

/* Per-request state, hung off MHD's req_cls. A streamed response holds a
 * second reference, since MHD may destroy it after on_completed. */
struct ghd_http_request {
    atomic_int refs;
    struct ghd_http *http;
    struct ghd_guard_conn *guard; /* NULL when the connection is not watched */
    struct ghd_request req;
    struct ghd_reply rep;
    const struct ghd_route *route;
    const struct ghd_upload_ops *upload; /* the route's, or its .npy ones */
    enum ghd_http_state state;
    char *json_buf;
    size_t json_len;
    double started_ms; /* ghd_clock_ms() when the head was complete */
    uint64_t bytes_out;
    char tenant[GHD_TENANT_MAX + 1]; /* req->caller.tenant points here once authenticated */
};


/* Whether the request has been answered (or is to close unanswered), and
 * whether that happened before its body's end. */
static inline int ghd_http_replied(const struct ghd_http_request *hr)
{
    return hr->state >= GHD_HS_REPLIED;
}

static inline int ghd_http_replied_early(const struct ghd_http_request *hr)
{
    return hr->state == GHD_HS_REPLIED_EARLY || hr->state == GHD_HS_SOCKET_SENT_EARLY;
}

/* ghd_http_start_on without labelling the metrics by `routes`; with
 * probe_only, in plain HTTP whatever cfg says of TLS, answering only the
 * routes flagged `probe` (probe.h). */
int ghd_http_serve(struct ghd_service *svc, const struct ghd_routes *routes, int listen_fd,
                   unsigned port, int probe_only, struct ghd_http **out, struct ghd_err *err);
/* http_request.c, below http.c and socket_body.c, which both call these.
 * Runs the route's handler, or the upload's finish when the body went to
 * upload ops: rep then holds its reply, or the problem for a code it
 * returned without one. */
void ghd_http_run_handler(struct ghd_http_request *hr);
/* The connection's socket, or -1. */
int ghd_http_connection_fd(struct MHD_Connection *conn);

#endif
