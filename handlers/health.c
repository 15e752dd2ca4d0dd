#include "handlers.h"

#include "base/error.h"
#include "core/service.h"

int ghd_handle_healthz(struct ghd_request *req, struct ghd_reply *rep)
{
    (void)req;
    return ghd_reply_json(rep, 200, json_pack("{s:s}", "status", "ok"));
}

int ghd_handle_readyz(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_service *svc = req->svc;
    struct ghd_err err = {0};
    int rc = ghd_service_readiness(svc, &err);
    if (rc == GHD_EUNAVAIL && !atomic_load(&svc->ready))
        ghd_reply_header(rep, "Retry-After", "1");
    if (rc)
        return ghd_reply_problem(rep, req, rc, "%s", err.detail);
    struct ghd_runtime *rt = ghd_service_runtime(svc, 0);
    struct ghd_pool_stats ps;
    struct ghd_staging_stats ss;
    ghd_pool_get_stats(&rt->pool, &ps);
    ghd_staging_get_stats(&rt->staging, &ss);
    return ghd_reply_json(
        rep, 200,
        json_pack("{s:s, s:i, s:s, s:s, s:s, s:{s:I, s:I, s:I}, s:{s:i, s:I, s:i}}", "status",
                  "ready", "instance", (int)svc->owner.instance, "boot", svc->owner.boot,
                  "backend", ghd_backend_name(rt->dev.kind), "device", rt->dev.name, "pool",
                  "reserved", (json_int_t)ps.reserved, "in_use", (json_int_t)ps.in_use, "limit",
                  (json_int_t)ps.limit, "staging", "chunks", (int)ss.chunks, "chunk_size",
                  (json_int_t)ss.chunk_size, "busy", (int)ss.busy));
}
