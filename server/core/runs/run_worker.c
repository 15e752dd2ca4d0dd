/* The run queue's workers (run_queue_internal.h): each takes the run the
 * scheduler picks for its device (run_pick.c), executes it on its own
 * stream and ends it. A run whose request waits for it may instead execute
 * on the request's own thread (ghd_run_worker_lend_locked): when a worker of
 * its device is idle and nothing else is queued there, the scheduler picks
 * it as it would for that worker, and the request's thread executes it with
 * that worker's stream and events, lent for the run's time, so that the run
 * costs no hand-off to a worker and no wake-up of its waiter. Everything
 * that looks at what workers execute (conflicts, stops, deadlines, the
 * device lost) sees it as that worker's run. Its steps are launched without
 * a wait (such runs only: run_create.c) and their ends polled for at most
 * GHD_RUN_INLINE_POLL_NS; a kernel not done by then is the worker's to wait
 * for (struct ghd_run_exec), and the request's thread waits for the run as
 * for a queued one, so that a server stopping or a device lost answers it
 * while that kernel still runs. */
#include "run_queue_internal.h"

#include "run_graph.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"

/* How long a run executing on its request's thread polls for a kernel's
 * end before it hands the wait to its worker: about what a hand-off to a
 * worker and a wake-up cost, far more than a small kernel takes. */
#define GHD_RUN_INLINE_POLL_NS 200000L

/* The worker's streams and events. `urgent` is its high-priority stream
 * (run_pick.c), where the queue gives priorities and the backend has them;
 * NULL otherwise. */
static int kit_open(struct ghd_run_worker *w)
{
    struct ghd_device *dev = &w->rt->dev;
    struct ghd_err *err = &w->setup_err;
    int rc = ghd_runtime_stream_acquire(w->rt, &w->stream, err);
    if (rc == 0 && w->q->cfg.shared && w->q->cfg.priority && dev->ops->stream_new_urgent)
        rc = dev->ops->stream_new_urgent(dev, &w->urgent, err);
    for (int i = 0; i < 2 && rc == 0; i++)
        rc = dev->ops->event_new(dev, &w->ev[i], err);
    return rc;
}

static void kit_close(struct ghd_run_worker *w)
{
    struct ghd_device *dev = &w->rt->dev;
    for (int i = 0; i < 2; i++)
        if (w->ev[i])
            dev->ops->event_free(dev, w->ev[i]);
    if (w->urgent)
        dev->ops->stream_free(dev, w->urgent);
    if (w->stream)
        ghd_runtime_stream_release(w->rt, w->stream);
}

/* pre: lock held, `run` taken by the scheduler for w's device. */
static void start_locked(struct ghd_run_worker *w, struct ghd_run *run)
{
    w->current = run;
    run->status = GHD_RUN_RUNNING;
    ghd_run_mark(run, GHD_RUN_MARK_STARTED);
    run->started_ms = (double)run->mark_ns[GHD_RUN_MARK_STARTED] / 1e6;
}

/* Once its execution returned `rc`: a device fault that poisoned the device
 * leaves this run its own error and tells the others of the loss. */
static void check_loss(struct ghd_run_worker *w, struct ghd_run *run, int rc,
                       const struct ghd_err *err, int reported)
{
    struct ghd_run_queue *q = w->q;
    struct ghd_device *dev = &w->rt->dev;
    if (reported || !rc || !q->loss_fn || dev->ops->health(dev, NULL) == 0)
        return;
    pthread_mutex_lock(&q->lock);
    if (run->status == GHD_RUN_RUNNING)
        run->status = GHD_RUN_FAILED;
    pthread_mutex_unlock(&q->lock);
    q->loss_fn(q->loss_ctx, w->rt->index, err->detail);
}

/* A started run's execution ended with `rc` (err its detail): ends it.
 * pre: lock not held; returns with it not held, the run settled. */
static void finish(struct ghd_run_worker *w, struct ghd_run *run, int rc, struct ghd_err *err)
{
    struct ghd_run_queue *q = w->q;
    rc = ghd_run_queue_stopped(run, rc, err);
    struct ghd_run_collected c = {0};
    pthread_mutex_lock(&q->lock);
    /* A run reported failed already (the device lost, --run-timeout, the
     * server stopping) has answered its waiters with that error: the late
     * result of its kernel is dropped. */
    int reported = run->status != GHD_RUN_RUNNING;
    if (!reported && rc) {
        run->error_code = rc;
        run->error = *err;
    }
    pthread_mutex_unlock(&q->lock);
    if (rc)
        ghd_log(GHD_LOG_WARN, "run %s failed: %s%s", run->id, err->detail,
                reported ? " (after it was reported failed: this result is dropped)" : "");
    check_loss(w, run, rc, err, reported);
    pthread_mutex_lock(&q->lock);
    w->current = NULL;
    if (run->status == GHD_RUN_RUNNING) /* else it was reported failed already */
        run->status = !run->error_code ? GHD_RUN_SUCCEEDED
                      : run->error_code == GHD_ECANCELED &&
                              atomic_load(&run->stop) == GHD_RUN_STOP_CANCEL
                          ? GHD_RUN_CANCELED
                          : GHD_RUN_FAILED;
    ghd_run_queue_ended_locked(q, run, &c);
    if (run->forget_at_end)
        ghd_run_queue_forget_locked(q, run, &c);
    pthread_mutex_unlock(&q->lock);
    ghd_run_queue_settle(q, &c);
}

