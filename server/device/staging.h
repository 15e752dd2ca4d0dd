#ifndef GHD_DEVICE_STAGING_H
#define GHD_DEVICE_STAGING_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

/* The pinned staging ring: page-locked host memory allocated once at start
 * and handed out chunk by chunk. Each chunk carries an event; a holder that
 * queued an asynchronous copy on a chunk records the event and marks the
 * chunk pending, and the chunk is handed out again only after that event has
 * completed. When every chunk is busy, acquire waits (bounded) rather than
 * allocating more. Thread-safe. */

struct ghd_staging_chunk {
    void *h_ptr;
    size_t size;
    struct ghd_event *done; /* recorded by the holder after its last copy */
    int pending;            /* `done` must complete before the next use */
    unsigned index;
};

struct ghd_staging_stats {
    unsigned chunks;
    size_t chunk_size;
    unsigned busy;      /* held now */
    unsigned peak_busy;
    uint64_t acquires;
    uint64_t waits;     /* acquires that had to wait for a chunk */
    uint64_t timeouts;  /* acquires that gave up */
};

struct ghd_staging {
    struct ghd_device *dev;
    struct ghd_staging_chunk *chunks;
    struct ghd_staging_chunk **free_list;
    unsigned free_count;
    pthread_mutex_t lock;
    pthread_cond_t available;
    struct ghd_staging_stats stats;
#ifdef GHD_TESTABLE
    long fail_countdown; /* test hook */
#endif
};

/* Allocates `count` chunks of `chunk_size` pinned bytes. */
int ghd_staging_init(struct ghd_staging *st, struct ghd_device *dev, size_t chunk_size,
                     unsigned count);
/* pre: every chunk has been released. */
void ghd_staging_destroy(struct ghd_staging *st);

/* Takes a chunk, waiting up to timeout_ms for one to come back; the chunk's
 * previous copy has completed when this returns. GHD_ETIMEDOUT when none came
 * back in time. A timeout_ms of 0 only tries: a miss counts in neither
 * `waits` nor `timeouts` (those mean a caller waited, and gave up with 503). */
int ghd_staging_acquire(struct ghd_staging *st, unsigned timeout_ms,
                        struct ghd_staging_chunk **out);
/* Returns a chunk. If the holder queued a copy that reads or writes it, the
 * holder has recorded chunk->done after that copy and set chunk->pending. */
void ghd_staging_release(struct ghd_staging *st, struct ghd_staging_chunk *chunk);

void ghd_staging_get_stats(struct ghd_staging *st, struct ghd_staging_stats *out);
#ifdef GHD_TESTABLE
/* Test hook: the nth acquire from now fails with GHD_ETIMEDOUT; 0 = off.
 * Test builds only, as ghd_pool_fail_nth. */
void ghd_staging_fail_nth(struct ghd_staging *st, long n);
#endif

#endif
