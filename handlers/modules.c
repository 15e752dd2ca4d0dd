/* /v1/modules: raw CUDA modules (kernels/raw/) for trusted tenants. Off
 * unless --allow-raw-kernels; with tokens, the token needs the "raw"
 * permission (403 naming what is missing). A module belongs to its tenant:
 * another tenant gets 404 as if it did not exist. Only the CUDA backend
 * runs them (501 on the host backend). The rules, the permission first,
 * are the core's (core/service_modules.h); these handlers call it and
 * reply. */
#include "handlers.h"

#include "base/error.h"
#include "core/service_modules.h"

int ghd_handle_module_create(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    json_t *desc;
    int created;
    int rc = ghd_service_module_create(req->svc, &req->caller, req->json, &desc, &created, &err);
    if (rc) {
        if (rc == GHD_ELIMIT) /* the tenant's limit, or the compile queue */
            ghd_reply_header(rep, "Retry-After", "1");
        return ghd_reply_problem(rep, req, rc, "%s", err.detail);
    }
    const char *id = json_string_value(json_object_get(desc, "id")); /* NULL: out of memory */
    if (id)
        ghd_reply_header(rep, "Location", "/v1/modules/%s", id);
    return ghd_reply_json(rep, created ? 201 : 200, desc);
}

int ghd_handle_module_list(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    json_t *list;
    int rc = ghd_service_module_list(req->svc, &req->caller, &list, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail)
              : ghd_reply_json(rep, 200, json_pack("{s:o}", "modules", list));
}

int ghd_handle_module_get(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    json_t *desc;
    int rc = ghd_service_module_get(req->svc, &req->caller, req->params[0], &desc, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail)
              : ghd_reply_json(rep, 200, desc);
}

int ghd_handle_module_delete(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    int rc = ghd_service_module_delete(req->svc, &req->caller, req->params[0], &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : ghd_reply_empty(rep, 204);
}
