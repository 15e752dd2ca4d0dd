/* Tracing as the service holds it: the exporter, started from the options,
 * named after this host and instance in the spans' resource. */

#include <stdio.h>
#include <unistd.h>

#include "base/log.h"
#include "service_internal.h"

int ghd_service_tracing_open(struct ghd_service *svc, struct ghd_err *err)
{
    const struct ghd_config *cfg = &svc->cfg;
    if (!cfg->otlp_endpoint[0])
        return 0;
    char host[64] = "localhost", instance[80];
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    snprintf(instance, sizeof(instance), "%s/%u", host, cfg->instance);
    int rc = ghd_tracer_new(cfg->otlp_endpoint, cfg->trace_ratio, instance, &svc->tracer, err);
    if (rc)
        return rc;
    ghd_log(GHD_LOG_INFO, "tracing: spans of %g of new traces (and of every sampled caller's) "
                          "go to %s", cfg->trace_ratio, cfg->otlp_endpoint);
    return 0;
}

struct ghd_tracer *ghd_service_tracer(struct ghd_service *svc)
{
    return svc->tracer;
}
