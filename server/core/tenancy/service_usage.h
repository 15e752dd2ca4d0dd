#ifndef GHD_CORE_TENANCY_SERVICE_USAGE_H
#define GHD_CORE_TENANCY_SERVICE_USAGE_H

#include <jansson.h>
#include <stddef.h>

#include "caller.h"
#include "tenant_limits.h"

/* What one tenant holds now and may hold (tenant_limits.h): GET /v1/usage. */

struct ghd_service;

/* `tenant`'s usage and limits, and nothing of another tenant's: {tenant,
 * devices: [{device, bytes, limit?}], buffers: {count, bytes, limit?,
 * bytes_limit?}, runs: {active, active_limit?, kept, kept_limit, weight, ended,
 * device_ms}, transfers: {uploaded_bytes, downloaded_bytes}, kernels:
 * {count, limit}}; a limit is left out where there is none. A new
 * reference, NULL when out of memory. */
json_t *ghd_service_usage_new(struct ghd_service *svc, const struct ghd_caller *caller);

#endif
