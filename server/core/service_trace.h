#ifndef GHD_CORE_SERVICE_TRACE_H
#define GHD_CORE_SERVICE_TRACE_H

#include "base/err.h"
#include "base/trace_export.h"
#include "service.h"

/* The service's trace exporter, from --otlp-endpoint and --trace-sample:
 * none without an endpoint. 0, or the exporter's code with `err` set.
 * Freed by ghd_service_destroy (ghd_tracer_free) after the runs. */
int ghd_service_tracing_open(struct ghd_service *svc, struct ghd_err *err);

#endif
