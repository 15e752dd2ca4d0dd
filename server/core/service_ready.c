/* Whether the service takes new work, and how much room it has: what
 * /readyz answers and what the proxy's agent check weighs new buffers by. */
#include "service.h"

#include "base/error.h"

int ghd_service_readiness(struct ghd_service *svc, struct ghd_err *err)
{
    struct ghd_runtime *rt = ghd_service_runtime(svc, 0);
    if (!atomic_load(&svc->ready) || !rt)
        return ghd_err_set(err, GHD_EUNAVAIL, "the service is starting or stopping");
    struct ghd_err lost = {0};
    if (ghd_devloss_get(&svc->devloss, &lost))
        return ghd_err_set(err, GHD_EDEVLOST, "device %d is lost: %s", rt->dev.ordinal,
                           lost.detail);
    struct ghd_err why = {0};
    int rc = ghd_runtime_health(rt, &why);
    if (rc)
        return ghd_err_set(err, GHD_EUNAVAIL, "device %d is not usable: %s", rt->dev.ordinal,
                           ghd_err_text(&why, rc));
    return 0;
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
