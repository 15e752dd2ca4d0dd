/* The probe listener: the daemon of http.c in its probe-only mode (no TLS,
 * the routes flagged `probe` only) on a socket of its own. */
#include "probe.h"

#include "http_request.h"
#include "listen.h"

int ghd_probe_listen(const char *bind_ipv4, unsigned port, int *fd, unsigned *bound,
                     struct ghd_err *err)
{
    int rc = ghd_listen_open(bind_ipv4, port, fd, bound, err);
    if (rc)
        ghd_err_prefix(err, rc, "--probe-port %u", port);
    return rc;
}

int ghd_probe_start_on(struct ghd_service *svc, const struct ghd_routes *routes, int listen_fd,
                       unsigned port, struct ghd_http **out, struct ghd_err *err)
{
    int rc = ghd_http_serve(svc, routes, listen_fd, port, 1, out, err);
    if (rc)
        ghd_err_prefix(err, rc, "--probe-port");
    return rc;
}
