/* /v1/kernels: the built-in kernels and the tenant's own user kernels
 * (kernels/user/). A user kernel is visible to its tenant only: another
 * tenant gets 404 as if it did not exist. */
#include "handlers.h"

#include "kernels/kernel.h"
#include "kernels/user/ucuda.h"
#include "base/error.h"
#include "core/service.h"

int ghd_handle_kernel_list(struct ghd_request *req, struct ghd_reply *rep)
{
    json_t *list = json_array();
    for (size_t i = 0; i < ghd_kernel_count(); i++)
        json_array_append_new(list, ghd_kernel_describe_new(ghd_kernel_at(i)));
    ghd_ukernel_store_describe(&req->svc->kernels, req->tenant, list);
    return ghd_reply_json(rep, 200, json_pack("{s:o}", "kernels", list));
}

int ghd_handle_kernel_get(struct ghd_request *req, struct ghd_reply *rep)
{
    const struct ghd_kernel *k;
    if (ghd_kernel_lookup_new(&req->svc->kernels, req->tenant, req->params[0], &k) != 0)
        return ghd_reply_problem(rep, req, GHD_ENOENT, "no kernel named '%.64s' (GET /v1/kernels lists them)",
                                 req->params[0]);
    int rc = ghd_reply_json(rep, 200, ghd_kernel_describe_new(k));
    ghd_kernel_unref(k);
    return rc;
}

/* What defining it cost on this backend: the host interprets; CUDA compiles
 * the binding without placeholders or scalars now, so the 201 can say what
 * the compile did (the rest compile when first run). */
static int build_report(struct ghd_request *req, struct ghd_ukernel *k, json_t *desc,
                        struct ghd_err *e)
{
    struct ghd_runtime *rt = ghd_service_runtime(req->svc, 0);
    json_t *build = json_object();
    json_object_set_new(desc, "build", build);
    json_object_set_new(build, "backend", json_string(ghd_backend_name(rt->dev.kind)));
    if (rt->dev.kind == GHD_BACKEND_HOST || k->def.placeholders[0]) {
        json_object_set_new(build, "compiled", json_false());
        json_object_set_new(build, "note", json_string(rt->dev.kind == GHD_BACKEND_HOST
                                                           ? "the host backend interprets the definition"
                                                           : "compiled per binding of its placeholder types, when first run"));
        return 0;
    }
    struct ghd_ubind b = {.scalar_mask = 0};
    struct ghd_ubinding *bd;
    for (int t = 0; t < 26; t++)
        b.ph_type[t] = GHD_UT_NONE;
    int rc = ghd_ukernel_binding(k, &b, &bd, e);
    if (rc == 0)
        rc = ghd_ucuda_prepare(k, bd, rt, e);
    if (rc == 0)
        ghd_ucuda_report(bd, build);
    return rc;
}

int ghd_handle_kernel_create(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_ukernel *k = NULL;
    struct ghd_err e = {0};
    int rc = ghd_ukernel_new(req->json, &req->svc->kernel_limits, req->tenant,
                             req->svc->compiler, &k, &e);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "%s", e.detail);
    json_t *desc = ghd_ukernel_describe_new(k);
    rc = build_report(req, k, desc, &e);
    if (rc) {
        ghd_reply_problem(rep, req, rc, "kernel %s: %s", k->def.name, e.detail);
        goto out;
    }
    rc = ghd_ukernel_store_add(&req->svc->kernels, k);
    if (rc == GHD_EBUSY) {
        ghd_reply_problem(rep, req, rc,
                          ghd_kernel_find(k->def.name)
                              ? "'%s' is a built-in kernel: a user kernel cannot shadow it"
                              : "a kernel named '%s' exists already (DELETE it first)",
                          k->def.name);
    } else if (rc == GHD_ELIMIT) {
        ghd_reply_problem(rep, req, rc, "this tenant has %u kernels already (--tenant-max-kernels)",
                          req->svc->kernels.tenant_max);
    } else if (rc == 0) {
        ghd_reply_header(rep, "Location", "/v1/kernels/%s", k->def.name);
        rc = ghd_reply_json(rep, 201, desc);
        desc = NULL;
    } else {
        ghd_reply_problem(rep, req, rc, NULL);
    }
out:
    json_decref(desc);
    ghd_ukernel_unref(k);
    return rc;
}

int ghd_handle_kernel_delete(struct ghd_request *req, struct ghd_reply *rep)
{
    if (ghd_kernel_find(req->params[0]))
        return ghd_reply_problem(rep, req, GHD_EBUSY, "'%.64s' is a built-in kernel: it cannot be deleted",
                                 req->params[0]);
    if (ghd_ukernel_store_remove(&req->svc->kernels, req->tenant, req->params[0]) != 0)
        return ghd_reply_problem(rep, req, GHD_ENOENT, "no kernel named '%.64s'", req->params[0]);
    return ghd_reply_empty(rep, 204);
}
