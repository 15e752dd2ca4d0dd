#include "run_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "core/metrics/metrics.h"
#include "run_graph.h"
#include "run_queue_internal.h"
#include "core/buffers/write_conds.h"

/* ---- the index by id: every run from submission until it is forgotten ---- */

static void index_add_locked(struct ghd_run_queue *q, struct ghd_run *run)
{
    ghd_idmap_insert(&q->by_id, &run->by_id, run->id);
}

static void index_remove_locked(struct ghd_run_queue *q, struct ghd_run *run)
{
    ghd_idmap_remove(&q->by_id, &run->by_id);
}

static struct ghd_run *done_run(struct ghd_list_node *n)
{
    return ghd_list_entry(n, struct ghd_run, done_link);
}

struct ghd_runtime *ghd_run_queue_rt_of(const struct ghd_run_queue *q, const struct ghd_run *run)
{
    return run->rt ? run->rt : &q->rts[0];
}

/* pre: lock held. The queue's tally of `tenant`, created on first use (NULL
 * when that allocation fails). */
static struct ghd_run_tenant *tally_locked(struct ghd_run_queue *q, const char *tenant, int create)
{
    for (struct ghd_run_tenant *t = q->tenants; t; t = t->next)
        if (strcmp(t->name, tenant) == 0)
            return t;
    struct ghd_run_tenant *t = create ? calloc(1, sizeof(*t)) : NULL;
    if (!t)
        return NULL;
    snprintf(t->name, sizeof(t->name), "%s", tenant);
    t->next = q->tenants;
    q->tenants = t;
    return t;
}

static int run_conds_hold(void *ctx)
{
    struct ghd_run *run = ctx;
    return ghd_run_conds_hold(run, &run->error, &run->precond_version);
}

static void run_bump_writes(void *ctx)
{
    ghd_run_bump_writes(ctx);
}

/* ---- collect under the lock, release after (run_queue_internal.h) -------- */

static void record_metrics(struct ghd_run_queue *q, const struct ghd_run *run)
{
    const char *kernel =
        run->pipeline ? "pipeline" : ghd_kernel_metric_label(run->steps[0].kernel);
    double queued_s = run->started_ms > 0 ? (run->started_ms - run->queued_at_ms) / 1e3 : -1;
    ghd_metrics_run(q->cfg.metrics, ghd_run_queue_rt_of(q, run)->index, kernel,
                    ghd_run_status_name(run->status), (double)run->device_ms / 1e3, queued_s);
    if (run->started_ms > 0)
        ghd_metrics_tenant_run(q->cfg.metrics, run->tenant, (double)run->device_ms / 1e3);
}

void ghd_run_queue_settle(struct ghd_run_queue *q, struct ghd_run_collected *c)
{
    struct ghd_run *r, *next;
    /* An ended run's status and times no longer change, and only this
     * thread touches its calls now (it holds a reference). */
    for (r = c->settle; r; r = r->settle_next) {
        ghd_run_release_calls(r);
        record_metrics(q, r);
    }
    if (c->settle) {
        pthread_mutex_lock(&q->lock);
        for (r = c->settle; r; r = r->settle_next) {
            r->settled = 1;
            pthread_cond_broadcast(&r->ended);
        }
        pthread_mutex_unlock(&q->lock);
    }
    for (r = c->settle; r; r = next) {
        next = r->settle_next;
        ghd_run_unref(r);
    }
    for (r = c->drop; r; r = next) {
        next = r->drop_next;
        ghd_run_unref(r);
    }
    c->settle = c->drop = NULL;
}

/* pre: lock held. Forgets a finished run: off the kept list and the index. */
static void done_unlink_locked(struct ghd_run_queue *q, struct ghd_run *run)
{
    index_remove_locked(q, run);
    ghd_list_remove(&q->done, &run->done_link);
    q->done_count--;
    run->tally->kept--;
}

void ghd_run_queue_wake_idle_locked(struct ghd_run_queue *q, const struct ghd_runtime *rt, int all)
{
    for (unsigned d = 0; d < q->nrt; d++) {
        if (rt && rt != &q->rts[d])
            continue;
        do {
            struct ghd_run_worker *w = q->idle[d];
            if (!w)
                break;
            q->idle[d] = w->idle_next;
            w->idle = 0;
            pthread_cond_signal(&w->wake);
        } while (all);
    }
}

void ghd_run_queue_forget_locked(struct ghd_run_queue *q, struct ghd_run *run,
                          struct ghd_run_collected *c)
{
    done_unlink_locked(q, run);
    run->drop_next = c->drop;
    c->drop = run;
}

