#ifndef GHD_CORE_METRICS_METRICS_SNAPSHOT_H
#define GHD_CORE_METRICS_METRICS_SNAPSHOT_H

#include "metrics.h"
#include "prom_text.h"

/* The families of the live gauges in `g` (collected by their owners, see
 * core/gauges.h) on every device, then the service's: buffers, start time,
 * build information. */
void ghd_metrics_snapshot_render(struct ghd_strbuf *t, const struct ghd_metrics_gauges *g);
/* The standard process_* families (process_start_time_seconds is with the
 * service's gauges), as Prometheus' client libraries export them. */
void ghd_metrics_process_render(struct ghd_strbuf *t);

#endif
