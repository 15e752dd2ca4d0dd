#ifndef GHD_HTTP_HTTP_REQUEST_H
#define GHD_HTTP_HTTP_REQUEST_H

/* The HTTP layer's own state, shared by its files (http.c: the daemon and
 * its callbacks; head.c, access.c, body.c, socket_body.c, tls.c): the
 * server and one request as libmicrohttpd carries it. Nothing outside
 * server/http/ includes this. */

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "core/auth.h"
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
};

enum body_state {
    BODY_NONE,    /* no body expected, or it is being ignored */
    BODY_JSON,    /* accumulating a JSON body */
    BODY_UPLOAD,  /* streaming to the route's upload ops */
    BODY_DISCARD, /* a reply is decided; the rest of the body is dropped */
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
    enum body_state body;
    int decided;        /* rep holds the final reply (usually an error) */
    int upload_started; /* upload->begin succeeded; cleanup is owed */
    int queued;         /* a response has been handed to MHD */
    int answered_on_socket; /* the body was read and the reply written by us */
    int body_done;          /* every byte of the request body has been read */
    char *json_buf;
    size_t json_len;
    struct timespec started;
    uint64_t bytes_out;
    char tenant[GHD_TENANT_MAX + 1]; /* req->tenant points here once authenticated */
};


/* Runs the route's handler: rep then holds its reply, or the problem for a
 * code it returned without one. */
void ghd_http_run_handler(struct ghd_http_request *hr);
/* The connection's socket, or -1. */
int ghd_http_connection_fd(struct MHD_Connection *conn);

#endif
