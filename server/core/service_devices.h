#ifndef GHD_CORE_SERVICE_DEVICES_H
#define GHD_CORE_SERVICE_DEVICES_H

#include <jansson.h>

#include "base/err.h"
#include "core/tenancy/caller.h"
#include "device/runtime.h"

/* The devices of a service as requests see them: a device is its index in
 * the service's table (what every API field named `device` means), each one
 * ready or lost on its own. A lost device stays lost until the process
 * restarts: its buffers, runs and modules answer 503 device-lost naming it,
 * while the others go on serving; only when every device is lost do the
 * routes that need a device answer 503 at once (http.c, svc->devloss).
 * Placement chooses a device for what a request leaves open (--placement).
 * Thread-safe. */

struct ghd_service;

/* The runtime of device `index` as a request names it: GHD_EUNPROC when
 * there is no such device (the detail names the valid range), GHD_EDEVLOST
 * when it is lost (the detail names it and why). */
int ghd_service_device(struct ghd_service *svc, long long index, struct ghd_runtime **out,
                       struct ghd_err *err);
/* The device for what names none (--placement): most-free, the ready device
 * with the most free pool (its limit, or the device's free memory without
 * one, less what is in use), the lowest index on a tie; round-robin, the
 * next ready device in turn. GHD_EDEVLOST when none is ready. */
int ghd_service_place(struct ghd_service *svc, struct ghd_runtime **out, struct ghd_err *err);
/* 0 while rt's device is ready; GHD_EDEVLOST with a detail naming it and
 * `what` ("buffer <id>", may be NULL) once it is lost. */
int ghd_service_device_usable(struct ghd_service *svc, const struct ghd_runtime *rt,
                              const char *what, struct ghd_err *err);
/* ghd_service_device_lost (marking a device lost) is service.h's: the
 * service's watchdog calls it. */
/* How many devices are lost now; *err (may be NULL) gets the first lost
 * one's reason when there is one. */
unsigned ghd_service_devices_lost(struct ghd_service *svc, struct ghd_err *err);
/* GET /v1/devices: {"devices": [{index, ordinal, name, uuid, architecture,
 * memory, pool, state, peer_access}]}; memory.free, pool.used and pool.buffers
 * only for a caller with GHD_PERM_FIGURES (with tokens they tell of every
 * tenant's buffers). A device whose health check fails is marked lost
 * first. A new reference. */
json_t *ghd_service_devices_json_new(struct ghd_service *svc, const struct ghd_caller *caller);
/* 0 when the devices --ready-needs asks for are ready (any: at least one;
 * all: every one), else GHD_EDEVLOST with a detail naming the lost ones
 * (ghd_service_readiness, for /readyz and the agent check). *devices (may
 * be NULL; either way) gets [{index, state, reason?}], a new reference. */
int ghd_service_devices_ready(struct ghd_service *svc, json_t **devices, struct ghd_err *err);

#endif