void ghd_run_queue_ended_locked(struct ghd_run_queue *q, struct ghd_run *run,
                             struct ghd_run_collected *c)
{
    ghd_run_bump_writes(run);
    run->finished_ms = ghd_clock_ms();
    q->active--;
    run->tally->active--;
    ghd_run_share_ended_locked(q, run);
    ghd_list_push_back(&q->done, &run->done_link);
    q->done_count++;
    run->tally->kept++;
    ghd_run_ref(run);
    run->settle_next = c->settle;
    c->settle = run;
    if (!ghd_list_empty(&q->queued))
        ghd_run_queue_wake_idle_locked(q, NULL, 1);
}

void ghd_run_queue_end_queued_locked(struct ghd_run_queue *q, const struct ghd_runtime *only,
                                     enum ghd_run_status status, int code, const char *detail,
                                     struct ghd_run_collected *c)
{
    for (struct ghd_run *r = ghd_run_queued_of(q->queued.first), *next; r; r = next) {
        next = ghd_run_queued_of(r->queue_link.next);
        if (only && ghd_run_queue_rt_of(q, r) != only)
            continue;
        ghd_list_remove(&q->queued, &r->queue_link);
        r->status = status;
        r->error_code = code;
        if (detail)
            ghd_err_set(&r->error, code, "%s", detail);
        ghd_run_queue_ended_locked(q, r, c);
    }
}

void ghd_run_queue_stop_running_locked(struct ghd_run_queue *q)
{
    for (unsigned i = 0; i < q->worker_count; i++)
        if (q->workers[i].current)
            ghd_run_ask_stop(q->workers[i].current, GHD_RUN_STOP_SERVER);
}

/* Cancels what is queued and stops the workers (the first `started` of them). */
static void stop_workers(struct ghd_run_queue *q, unsigned started)
{
    struct ghd_run_collected c = {0};
    pthread_mutex_lock(&q->lock);
    ghd_run_queue_end_queued_locked(q, NULL, GHD_RUN_CANCELED, GHD_ECANCELED, NULL, &c);
    q->stopping = 1;
    ghd_run_queue_stop_running_locked(q);
    ghd_run_queue_wake_idle_locked(q, NULL, 1);
    pthread_mutex_unlock(&q->lock);
    ghd_run_queue_settle(q, &c);
    for (unsigned i = 0; i < started; i++)
        pthread_join(q->workers[i].thread, NULL);
}

static void queue_destroy(struct ghd_run_queue *q)
{
    while (!ghd_list_empty(&q->done)) {
        struct ghd_run *r = done_run(q->done.first);
        done_unlink_locked(q, r);
        ghd_run_unref(r);
    }
    while (q->tenants) {
        struct ghd_run_tenant *t = q->tenants;
        q->tenants = t->next;
        free(t);
    }
    for (unsigned i = 0; i < q->worker_count; i++)
        pthread_cond_destroy(&q->workers[i].wake);
    pthread_mutex_destroy(&q->lock);
    ghd_idmap_destroy(&q->by_id);
    ghd_run_graphs_free(q->graphs);
    free(q->workers);
    free(q);
}

int ghd_run_queue_new(const struct ghd_run_queue_config *cfg, struct ghd_runtime *rts,
                      unsigned nrt, struct ghd_run_queue **out)
{
    GHD_ASSERT(nrt >= 1 && nrt <= GHD_MAX_DEVICES);
    struct ghd_run_queue *q = calloc(1, sizeof(*q));
    unsigned per_device = cfg->workers ? cfg->workers : 1, count = per_device * nrt;
    /* About two slots per run that can be known at once, at most 64Ki. */
    size_t slots = 64, known = (size_t)cfg->queue_limit + cfg->runs_kept;
    while (slots < 2 * known && slots < ((size_t)1 << 16))
        slots *= 2;
    if (!q || !(q->workers = calloc(count, sizeof(*q->workers))) ||
        ghd_run_graphs_new(cfg->graphs, &q->graphs) != 0 ||
        ghd_idmap_init(&q->by_id, slots) != 0) {
        if (q) {
            free(q->workers);
            ghd_run_graphs_free(q->graphs);
        }
        free(q);
        return GHD_ENOHOSTMEM;
    }
    ghd_list_init(&q->queued);
    ghd_list_init(&q->done);
    q->cfg = *cfg;
    q->rts = rts;
    q->nrt = nrt;
    q->worker_count = count;
    pthread_mutex_init(&q->lock, NULL);
    for (unsigned i = 0; i < count; i++)
        pthread_cond_init(&q->workers[i].wake, NULL);
    for (unsigned i = 0; i < count; i++) {
        q->workers[i].q = q;
        q->workers[i].rt = &rts[i / per_device];
        if (pthread_create(&q->workers[i].thread, NULL, ghd_run_worker_main, &q->workers[i]) != 0) {
            ghd_log(GHD_LOG_ERROR, "cannot start run worker %u of %u", i + 1, count);
            stop_workers(q, i);
            queue_destroy(q);
            return GHD_EINTERNAL;
        }
    }
    *out = q;
    return 0;
}

