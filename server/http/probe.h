#ifndef GHD_HTTP_PROBE_H
#define GHD_HTTP_PROBE_H

#include "base/err.h"
#include "core/service.h"

/* The probe listener (--probe-port): a second libmicrohttpd daemon on
 * --bind, always plain HTTP, serving only the routes flagged `probe`
 * (router.h: the health, readiness and metrics routes) with the access they
 * have on the main port, and the same access lines and request metrics;
 * every other path is a 404. Health checks and kubelet probes that speak
 * plain HTTP reach it while the main port speaks TLS, and the main port's
 * connection limits never starve them. main() stops it after the main
 * daemon's drain, so that /readyz answers 503 while that runs. */

struct ghd_http;
struct ghd_routes;

/* Binds bind_ipv4:port (port 0 picks one) as ghd_listen_open does; err
 * names --probe-port. */
int ghd_probe_listen(const char *bind_ipv4, unsigned port, int *fd, unsigned *bound,
                     struct ghd_err *err);
/* Serves the probe routes of `routes` (kept, not copied) on listen_fd, bound
 * to `port`, and owns the socket from then on; if it fails, the caller still
 * does. Stop it with ghd_http_stop. */
int ghd_probe_start_on(struct ghd_service *svc, const struct ghd_routes *routes, int listen_fd,
                       unsigned port, struct ghd_http **out, struct ghd_err *err);

#endif
