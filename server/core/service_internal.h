#ifndef GHD_CORE_SERVICE_INTERNAL_H
#define GHD_CORE_SERVICE_INTERNAL_H

#include "base/err.h"
#include "base/trace_export.h"

/* The service's fields, for server/core alone (and the core's white-box
 * tests): the build defines GHD_CORE_INTERNAL for the core library and the
 * tests, and ops_layers refuses an include of this header from any other
 * folder. The layers above see service.h's functions. */
#ifndef GHD_CORE_INTERNAL
#error "core/service_internal.h is the core's own: use core/service.h's functions"
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "base/owner.h"
#include "core/buffers/buffer.h"
#include "cluster.h"
#include "core/config/config.h"
#include "core/transfer/staging_caps.h"
#include "devloss.h"
#include "core/runs/inline_defs.h"
#include "core/regions/region.h"
#include "service.h"
#include "core/tenancy/tenant_limits.h"
#include "watchdog.h"
#include "kernels/raw/module.h"
#include "device/runtime.h"
#include "kernels/user/ukernel.h"

struct ghd_run_queue;

struct ghd_service {
    struct ghd_config cfg;
    struct ghd_runtime runtimes[GHD_MAX_DEVICES];
    unsigned runtime_count;
    struct ghd_tenant_limits limits; /* every tenant's, from the options and whether tokens are on */
    struct ghd_buffer_table buffers;
    struct ghd_region_table regions; /* same-host clients' memory (--allow-shm) */
    struct ghd_run_queue *runs;
    struct ghd_ukernel_store kernels; /* user kernels, every tenant's */
    struct ghd_ulimits kernel_limits;
    struct ghd_ucompiler *compiler; /* NVRTC for user kernels; NULL without it */
    struct ghd_auth *auth; /* bearer tokens; never NULL after init */
    struct ghd_staging_caps staging_caps; /* staging chunks per client address and tenant */
    struct ghd_rmodule_store modules; /* raw CUDA modules, every tenant's */
    struct ghd_inline_defs inline_defs; /* kernels and modules runs send by value */
    /* Every device is lost: the routes that need one answer 503 (http.c). */
    struct ghd_devloss devloss;
    /* Each device, once lost, stays lost (core/service_devices.h). */
    struct ghd_devloss device_loss[GHD_MAX_DEVICES];
    atomic_uint devices_lost;
    atomic_uint place_next; /* --placement round-robin: the next device to try */
    struct ghd_metrics *metrics;      /* what /metrics shows; never NULL after init */
    struct ghd_watchdog watchdog;     /* core/watchdog.c (--run-timeout) */
    time_t started;
    struct ghd_owner owner; /* --instance and this start's boot: every id's prefix */
    struct ghd_cluster *cluster; /* --advertise-url, --peers and what the peers said */
    atomic_int ready;
    /* --otlp-endpoint's exporter (base/trace_export.h); NULL: tracing off.
     * Freed after the runs, which may hold a sampled request's trace. */
    struct ghd_tracer *tracer;
};


/* The service's trace exporter, from --otlp-endpoint and --trace-sample:
 * none without an endpoint. 0, or the exporter's code with `err` set.
 * Freed by ghd_service_destroy (ghd_tracer_free) after the runs. */
int ghd_service_tracing_open(struct ghd_service *svc, struct ghd_err *err);

#endif
