#include "handlers.h"

#include "base/error.h"
#include "core/service.h"

int ghd_handle_healthz(struct ghd_request *req, struct ghd_reply *rep)
{
    (void)req;
    return ghd_reply_json(rep, 200, json_pack("{s:s}", "status", "ok"));
}

/* Ready while the devices --ready-needs asks for are (any: one; all: every
 * one); the body lists each device's state and, for a caller that may read
 * them (core/caller.h, GHD_PERM_FIGURES), sums the pools and rings. */
int ghd_handle_readyz(struct ghd_request *req, struct ghd_reply *rep)
{
    json_t *body;
    struct ghd_err err = {0};
    int rc = ghd_service_ready_json(req->svc, &req->caller, &body, &err);
    if (rc == GHD_EUNAVAIL && !ghd_service_is_ready(req->svc))
        ghd_reply_header(rep, "Retry-After", "1");
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : ghd_reply_json(rep, 200, body);
}
