#ifndef GHD_HTTP_OWNER_ROUTE_H
#define GHD_HTTP_OWNER_ROUTE_H

#include "request.h"
#include "router.h"

/* Who owns what a request names, before its body and handler. Sets
 * req->owner_url (the Gpuhttpd-Owner-Url of the answer): for an id in the
 * path, a listing cursor or ?near=, the URL of the instance its prefix names, where
 * that is known (core/cluster.h); for the other /v1 routes this instance's
 * own (what it creates or lists is its). Then refuses an id of an earlier
 * start of this instance (410) or of another instance (421 naming it); with
 * "Prefer: redirect" and the owner's URL known, the latter is a 307 to the
 * same path and query at the owner instead.
 * Returns 0 to go on; a negative code, or 1 after the redirect, when the
 * reply is written. */
int ghd_owner_route(struct ghd_request *req, struct ghd_reply *rep,
                    const struct ghd_route *route);

#endif
