#ifndef GHD_CORE_METRICS_GAUGES_H
#define GHD_CORE_METRICS_GAUGES_H

#include "metrics.h"
#include "core/service.h"

/* The live gauges of one metrics scrape, each asked of its owner: the pool,
 * staging rings, backend and NVML of every runtime, the buffer table's
 * totals and the run queue's count. No lock is held across two owners, so
 * the snapshot is a set of values each exact at its own moment. */
void ghd_gauges_collect(struct ghd_service *svc, struct ghd_metrics_gauges *g);
/* The exposition of the service's metrics with its gauges collected now
 * (ghd_metrics_render: *out is the caller's to free). */
int ghd_service_metrics_render(struct ghd_service *svc, char **out, size_t *len);

#endif
