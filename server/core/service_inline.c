/* Kernels and raw modules by value in run steps: the service's limits,
 * compiler and device handed to the cache, and refusals named by where
 * they sit in the request. */
#include "service_inline.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "core/runs/inline_defs.h"
#include "core/metrics/metrics.h"
#include "service_internal.h"
#include "service_devices.h"
#include "service_kernels.h"

static const char *const kernel_fields[] = {"name", "kind", "description", "in", "out",
                                            "body", "map", "reduce", "identity", "post",
                                            "reduce_type", NULL};
static const char *const module_fields[] = {"source", "options", "name_expressions", NULL};

/* Puts `path` before err's detail: joined by a dot when the detail starts
 * with one of `fields` ("body, column 3: ...", "options[2]: ..."), so the
 * two read as one path, else as "<path>: <detail>". */
static void at_path(struct ghd_err *err, int code, const char *path,
                    const char *const *fields)
{
    if (!err)
        return;
    const char *d = err->detail;
    size_t n = strspn(d, "abcdefghijklmnopqrstuvwxyz_");
    int field = 0;
    for (const char *const *f = fields; n && strchr(",:[", d[n]) && *f; f++)
        field |= strlen(*f) == n && strncmp(d, *f, n) == 0;
    if (!field) {
        ghd_err_prefix(err, code, "%s", path);
        return;
    }
    char joined[GHD_ERR_DETAIL + 64];
    snprintf(joined, sizeof(joined), "%.48s.%s", path, d);
    snprintf(err->detail, sizeof(err->detail), "%.*s", (int)sizeof(err->detail) - 1, joined);
}

/* On CUDA, the binding without placeholders or scalars compiled now, as
 * POST /v1/kernels does, so that a definition checked from disk whose code
 * had to be compiled again counts as built ("miss"). */
static int build(struct ghd_service *svc, struct ghd_ukernel *k, const char **from,
                 struct ghd_err *err)
{
    json_t *report = json_object();
    int rc = ghd_service_kernel_build(svc, k, report, err);
    const char *cache = json_string_value(json_object_get(report, "cache"));
    if (rc == 0 && cache && strcmp(cache, "miss") == 0)
        *from = "miss";
    json_decref(report);
    return rc;
}

int ghd_service_kernel_inline(struct ghd_service *svc, const char *tenant, json_t *def,
                              const char *path, const struct ghd_kernel **out,
                              struct ghd_err *err)
{
    struct ghd_ukernel *k;
    const char *from;
    int rc = ghd_inline_kernel(&svc->inline_defs, def, &svc->kernel_limits, svc->compiler,
                               tenant, &k, &from, err);
    if (rc) {
        at_path(err, rc, path, kernel_fields);
        return rc;
    }
    /* A run records the name: a built-in's is refused as POST /v1/kernels
     * refuses it. */
    if ((rc = ghd_service_kernel_not_builtin(k->def.name, err)) == 0 &&
        strcmp(from, "memory") != 0)
        rc = build(svc, k, &from, err);
    if (rc) {
        ghd_ukernel_unref(k);
        at_path(err, rc, path, kernel_fields);
        return rc;
    }
    ghd_metrics_inline(svc->metrics, 0, from);
    *out = &k->base; /* the caller's reference is the kernel's */
    return 0;
}

int ghd_service_run_step_inline_module(struct ghd_service *svc, const char *tenant,
                                       struct ghd_run_step *step, json_t *launch,
                                       const char *path, struct ghd_err *err)
{
    /* Built with a ready device; it runs on every device of its architecture. */
    struct ghd_runtime *rt;
    int rc = ghd_service_place(svc, &rt, err);
    if (rc)
        return rc;
    const struct ghd_inline_module_ctx ctx = {.max_source = svc->cfg.module_max_source,
                                              .id_prefix = svc->owner.prefix,
                                              .compiler = svc->compiler,
                                              .rt = rt};
    struct ghd_rmodule *m;
    const char *from;
    rc = ghd_inline_module(&svc->inline_defs, json_object_get(launch, "module"), &ctx, tenant,
                           &m, &from, err);
    if (rc) {
        at_path(err, rc, path, module_fields);
        return rc;
    }
    ghd_metrics_inline(svc->metrics, 1, from);
    const char *name = json_string_value(json_object_get(launch, "function"));
    struct ghd_rfunc *f = ghd_rmodule_function(m, name);
    if (!f) {
        ghd_rmodule_unref(m);
        return ghd_err_set(err, GHD_EUNPROC, "%s has no __global__ function '%.128s'", path,
                           name);
    }
    step->kernel = &f->base; /* the step's reference is the module's */
    return 0;
}
