/* Collecting the metrics' gauges from their owners (metrics.c is a leaf
 * that only renders what it is given). */
#include "gauges.h"

#include <string.h>

#include "device/nvml.h"
#include "core/runs/run_queue.h"
#include "core/service_internal.h"
#include "core/tiers/tier.h"

_Static_assert(GHD_METRICS_DEVICES >= GHD_MAX_DEVICES, "a gauge row for every runtime");

static void collect_device(struct ghd_runtime *rt, struct ghd_metrics_device *d)
{
    struct ghd_device *dev = &rt->dev;
    d->index = rt->index;
    ghd_pool_get_stats(&rt->pool, &d->pool);
    ghd_staging_get_stats(&rt->staging, &d->staging);
    ghd_staging_get_stats(&rt->staging_small, &d->staging_small);
    /* Asked of the backend (and NVML) at each scrape, like the pool's
     * numbers: a scrape every few seconds costs a few microseconds. */
    d->have_mem = dev->ops && dev->ops->mem_info &&
                  dev->ops->mem_info(dev, &d->mem_free, &d->mem_total, NULL) == 0;
    d->have_util = ghd_nvml_utilization(dev->pci_bus_id, &d->util_percent) == 0;
}

void ghd_gauges_collect(struct ghd_service *svc, struct ghd_metrics_gauges *g)
{
    memset(g, 0, sizeof(*g));
    g->runs_active = svc->runs ? ghd_run_queue_active(svc->runs) : 0;
    g->run_workers = svc->cfg.run_workers;
    ghd_buffer_table_totals(&svc->buffers, &g->buffers, &g->buffer_bytes);
    g->started = svc->started;
    ghd_tracer_stats(svc->tracer, &g->trace);
    g->device_count = svc->runtime_count < GHD_MAX_DEVICES ? svc->runtime_count : GHD_MAX_DEVICES;
    for (unsigned i = 0; i < g->device_count; i++) {
        collect_device(&svc->runtimes[i], &g->devices[i]);
        ghd_tiers_stats(svc->buffers.tiers, i, &g->devices[i].tiers);
    }
    g->have_tiers = svc->buffers.tiers != NULL;
    ghd_tiers_usage(svc->buffers.tiers, &g->host_tier_bytes, &g->host_tier_capacity,
                    &g->disk_tier_bytes, &g->disk_tier_capacity);
    if (svc->runtime_count) {
        const struct ghd_device *dev = &svc->runtimes[0].dev;
        g->cuda_runtime = dev->runtime_version[0] ? dev->runtime_version : NULL;
        g->backend = ghd_backend_name(dev->kind);
        g->device_name = dev->name;
    }
}

int ghd_service_metrics_render(struct ghd_service *svc, char **out, size_t *len)
{
    struct ghd_metrics_gauges g;
    ghd_gauges_collect(svc, &g);
    return ghd_metrics_render(svc->metrics, &g, out, len);
}
