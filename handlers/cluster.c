#include "handlers.h"

#include "core/service_cluster.h"

/* The instances as this one sees them: its own and its peers' URLs and
 * states (core/cluster.h). */
int ghd_handle_cluster(struct ghd_request *req, struct ghd_reply *rep)
{
    json_t *body;
    struct ghd_err err = {0};
    int rc = ghd_service_cluster_json(req->svc, &req->caller, &body, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : ghd_reply_json(rep, 200, body);
}
