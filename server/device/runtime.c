#include "runtime.h"

#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../log.h"

int ghd_runtime_init(struct ghd_runtime *rt, const struct ghd_runtime_config *cfg)
{
    memset(rt, 0, sizeof(*rt));
    int rc = ghd_device_open(&rt->dev, cfg->backend, cfg->ordinal);
    if (rc)
        return rc;
    struct ghd_pool_config pool_cfg = cfg->pool;
    if (cfg->pool_limit_percent)
        pool_cfg.limit = rt->dev.total_memory / 100 * cfg->pool_limit_percent;
    if (pool_cfg.limit && pool_cfg.initial > pool_cfg.limit)
        pool_cfg.initial = pool_cfg.limit;
    rc = ghd_pool_init(&rt->pool, &rt->dev, &pool_cfg);
    if (rc)
        goto close_device;
    rc = ghd_staging_init(&rt->staging, &rt->dev, cfg->staging_chunk, cfg->staging_chunks);
    if (rc)
        goto destroy_pool;
    pthread_mutex_init(&rt->streams_lock, NULL);
    return 0;
destroy_pool:
    ghd_pool_destroy(&rt->pool);
close_device:
    ghd_device_close(&rt->dev);
    return rc;
}

void ghd_runtime_destroy(struct ghd_runtime *rt)
{
    for (unsigned i = 0; i < rt->stream_count; i++)
        rt->dev.ops->stream_free(&rt->dev, rt->streams[i]);
    free(rt->streams);
    pthread_mutex_destroy(&rt->streams_lock);
    ghd_staging_destroy(&rt->staging);
    ghd_pool_destroy(&rt->pool);
    ghd_device_close(&rt->dev);
}

int ghd_runtime_stream_acquire(struct ghd_runtime *rt, struct ghd_stream **out)
{
    pthread_mutex_lock(&rt->streams_lock);
    if (rt->stream_count > 0) {
        *out = rt->streams[--rt->stream_count];
        pthread_mutex_unlock(&rt->streams_lock);
        return 0;
    }
    pthread_mutex_unlock(&rt->streams_lock);
    return rt->dev.ops->stream_new(&rt->dev, out);
}

void ghd_runtime_stream_release(struct ghd_runtime *rt, struct ghd_stream *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&rt->streams_lock);
    if (rt->stream_count == rt->stream_cap) {
        unsigned cap = rt->stream_cap ? rt->stream_cap * 2 : 16;
        struct ghd_stream **grown = realloc(rt->streams, cap * sizeof(*grown));
        if (!grown) {
            pthread_mutex_unlock(&rt->streams_lock);
            rt->dev.ops->stream_free(&rt->dev, s);
            return;
        }
        rt->streams = grown;
        rt->stream_cap = cap;
    }
    rt->streams[rt->stream_count++] = s;
    pthread_mutex_unlock(&rt->streams_lock);
}
