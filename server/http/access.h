#ifndef GHD_HTTP_ACCESS_H
#define GHD_HTTP_ACCESS_H

#include "core/auth.h"
#include "router.h"

/* 0 when the request may go on to `route` (the path's route, any method, or
 * NULL for an unknown path); req->tenant then points at `tenant` when a
 * tenant's token admitted it. Else `rep` holds the 401 (with its
 * WWW-Authenticate) and GHD_EUNAUTH is returned. */
int ghd_http_authorize(struct ghd_request *req, struct ghd_reply *rep,
                       const struct ghd_route *route, char tenant[GHD_TENANT_MAX + 1]);

/* Whether the request may read the figures that tell of every tenant's
 * work (/metrics, /readyz's pool and staging): always without tokens; with
 * tokens configured, with --metrics-public, or when it carries
 * --metrics-token. No tenant's token is enough: those figures sum the
 * others' buffers and runs. */
int ghd_http_figures_allowed(struct ghd_request *req);

#endif
