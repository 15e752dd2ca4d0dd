#ifndef GHD_HTTP_SOCKET_BODY_H
#define GHD_HTTP_SOCKET_BODY_H

#include "http_request.h"

/* Whether the rest of this upload's body is to be received on the socket
 * (--socket-upload-min, plain HTTP, an upload with reserve/commit). */
int ghd_socket_upload_wanted(const struct ghd_http_request *hr);
/* Receives the rest of the upload into its pinned chunks, runs the handler
 * and writes the reply on the socket; libmicrohttpd then closes. */
enum MHD_Result ghd_socket_finish_upload(struct MHD_Connection *conn,
                                         struct ghd_http_request *hr);
/* The most socket uploads receiving at once whose pieces go through the
 * --socket-bounce buffer: --socket-bounce-uploads, or when that is 0 half the
 * CPUs this process may run on (at least 1). */
unsigned ghd_socket_bounce_uploads_max(const struct ghd_config *cfg);
/* A body refused while it arrives: its problem written on the socket (plain
 * HTTP) or none (TLS), and the connection closed. */
enum MHD_Result ghd_socket_refuse_mid_body(struct MHD_Connection *conn,
                                           struct ghd_http_request *hr);

#endif
