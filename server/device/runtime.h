#ifndef GHD_DEVICE_RUNTIME_H
#define GHD_DEVICE_RUNTIME_H

#include <pthread.h>

#include "device.h"
#include "pool.h"
#include "staging.h"

/* Everything the service holds for one device: the backend context, its
 * memory pool, its pinned staging ring and free lists of streams and events.
 * The service keeps a small table of these indexed by device number. */

struct ghd_runtime_config {
    enum ghd_backend_kind backend;
    int ordinal;
    struct ghd_pool_config pool;
    size_t pool_limit_percent; /* if nonzero, overrides pool.limit: percent of device memory */
    size_t staging_chunk;
    unsigned staging_chunks;
    size_t staging_small_chunk;
    unsigned staging_small_chunks; /* 0: small transfers use the main ring too */
    unsigned sync_spin_us; /* see ghd_device.sync_spin_ns */
};

/* Idle backend handles (streams or events), reused across requests. */
struct ghd_idle_list {
    pthread_mutex_t lock;
    void **items;
    unsigned count, cap;
};

struct ghd_runtime {
    struct ghd_device dev;
    struct ghd_pool pool;
    struct ghd_staging staging;
    /* Chunks for transfers that fit one small chunk (a 4 KiB upload need not
     * hold an 8 MiB chunk that a bulk transfer waits for); no chunks when off. */
    struct ghd_staging staging_small;
    struct ghd_idle_list streams;
    struct ghd_idle_list events;
};

/* Opens the device and allocates the pool's first slab and the staging rings. */
int ghd_runtime_init(struct ghd_runtime *rt, const struct ghd_runtime_config *cfg);
void ghd_runtime_destroy(struct ghd_runtime *rt);

/* Staging chunks held by transfers now, in both rings. */
unsigned ghd_runtime_staging_busy(struct ghd_runtime *rt);

/* A stream for one request's work; created only when none is idle. */
int ghd_runtime_stream_acquire(struct ghd_runtime *rt, struct ghd_stream **out);
void ghd_runtime_stream_release(struct ghd_runtime *rt, struct ghd_stream *s);
/* An event for marking one point in a stream; created only when none is idle.
 * Release it only once it has completed or will never be waited for. */
int ghd_runtime_event_acquire(struct ghd_runtime *rt, struct ghd_event **out);
void ghd_runtime_event_release(struct ghd_runtime *rt, struct ghd_event *e);

#endif
