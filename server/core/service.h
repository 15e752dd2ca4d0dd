#ifndef GHD_SERVER_SERVICE_H
#define GHD_SERVER_SERVICE_H

#include <jansson.h>
#include <stdatomic.h>
#include <time.h>

#include "base/owner.h"
#include "buffer.h"
#include "caller.h"
#include "config.h"
#include "staging_caps.h"
#include "devloss.h"
#include "inline_defs.h"
#include "region.h"
#include "service_usage.h"
#include "kernels/raw/module.h"
#include "device/runtime.h"
#include "kernels/user/ukernel.h"

/* The service: configuration, one runtime per device, the buffer table and
 * the run queue. Handlers reach it through req->svc. */

struct ghd_run_queue;
struct ghd_auth;
struct ghd_metrics;

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
    pthread_t watch_thread;           /* core/watchdog.c (--run-timeout) */
    pthread_mutex_t watch_lock;
    pthread_cond_t watch_cond;
    int watch_stop, watch_started;
    time_t started;
    struct ghd_owner owner; /* --instance and this start's boot: every id's prefix */
    atomic_int ready;
};

/* Chooses the backend (auto: CUDA when a device is usable, else host; the
 * choice is logged), initialises the runtime, buffers and run queue. On
 * failure sets `err` to the code and a one-line reason. */
int ghd_service_init(struct ghd_service *svc, const struct ghd_config *cfg, struct ghd_err *err);
void ghd_service_destroy(struct ghd_service *svc);
/* The runtime of device `index` of this service; NULL past the last. */
struct ghd_runtime *ghd_service_runtime(struct ghd_service *svc, unsigned index);

/* service_ready.c. Whether the service takes new work: 0, or GHD_EUNAVAIL
 * while it starts or stops (svc->ready is 0), GHD_EDEVLOST when the devices
 * --ready-needs asks for are not ready (ghd_service_devices_ready: a device
 * whose health check fails is lost); `err` says which. *devices (may be
 * NULL) gets each device's state once the service runs, a new reference. */
int ghd_service_readiness(struct ghd_service *svc, json_t **devices, struct ghd_err *err);
/* The /readyz body, for a service that is ready (ghd_service_readiness's
 * codes otherwise): {status, instance, boot, backend, device, devices}, and
 * the pools' and staging rings' sums ("pool", "staging") for a caller with
 * GHD_PERM_FIGURES alone: they sum every tenant's use. A new reference. */
int ghd_service_ready_json(struct ghd_service *svc, const struct ghd_caller *caller,
                           json_t **body, struct ghd_err *err);
/* Whether the service takes new work (0 while it starts or stops), and
 * the switch main.c turns. */
int ghd_service_is_ready(struct ghd_service *svc);
void ghd_service_set_ready(struct ghd_service *svc, int ready);
/* The share of the device pools' limits not in use, 0..100 (rounded down;
 * 100 for pools without a limit or reservation). */
unsigned ghd_service_free_percent(struct ghd_service *svc);

#endif
