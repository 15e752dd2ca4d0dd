#ifndef GHD_CORE_SERVICE_H
#define GHD_CORE_SERVICE_H

#include <jansson.h>
#include <time.h>

#include "base/err.h"
#include "base/owner.h"
#include "core/tenancy/caller.h"
#include "core/config/config.h"
#include "device/runtime.h"

/* The service: configuration, one runtime per device, the buffer table,
 * the run queue, tenants' kernels, modules and regions. Opaque outside
 * server/core (its fields are service_internal.h's, for the core alone):
 * the layers above reach it through functions, one core operation per
 * request (service_*.h), and the few accessors below. */

struct ghd_service;
struct ghd_auth;
struct ghd_metrics;
struct ghd_devloss;

/* Chooses the backend (auto: CUDA when a device is usable, else host; the
 * choice is logged), initialises the runtime, buffers and run queue. On
 * failure sets `err` to the code and a one-line reason. ghd_service_new
 * allocates the service as well (*out, for ghd_service_free);
 * ghd_service_init fills one the caller holds (the core's own tests). */
int ghd_service_new(const struct ghd_config *cfg, struct ghd_service **out, struct ghd_err *err);
void ghd_service_free(struct ghd_service *svc);
int ghd_service_init(struct ghd_service *svc, const struct ghd_config *cfg, struct ghd_err *err);
void ghd_service_destroy(struct ghd_service *svc);
/* The runtime of device `index` of this service; NULL past the last. */
struct ghd_runtime *ghd_service_runtime(struct ghd_service *svc, unsigned index);

/* What the layers above read of the service (service_access.c): the
 * options it runs with, its tokens, its metrics, the owner prefix of its
 * ids, and whether every device is lost (the routes that need one answer
 * 503). Each is never NULL once the service is initialised. */
const struct ghd_config *ghd_service_config(const struct ghd_service *svc);
struct ghd_auth *ghd_service_auth(struct ghd_service *svc);
struct ghd_metrics *ghd_service_metrics(struct ghd_service *svc);
const struct ghd_owner *ghd_service_owner(const struct ghd_service *svc);
struct ghd_devloss *ghd_service_devloss(struct ghd_service *svc);
/* The trace exporter (--otlp-endpoint, base/trace_export.h); NULL when
 * tracing is off (service_trace.c). */
struct ghd_tracer *ghd_service_tracer(struct ghd_service *svc);
/* Runs: those queued or running, and, once the wait for them is over, the
 * executing ones reported failed (ghd_run_queue_abandon: how many). */
unsigned ghd_service_runs_active(struct ghd_service *svc);
unsigned ghd_service_runs_abandon(struct ghd_service *svc);
/* Removes the buffers whose time to live is over; returns how many. */
size_t ghd_service_expire(struct ghd_service *svc, time_t now);

/* service_devices.c. Marks device `index` lost (once; later calls keep
 * the first reason): logs it, counts it in /metrics, fails its runs queued
 * and running, and, when it was the last ready device, marks the whole
 * service lost. The watchdog (watchdog.h) is handed it. */
void ghd_service_device_lost(struct ghd_service *svc, unsigned index, const char *reason);

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
