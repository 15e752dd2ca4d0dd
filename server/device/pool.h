#ifndef GHD_DEVICE_POOL_H
#define GHD_DEVICE_POOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

/* Pooled, aligned device allocations (RMM's contract: sized free, alignment
 * of at least 256 bytes, statistics and limits as thin layers). The pool
 * reserves large slabs from the backend and carves them into blocks. Free
 * blocks sit in segregated bins by size class and are coalesced with their
 * address neighbours, so fragmentation stays bounded. Slabs go back to the
 * backend only under limit pressure or at destroy. Thread-safe.
 *
 * Stream ordering: a block is reused as soon as it is freed, so callers free
 * only after the work that touches it has completed. */

#define GHD_POOL_BINS 64

struct ghd_pool_config {
    size_t alignment; /* power of two >= 256 */
    size_t slab_size; /* bytes reserved from the backend at a time */
    size_t limit;     /* most bytes the pool may reserve; 0 = no limit */
    size_t initial;   /* bytes to reserve at init, so requests find a warm pool */
};

struct ghd_pool_stats {
    size_t reserved;      /* bytes held from the backend */
    size_t in_use;        /* bytes in handed-out blocks */
    size_t peak;          /* highest in_use seen */
    size_t limit;         /* 0 = none */
    size_t largest_free;  /* largest single free block */
    uint64_t allocations; /* successful allocations, ever */
    uint64_t frees;
    uint64_t failures;     /* allocations refused (limit, backend, fail hook) */
    uint64_t slab_allocs;  /* backend allocations, ever */
    unsigned live_blocks;  /* blocks handed out now */
    unsigned slabs;        /* slabs held now */
    double fragmentation;  /* 1 - largest_free / free bytes; 0 when nothing is free */
};

struct ghd_pool_block; /* opaque */
struct pool_slab;
struct pool_chunk;

struct ghd_pool {
    struct ghd_device *dev;
    struct ghd_pool_config cfg;
    pthread_mutex_t lock;
    struct pool_slab *slabs;
    struct pool_chunk *bins[GHD_POOL_BINS];
    struct ghd_pool_stats stats;
    /* Called, without the pool's lock, when an allocation finds the pool
     * full: it may free blocks (core/tier.c moves idle buffers out) and
     * returns 0 when the allocation should be tried again, nonzero to give
     * up. `attempt` counts its calls for this allocation from 0. NULL: none.
     * Set once before use. */
    int (*reclaim)(void *ctx, size_t size, unsigned attempt);
    void *reclaim_ctx;
#ifdef GHD_TESTABLE
    long fail_countdown; /* test hook: 0 = off */
#endif
};

/* pre: cfg->alignment is a power of two >= 256; dev is open and outlives the pool. */
int ghd_pool_init(struct ghd_pool *pool, struct ghd_device *dev,
                  const struct ghd_pool_config *cfg);
/* Returns every slab to the backend. pre: no block is live. */
void ghd_pool_destroy(struct ghd_pool *pool);

/* Hands out a block of at least `size` bytes whose device pointer is aligned
 * to max(alignment, pool alignment). `alignment` 0 means the pool's.
 * GHD_ENOMEM when the limit or the backend refuses; GHD_EINVAL for an
 * alignment that is not a power of two or exceeds the slab size. */
int ghd_pool_alloc(struct ghd_pool *pool, size_t size, size_t alignment,
                   struct ghd_pool_block **out);
/* Returns a block to the pool. */
void ghd_pool_free(struct ghd_pool *pool, struct ghd_pool_block *block);
void *ghd_pool_block_ptr(const struct ghd_pool_block *block);
size_t ghd_pool_block_size(const struct ghd_pool_block *block);

void ghd_pool_get_stats(struct ghd_pool *pool, struct ghd_pool_stats *out);
/* Gives wholly free slabs back to the backend; returns the bytes released. */
size_t ghd_pool_trim(struct ghd_pool *pool);

#ifdef GHD_TESTABLE
/* Test hook (SQLite-style): the nth allocation from now fails with
 * GHD_ENOMEM; 0 turns it off. Test builds only: GHD_TESTABLE is defined
 * where CMake's GHD_FAULT_HOOKS is on (it follows BUILD_TESTING), so the
 * product has neither the hook nor its countdown. */
void ghd_pool_fail_nth(struct ghd_pool *pool, long n);
#endif

#endif
