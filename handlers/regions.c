/* /v1/regions: memory a same-host client shares with the server (a POSIX
 * shared-memory segment, or CUDA IPC device memory), registered once and
 * then named in transfers (transfers.c). Off unless --allow-shm (403). A
 * region belongs to its tenant: another tenant gets 404 as if it did not
 * exist. The rules (whether regions are on, the body, names, sizes,
 * limits, unregistering) are the core's (core/service_regions.h). */
#include "handlers.h"

#include "base/error.h"
#include "core/regions/service_regions.h"

int ghd_handle_region_create(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    struct ghd_region *r;
    int rc = ghd_service_region_create(req->svc, &req->caller, req->json, &r, &err);
    if (rc) {
        if (rc == GHD_ELIMIT)
            ghd_reply_header(rep, "Retry-After", "1");
        return ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc));
    }
    ghd_reply_header(rep, "Location", "/v1/regions/%s", r->id);
    rc = ghd_reply_json(rep, 201, ghd_service_region_json_new(req->svc, r));
    ghd_service_region_release(req->svc, r);
    return rc;
}

/* GET /v1/regions: whether a same-host client can use regions here, the
 * host to compare with its own, and what the tenant holds. */
int ghd_handle_region_summary(struct ghd_request *req, struct ghd_reply *rep)
{
    return ghd_reply_json(rep, 200, ghd_service_region_summary_new(req->svc, &req->caller));
}

int ghd_handle_region_get(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    struct ghd_region *r;
    int rc = ghd_service_region_find(req->svc, &req->caller, req->params[0], &r, &err);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc));
    rc = ghd_reply_json(rep, 200, ghd_service_region_json_new(req->svc, r));
    ghd_service_region_release(req->svc, r);
    return rc;
}

int ghd_handle_region_delete(struct ghd_request *req, struct ghd_reply *rep)
{
    /* Returns once no transfer touches the memory: the client may then
     * unlink or reuse its segment. */
    struct ghd_err err = {0};
    int rc = ghd_service_region_remove(req->svc, &req->caller, req->params[0], &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc))
              : ghd_reply_empty(rep, 204);
}
