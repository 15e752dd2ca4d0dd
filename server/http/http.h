#ifndef GHD_HTTP_HTTP_H
#define GHD_HTTP_HTTP_H

#include <stdint.h>

#include "base/err.h"
#include "core/service.h"

/* The HTTP server (http.c and its helpers in server/http/: the only files
 * that include microhttpd.h; nothing above sees it). One thread per
 * connection, so a transfer may block on its own copies without stalling
 * other clients; bodies are streamed piece by piece to the route's upload
 * operations, and downloads are pulled from the handler's reader. */

struct ghd_http;
struct ghd_routes;

/* Binds cfg.bind:cfg.port (port 0 picks one, listen.h) and starts serving
 * the routes of `routes` (router.h; kept, not copied). 0, or a GHD_E* code
 * with `err` saying why in one line. */
int ghd_http_start(struct ghd_service *svc, const struct ghd_routes *routes,
                   struct ghd_http **out, struct ghd_err *err);
/* Starts serving on a socket from ghd_listen_open, bound to `port`. It owns
 * the socket from then on; if it fails, the caller still does. */
int ghd_http_start_on(struct ghd_service *svc, const struct ghd_routes *routes, int listen_fd,
                      unsigned port, struct ghd_http **out, struct ghd_err *err);
/* The bound port. */
unsigned ghd_http_port(const struct ghd_http *http);
/* Stops accepting new connections; requests in flight go on. */
void ghd_http_quiesce(struct ghd_http *http);
/* Connections open now. */
unsigned ghd_http_connections(const struct ghd_http *http);
/* Requests whose headers have arrived and which have not completed yet
 * (uploads, downloads, runs waited on); idle keep-alive connections are not
 * counted. After ghd_http_quiesce every reply carries Connection: close. */
unsigned ghd_http_requests_in_flight(const struct ghd_http *http);
/* Connections the slowloris guard dropped: slow request heads, and bodies or
 * responses below --min-transfer-rate. */
void ghd_http_guard_stats(struct ghd_http *http, uint64_t *header_timeouts,
                          uint64_t *slow_transfers);
/* Closes every connection and frees the server. */
void ghd_http_stop(struct ghd_http *http);

#endif
