#ifndef GHD_CORE_TENANCY_TENANT_LIMITS_H
#define GHD_CORE_TENANCY_TENANT_LIMITS_H

/* What one tenant may hold: the limits in force for every tenant, worked
 * out once at start from the options (the service keeps them; the buffer
 * table and the run queue enforce them; GET /v1/usage shows them). */
#include <stddef.h>

#include "core/config/config.h"
#include "device/runtime.h"

/* The per-tenant limits in force (0 = none). An explicit --tenant-max-bytes,
 * --tenant-max-buffers or --tenant-max-runs; where one is 0 and tokens are
 * configured, --tenant-share percent of the capacity the tenants share
 * (each device's pool, --max-buffers, --run-queue-limit; at least 1 buffer
 * and 1 run). Without tokens every client is one tenant, which takes no
 * share. */
struct ghd_tenant_limits {
    size_t max_bytes; /* --tenant-max-bytes, on all devices */
    /* On device i: the share of its pool's limit; 0 where max_bytes is set. */
    size_t device_max_bytes[GHD_MAX_DEVICES];
    size_t max_buffers;
    unsigned max_runs;   /* queued or running */
    int buffers_shared;  /* max_buffers is the share of --max-buffers */
    int runs_shared;     /* max_runs is the share of --run-queue-limit */
};

/* The limits `cfg` sets for the `count` devices rts[0..count), `tokens`
 * saying whether tokens are configured. */
void ghd_tenant_limits_init(struct ghd_tenant_limits *l, const struct ghd_config *cfg, int tokens,
                            const struct ghd_runtime *rts, unsigned count);

#endif
