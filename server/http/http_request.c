/* What the daemon's callbacks (http.c) and the socket upload path
 * (socket_body.c) both do to one request: run its handler, and find its
 * connection's socket. */
#include "http_request.h"

#include "trace_http.h"

void ghd_http_run_handler(struct ghd_http_request *hr)
{
    int upload = hr->state == GHD_HS_BODY_UPLOAD;
    if (hr->req.trace && hr->req.has_body)
        ghd_http_trace_phase(&hr->req, GHD_SPAN_BODY, upload ? "staging" : "body");
    /* An upload whose begin succeeded is answered by its own finish. */
    int rc = upload ? hr->upload->finish(&hr->req, &hr->rep)
                    : hr->route->handle(&hr->req, &hr->rep);
    if (hr->req.trace)
        ghd_http_trace_phase(&hr->req, GHD_SPAN_HANDLE, "handle");
    if (rc && !hr->rep.status)
        ghd_reply_problem(&hr->rep, &hr->req, rc, NULL);
}

int ghd_http_connection_fd(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}
