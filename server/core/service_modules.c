/* Raw CUDA modules for tenants: the permission, the tenant's quota (the
 * store's, asked before a compile), the reuse of a module the tenant has
 * already, and the lookups a run step makes. */
#include "service_modules.h"

#include "auth.h"
#include "base/error.h"
#include "kernels/raw/module.h"
#include "service.h"

int ghd_service_raw_allowed(struct ghd_service *svc, const char *tenant, unsigned perms,
                            struct ghd_err *err)
{
    return ghd_auth_raw_check(svc->auth, svc->cfg.allow_raw_kernels, perms, tenant, err);
}

static int at_limit(const struct ghd_service *svc, struct ghd_err *err)
{
    return ghd_err_set(err, GHD_ELIMIT,
                       "this tenant has %u modules already (--tenant-max-modules); delete some "
                       "first",
                       svc->modules.tenant_max);
}

static void found(struct ghd_rmodule *m, json_t **desc, int *created)
{
    *desc = ghd_rmodule_describe_new(m);
    *created = 0;
    ghd_rmodule_unref(m);
}

int ghd_service_module_create(struct ghd_service *svc, const char *tenant, json_t *body,
                              json_t **desc, int *created, struct ghd_err *err)
{
    char id[GHD_RMODULE_ID_LEN + 1];
    struct ghd_rmodule *m = NULL, *have = NULL;
    *desc = NULL;
    if (!json_is_object(body))
        return ghd_err_set(err, GHD_EJSON, "the body must be a JSON object");
    int rc = ghd_rmodule_id(body, svc->owner.prefix, id, err);
    if (rc)
        return rc;
    /* The same module again: the one there is (no compile). */
    if (ghd_rmodule_store_find_new(&svc->modules, tenant, id, &have) == 0) {
        found(have, desc, created);
        return 0;
    }
    if (ghd_rmodule_store_room(&svc->modules, tenant) != 0)
        return at_limit(svc, err);
    rc = ghd_rmodule_new(body, svc->cfg.module_max_source, svc->owner.prefix, tenant,
                         svc->compiler, ghd_service_runtime(svc, 0), &m, err);
    if (rc)
        return rc;
    rc = ghd_rmodule_store_add(&svc->modules, m, &have);
    if (rc == GHD_EBUSY) { /* compiled twice at once: the first one stays */
        found(have, desc, created);
        rc = 0;
    } else if (rc == GHD_ELIMIT) {
        at_limit(svc, err);
    } else if (rc == 0) {
        *desc = ghd_rmodule_describe_new(m);
        *created = 1;
    }
    ghd_rmodule_unref(m);
    return rc;
}

json_t *ghd_service_module_list_new(struct ghd_service *svc, const char *tenant)
{
    json_t *list = json_array();
    ghd_rmodule_store_describe(&svc->modules, tenant, list);
    return list;
}

static int no_module(const char *id, struct ghd_err *err)
{
    return ghd_err_set(err, GHD_ENOENT, "no module with id '%.64s'", id);
}

int ghd_service_module_get(struct ghd_service *svc, const char *tenant, const char *id,
                           json_t **desc, struct ghd_err *err)
{
    struct ghd_rmodule *m;
    if (ghd_rmodule_store_find_new(&svc->modules, tenant, id, &m) != 0)
        return no_module(id, err);
    *desc = ghd_rmodule_describe_new(m);
    ghd_rmodule_unref(m);
    return 0;
}

int ghd_service_module_delete(struct ghd_service *svc, const char *tenant, const char *id,
                              struct ghd_err *err)
{
    if (ghd_rmodule_store_remove(&svc->modules, tenant, id) != 0)
        return no_module(id, err);
    return 0;
}

int ghd_service_module_function(struct ghd_service *svc, const char *tenant, const char *id,
                                const char *name, const struct ghd_kernel **out,
                                struct ghd_err *err)
{
    struct ghd_rmodule *m;
    if (ghd_rmodule_store_find_new(&svc->modules, tenant, id, &m) != 0)
        return no_module(id, err);
    struct ghd_rfunc *f = ghd_rmodule_function(m, name);
    if (!f) {
        int rc = ghd_err_set(err, GHD_EUNPROC,
                             "module %s has no __global__ function '%.128s' (GET /v1/modules/%s "
                             "lists them)",
                             m->id, name, m->id);
        ghd_rmodule_unref(m);
        return rc;
    }
    *out = &f->base; /* the caller's reference is the module's */
    return 0;
}
