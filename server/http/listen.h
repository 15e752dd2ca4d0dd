#ifndef GHD_HTTP_LISTEN_H
#define GHD_HTTP_LISTEN_H

#include <stddef.h>

#include "base/err.h"

/* The listening socket. main() opens it before the backend is set up, so a
 * taken port stops the start at once with one line, and ghd_http_start_on
 * serves on it. SO_REUSEADDR only (a restart need not wait out TIME_WAIT);
 * never SO_REUSEPORT, with which a second gpuhttpd on the same port would
 * start anyway and take part of the traffic. */

/* Binds bind_ipv4:port (port 0 picks one) and listens. On success *fd is the
 * socket (the caller owns it; ghd_http_start_on takes it over) and *bound the
 * port. Returns 0, GHD_EINVAL (not an IPv4 address) or GHD_EUNAVAIL (bind
 * or listen failed; err says why in one line). */
int ghd_listen_open(const char *bind_ipv4, unsigned port, int *fd, unsigned *bound,
                    struct ghd_err *err);

#endif
