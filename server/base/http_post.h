#ifndef GHD_BASE_HTTP_POST_H
#define GHD_BASE_HTTP_POST_H

#include <stddef.h>

#include "err.h"

/* A minimal HTTP/1.1 client for the trace exporter: plain http:// only, one
 * POST per connection (Connection: close), bounded waits. libcurl is not a
 * server dependency, and this is all the exporter needs. */

struct ghd_http_url {
    char host[256];
    char port[8];
    char path[512];
};

/* Parses "http://host[:port][/path]" (host a name, an IPv4 address or
 * [IPv6]); the path is "/" when absent. 0, or GHD_EINVAL with `err` saying
 * why (https:// is refused: no TLS here). */
int ghd_http_url_parse(const char *url, struct ghd_http_url *out, struct ghd_err *err);
/* POSTs `body` as `content_type` to `url`, waiting at most `timeout_ms` for
 * each of connect, send and the reply's status line. 0 on a 2xx reply;
 * GHD_EUNAVAIL on anything else, with `err` saying what. */
int ghd_http_post(const struct ghd_http_url *url, const char *content_type, const char *body,
                  size_t len, unsigned timeout_ms, struct ghd_err *err);

#endif
