/* A tenant's usage and limits (tenant_limits.c works the limits out): where
 * it stands, told to the tenant alone. */
#include "service_usage.h"

#include "base/json_text.h"
#include "core/metrics/metrics.h"
#include "core/runs/run_queue.h"
#include "core/service_internal.h"

/* Sets obj[key] to n where n is a limit (not 0). */
static void put_limit(json_t *obj, const char *key, size_t n)
{
    if (n)
        json_object_set_new(obj, key, json_integer((json_int_t)n));
}

static json_t *devices_new(struct ghd_service *svc, const char *tenant)
{
    json_t *list = json_array();
    for (unsigned i = 0; list && i < svc->runtime_count; i++) {
        size_t bytes = ghd_buffer_tenant_bytes_on(&svc->buffers, tenant, i);
        json_t *d = json_pack("{s:i, s:I}", "device", (int)i, "bytes", (json_int_t)bytes);
        if (d)
            put_limit(d, "limit", svc->limits.device_max_bytes[i]);
        json_array_append_new(list, d);
    }
    return list;
}

json_t *ghd_service_usage_new(struct ghd_service *svc, const struct ghd_caller *caller)
{
    const char *tenant = caller->tenant;
    const struct ghd_tenant_limits *l = &svc->limits;
    size_t bytes, count;
    struct ghd_run_tenant_usage runs;
    ghd_buffer_tenant_usage(&svc->buffers, tenant, &bytes, &count);
    ghd_run_queue_tenant_usage(svc->runs, tenant, &runs);
    json_t *kernels = json_array();
    if (kernels)
        ghd_ukernel_store_describe(&svc->kernels, tenant, kernels);
    json_t *obj = json_pack(
        "{s:s, s:o, s:{s:I, s:I}, s:{s:i, s:i, s:i, s:i, s:I, s:f}, s:{s:I, s:i}}", "tenant",
        tenant ? tenant : "", "devices", devices_new(svc, tenant), "buffers", "count",
        (json_int_t)count, "bytes", (json_int_t)bytes, "runs", "active", (int)runs.active, "kept",
        (int)runs.kept, "kept_limit", (int)svc->cfg.runs_kept, "weight", (int)ghd_perm_weight(caller->perms),
        "ended", (json_int_t)runs.ended, "device_ms", ghd_round_ms(runs.device_ms), "kernels",
        "count",
        (json_int_t)json_array_size(kernels), "limit", (int)svc->cfg.tenant_max_kernels);
    json_decref(kernels);
    if (!obj)
        return NULL;
    struct ghd_metrics_tenant moved = ghd_metrics_tenant_get(svc->metrics, tenant);
    json_object_set_new(obj, "transfers",
                        json_pack("{s:I, s:I}", "uploaded_bytes",
                                  (json_int_t)moved.bytes[GHD_TRANSFER_UPLOAD], "downloaded_bytes",
                                  (json_int_t)moved.bytes[GHD_TRANSFER_DOWNLOAD]));
    put_limit(json_object_get(obj, "buffers"), "limit", l->max_buffers);
    put_limit(json_object_get(obj, "buffers"), "bytes_limit", l->max_bytes);
    put_limit(json_object_get(obj, "runs"), "active_limit", l->max_runs);
    return obj;
}
