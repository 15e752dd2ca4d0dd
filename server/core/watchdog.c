/* The deadline watchdog. A run past its timeout (timeout_s, at most
 * --run-timeout) is asked to stop: it stops at its next stop point (the
 * next step of a pipeline, or within a user kernel, whose host interpreter
 * and CUDA code look at a stop flag) and fails alone. A step that cannot be
 * stopped (a built-in, cuBLAS, a raw module) runs to its end first; one
 * that still runs --run-timeout after the deadline is stuck: its waiters
 * are answered and the device treated as lost (its stream never frees, and
 * whatever the kernel still writes is not to be trusted). It polls the
 * running runs every 100 ms, with or without --run-timeout (a run may
 * carry a timeout_s of its own): a timeout is seconds, so the poll adds at
 * most a tenth of one. */
#include "watchdog.h"

#include <errno.h>
#include <time.h>

#include "base/clock.h"
#include "base/error.h"

static void *watch(void *arg)
{
    struct ghd_watchdog *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        struct timespec ts = ghd_clock_deadline(CLOCK_MONOTONIC, 100); /* a tick */
        if (pthread_cond_timedwait(&w->cond, &w->lock, &ts) != ETIMEDOUT)
            continue;
        pthread_mutex_unlock(&w->lock);
        /* The loss is marked before the overdue run's waiter is answered
         * (ghd_run_queue_device_lost, from the loss callback): a client
         * that reads /readyz after that reply sees the loss. */
        unsigned stuck = 0;
        char reason[256];
        if (ghd_run_queue_stop_overdue(w->runs, w->run_timeout_s, &stuck, reason,
                                       sizeof(reason)) > 0) {
            for (unsigned i = 0; i < w->devices; i++)
                if (stuck & (1u << i))
                    w->lost(w->ctx, i, reason);
        }
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int ghd_watchdog_start(struct ghd_watchdog *w, struct ghd_run_queue *runs,
                       unsigned run_timeout_s, unsigned devices, ghd_run_loss_fn lost,
                       void *ctx)
{
    *w = (struct ghd_watchdog){.runs = runs, .run_timeout_s = run_timeout_s,
                               .devices = devices, .lost = lost, .ctx = ctx};
    pthread_mutex_init(&w->lock, NULL);
    ghd_cond_init_monotonic(&w->cond);
    ghd_run_queue_on_loss(runs, lost, ctx);
    if (pthread_create(&w->thread, NULL, watch, w) != 0)
        return GHD_EINTERNAL;
    w->started = 1;
    return 0;
}

void ghd_watchdog_stop(struct ghd_watchdog *w)
{
    if (w->started) {
        pthread_mutex_lock(&w->lock);
        w->stop = 1;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
        w->started = 0;
    }
}