void ghd_run_queue_free(struct ghd_run_queue *q)
{
    if (!q)
        return;
    stop_workers(q, q->worker_count);
    queue_destroy(q);
}

/* pre: lock held. The oldest kept run of the tenant that keeps the most
 * (of the tenants that keep as many, the one whose oldest run is oldest). */
static struct ghd_run *most_kept_oldest_locked(struct ghd_run_queue *q)
{
    unsigned most = 0;
    for (const struct ghd_run_tenant *t = q->tenants; t; t = t->next)
        most = t->kept > most ? t->kept : most;
    for (struct ghd_run *r = done_run(q->done.first); r; r = done_run(r->done_link.next))
        if (r->tally->kept == most)
            return r;
    return NULL;
}

/* pre: lock held. Forgets finished runs older than --run-keep-s, then, while
 * more than --runs-kept are kept, the oldest of the tenant that keeps the
 * most: one tenant's runs evict its own, not another's that keeps fewer.
 * The walk for that run passes only other tenants' runs, at most
 * --runs-kept of them. */
static void prune_locked(struct ghd_run_queue *q, struct ghd_run_collected *c)
{
    double horizon = ghd_clock_ms() - (double)q->cfg.keep_s * 1e3;
    struct ghd_run *old;
    while ((old = done_run(q->done.first)) && old->finished_ms < horizon)
        ghd_run_queue_forget_locked(q, old, c);
    while (q->done_count > q->cfg.runs_kept && (old = most_kept_oldest_locked(q)))
        ghd_run_queue_forget_locked(q, old, c);
}

int ghd_run_submit(struct ghd_run_queue *q, struct ghd_run *run)
{
    ghd_run_mark(run, GHD_RUN_MARK_SUBMIT);
    pthread_mutex_lock(&q->lock);
    struct ghd_runtime *rt = ghd_run_queue_rt_of(q, run);
    if (q->lost & (1u << rt->index)) {
        pthread_mutex_unlock(&q->lock);
        return GHD_EDEVLOST;
    }
    if (q->stopping) {
        pthread_mutex_unlock(&q->lock);
        return GHD_EUNAVAIL;
    }
    if (q->active >= q->cfg.queue_limit) {
        pthread_mutex_unlock(&q->lock);
        return GHD_ELIMIT;
    }
    struct ghd_run_tenant *tally = tally_locked(q, run->tenant, 1);
    if (!tally) {
        pthread_mutex_unlock(&q->lock);
        return GHD_ENOHOSTMEM;
    }
    if (q->cfg.tenant_max_runs && tally->active >= q->cfg.tenant_max_runs) {
        pthread_mutex_unlock(&q->lock);
        return ghd_err_set(&run->error, GHD_ELIMIT,
                           "tenant '%s' has %u runs queued or running",
                           run->tenant[0] ? run->tenant : "(none)", tally->active);
    }
    struct ghd_run_collected c = {0};
    prune_locked(q, &c);
    /* if_match and the moves it guards are one step: of runs (and PUTs)
     * naming the same version only one is taken; taken, the versions move
     * now, and again when it ends. */
    int rc = ghd_buffer_cond_start(run_conds_hold, run_bump_writes, run);
    if (rc) {
        pthread_mutex_unlock(&q->lock);
        ghd_run_queue_settle(q, &c);
        return rc;
    }
    run->status = GHD_RUN_QUEUED;
    run->queued_at_ms = ghd_clock_ms();
    run->seq = ++q->submitted;
    ghd_run_ref(run); /* the queue's, then the finished list's */
    index_add_locked(q, run);
    ghd_list_push_back(&q->queued, &run->queue_link);
    q->active++;
    run->tally = tally;
    tally->active++;
    ghd_run_share_submitted_locked(q, run);
    int urgent = 0;
    struct ghd_run_worker *lent = ghd_run_worker_lend_locked(q, run, &urgent);
    if (!lent)
        ghd_run_queue_wake_idle_locked(q, rt, 0);
    pthread_mutex_unlock(&q->lock);
    ghd_run_queue_settle(q, &c);
    if (lent)
        ghd_run_worker_execute_lent(lent, run, urgent);
    return 0;
}

void ghd_run_wait(struct ghd_run_queue *q, struct ghd_run *run)
{
    pthread_mutex_lock(&q->lock);
    while (!run->settled)
        pthread_cond_wait(&run->ended, &q->lock);
    pthread_mutex_unlock(&q->lock);
    ghd_run_mark(run, GHD_RUN_MARK_WOKEN);
}

