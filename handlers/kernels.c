/* /v1/kernels: the built-in kernels and the tenant's own user kernels
 * (kernels/user/). A user kernel is visible to its tenant only: another
 * tenant gets 404 as if it did not exist. The rules are the core's
 * (core/service_kernels.h); these handlers call it and reply. */
#include "handlers.h"

#include "base/error.h"
#include "core/service_kernels.h"

int ghd_handle_kernel_list(struct ghd_request *req, struct ghd_reply *rep)
{
    json_t *list = ghd_service_kernel_list_new(req->svc, &req->caller);
    return ghd_reply_json(rep, 200, json_pack("{s:o}", "kernels", list));
}

int ghd_handle_kernel_get(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    json_t *desc;
    int rc = ghd_service_kernel_get(req->svc, &req->caller, req->params[0], &desc, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail)
              : ghd_reply_json(rep, 200, desc);
}

int ghd_handle_kernel_create(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    json_t *desc;
    int rc = ghd_service_kernel_create(req->svc, &req->caller, req->json, &desc, &err);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "%s", err.detail);
    const char *name = json_string_value(json_object_get(desc, "name")); /* NULL: out of memory */
    if (name)
        ghd_reply_header(rep, "Location", "/v1/kernels/%s", name);
    return ghd_reply_json(rep, 201, desc);
}

int ghd_handle_kernel_delete(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    int rc = ghd_service_kernel_delete(req->svc, &req->caller, req->params[0], &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : ghd_reply_empty(rep, 204);
}
