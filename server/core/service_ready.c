/* Whether the service takes new work, and how much room it has: what
 * /readyz answers and what the proxy's agent check weighs new buffers by. */
#include "service_internal.h"

#include "base/error.h"
#include "service_devices.h"

int ghd_service_readiness(struct ghd_service *svc, json_t **devices, struct ghd_err *err)
{
    if (devices)
        *devices = NULL;
    if (!atomic_load(&svc->ready) || !ghd_service_runtime(svc, 0))
        return ghd_err_set(err, GHD_EUNAVAIL, "the service is starting or stopping");
    return ghd_service_devices_ready(svc, devices, err);
}

/* The pools and staging rings of every device, summed: figures of every
 * tenant's work, for a caller with GHD_PERM_FIGURES only. */
static void figures_add(struct ghd_service *svc, json_t *body)
{
    size_t reserved = 0, in_use = 0, limit = 0, chunk_size = 0;
    unsigned chunks = 0, busy = 0;
    for (unsigned i = 0; i < svc->runtime_count; i++) {
        struct ghd_pool_stats ps;
        struct ghd_staging_stats ss;
        ghd_pool_get_stats(&svc->runtimes[i].pool, &ps);
        ghd_staging_get_stats(&svc->runtimes[i].staging, &ss);
        reserved += ps.reserved;
        in_use += ps.in_use;
        limit += ps.limit;
        chunks += ss.chunks;
        busy += ss.busy;
        chunk_size = ss.chunk_size;
    }
    json_object_set_new(body, "pool",
                        json_pack("{s:I, s:I, s:I}", "reserved", (json_int_t)reserved, "in_use",
                                  (json_int_t)in_use, "limit", (json_int_t)limit));
    json_object_set_new(body, "staging",
                        json_pack("{s:i, s:I, s:i}", "chunks", (int)chunks, "chunk_size",
                                  (json_int_t)chunk_size, "busy", (int)busy));
}

int ghd_service_ready_json(struct ghd_service *svc, const struct ghd_caller *caller,
                           json_t **body, struct ghd_err *err)
{
    json_t *devices = NULL;
    *body = NULL;
    int rc = ghd_service_readiness(svc, &devices, err);
    if (rc) {
        json_decref(devices);
        return rc;
    }
    struct ghd_runtime *first = ghd_service_runtime(svc, 0);
    *body = json_pack("{s:s, s:i, s:s, s:s, s:s}", "status", "ready", "instance",
                      (int)svc->owner.instance, "boot", svc->owner.boot, "backend",
                      ghd_backend_name(first->dev.kind), "device", first->dev.name);
    const char *url = ghd_cluster_self_url(svc->cluster);
    if (*body && url[0])
        json_object_set_new(*body, "url", json_string(url));
    if (*body && (caller->perms & GHD_PERM_FIGURES))
        figures_add(svc, *body);
    json_object_set_new(*body, "devices", devices);
    return 0;
}

int ghd_service_is_ready(struct ghd_service *svc)
{
    return atomic_load(&svc->ready);
}

void ghd_service_set_ready(struct ghd_service *svc, int ready)
{
    atomic_store(&svc->ready, ready);
}

unsigned ghd_service_free_percent(struct ghd_service *svc)
{
    size_t free_bytes = 0, limit = 0;
    for (unsigned i = 0; i < svc->runtime_count; i++) {
        struct ghd_pool_stats ps;
        ghd_pool_get_stats(&svc->runtimes[i].pool, &ps);
        size_t cap = ps.limit ? ps.limit : ps.reserved;
        limit += cap;
        free_bytes += cap > ps.in_use ? cap - ps.in_use : 0;
    }
    return limit ? (unsigned)((free_bytes * 100.0) / (double)limit) : 100;
}
