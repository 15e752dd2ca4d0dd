#include "handlers.h"

#include "base/error.h"
#include "core/service.h"
#include "http/access.h"

int ghd_handle_healthz(struct ghd_request *req, struct ghd_reply *rep)
{
    (void)req;
    return ghd_reply_json(rep, 200, json_pack("{s:s}", "status", "ok"));
}

/* Ready while the devices --ready-needs asks for are (any: one; all: every
 * one); the body lists each device's state and, for a caller that may read
 * them (http/access.h), sums the pools and rings. */
int ghd_handle_readyz(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_service *svc = req->svc;
    json_t *devices = NULL;
    struct ghd_err err = {0};
    int rc = ghd_service_readiness(svc, &devices, &err);
    if (rc == GHD_EUNAVAIL && !atomic_load(&svc->ready))
        ghd_reply_header(rep, "Retry-After", "1");
    if (rc) {
        json_decref(devices);
        return ghd_reply_problem(rep, req, rc, "%s", err.detail);
    }
    struct ghd_runtime *first = ghd_service_runtime(svc, 0);
    if (!ghd_http_figures_allowed(req)) /* the state alone: the pool sums every tenant's */
        return ghd_reply_json(rep, 200,
                              json_pack("{s:s, s:i, s:s, s:s, s:s, s:o}", "status", "ready",
                                        "instance", (int)svc->owner.instance, "boot",
                                        svc->owner.boot, "backend",
                                        ghd_backend_name(first->dev.kind), "device",
                                        first->dev.name, "devices", devices));
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
    return ghd_reply_json(
        rep, 200,
        json_pack("{s:s, s:i, s:s, s:s, s:s, s:{s:I, s:I, s:I}, s:{s:i, s:I, s:i}, s:o}", "status",
                  "ready", "instance", (int)svc->owner.instance, "boot", svc->owner.boot,
                  "backend", ghd_backend_name(first->dev.kind), "device", first->dev.name, "pool",
                  "reserved", (json_int_t)reserved, "in_use", (json_int_t)in_use, "limit",
                  (json_int_t)limit, "staging", "chunks", (int)chunks, "chunk_size",
                  (json_int_t)chunk_size, "busy", (int)busy, "devices", devices));
}
