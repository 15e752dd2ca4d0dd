#ifndef GHD_CORE_METRICS_METRICS_TIERS_H
#define GHD_CORE_METRICS_METRICS_TIERS_H

#include "base/strbuf.h"
#include "metrics.h"

/* The tiers' families (core/tier.h): evictions and page-ins with their
 * bytes and seconds by device and tier, failures, and the host and disk
 * tiers' bytes and capacities; from the gauges handed in alone. */
void ghd_metrics_tiers_render(struct ghd_strbuf *t, const struct ghd_metrics_gauges *g);

#endif
