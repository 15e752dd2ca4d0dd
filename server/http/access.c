/* Who may call what: the route's access (router.h) against the request's
 * bearer token (core/auth.h). */
#include "access.h"

#include "base/error.h"
#include "core/service.h"

static int deny(struct ghd_request *req, struct ghd_reply *rep, const char *authorization)
{
    /* RFC 6750 section 3: error="invalid_token" only when a token was sent. */
    ghd_reply_header(rep, "WWW-Authenticate", "%s",
                     authorization ? "Bearer realm=\"gpuhttpd\", error=\"invalid_token\""
                                   : "Bearer realm=\"gpuhttpd\"");
    return ghd_reply_problem(rep, req, GHD_EUNAUTH, "%s",
                             authorization ? "the bearer token is not valid here"
                                           : "this resource needs 'Authorization: Bearer <token>'");
}

/* Whether the request may read the figures that tell of every tenant's
 * work (/metrics, the pools' use in /readyz and GET /v1/devices): always
 * without tokens; with tokens configured, with --metrics-public, or when it
 * carries --metrics-token. No tenant's token is enough: those figures sum
 * the others' buffers and runs. */
static int figures_allowed(struct ghd_request *req)
{
    struct ghd_auth *auth = ghd_service_auth(req->svc);
    const char *authorization = ghd_request_header(req, "Authorization");
    if (ghd_auth_metrics_guarded(auth))
        return ghd_auth_check_metrics(auth, authorization) == 0;
    return !ghd_auth_enabled(auth) || ghd_service_config(req->svc)->metrics_public;
}

/* Default deny: with tokens configured every route but the public ones, and
 * an unknown path, needs a tenant's token; the metrics route needs
 * --metrics-token when that is set, and with tokens configured is closed
 * without it unless --metrics-public opens it. `route` is the path's route
 * (any method), or NULL. The token itself is never logged. */
int ghd_http_authorize(struct ghd_request *req, struct ghd_reply *rep,
                       const struct ghd_route *route, char tenant[GHD_TENANT_MAX + 1])
{
    struct ghd_auth *auth = ghd_service_auth(req->svc);
    enum ghd_route_access access = route ? route->access : GHD_ACCESS_TENANT;
    req->caller = (struct ghd_caller){NULL, figures_allowed(req) ? GHD_PERM_FIGURES : 0};
    if (access == GHD_ACCESS_PUBLIC)
        return 0;
    const char *authorization = ghd_request_header(req, "Authorization");
    if (access == GHD_ACCESS_METRICS) {
        if (req->caller.perms & GHD_PERM_FIGURES)
            return 0;
        if (ghd_auth_metrics_guarded(auth))
            return deny(req, rep, authorization);
        ghd_reply_header(rep, "WWW-Authenticate", "Bearer realm=\"gpuhttpd\"");
        return ghd_reply_problem(rep, req, GHD_EUNAUTH,
                                 "/metrics is closed while tenant tokens are configured: its "
                                 "figures tell of every tenant's work (start the server with "
                                 "--metrics-token, or --metrics-public to open it)");
    }
    if (!ghd_auth_enabled(auth))
        return 0;
    unsigned perms = 0;
    if (ghd_auth_check(auth, authorization, tenant, &perms) != 0)
        return deny(req, rep, authorization);
    req->caller.tenant = tenant;
    req->caller.perms |= perms;
    return 0;
}
