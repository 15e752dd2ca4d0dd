/* /v1/modules: raw CUDA modules (kernels/raw/) for trusted tenants. Off
 * unless --allow-raw-kernels; with tokens, the token needs the "raw"
 * permission (403 naming what is missing). A module belongs to its tenant:
 * another tenant gets 404 as if it did not exist. Only the CUDA backend
 * runs them (501 on the host backend). */
#include "handlers.h"

#include "base/error.h"
#include "core/auth.h"
#include "core/service.h"
#include "kernels/raw/module.h"

int ghd_handle_raw_allowed(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    int rc = ghd_auth_raw_check(req->svc->auth, req->svc->cfg.allow_raw_kernels, req->perms,
                                req->tenant, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : 0;
}

int ghd_handle_module_create(struct ghd_request *req, struct ghd_reply *rep)
{
    int rc = ghd_handle_raw_allowed(req, rep);
    if (rc)
        return rc;
    struct ghd_service *svc = req->svc;
    struct ghd_err err = {0};
    char id[GHD_RMODULE_ID_LEN + 1];
    struct ghd_rmodule *m = NULL, *have = NULL;
    if (!json_is_object(req->json))
        return ghd_reply_problem(rep, req, GHD_EJSON, "the body must be a JSON object");
    /* The same module again: the one there is (no compile). */
    rc = ghd_rmodule_id(req->json, svc->owner.prefix, id, &err);
    if (rc == 0 && ghd_rmodule_store_find_new(&svc->modules, req->tenant, id, &have) == 0) {
        ghd_reply_header(rep, "Location", "/v1/modules/%s", have->id);
        rc = ghd_reply_json(rep, 200, ghd_rmodule_describe_new(have));
        ghd_rmodule_unref(have);
        return rc;
    }
    if (rc == 0 && svc->modules.tenant_max &&
        ghd_rmodule_store_count(&svc->modules, req->tenant) >= svc->modules.tenant_max) {
        ghd_reply_header(rep, "Retry-After", "1");
        return ghd_reply_problem(rep, req, GHD_ELIMIT, "this tenant has %u modules already "
                                 "(--tenant-max-modules); delete some first",
                                 svc->modules.tenant_max);
    }
    if (rc == 0)
        rc = ghd_rmodule_new(req->json, svc->cfg.module_max_source, svc->owner.prefix,
                             req->tenant, svc->compiler, ghd_service_runtime(svc, 0), &m, &err);
    if (rc) {
        if (rc == GHD_ELIMIT)
            ghd_reply_header(rep, "Retry-After", "1");
        return ghd_reply_problem(rep, req, rc, "%s", err.detail);
    }
    rc = ghd_rmodule_store_add(&svc->modules, m, &have);
    if (rc == GHD_EBUSY) { /* compiled twice at once: the first one stays */
        ghd_reply_header(rep, "Location", "/v1/modules/%s", have->id);
        rc = ghd_reply_json(rep, 200, ghd_rmodule_describe_new(have));
        ghd_rmodule_unref(have);
    } else if (rc == GHD_ELIMIT) {
        ghd_reply_header(rep, "Retry-After", "1");
        ghd_reply_problem(rep, req, rc, "this tenant has %u modules already "
                          "(--tenant-max-modules); delete some first", svc->modules.tenant_max);
    } else if (rc == 0) {
        ghd_reply_header(rep, "Location", "/v1/modules/%s", m->id);
        rc = ghd_reply_json(rep, 201, ghd_rmodule_describe_new(m));
    } else {
        ghd_reply_problem(rep, req, rc, NULL);
    }
    ghd_rmodule_unref(m);
    return rc;
}

int ghd_handle_module_list(struct ghd_request *req, struct ghd_reply *rep)
{
    int rc = ghd_handle_raw_allowed(req, rep);
    if (rc)
        return rc;
    json_t *list = json_array();
    ghd_rmodule_store_describe(&req->svc->modules, req->tenant, list);
    return ghd_reply_json(rep, 200, json_pack("{s:o}", "modules", list));
}

int ghd_handle_module_get(struct ghd_request *req, struct ghd_reply *rep)
{
    int rc = ghd_handle_raw_allowed(req, rep);
    if (rc)
        return rc;
    struct ghd_rmodule *m;
    if (ghd_rmodule_store_find_new(&req->svc->modules, req->tenant, req->params[0], &m) != 0)
        return ghd_reply_problem(rep, req, GHD_ENOENT, "no module with id '%.64s'",
                                 req->params[0]);
    rc = ghd_reply_json(rep, 200, ghd_rmodule_describe_new(m));
    ghd_rmodule_unref(m);
    return rc;
}

int ghd_handle_module_delete(struct ghd_request *req, struct ghd_reply *rep)
{
    int rc = ghd_handle_raw_allowed(req, rep);
    if (rc)
        return rc;
    if (ghd_rmodule_store_remove(&req->svc->modules, req->tenant, req->params[0]) != 0)
        return ghd_reply_problem(rep, req, GHD_ENOENT, "no module with id '%.64s'",
                                 req->params[0]);
    return ghd_reply_empty(rep, 204);
}