/* The run's execution with the worker's kit. */
static struct ghd_run_exec kit_exec(struct ghd_run_worker *w, struct ghd_run *run, int urgent,
                                    long handoff_ns)
{
    return (struct ghd_run_exec){.rt = w->rt,
                                 .stream = urgent && w->urgent ? w->urgent : w->stream,
                                 .ev = w->ev,
                                 .run = run,
                                 .handoff_ns = handoff_ns};
}

/* Executes a started run and ends it. pre: lock not held; returns with it
 * not held, the run settled. */
static void execute(struct ghd_run_worker *w, struct ghd_run *run, int urgent)
{
    struct ghd_err err = {0}; /* this thread's: the run's is shared with its waiters */
    struct ghd_run_exec x = kit_exec(w, run, urgent, 0);
    int rc = w->setup ? ghd_err_set(&err, w->setup, "run worker setup: %s",
                                    ghd_err_text(&w->setup_err, w->setup))
                      : ghd_run_exec_graphed(w->q->graphs, &x, &err);
    finish(w, run, rc, &err);
}

/* A lent run's execution handed back at its wait: the worker waits for its
 * kernel, ends it and is lent no more. pre: lock held, w->handed; returns
 * with it held. */
static void go_on_handed(struct ghd_run_worker *w)
{
    struct ghd_run_queue *q = w->q;
    struct ghd_run_exec x = w->exec;
    w->handed = 0;
    pthread_mutex_unlock(&q->lock);
    struct ghd_err err = {0};
    int rc = ghd_run_exec_graphed(q->graphs, &x, &err);
    finish(w, x.run, rc, &err);
    pthread_mutex_lock(&q->lock);
    w->lent = 0;
}

void *ghd_run_worker_main(void *arg)
{
    struct ghd_run_worker *w = arg;
    struct ghd_run_queue *q = w->q;
    w->setup = kit_open(w); /* its error is reported by each run it takes */
    pthread_mutex_lock(&q->lock);
    for (;;) {
        struct ghd_run *run = NULL;
        int urgent = 0;
        /* While lent, its kit is another thread's: it takes nothing and does
         * not stop until it is given back, or handed the lent run's wait. */
        while ((w->lent && !w->handed) ||
               (!w->lent && !(run = ghd_run_pick_locked(q, w->rt, &urgent)) && !q->stopping)) {
            if (!w->idle && !w->lent) {
                w->idle = 1;
                w->idle_next = q->idle[w->rt->index];
                q->idle[w->rt->index] = w;
            }
            pthread_cond_wait(&w->wake, &q->lock);
        }
        if (w->handed) {
            go_on_handed(w);
            continue;
        }
        if (!run)
            break;
        start_locked(w, run);
        pthread_mutex_unlock(&q->lock);
        execute(w, run, urgent);
        pthread_mutex_lock(&q->lock);
    }
    pthread_mutex_unlock(&q->lock);
    kit_close(w);
    return NULL;
}

/* pre: lock held. Whether a run of `rt`'s device other than `run` is
 * queued ahead of it. */
static int other_queued_locked(const struct ghd_run_queue *q, const struct ghd_runtime *rt,
                               const struct ghd_run *run)
{
    for (const struct ghd_run *r = ghd_run_queued_of(q->queued.first); r && r != run;
         r = ghd_run_queued_of(r->queue_link.next))
        if (ghd_run_queue_rt_of(q, r) == rt)
            return 1;
    return 0;
}

struct ghd_run_worker *ghd_run_worker_lend_locked(struct ghd_run_queue *q, struct ghd_run *run,
                                                  int *urgent)
{
    struct ghd_runtime *rt = ghd_run_queue_rt_of(q, run);
    struct ghd_run_worker *w = q->idle[rt->index];
    if (!q->cfg.inline_runs || !run->may_inline || !w || w->setup ||
        other_queued_locked(q, rt, run))
        return NULL;
    /* The scheduler decides as for the idle worker: its fairness, its
     * charge, and the order of runs that share a buffer. */
    struct ghd_run *taken = ghd_run_pick_locked(q, rt, urgent);
    if (!taken)
        return NULL;
    GHD_ASSERT(taken == run); /* the only queued run of its device */
    q->idle[rt->index] = w->idle_next;
    w->idle = 0;
    w->lent = 1;
    run->ran_inline = 1;
    start_locked(w, run);
    return w;
}

void ghd_run_worker_execute_lent(struct ghd_run_worker *w, struct ghd_run *run, int urgent)
{
    struct ghd_run_queue *q = w->q;
    struct ghd_err err = {0};
    struct ghd_run_exec x = kit_exec(w, run, urgent, GHD_RUN_INLINE_POLL_NS);
    int rc = ghd_run_exec_graphed(q->graphs, &x, &err);
    if (rc == GHD_RUN_HANDED_OFF) { /* the worker waits for the kernel; the waiter is free */
        x.handoff_ns = 0;
        pthread_mutex_lock(&q->lock);
        w->exec = x;
        w->handed = 1;
        pthread_cond_signal(&w->wake);
        pthread_mutex_unlock(&q->lock);
        return;
    }
    finish(w, run, rc, &err);
    pthread_mutex_lock(&q->lock);
    w->lent = 0;
    /* Back on the idle stack; it still sleeps, so a queued run wakes it. */
    w->idle = 1;
    w->idle_next = q->idle[w->rt->index];
    q->idle[w->rt->index] = w;
    if (q->stopping)
        pthread_cond_signal(&w->wake);
    else if (!ghd_list_empty(&q->queued))
        ghd_run_queue_wake_idle_locked(q, w->rt, 1);
    pthread_mutex_unlock(&q->lock);
}
