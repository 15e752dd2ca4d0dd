/* Kernels for tenants: the catalogue (built-ins and the tenant's own), and
 * defining a user kernel, which builds it for one device (the placement's)
 * first so that its 201 says what that cost. */
#include "service_kernels.h"

#include <stdio.h>

#include "base/error.h"
#include "kernels/user/ucuda.h"
#include "service_internal.h"
#include "service_devices.h"

json_t *ghd_service_kernel_list_new(struct ghd_service *svc, const struct ghd_caller *caller)
{
    const char *tenant = caller->tenant;
    json_t *list = json_array();
    for (size_t i = 0; i < ghd_kernel_count(); i++)
        json_array_append_new(list, ghd_kernel_describe_new(ghd_kernel_at(i)));
    ghd_ukernel_store_describe(&svc->kernels, tenant, list);
    return list;
}

int ghd_service_kernel_find(struct ghd_service *svc, const struct ghd_caller *caller,
                            const char *name,
                            const struct ghd_kernel **out, struct ghd_err *err)
{
    const char *tenant = caller->tenant;
    if (ghd_kernel_lookup_new(&svc->kernels, tenant, name, out) != 0)
        return ghd_err_set(err, GHD_ENOENT,
                           "no kernel named '%.64s' (GET /v1/kernels lists them)", name);
    return 0;
}

int ghd_service_kernel_get(struct ghd_service *svc, const struct ghd_caller *caller,
                           const char *name,
                           json_t **desc, struct ghd_err *err)
{
    const struct ghd_kernel *k;
    int rc = ghd_service_kernel_find(svc, caller, name, &k, err);
    if (rc)
        return rc;
    *desc = ghd_kernel_describe_new(k);
    ghd_kernel_unref(k);
    return 0;
}

int ghd_service_kernel_build(struct ghd_service *svc, struct ghd_ukernel *k, json_t *build,
                             struct ghd_err *e)
{
    struct ghd_runtime *rt;
    int rc = ghd_service_place(svc, &rt, e); /* another device compiles when first run there */
    if (rc)
        return rc;
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
    rc = ghd_ukernel_binding(k, &b, &bd, e);
    if (rc == 0)
        rc = ghd_ucuda_prepare(k, bd, rt, e);
    if (rc == 0)
        ghd_ucuda_report(bd, build);
    return rc;
}

int ghd_service_kernel_not_builtin(const char *name, struct ghd_err *err)
{
    if (ghd_kernel_find(name))
        return ghd_err_set(err, GHD_EBUSY,
                           "'%.64s' is a built-in kernel: a user kernel cannot shadow it", name);
    return 0;
}

int ghd_service_kernel_create(struct ghd_service *svc, const struct ghd_caller *caller, json_t *def,
                              json_t **desc, struct ghd_err *err)
{
    const char *tenant = caller->tenant;
    struct ghd_ukernel *k = NULL;
    *desc = NULL;
    int rc = ghd_ukernel_new(def, &svc->kernel_limits, tenant, svc->compiler, &k, err);
    if (rc)
        return rc;
    json_t *d = ghd_ukernel_describe_new(k), *build = json_object();
    json_object_set_new(d, "build", build);
    rc = ghd_service_kernel_build(svc, k, build, err);
    if (rc) {
        ghd_err_prefix(err, rc, "kernel %s", k->def.name);
        goto out;
    }
    rc = ghd_ukernel_store_add(&svc->kernels, k);
    if (rc == GHD_EBUSY && ghd_service_kernel_not_builtin(k->def.name, err) == 0)
        ghd_err_set(err, rc, "a kernel named '%s' exists already (DELETE it first)",
                    k->def.name);
    else if (rc == GHD_ELIMIT)
        ghd_err_set(err, rc, "this tenant has %u kernels already (--tenant-max-kernels)",
                    svc->kernels.s.tenant_max);
    if (rc == 0) {
        *desc = d;
        d = NULL;
    }
out:
    json_decref(d);
    ghd_ukernel_unref(k);
    return rc;
}

int ghd_service_kernel_delete(struct ghd_service *svc, const struct ghd_caller *caller,
                              const char *name,
                              struct ghd_err *err)
{
    const char *tenant = caller->tenant;
    if (ghd_kernel_find(name))
        return ghd_err_set(err, GHD_EBUSY, "'%.64s' is a built-in kernel: it cannot be deleted",
                           name);
    if (ghd_ukernel_store_remove(&svc->kernels, tenant, name) != 0)
        return ghd_err_set(err, GHD_ENOENT, "no kernel named '%.64s'", name);
    return 0;
}

/* The tenant's kernel named as `def`: 0 with its description when `def`
 * defines the same kernel, GHD_EBUSY naming the first difference when
 * another, GHD_ENOENT when the tenant has none of that name. */
static int kernel_same(struct ghd_service *svc, const char *tenant, json_t *def, json_t **desc,
                       struct ghd_err *err)
{
    const char *name = json_string_value(json_object_get(def, "name"));
    struct ghd_ukernel *o = NULL;
    if (!name || ghd_ukernel_store_find_new(&svc->kernels, tenant, name, &o) != 0)
        return GHD_ENOENT;
    int rc = 0;
    const char *diff = ghd_ukernel_definition_diff(o->definition, def);
    if (diff) {
        const json_t *a = json_object_get(o->definition, diff), *b = json_object_get(def, diff);
        char was[80] = "absent", now[80] = "absent";
        if (a)
            snprintf(was, sizeof(was), "'%.60s'", json_is_string(a) ? json_string_value(a) : "?");
        if (b)
            snprintf(now, sizeof(now), "'%.60s'", json_is_string(b) ? json_string_value(b) : "?");
        rc = ghd_err_set(err, GHD_EBUSY,
                         "a kernel named '%.64s' exists already with another definition: its "
                         "%s is %s, this one's %s (DELETE it first, or choose another name)",
                         name, diff, was, now);
    } else {
        *desc = ghd_ukernel_describe_new(o);
    }
    ghd_ukernel_unref(o);
    return rc;
}

int ghd_service_kernel_define(struct ghd_service *svc, const struct ghd_caller *caller,
                              json_t *def, json_t **desc, int *created, struct ghd_err *err)
{
    const char *tenant = caller->tenant;
    *created = 0;
    *desc = NULL;
    /* Checked first (what is malformed is said as such), compared before
     * building: a cell run again compiles nothing. */
    struct ghd_ukernel *k = NULL;
    int rc = ghd_ukernel_new(def, &svc->kernel_limits, tenant, svc->compiler, &k, err);
    if (rc)
        return rc;
    ghd_ukernel_unref(k);
    rc = kernel_same(svc, tenant, def, desc, err);
    if (rc != GHD_ENOENT)
        return rc;
    rc = ghd_service_kernel_create(svc, caller, def, desc, err);
    *created = rc == 0;
    if (rc == GHD_EBUSY) { /* defined meanwhile by another request, or a built-in's name */
        struct ghd_err again = {0};
        int same = kernel_same(svc, tenant, def, desc, &again);
        if (same != GHD_ENOENT) {
            *err = again;
            return same;
        }
    }
    return rc;
}
