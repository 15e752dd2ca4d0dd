/* The exporter's queue and thread. A request's thread only takes the lock
 * to put one pointer in the ring (or count a drop); the thread takes a
 * batch out under it and encodes and sends with the lock released. */
#include "trace_export.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "http_post.h"
#include "log.h"
#include "otlp_json.h"
#include "trace_span.h"

#define QUEUE_CAP 2048       /* finished traces waiting; more are dropped */
#define BATCH_MAX 256        /* traces in one POST */
#define FLUSH_MS 500         /* a batch goes out at least this often */
#define POST_TIMEOUT_MS 5000
#define STOP_TIMEOUT_MS 1000

struct ghd_tracer {
    struct ghd_http_url url;
    double ratio;
    char instance[64];
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* CLOCK_MONOTONIC */
    struct ghd_trace *queue[QUEUE_CAP];
    size_t head, count;
    int stopping;
    atomic_uint_fast64_t spans_exported, traces_dropped, exports_failed;
    int warned; /* the last POST failed: logged once until one succeeds */
};

static void drop(struct ghd_tracer *t, struct ghd_trace *const *batch, size_t n)
{
    atomic_fetch_add(&t->traces_dropped, n);
    for (size_t i = 0; i < n; i++)
        ghd_trace_free(batch[i]);
}

/* Sends a batch, each wait of its POST bounded by timeout_ms. */
static void send_batch(struct ghd_tracer *t, struct ghd_trace *const *batch, size_t n,
                       unsigned timeout_ms)
{
    size_t len = 0, spans = 0;
    char *body = ghd_otlp_json(batch, n, t->instance, &len, &spans);
    struct ghd_err err = {0};
    int rc = body ? ghd_http_post(&t->url, "application/json", body, len, timeout_ms, &err)
                  : ghd_err_set(&err, GHD_ENOHOSTMEM, "out of host memory");
    free(body);
    if (rc == 0) {
        atomic_fetch_add(&t->spans_exported, spans);
        for (size_t i = 0; i < n; i++)
            ghd_trace_free(batch[i]);
        if (t->warned)
            ghd_log(GHD_LOG_INFO, "trace export: the collector takes spans again");
        t->warned = 0;
        return;
    }
    atomic_fetch_add(&t->exports_failed, 1);
    if (!t->warned) /* once per outage, not once per batch */
        ghd_log(GHD_LOG_WARN, "trace export: %s (%zu traces dropped; counted in "
                              "gpuhttpd_trace_dropped_total)", err.detail, n);
    t->warned = 1;
    drop(t, batch, n);
}

static void *exporter_main(void *arg)
{
    struct ghd_tracer *t = arg;
    struct ghd_trace *batch[BATCH_MAX];
    pthread_mutex_lock(&t->lock);
    for (;;) {
        if (!t->stopping && t->count < BATCH_MAX) {
            struct timespec until = ghd_clock_deadline(CLOCK_MONOTONIC, FLUSH_MS);
            pthread_cond_timedwait(&t->wake, &t->lock, &until);
        }
        size_t n = 0;
        while (t->count && n < BATCH_MAX) {
            batch[n++] = t->queue[t->head];
            t->head = (t->head + 1) % QUEUE_CAP;
            t->count--;
        }
        int stopping = t->stopping, stop = stopping && t->count == 0;
        pthread_mutex_unlock(&t->lock);
        /* Stopping, the last batches wait less, and none waits on a
         * collector that has just failed. */
        if (n && stopping && t->warned)
            drop(t, batch, n);
        else if (n)
            send_batch(t, batch, n, stopping ? STOP_TIMEOUT_MS : POST_TIMEOUT_MS);
        if (stop)
            return NULL;
        pthread_mutex_lock(&t->lock);
    }
}

/* Without a path, OTLP/HTTP's traces path. */
static void default_path(struct ghd_http_url *url)
{
    if (strcmp(url->path, "/") == 0)
        strcpy(url->path, "/v1/traces");
}

int ghd_tracer_new(const char *endpoint, double ratio, const char *instance,
                   struct ghd_tracer **out, struct ghd_err *err)
{
    struct ghd_tracer *t = calloc(1, sizeof(*t));
    if (!t)
        return ghd_err_set(err, GHD_ENOHOSTMEM, "trace exporter: out of host memory");
    int rc = ghd_http_url_parse(endpoint, &t->url, err);
    if (rc) {
        free(t);
        return rc;
    }
    default_path(&t->url);
    t->ratio = ratio;
    strncpy(t->instance, instance, sizeof(t->instance) - 1);
    pthread_mutex_init(&t->lock, NULL);
    ghd_cond_init_monotonic(&t->wake);
    if (pthread_create(&t->thread, NULL, exporter_main, t) != 0) {
        pthread_cond_destroy(&t->wake);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return ghd_err_set(err, GHD_EUNAVAIL, "trace exporter: cannot start its thread");
    }
    *out = t;
    return 0;
}

void ghd_tracer_free(struct ghd_tracer *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    t->stopping = 1;
    pthread_cond_signal(&t->wake);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->wake);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* A trace's sink (base/trace_span.h): its last reference dropped. */
static void submit_sink(void *tracer, struct ghd_trace *tr)
{
    ghd_tracer_submit(tracer, tr);
}

struct ghd_trace *ghd_tracer_start(struct ghd_tracer *t, struct ghd_trace_ctx *ctx)
{
    if (!t)
        return NULL;
    ctx->sampled = ctx->remote ? ctx->parent_sampled : ghd_trace_ratio_keeps(ctx->trace_id,
                                                                             t->ratio);
    if (!ctx->sampled)
        return NULL;
    struct ghd_trace *tr = ghd_trace_new(submit_sink, t, ctx);
    if (!tr)
        ctx->sampled = 0;
    return tr;
}

void ghd_tracer_submit(struct ghd_tracer *t, struct ghd_trace *tr)
{
    pthread_mutex_lock(&t->lock);
    int full = t->count == QUEUE_CAP || t->stopping;
    if (!full) {
        t->queue[(t->head + t->count) % QUEUE_CAP] = tr;
        if (++t->count == BATCH_MAX)
            pthread_cond_signal(&t->wake);
    }
    pthread_mutex_unlock(&t->lock);
    if (full)
        drop(t, &tr, 1);
}

void ghd_tracer_stats(struct ghd_tracer *t, struct ghd_tracer_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!t)
        return;
    out->spans_exported = atomic_load(&t->spans_exported);
    out->traces_dropped = atomic_load(&t->traces_dropped);
    out->exports_failed = atomic_load(&t->exports_failed);
}
