/* Raw CUDA modules for tenants: the permission, the tenant's quota (the
 * store's, asked before a compile), the reuse of a module the tenant has
 * already, and the lookups a run step makes. */
#include "service_modules.h"

#include <stdio.h>

#include "core/tenancy/auth.h"
#include "base/error.h"
#include "kernels/raw/module.h"
#include "service_internal.h"
#include "service_devices.h"

int ghd_service_raw_allowed(struct ghd_service *svc, const struct ghd_caller *caller,
                            struct ghd_err *err)
{
    return ghd_auth_raw_check(svc->auth, svc->cfg.allow_raw_kernels, caller->perms,
                              caller->tenant, err);
}

static int at_limit(const struct ghd_service *svc, struct ghd_err *err)
{
    return ghd_err_set(err, GHD_ELIMIT,
                       "this tenant has %u modules already (--tenant-max-modules); delete some "
                       "first",
                       svc->modules.s.tenant_max);
}

static void found(struct ghd_rmodule *m, json_t **desc, int *created)
{
    *desc = ghd_rmodule_describe_new(m);
    *created = 0;
    ghd_rmodule_unref(m);
}

int ghd_service_module_create(struct ghd_service *svc, const struct ghd_caller *caller,
                              json_t *body, json_t **desc, int *created, struct ghd_err *err)
{
    char id[GHD_RMODULE_ID_LEN + 1];
    struct ghd_rmodule *m = NULL, *have = NULL;
    const char *tenant = caller->tenant;
    *desc = NULL;
    int rc = ghd_service_raw_allowed(svc, caller, err);
    if (rc)
        return rc;
    if (!json_is_object(body))
        return ghd_err_set(err, GHD_EJSON, "the body must be a JSON object");
    rc = ghd_rmodule_id(body, svc->owner.prefix, id, err);
    if (rc)
        return rc;
    /* The same module again: the one there is (no compile). */
    if (ghd_rmodule_store_find_new(&svc->modules, tenant, id, &have) == 0) {
        found(have, desc, created);
        return 0;
    }
    if (ghd_rmodule_store_room(&svc->modules, tenant) != 0)
        return at_limit(svc, err);
    /* Compiled for and loaded with one device; its library serves every
     * device of that architecture (kernels/raw/rcall.c). */
    struct ghd_runtime *rt;
    if ((rc = ghd_service_place(svc, &rt, err)) != 0)
        return rc;
    rc = ghd_rmodule_new(body, svc->cfg.module_max_source, svc->owner.prefix, tenant,
                         svc->compiler, rt, &m, err);
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

int ghd_service_module_list(struct ghd_service *svc, const struct ghd_caller *caller,
                            json_t **list, struct ghd_err *err)
{
    *list = NULL;
    int rc = ghd_service_raw_allowed(svc, caller, err);
    if (rc)
        return rc;
    *list = json_array();
    ghd_rmodule_store_describe(&svc->modules, caller->tenant, *list);
    return 0;
}

static int no_module(const char *id, struct ghd_err *err)
{
    return ghd_err_set(err, GHD_ENOENT, "no module with id '%.64s'", id);
}

/* The tenant's module `id`, a new reference, while the device it was
 * loaded with is ready. */
static int module_find(struct ghd_service *svc, const char *tenant, const char *id,
                       struct ghd_rmodule **out, struct ghd_err *err)
{
    if (ghd_rmodule_store_find_new(&svc->modules, tenant, id, out) != 0)
        return no_module(id, err);
    char what[GHD_RMODULE_ID_LEN + 16];
    snprintf(what, sizeof(what), "module %s", id);
    int rc = ghd_service_device_usable(svc, (*out)->rt, what, err);
    if (rc) {
        ghd_rmodule_unref(*out);
        *out = NULL;
    }
    return rc;
}

int ghd_service_module_get(struct ghd_service *svc, const struct ghd_caller *caller,
                           const char *id,
                           json_t **desc, struct ghd_err *err)
{
    struct ghd_rmodule *m;
    int rc = ghd_service_raw_allowed(svc, caller, err);
    if (rc == 0)
        rc = module_find(svc, caller->tenant, id, &m, err);
    if (rc)
        return rc;
    *desc = ghd_rmodule_describe_new(m);
    ghd_rmodule_unref(m);
    return 0;
}

int ghd_service_module_delete(struct ghd_service *svc, const struct ghd_caller *caller,
                              const char *id, struct ghd_err *err)
{
    int rc = ghd_service_raw_allowed(svc, caller, err);
    if (rc)
        return rc;
    if (ghd_rmodule_store_remove(&svc->modules, caller->tenant, id) != 0)
        return no_module(id, err);
    return 0;
}

int ghd_service_module_function(struct ghd_service *svc, const char *tenant, const char *id,
                                const char *name, const struct ghd_kernel **out,
                                struct ghd_err *err)
{
    struct ghd_rmodule *m;
    int rc = module_find(svc, tenant, id, &m, err);
    if (rc)
        return rc;
    struct ghd_rfunc *f = ghd_rmodule_function(m, name);
    if (!f) {
        rc = ghd_err_set(err, GHD_EUNPROC,
                             "module %s has no __global__ function '%.128s' (GET /v1/modules/%s "
                             "lists them)",
                             m->id, name, m->id);
        ghd_rmodule_unref(m);
        return rc;
    }
    *out = &f->base; /* the caller's reference is the module's */
    return 0;
}
