#ifndef GHD_HTTP_ACCESS_H
#define GHD_HTTP_ACCESS_H

#include "core/tenancy/auth.h"
#include "router.h"

/* 0 when the request may go on to `route` (the path's route, any method, or
 * NULL for an unknown path); req->caller is who asks: its tenant points at
 * `tenant` when a tenant's token admitted it, its perms hold the token's
 * and GHD_PERM_FIGURES for one that may read the figures of every tenant's
 * work (always without tokens; with them, --metrics-public or the
 * --metrics-token). Else `rep` holds the 401 (with its
 * WWW-Authenticate) and GHD_EUNAUTH is returned. */
int ghd_http_authorize(struct ghd_request *req, struct ghd_reply *rep,
                       const struct ghd_route *route, char tenant[GHD_TENANT_MAX + 1]);

#endif
