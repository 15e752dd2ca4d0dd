/* How the run queue stops: the server stopping without waiting for runs,
 * the device lost, a run past --run-timeout (run_queue.h). */
#include "run_queue.h"

#include <stdio.h>

#include "base/clock.h"
#include "base/error.h"
#include "run_queue_internal.h"

/* pre: lock held. Answers a running run's waiters now with `code`; its
 * worker still executes it (a kernel cannot be stopped). */
static void report_failed_locked(struct ghd_run *run, int code, const char *detail)
{
    run->status = GHD_RUN_FAILED;
    run->error_code = code;
    ghd_err_set(&run->error, code, "%s", detail);
    run->settled = 1; /* its buffers go when the worker is done with them */
    pthread_cond_broadcast(&run->ended);
}

unsigned ghd_run_queue_abandon(struct ghd_run_queue *q)
{
    unsigned running = 0;
    struct ghd_run_collected c = {0};
    pthread_mutex_lock(&q->lock);
    ghd_run_queue_end_queued_locked(q, NULL, GHD_RUN_CANCELED, GHD_ECANCELED, NULL, &c);
    q->stopping = 1;
    q->abandoned = 1;
    ghd_run_queue_stop_running_locked(q);
    for (unsigned i = 0; i < q->worker_count; i++) {
        struct ghd_run *run = q->workers[i].current;
        if (!run)
            continue;
        /* The worker still executes it; the worker's result is not kept. */
        if (run->status == GHD_RUN_RUNNING)
            report_failed_locked(run, GHD_EUNAVAIL, "the server stopped before the run finished");
        running++;
    }
    pthread_mutex_unlock(&q->lock);
    ghd_run_queue_settle(q, &c);
    return running;
}

void ghd_run_queue_on_loss(struct ghd_run_queue *q, ghd_run_loss_fn fn, void *ctx)
{
    pthread_mutex_lock(&q->lock);
    q->loss_fn = fn;
    q->loss_ctx = ctx;
    pthread_mutex_unlock(&q->lock);
}

void ghd_run_queue_device_lost(struct ghd_run_queue *q, unsigned device, const char *reason)
{
    char detail[sizeof(((struct ghd_run *)0)->error.detail)];
    struct ghd_run_collected c = {0};
    GHD_ASSERT(device < q->nrt);
    const struct ghd_runtime *rt = &q->rts[device];
    if (q->nrt == 1)
        snprintf(detail, sizeof(detail), "the device was lost: %s", reason);
    else
        snprintf(detail, sizeof(detail), "device %u was lost: %s", device, reason);
    pthread_mutex_lock(&q->lock);
    q->lost |= 1u << device;
    ghd_run_queue_end_queued_locked(q, rt, GHD_RUN_FAILED, GHD_EDEVLOST, detail, &c);
    for (unsigned i = 0; i < q->worker_count; i++) {
        struct ghd_run *run = q->workers[i].current;
        if (run && q->workers[i].rt == rt && run->status == GHD_RUN_RUNNING)
            report_failed_locked(run, GHD_EDEVLOST, detail);
    }
    pthread_mutex_unlock(&q->lock);
    ghd_run_queue_settle(q, &c);
}

unsigned ghd_run_queue_stop_overdue(struct ghd_run_queue *q, unsigned limit_s, unsigned *stuck_on)
{
    unsigned stuck = 0, mask = 0;
    double now = ghd_clock_ms(), limit_ms = (double)limit_s * 1e3;
    pthread_mutex_lock(&q->lock);
    for (unsigned i = 0; i < q->worker_count; i++) {
        struct ghd_run *run = q->workers[i].current;
        if (!run || run->status != GHD_RUN_RUNNING || now - run->started_ms <= limit_ms)
            continue;
        /* One that can stop is asked to, and given as long again to do it
         * (it looks every few thousand elements: microseconds). */
        const struct ghd_runtime *rt = q->workers[i].rt;
        if (ghd_run_stoppable(run, rt->dev.kind) && now - run->started_ms <= 2 * limit_ms) {
            atomic_store(&run->stop, GHD_RUN_STOP_TIMEOUT);
        } else {
            stuck++;
            mask |= 1u << rt->index;
        }
    }
    pthread_mutex_unlock(&q->lock);
    if (stuck_on)
        *stuck_on = mask;
    return stuck;
}
