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

/* pre: lock held. The run's deadline has passed: ask it to stop. Still
 * running --run-timeout later, it is stuck (returns 1): its step could not
 * be stopped, the device is held. A tenant's own shorter timeout_s moves
 * when it is asked, never how long the device is given: a device is lost
 * no sooner than --run-timeout after the run's own deadline. */
static int overdue_locked(struct ghd_run *run, const struct ghd_runtime *rt, double now,
                          unsigned limit_s, char *reason, size_t len)
{
    double ran_s = (now - run->started_ms) / 1e3;
    if (run->timeout_s <= 0 || ran_s <= run->timeout_s)
        return 0;
    ghd_run_ask_stop(run, GHD_RUN_STOP_TIMEOUT);
    if (!limit_s || ran_s <= run->timeout_s + limit_s)
        return 0;
    if (reason && !reason[0])
        snprintf(reason, len, "a run passed its timeout (%g s) and its step's kernel (%.64s%s) "
                 "still ran --run-timeout (%u s) later", run->timeout_s, ghd_run_step_kernel(run),
                 ghd_run_step_stoppable(run, rt->dev.kind) ? "" : ", which cannot be stopped",
                 limit_s);
    return 1;
}

unsigned ghd_run_queue_stop_overdue(struct ghd_run_queue *q, unsigned limit_s, unsigned *stuck_on,
                                    char *reason, size_t len)
{
    unsigned stuck = 0, mask = 0;
    double now = ghd_clock_ms();
    if (reason && len)
        reason[0] = 0;
    pthread_mutex_lock(&q->lock);
    for (unsigned i = 0; i < q->worker_count; i++) {
        struct ghd_run *run = q->workers[i].current;
        const struct ghd_runtime *rt = q->workers[i].rt;
        if (run && run->status == GHD_RUN_RUNNING &&
            overdue_locked(run, rt, now, limit_s, reason, len)) {
            stuck++;
            mask |= 1u << rt->index;
        }
    }
    pthread_mutex_unlock(&q->lock);
    if (stuck_on)
        *stuck_on = mask;
    return stuck;
}

int ghd_run_queue_stopped(struct ghd_run *run, int rc, struct ghd_err *err)
{
    if (rc != GHD_ECANCELED)
        return rc;
    char how[sizeof(err->detail)];
    snprintf(how, sizeof(how), "%s", err->detail);
    switch ((enum ghd_run_stop)atomic_load(&run->stop)) {
    case GHD_RUN_STOP_TIMEOUT:
        /* The request asked for more than its time allows: the client's to
         * change (422). */
        return ghd_err_set(err, GHD_EUNPROC, "the run passed its timeout of %g s (timeout_s, at "
                           "most --run-timeout) and was stopped (%.300s); ask for fewer "
                           "elements, or for a larger timeout_s or --run-timeout",
                           run->timeout_s, how);
    case GHD_RUN_STOP_CANCEL:
        return ghd_err_set(err, GHD_ECANCELED, "canceled while it ran (%.300s)", how);
    default:
        return rc;
    }
}
