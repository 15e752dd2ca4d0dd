#ifndef GHD_CORE_WATCHDOG_H
#define GHD_CORE_WATCHDOG_H

/* Device-loss containment: the run queue's loss hook and the
 * --run-timeout watchdog, both ending in ghd_service_device_lost
 * (core/service_devices.h) for the device concerned. */
struct ghd_service;

/* Hooks the run queue and starts the thread that stops runs executing past
 * their timeout (watchdog.c). 0 or GHD_EINTERNAL. */
int ghd_watchdog_start(struct ghd_service *svc);
/* Stops the thread; NULL-safe on a service whose start failed. */
void ghd_watchdog_stop(struct ghd_service *svc);

#endif
