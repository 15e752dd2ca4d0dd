#ifndef GHD_CORE_WATCHDOG_H
#define GHD_CORE_WATCHDOG_H

/* Device-loss containment: the run queue's loss hook and the
 * --run-timeout watchdog, both ending in the loss callback its owner gives
 * (the service's: ghd_service_device_lost, core/service.h) for the device
 * concerned. It knows the run queue and that callback, nothing of the
 * service. */
#include <pthread.h>

#include "core/runs/run_queue.h"

struct ghd_watchdog {
    struct ghd_run_queue *runs;
    unsigned run_timeout_s; /* --run-timeout; 0 = none */
    unsigned devices;       /* the runtimes' count */
    ghd_run_loss_fn lost;   /* device i is lost, and why */
    void *ctx;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop, started;
};

/* Hooks `runs` to call lost(ctx, ...) when a run's device is lost and
 * starts the thread that stops runs executing past their timeout.
 * 0 or GHD_EINTERNAL. */
int ghd_watchdog_start(struct ghd_watchdog *w, struct ghd_run_queue *runs,
                       unsigned run_timeout_s, unsigned devices, ghd_run_loss_fn lost,
                       void *ctx);
/* Stops the thread; safe on a watchdog whose start failed or never came
 * (zeroed). */
void ghd_watchdog_stop(struct ghd_watchdog *w);

#endif
