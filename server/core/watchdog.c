/* The --run-timeout watchdog. A run past its time whose kernel can stop (the
 * host backend's interpreter of user kernels) is asked to, and fails alone.
 * A CUDA kernel cannot be pre-empted (nor can the host's built-ins), so a
 * run of one past its time is reported failed to its waiters and the device
 * treated as lost (its stream never frees, and whatever the kernel still
 * writes is not to be trusted). It polls the running runs every 100 ms: a
 * timeout is seconds, so the poll adds at most a tenth of the smallest one. */
#include "watchdog.h"

#include <errno.h>
#include <time.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "metrics.h"
#include "run_queue.h"
#include "service_internal.h"
#include "service_devices.h"

static void on_loss(void *ctx, unsigned device, const char *reason)
{
    ghd_service_device_lost(ctx, device, reason);
}

static void *watch(void *arg)
{
    struct ghd_service *svc = arg;
    pthread_mutex_lock(&svc->watch_lock);
    while (!svc->watch_stop) {
        struct timespec ts = ghd_clock_deadline(CLOCK_MONOTONIC, 100); /* a tick */
        if (pthread_cond_timedwait(&svc->watch_cond, &svc->watch_lock, &ts) != ETIMEDOUT)
            continue;
        pthread_mutex_unlock(&svc->watch_lock);
        /* The loss is marked before the overdue run's waiter is answered
         * (ghd_run_queue_device_lost, from ghd_service_device_lost): a client
         * that reads /readyz after that reply sees the loss. */
        unsigned stuck = 0;
        if (ghd_run_queue_stop_overdue(svc->runs, svc->cfg.run_timeout_s, &stuck) > 0) {
            char reason[160];
            snprintf(reason, sizeof(reason), "a run passed --run-timeout (%u s); its kernel "
                     "cannot be stopped", svc->cfg.run_timeout_s);
            for (unsigned i = 0; i < svc->runtime_count; i++)
                if (stuck & (1u << i))
                    ghd_service_device_lost(svc, i, reason);
        }
        pthread_mutex_lock(&svc->watch_lock);
    }
    pthread_mutex_unlock(&svc->watch_lock);
    return NULL;
}

int ghd_watchdog_start(struct ghd_service *svc)
{
    pthread_mutex_init(&svc->watch_lock, NULL);
    ghd_cond_init_monotonic(&svc->watch_cond);
    svc->watch_stop = 0;
    svc->watch_started = 0;
    ghd_run_queue_on_loss(svc->runs, on_loss, svc);
    if (!svc->cfg.run_timeout_s)
        return 0;
    if (pthread_create(&svc->watch_thread, NULL, watch, svc) != 0)
        return GHD_EINTERNAL;
    svc->watch_started = 1;
    return 0;
}

void ghd_watchdog_stop(struct ghd_service *svc)
{
    if (svc->watch_started) {
        pthread_mutex_lock(&svc->watch_lock);
        svc->watch_stop = 1;
        pthread_cond_broadcast(&svc->watch_cond);
        pthread_mutex_unlock(&svc->watch_lock);
        pthread_join(svc->watch_thread, NULL);
        svc->watch_started = 0;
    }
}