/* pre: lock held. The queued, running or kept run with this id and tenant. */
static struct ghd_run *find_locked(struct ghd_run_queue *q, const char *id, const char *tenant)
{
    for (struct ghd_idmap_node *n = ghd_idmap_find(&q->by_id, id); n;
         n = ghd_idmap_find_next(n)) {
        struct ghd_run *r = ghd_container_of(n, struct ghd_run, by_id);
        if (strcmp(r->tenant, tenant ? tenant : "") == 0)
            return r;
    }
    return NULL;
}

int ghd_run_queue_writer(struct ghd_run_queue *q, const struct ghd_buffer *b,
                         char id[GHD_BUFFER_ID_LEN + 1])
{
    const struct ghd_run *found = NULL;
    pthread_mutex_lock(&q->lock);
    for (unsigned i = 0; i < q->worker_count && !found; i++)
        if (q->workers[i].current && ghd_run_writes(q->workers[i].current, b))
            found = q->workers[i].current;
    for (const struct ghd_run *r = ghd_run_queued_of(q->queued.first); r && !found;
         r = ghd_run_queued_of(r->queue_link.next))
        if (ghd_run_writes(r, b))
            found = r;
    if (found)
        memcpy(id, found->id, sizeof(found->id));
    pthread_mutex_unlock(&q->lock);
    return found != NULL;
}

int ghd_run_find_new(struct ghd_run_queue *q, const char *id, const char *tenant,
                     struct ghd_run **out)
{
    struct ghd_run_collected c = {0};
    pthread_mutex_lock(&q->lock);
    prune_locked(q, &c);
    struct ghd_run *r = find_locked(q, id, tenant);
    if (r)
        ghd_run_ref(r);
    pthread_mutex_unlock(&q->lock);
    ghd_run_queue_settle(q, &c);
    if (!r)
        return GHD_ENOENT;
    *out = r;
    return 0;
}

/* pre: lock held. Whether a worker still executes `run` (it may have been
 * reported failed already: ghd_run_queue_device_lost, _abandon). */
static int held_by_worker_locked(const struct ghd_run_queue *q, const struct ghd_run *run)
{
    for (unsigned i = 0; i < q->worker_count; i++)
        if (q->workers[i].current == run)
            return 1;
    return 0;
}

int ghd_run_cancel(struct ghd_run_queue *q, const char *id, const char *tenant,
                   struct ghd_run **running)
{
    struct ghd_run_collected c = {0};
    pthread_mutex_lock(&q->lock);
    struct ghd_run *r = find_locked(q, id, tenant);
    int rc = GHD_ENOENT;
    if (r && r->status == GHD_RUN_RUNNING) {
        ghd_run_ask_stop(r, GHD_RUN_STOP_CANCEL);
        ghd_run_ref(r);
        *running = r;
        rc = GHD_RUN_CANCEL_ASKED;
    } else if (r && r->status == GHD_RUN_QUEUED) {
        ghd_list_remove(&q->queued, &r->queue_link);
        r->status = GHD_RUN_CANCELED;
        r->error_code = GHD_ECANCELED;
        ghd_run_queue_ended_locked(q, r, &c);
        rc = 0;
    } else if (r && held_by_worker_locked(q, r)) {
        r->forget_at_end = 1; /* reported failed, not yet kept: not on the list of kept runs */
        rc = 1;
    } else if (r) {
        ghd_run_queue_forget_locked(q, r, &c);
        rc = 1;
    }
    pthread_mutex_unlock(&q->lock);
    ghd_run_queue_settle(q, &c);
    return rc;
}

struct ghd_run_graphs *ghd_run_queue_graphs(struct ghd_run_queue *q)
{
    return q->graphs;
}

unsigned ghd_run_queue_active(struct ghd_run_queue *q)
{
    pthread_mutex_lock(&q->lock);
    unsigned n = q->active;
    pthread_mutex_unlock(&q->lock);
    return n;
}

void ghd_run_queue_tenant_usage(struct ghd_run_queue *q, const char *tenant,
                                struct ghd_run_tenant_usage *out)
{
    *out = (struct ghd_run_tenant_usage){0};
    pthread_mutex_lock(&q->lock);
    const struct ghd_run_tenant *t = tally_locked(q, tenant ? tenant : "", 0);
    if (t)
        *out = (struct ghd_run_tenant_usage){.active = t->active,
                                             .kept = t->kept,
                                             .device_ms = t->device_ms,
                                             .ended = t->ended};
    pthread_mutex_unlock(&q->lock);
}

json_t *ghd_run_json_new(struct ghd_run_queue *q, const struct ghd_run *run)
{
    /* Only the status and the start time change while a run is known, and
     * nothing once it has ended (its end is written under the lock with the
     * status): read those two under the lock, the rest without it. */
    pthread_mutex_lock(&q->lock);
    enum ghd_run_status status = run->status;
    double started_ms = run->started_ms;
    pthread_mutex_unlock(&q->lock);
    return ghd_run_describe_new(run, status, started_ms);
}
