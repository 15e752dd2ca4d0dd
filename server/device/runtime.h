#ifndef GHD_DEVICE_RUNTIME_H
#define GHD_DEVICE_RUNTIME_H

#include <pthread.h>

#include "device.h"
#include "pool.h"
#include "staging.h"

/* Everything the service holds for one device: the backend context, its
 * memory pool, its pinned staging rings and free lists of streams and
 * events. The service keeps a table of these, one per device it serves,
 * indexed by the device's position in that table (its `index`, what every
 * API field named `device` means), not by its CUDA ordinal. */

/* The most devices one service serves. */
#define GHD_MAX_DEVICES 16
_Static_assert(GHD_HOST_DEVICES_MAX == GHD_MAX_DEVICES, "each simulated device fits the table");

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
    unsigned staging_timeout_ms; /* see ghd_runtime.staging_timeout_ms */
    unsigned staging_hold_s;
    int direct_copy;
    size_t download_block;
    int download_overlap;
};

/* Idle backend handles (streams or events), reused across requests. */
struct ghd_idle_list {
    pthread_mutex_t lock;
    void **items;
    unsigned count, cap;
};

struct ghd_runtime {
    struct ghd_device dev;
    unsigned index;      /* the position in the service's table (set by the service) */
    unsigned peer_mask;  /* bit j: peer access to the table's device j is on */
    struct ghd_pool pool;
    struct ghd_staging staging;
    /* Chunks for transfers that fit one small chunk (a 4 KiB upload need not
     * hold an 8 MiB chunk that a bulk transfer waits for); no chunks when off. */
    struct ghd_staging staging_small;
    struct ghd_idle_list streams;
    struct ghd_idle_list events;
    /* How transfers use the rings, set at start (server/core/transfer/transfer.h):
     * how long one waits for a free chunk before it gives up, how long an
     * upload may hold chunks (0 = no bound), whether large upload pieces are
     * copied by DMA straight from page-locked network buffers, and how a
     * download uses its chunk. */
    unsigned staging_timeout_ms;
    unsigned staging_hold_s;
    int direct_copy;
    size_t download_block; /* most bytes of a download's window */
    int download_overlap;  /* its next window's DMA runs while one is sent */
};

/* Opens the device and allocates the pool's first slab and the staging rings;
 * on failure *error (NULL: the code is enough) says which and why. */
int ghd_runtime_init(struct ghd_runtime *rt, const struct ghd_runtime_config *cfg,
                     struct ghd_err *error);
void ghd_runtime_destroy(struct ghd_runtime *rt);

/* Staging chunks held by transfers now, in both rings. */
unsigned ghd_runtime_staging_busy(struct ghd_runtime *rt);
/* The ring a transfer of `length` bytes takes its chunks from: the small
 * one when the transfer fits one of its chunks, else the main one. */
struct ghd_staging *ghd_runtime_staging_for(struct ghd_runtime *rt, uint64_t length);
/* Whether the device still answers: 0, or a GHD_E* code (*error says why). */
int ghd_runtime_health(struct ghd_runtime *rt, struct ghd_err *error);

/* A stream for one request's work; created only when none is idle. */
int ghd_runtime_stream_acquire(struct ghd_runtime *rt, struct ghd_stream **out,
                               struct ghd_err *error);
void ghd_runtime_stream_release(struct ghd_runtime *rt, struct ghd_stream *s);
/* An event for marking one point in a stream; created only when none is idle.
 * Release it only once it has completed or will never be waited for. */
int ghd_runtime_event_acquire(struct ghd_runtime *rt, struct ghd_event **out,
                              struct ghd_err *error);
void ghd_runtime_event_release(struct ghd_runtime *rt, struct ghd_event *e);

#endif
