#ifndef GHD_CORE_TIERS_TIER_INTERNAL_H
#define GHD_CORE_TIERS_TIER_INTERNAL_H

/* The tiers' state, shared by tier.c (spilling and paging in) and
 * tier_state.c (opening, reads, residency, figures); no other file. */

#include "core/buffers/buffer.h"
#include "tier.h"

/* A device's pool reclaims through the tiers (device/pool.h's hook). */
struct ghd_tier_reclaim {
    struct ghd_tiers *t;
    struct ghd_runtime *rt;
};

struct ghd_tier_bounce;

struct ghd_tiers {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a buffer stopped moving or was let go */
    struct ghd_runtime *rts;
    unsigned count;
    struct ghd_list lru[GHD_MAX_DEVICES]; /* on device i, least recently used first */
    struct ghd_tier_stats stats[GHD_MAX_DEVICES];
    /* The host tier: a pool like a device's, whose slabs are the first
     * device's host_alloc (page-locked on CUDA, portable). */
    int has_host;
    struct ghd_device host_dev;
    struct ghd_device_ops host_ops;
    struct ghd_device *real;
    struct ghd_pool host_pool;
    size_t host_cap;
    struct ghd_list host_lru;
    /* The disk tier. */
    int has_disk;
    char dir[256];
    size_t disk_cap, disk_used;
    int direct; /* its files with O_DIRECT (struct ghd_tier_config's, decided) */
    unsigned wait_ms;
    struct ghd_tier_reclaim reclaim[GHD_MAX_DEVICES];
    struct ghd_tier_bounce *bounces; /* idle pairs of page-locked bounces (tier_io.c) */
    /* Room kept ahead (tier_ahead.c). */
    unsigned ahead;                   /* of the largest allocations; 0: none */
    size_t largest[GHD_MAX_DEVICES];  /* the largest allocation seen on device i */
    unsigned short_mask;              /* devices whose pool is short of room */
    pthread_cond_t pressure;          /* short_mask or stop changed */
    pthread_t ahead_thread;
    int ahead_started, stop;
    /* Device i's copy stream: page-ins from the host tier are queued there
     * (tier_in.c), one at a time (copy_lock) so that each one's events time
     * its own copy. */
    struct ghd_stream *copy[GHD_MAX_DEVICES];
    pthread_mutex_t copy_lock;
};

/* pre: lock held. Device dev's least recently used idle buffer (a tenant's
 * over its share first), with a reference and marked moving; NULL: none. */
struct ghd_buffer *ghd_tier_victim_locked(struct ghd_tiers *t, unsigned dev);
/* Starts (t->ahead > 0) and stops the thread that keeps room ahead. */
int ghd_tier_ahead_start(struct ghd_tiers *t);
void ghd_tier_ahead_stop(struct ghd_tiers *t);
/* An allocation of `size` on rt's device succeeded: wakes the thread when
 * the pool is now short of room ahead. */
void ghd_tier_ahead_note(struct ghd_tiers *t, struct ghd_runtime *rt, size_t size);

/* The disk tier's copies from and to a device (tier_io.c): the data of
 * file fd (from its data offset 0, or `at` for a read) to or from size
 * bytes of device memory,
 * through two page-locked bounces on stream s, waited for. */
int ghd_tier_io_to_file(struct ghd_tiers *t, struct ghd_runtime *rt, int fd, const void *d_src,
                        size_t size, struct ghd_stream *s, struct ghd_err *err);
int ghd_tier_io_from_file(struct ghd_tiers *t, struct ghd_runtime *rt, int fd, uint64_t at,
                          void *d_dst, size_t size, struct ghd_stream *s, struct ghd_err *err);
/* Frees the idle bounces. */
void ghd_tier_io_free(struct ghd_tiers *t);

/* Makes rt's pool move idle buffers out when it is full. */
void ghd_tier_reclaim_attach(struct ghd_tiers *t, struct ghd_runtime *rt,
                             struct ghd_tier_reclaim *r);

/* pre: lock held. b was used now: the last in its tier's order. */
void ghd_tier_touch_locked(struct ghd_tiers *t, struct ghd_buffer *b);
/* pre: b->moving set by the caller, b on its device and unheld. Copies it
 * out (to the host tier when there is room, else to disk; `to` DISK: to
 * disk) and frees its block; clears moving either way. */
int ghd_tier_spill_device(struct ghd_tiers *t, struct ghd_buffer *b, enum ghd_tier to,
                          struct ghd_err *err);
/* pre: b->moving set by the caller, b in the host tier without readers. */
int ghd_tier_spill_host(struct ghd_tiers *t, struct ghd_buffer *b, struct ghd_err *err);
/* pre: lock held. Reserves (n > 0) or gives back (n < 0) disk bytes. */
int ghd_tier_disk_reserve_locked(struct ghd_tiers *t, long long n, struct ghd_err *err);
/* pre: lock held. Counts a move out of (out 1) or into device dev. */
void ghd_tier_count_locked(struct ghd_tiers *t, unsigned dev, int out, enum ghd_tier tier,
                           size_t bytes, double s);
/* pre: lock held. The old host copy of a page-in (b->h_orphan) goes once no
 * download reads it and the copy out of it has completed (wait: waits for
 * that); its copy's seconds are counted then. */
void ghd_tier_orphan_reap_locked(struct ghd_tiers *t, struct ghd_buffer *b, int wait);
/* pre: lock held. A whole write's old copy (b->behind) goes. */
void ghd_tier_behind_drop_locked(struct ghd_tiers *t, struct ghd_buffer *b);
/* pre: lock held; b->moving was cleared. Wakes the waiters. */
void ghd_tier_moved_locked(struct ghd_tiers *t, struct ghd_buffer *b);
/* pre: lock held. Waits while b moves; GHD_EUNREADABLE once it cannot be read. */
int ghd_tier_settle_locked(struct ghd_tiers *t, struct ghd_buffer *b, struct ghd_err *err);
double ghd_tier_now(void);

#endif
