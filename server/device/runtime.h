#ifndef GHD_DEVICE_RUNTIME_H
#define GHD_DEVICE_RUNTIME_H

#include <pthread.h>

#include "device.h"
#include "pool.h"
#include "staging.h"

/* Everything the service holds for one device: the backend context, its
 * memory pool, its pinned staging ring and a free list of streams. The
 * service keeps a small table of these indexed by device number. */

struct ghd_runtime_config {
    enum ghd_backend_kind backend;
    int ordinal;
    struct ghd_pool_config pool;
    size_t pool_limit_percent; /* if nonzero, overrides pool.limit: percent of device memory */
    size_t staging_chunk;
    unsigned staging_chunks;
};

struct ghd_runtime {
    struct ghd_device dev;
    struct ghd_pool pool;
    struct ghd_staging staging;
    pthread_mutex_t streams_lock;
    struct ghd_stream **streams; /* idle streams, reused across requests */
    unsigned stream_count, stream_cap;
};

/* Opens the device and allocates the pool's first slab and the staging ring. */
int ghd_runtime_init(struct ghd_runtime *rt, const struct ghd_runtime_config *cfg);
void ghd_runtime_destroy(struct ghd_runtime *rt);

/* A stream for one request's work; created only when none is idle. */
int ghd_runtime_stream_acquire(struct ghd_runtime *rt, struct ghd_stream **out);
void ghd_runtime_stream_release(struct ghd_runtime *rt, struct ghd_stream *s);

#endif
