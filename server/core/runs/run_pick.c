/* The scheduler: which queued run a worker of a device takes next
 * (run_queue_internal.h).
 *
 * Each tenant has its share of each device, by weight (the tokens file;
 * 1 by default): start-time fair queueing on device time. A tenant's
 * virtual time on a device is the device time its runs took there over its
 * weight. A worker takes, of the tenants with a run that may start now, the
 * one whose virtual time is least, and of that tenant its oldest run that
 * may start: a tenant's own runs that share a buffer one of them writes
 * keep their order (must_wait_locked), as they did before there were
 * shares. A run is charged what its tenant's runs take (smoothed) as it
 * starts, so that a tenant with several runs in flight is not picked again
 * and again before any of them ends, and set right when it ends. A tenant
 * that comes back from idle starts at the least virtual time of the tenants
 * busy on the device: idle time is not saved up for a burst.
 *
 * A worker waits on the run it executes, so a short run could still wait
 * behind long ones for a free worker: with shares on (tokens configured) a
 * tenant never holds the last worker of a device, and a run of a tenant
 * below another's share that is running goes to the worker's
 * high-priority stream, whose blocks the GPU schedules ahead of the
 * running kernels' remaining ones (--run-priority). */
#include "run_queue_internal.h"

#include "base/error.h"

/* How far into the queue a worker looks past runs of one tenant that must
 * wait for an earlier one. */
#define GHD_RUN_LOOKAHEAD 32

/* pre: lock held. Whether `run` must wait: a running run, or one queued
 * before it, touches one of its buffers and one of the two writes it. */
static int must_wait_locked(const struct ghd_run_queue *q, const struct ghd_run *run)
{
    for (unsigned i = 0; i < q->worker_count; i++)
        if (q->workers[i].current && ghd_runs_conflict(q->workers[i].current, run))
            return 1;
    for (const struct ghd_run *r = ghd_run_queued_of(q->queued.first); r != run;
         r = ghd_run_queued_of(r->queue_link.next))
        if (ghd_runs_conflict(r, run))
            return 1;
    return 0;
}

static unsigned device_of(const struct ghd_run_queue *q, const struct ghd_run *run)
{
    return ghd_run_queue_rt_of(q, run)->index;
}

/* Whether a tenant with these runs running on a device of `workers` may not
 * take another worker there: the last one is kept for another tenant. */
static int holds_all_but_one(const struct ghd_run_queue *q, const struct ghd_run_tenant *t,
                             unsigned d)
{
    unsigned workers = q->cfg.workers ? q->cfg.workers : 1;
    return q->cfg.shared && workers > 1 && t->running[d] + 1 >= workers;
}

void ghd_run_share_submitted_locked(struct ghd_run_queue *q, struct ghd_run *run)
{
    struct ghd_run_tenant *t = run->tally;
    unsigned d = device_of(q, run);
    t->weight = run->weight ? run->weight : 1;
    if (t->busy[d]++ > 0)
        return;
    /* Back from idle on this device: no credit for the time away. */
    int any = 0;
    double least = 0;
    for (const struct ghd_run_tenant *o = q->tenants; o; o = o->next)
        if (o != t && o->busy[d] && (!any || o->vtime[d] < least)) {
            least = o->vtime[d];
            any = 1;
        }
    if (any && t->vtime[d] < least)
        t->vtime[d] = least;
}

/* Whether a run of `t` taken on device d goes to the high-priority stream:
 * another tenant, further past its share, has a run running there. */
static int is_urgent(const struct ghd_run_queue *q, const struct ghd_run_tenant *t, unsigned d)
{
    if (!q->cfg.shared || !q->cfg.priority)
        return 0;
    for (const struct ghd_run_tenant *o = q->tenants; o; o = o->next)
        if (o != t && o->running[d] && o->vtime[d] > t->vtime[d])
            return 1;
    return 0;
}

struct ghd_run *ghd_run_pick_locked(struct ghd_run_queue *q, const struct ghd_runtime *rt,
                                    int *urgent)
{
    unsigned long scan = ++q->scans;
    unsigned d = rt->index;
    struct ghd_run *best = NULL;
    for (struct ghd_run *run = ghd_run_queued_of(q->queued.first); run;
         run = ghd_run_queued_of(run->queue_link.next)) {
        struct ghd_run_tenant *t = run->tally;
        if (t->scan != scan) {
            t->scan = scan;
            t->waiting = 0;
            t->candidate = 0;
        }
        /* Runs of other devices are other workers' to take: they do not
         * count against the lookahead. */
        if (ghd_run_queue_rt_of(q, run) != rt || t->candidate || t->waiting >= GHD_RUN_LOOKAHEAD)
            continue;
        if (holds_all_but_one(q, t, d)) {
            t->candidate = 1; /* none of its runs this time */
            continue;
        }
        if (must_wait_locked(q, run)) {
            t->waiting++;
            continue;
        }
        t->candidate = 1;
        if (!best || t->vtime[d] < best->tally->vtime[d])
            best = run;
    }
    if (!best)
        return NULL;
    struct ghd_run_tenant *t = best->tally;
    ghd_list_remove(&q->queued, &best->queue_link);
    *urgent = is_urgent(q, t, d);
    best->charged_ms = t->cost_ms;
    t->vtime[d] += t->cost_ms / t->weight;
    t->running[d]++;
    return best;
}

void ghd_run_share_ended_locked(struct ghd_run_queue *q, struct ghd_run *run)
{
    struct ghd_run_tenant *t = run->tally;
    unsigned d = device_of(q, run);
    GHD_ASSERT(t->busy[d] > 0);
    t->busy[d]--;
    if (run->started_ms <= 0) /* dropped from the queue */
        return;
    GHD_ASSERT(t->running[d] > 0);
    t->running[d]--;
    /* Device time where the device measured it; else (a run that failed
     * before its events were read) the time it held its worker. */
    double took = run->device_ms > 0 ? run->device_ms : run->finished_ms - run->started_ms;
    if (took < 0)
        took = 0;
    t->vtime[d] += (took - run->charged_ms) / t->weight;
    t->device_ms += took;
    t->ended++;
    t->cost_ms = t->cost_ms > 0 ? 0.75 * t->cost_ms + 0.25 * took : took;
}
