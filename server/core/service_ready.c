/* Whether the service takes new work, and how much room it has: what
 * /readyz answers and what the proxy's agent check weighs new buffers by. */
#include "service.h"

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
