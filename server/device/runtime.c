#include "runtime.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"

static void idle_init(struct ghd_idle_list *l)
{
    pthread_mutex_init(&l->lock, NULL);
}

/* Takes an idle handle; NULL when none is idle. */
static void *idle_take(struct ghd_idle_list *l)
{
    void *item = NULL;
    pthread_mutex_lock(&l->lock);
    if (l->count > 0)
        item = l->items[--l->count];
    pthread_mutex_unlock(&l->lock);
    return item;
}

/* Keeps a handle for reuse; returns 0 when there was no room (the caller
 * frees it). */
static int idle_keep(struct ghd_idle_list *l, void *item)
{
    pthread_mutex_lock(&l->lock);
    if (l->count == l->cap) {
        unsigned cap = l->cap ? l->cap * 2 : 16;
        void **grown = realloc(l->items, cap * sizeof(*grown));
        if (!grown) {
            pthread_mutex_unlock(&l->lock);
            return 0;
        }
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->count++] = item;
    pthread_mutex_unlock(&l->lock);
    return 1;
}

/* Hands every idle handle to free_fn and forgets them. */
static void idle_destroy(struct ghd_idle_list *l, struct ghd_device *dev,
                         void (*free_fn)(struct ghd_device *, void *))
{
    for (unsigned i = 0; i < l->count; i++)
        free_fn(dev, l->items[i]);
    free(l->items);
    pthread_mutex_destroy(&l->lock);
}

static void free_stream(struct ghd_device *dev, void *s)
{
    dev->ops->stream_free(dev, s);
}

static void free_event(struct ghd_device *dev, void *e)
{
    dev->ops->event_free(dev, e);
}

int ghd_runtime_init(struct ghd_runtime *rt, const struct ghd_runtime_config *cfg,
                     struct ghd_err *error)
{
    memset(rt, 0, sizeof(*rt));
    int rc = ghd_device_open(&rt->dev, cfg->backend, cfg->ordinal, error);
    if (rc)
        return rc;
    rt->dev.sync_spin_ns = (long)cfg->sync_spin_us * 1000;
    rt->staging_timeout_ms = cfg->staging_timeout_ms;
    rt->staging_hold_s = cfg->staging_hold_s;
    rt->direct_copy = cfg->direct_copy;
    rt->download_block = cfg->download_block;
    rt->download_overlap = cfg->download_overlap;
    struct ghd_pool_config pool_cfg = cfg->pool;
    if (cfg->pool_limit_percent)
        pool_cfg.limit = rt->dev.total_memory / 100 * cfg->pool_limit_percent;
    if (pool_cfg.limit && pool_cfg.initial > pool_cfg.limit)
        pool_cfg.initial = pool_cfg.limit;
    rc = ghd_pool_init(&rt->pool, &rt->dev, &pool_cfg);
    if (rc) {
        ghd_err_set(error, rc, "device pool: %s", ghd_strerror(rc));
        goto close_device;
    }
    rc = ghd_staging_init(&rt->staging, &rt->dev, cfg->staging_chunk, cfg->staging_chunks);
    if (rc) {
        ghd_err_set(error, rc, "staging ring: %s", ghd_strerror(rc));
        goto destroy_pool;
    }
    if (cfg->staging_small_chunks) {
        rc = ghd_staging_init(&rt->staging_small, &rt->dev, cfg->staging_small_chunk,
                              cfg->staging_small_chunks);
        if (rc) {
            ghd_err_set(error, rc, "small staging ring: %s", ghd_strerror(rc));
            goto destroy_staging;
        }
    }
    idle_init(&rt->streams);
    idle_init(&rt->events);
    return 0;
destroy_staging:
    ghd_staging_destroy(&rt->staging);
destroy_pool:
    ghd_pool_destroy(&rt->pool);
close_device:
    ghd_device_close(&rt->dev);
    return rc;
}

void ghd_runtime_destroy(struct ghd_runtime *rt)
{
    idle_destroy(&rt->streams, &rt->dev, free_stream);
    idle_destroy(&rt->events, &rt->dev, free_event);
    if (rt->staging_small.chunks)
        ghd_staging_destroy(&rt->staging_small);
    ghd_staging_destroy(&rt->staging);
    ghd_pool_destroy(&rt->pool);
    ghd_device_close(&rt->dev);
}

int ghd_runtime_stream_acquire(struct ghd_runtime *rt, struct ghd_stream **out,
                               struct ghd_err *error)
{
    *out = idle_take(&rt->streams);
    return *out ? 0 : rt->dev.ops->stream_new(&rt->dev, out, error);
}

void ghd_runtime_stream_release(struct ghd_runtime *rt, struct ghd_stream *s)
{
    if (s && !idle_keep(&rt->streams, s))
        rt->dev.ops->stream_free(&rt->dev, s);
}

int ghd_runtime_event_acquire(struct ghd_runtime *rt, struct ghd_event **out,
                              struct ghd_err *error)
{
    *out = idle_take(&rt->events);
    return *out ? 0 : rt->dev.ops->event_new(&rt->dev, out, error);
}

void ghd_runtime_event_release(struct ghd_runtime *rt, struct ghd_event *e)
{
    if (e && !idle_keep(&rt->events, e))
        rt->dev.ops->event_free(&rt->dev, e);
}

unsigned ghd_runtime_staging_busy(struct ghd_runtime *rt)
{
    struct ghd_staging_stats main_ring, small_ring;
    ghd_staging_get_stats(&rt->staging, &main_ring);
    ghd_staging_get_stats(&rt->staging_small, &small_ring);
    return main_ring.busy + small_ring.busy;
}

struct ghd_staging *ghd_runtime_staging_for(struct ghd_runtime *rt, uint64_t length)
{
    struct ghd_staging *small = &rt->staging_small;
    return small->chunks && length <= small->stats.chunk_size ? small : &rt->staging;
}

int ghd_runtime_health(struct ghd_runtime *rt, struct ghd_err *error)
{
    return rt->dev.ops->health(&rt->dev, error);
}
