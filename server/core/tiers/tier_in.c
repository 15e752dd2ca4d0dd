/* Bringing spilled buffers back (tier.h). A page-in from the host tier is
 * queued on the device's copy stream between two events of the tiers (its
 * time) and a third that the buffer keeps: every user of the buffer waits
 * for that one on its own stream before its first copy or kernel
 * (ghd_buffer_order), so neither the run nor the CPU waits for the copy,
 * and the old host copy goes once the copy out of it has completed. A page-in
 * from disk is read by the CPU through the bounces (tier_io.c) and is done
 * when it returns. A whole write (an upload of every byte) gets device
 * memory without the old bytes, which stay where they were until it ends. */
#include "tier.h"

#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "tier_disk.h"
#include "tier_internal.h"

void ghd_tier_orphan_reap_locked(struct ghd_tiers *t, struct ghd_buffer *b, int wait)
{
    if (!b->h_orphan || b->readers)
        return;
    struct ghd_device *dev = &b->rt->dev;
    if (b->landing[1]) {
        int done = wait ? (dev->ops->event_sync(dev, b->landing[1], NULL) == 0 ? 1 : -1)
                        : dev->ops->event_done(dev, b->landing[1], NULL);
        if (done == 0)
            return; /* still copying out of it */
        float ms = 0;
        if (done == 1 && dev->ops->event_elapsed(dev, b->landing[0], b->landing[1], &ms, NULL) == 0)
            t->stats[b->device].page_in_s[GHD_TIER_HOST] += (double)ms / 1e3;
        for (int i = 0; i < 2; i++) {
            ghd_runtime_event_release(b->rt, b->landing[i]);
            b->landing[i] = NULL;
        }
    }
    ghd_pool_free(&t->host_pool, b->h_orphan);
    b->h_orphan = NULL;
}

void ghd_tier_behind_drop_locked(struct ghd_tiers *t, struct ghd_buffer *b)
{
    if (b->behind == GHD_TIER_HOST) {
        GHD_ASSERT(!b->h_orphan);
        b->h_orphan = b->h_block; /* a download may still read it */
        b->h_block = NULL;
        ghd_tier_orphan_reap_locked(t, b, 0);
    } else if (b->behind == GHD_TIER_DISK) {
        ghd_tier_file_remove(t->dir, b->id); /* a reader's descriptor still reads it */
        ghd_tier_disk_reserve_locked(t, -(long long)b->size, NULL);
    }
    b->behind = 0;
}

/* Reads bytes [from, b->size) of b's file into device memory at d_dst + from. */
static int disk_read_in(struct ghd_tiers *t, struct ghd_buffer *b, char *d_dst, size_t from,
                        struct ghd_stream *s, struct ghd_err *err)
{
    struct ghd_tier_file_id f = {t->dir, b->id, b->size, 0, t->direct};
    int fd = -1;
    int rc = ghd_tier_file_open(&f, &fd, err);
    if (rc == 0)
        rc = ghd_tier_io_from_file(t, b->rt, fd, from, d_dst + from, b->size - from, s, err);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Copies bytes [from, b->size) of the old copy that `tier` names into
 * d_dst + from and waits for the copy: a disk page-in, or a whole write's
 * undoing. */
static int copy_in_sync(struct ghd_tiers *t, struct ghd_buffer *b, enum ghd_tier tier,
                        char *d_dst, size_t from, struct ghd_err *err)
{
    struct ghd_runtime *rt = b->rt;
    struct ghd_device *dev = &rt->dev;
    struct ghd_stream *s = NULL;
    int rc = ghd_runtime_stream_acquire(rt, &s, err);
    if (rc == 0 && tier == GHD_TIER_HOST) {
        rc = dev->ops->copy_h2d(dev, d_dst + from, (const char *)ghd_pool_block_ptr(b->h_block) + from,
                                b->size - from, s, err);
        int sync = dev->ops->stream_sync(dev, s, rc ? NULL : err);
        rc = rc ? rc : sync;
    } else if (rc == 0) {
        rc = disk_read_in(t, b, d_dst, from, s, err);
    }
    if (s)
        ghd_runtime_stream_release(rt, s);
    return rc;
}

/* Queues the copy of b's host copy into blk on the device's copy stream:
 * ev[0] and ev[1] around it (the tiers' own, for its time), ev[2] after it
 * (what b's users wait for). On failure nothing is left writing blk. */
static int queue_from_host(struct ghd_tiers *t, struct ghd_buffer *b, void *d_dst,
                           struct ghd_event *ev[3], struct ghd_err *err)
{
    struct ghd_runtime *rt = b->rt;
    struct ghd_device *dev = &rt->dev;
    struct ghd_stream *s = t->copy[b->device];
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = ghd_runtime_event_acquire(rt, &ev[i], err);
    pthread_mutex_lock(&t->copy_lock);
    if (rc == 0)
        rc = dev->ops->event_record(dev, ev[0], s, err);
    if (rc == 0)
        rc = dev->ops->copy_h2d(dev, d_dst, ghd_pool_block_ptr(b->h_block), b->size, s, err);
    for (int i = 1; i < 3 && rc == 0; i++)
        rc = dev->ops->event_record(dev, ev[i], s, err);
    if (rc)
        dev->ops->stream_sync(dev, s, NULL);
    pthread_mutex_unlock(&t->copy_lock);
    for (int i = 0; i < 3 && rc; i++) {
        ghd_runtime_event_release(rt, ev[i]);
        ev[i] = NULL;
    }
    return rc;
}

/* pre: lock held; b's bytes are being copied (ev: from the host tier) or
 * were copied (from disk) into blk. Its old copy goes: a host copy once the
 * copy out of it has completed and no download reads it, a file now (a
 * reader's descriptor still reads it). */
static void landed_locked(struct ghd_tiers *t, struct ghd_buffer *b, struct ghd_pool_block *blk,
                          struct ghd_event *ev[3])
{
    if (b->tier == GHD_TIER_HOST) {
        GHD_ASSERT(!b->h_orphan);
        ghd_list_remove(&t->host_lru, &b->tier_link);
        b->h_orphan = b->h_block;
        b->h_block = NULL;
        b->landing[0] = ev[0];
        b->landing[1] = ev[1];
        ghd_buffer_reorder(b, ev[2]); /* its users wait for the copy on their streams */
        ghd_tier_orphan_reap_locked(t, b, 0);
    } else {
        ghd_tier_file_remove(t->dir, b->id);
        ghd_tier_disk_reserve_locked(t, -(long long)b->size, NULL);
        atomic_store(&b->zero_done, 1); /* the copy wrote every byte and has completed */
    }
    b->block = blk;
    b->d_ptr = ghd_pool_block_ptr(blk);
    b->tier = GHD_TIER_DEVICE;
    ghd_list_push_back(&t->lru[b->device], &b->tier_link);
}

/* pre: b->moving set by the caller, b not on its device. */
static int page_in(struct ghd_tiers *t, struct ghd_buffer *b, struct ghd_err *err)
{
    struct ghd_pool_block *blk = NULL;
    struct ghd_event *ev[3] = {NULL, NULL, NULL};
    int rc = ghd_tier_alloc(t, b->rt, b->size, b->alignment, &blk, err);
    double t0 = ghd_clock_s(); /* a disk copy's time: making room is the evictions' */
    if (rc == 0 && b->tier == GHD_TIER_HOST)
        rc = queue_from_host(t, b, ghd_pool_block_ptr(blk), ev, err);
    else if (rc == 0)
        rc = copy_in_sync(t, b, GHD_TIER_DISK, ghd_pool_block_ptr(blk), 0, err);
    pthread_mutex_lock(&t->lock);
    if (rc == 0) {
        /* A host copy's seconds are counted when it has completed (reap). */
        double s = b->tier == GHD_TIER_HOST ? 0 : ghd_clock_s() - t0;
        ghd_tier_count_locked(t, b->device, 0, (enum ghd_tier)b->tier, b->size, s);
        landed_locked(t, b, blk, ev);
        b->holds++;
        ghd_tier_touch_locked(t, b);
    } else {
        if (blk)
            ghd_pool_free(&b->rt->pool, blk);
        if (rc == GHD_EUNREADABLE)
            b->unreadable = 1;
        t->stats[b->device].failures++;
    }
    ghd_tier_moved_locked(t, b);
    pthread_mutex_unlock(&t->lock);
    return rc;
}

/* pre: lock held, b settled. Holds b on its device when it is there: 1;
 * 0 when it is not (then it is marked moving for the caller). */
static int hold_if_there_locked(struct ghd_tiers *t, struct ghd_buffer *b)
{
    if (b->tier == GHD_TIER_DEVICE) {
        b->holds++;
        ghd_tier_touch_locked(t, b);
        return 1;
    }
    b->moving = 1;
    return 0;
}

/* Waits for b to settle and holds it where it is on its device: 0 with
 * *there set when held, 0 with *there clear when it must come in first, or
 * an error. */
static int settle_and_hold(struct ghd_tiers *t, struct ghd_buffer *b, int *there,
                           struct ghd_err *err)
{
    pthread_mutex_lock(&t->lock);
    int rc = ghd_tier_settle_locked(t, b, err);
    *there = rc == 0 && hold_if_there_locked(t, b);
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int ghd_tier_hold(struct ghd_buffer *b, struct ghd_err *err)
{
    struct ghd_tiers *t = b->tiers;
    if (!t)
        return 0;
    int there = 0;
    int rc = settle_and_hold(t, b, &there, err);
    return rc || there ? rc : page_in(t, b, err);
}

void ghd_tier_release(struct ghd_buffer *b)
{
    struct ghd_tiers *t = b->tiers;
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    GHD_ASSERT(b->holds > 0);
    b->holds--;
    ghd_tier_touch_locked(t, b);
    ghd_tier_orphan_reap_locked(t, b, 0); /* its users' work, after the copy, has completed */
    pthread_cond_broadcast(&t->changed);
    pthread_mutex_unlock(&t->lock);
}

int ghd_tier_hold_whole(struct ghd_buffer *b, int *fresh, struct ghd_err *err)
{
    struct ghd_tiers *t = b->tiers;
    *fresh = 0;
    if (!t)
        return 0;
    int there = 0;
    int rc = settle_and_hold(t, b, &there, err);
    if (rc || there)
        return rc;
    struct ghd_pool_block *blk = NULL;
    rc = ghd_tier_alloc(t, b->rt, b->size, b->alignment, &blk, err);
    pthread_mutex_lock(&t->lock);
    if (rc == 0) {
        b->behind = b->tier; /* the old copy stays until the write ends */
        if (b->tier == GHD_TIER_HOST)
            ghd_list_remove(&t->host_lru, &b->tier_link);
        b->block = blk;
        b->d_ptr = ghd_pool_block_ptr(blk);
        b->tier = GHD_TIER_DEVICE;
        ghd_list_push_back(&t->lru[b->device], &b->tier_link);
        ghd_buffer_reorder(b, NULL); /* zeroed by its first user: no other bytes show */
        b->holds++;
        ghd_tier_touch_locked(t, b);
        *fresh = 1;
    } else {
        t->stats[b->device].failures++;
    }
    ghd_tier_moved_locked(t, b);
    pthread_mutex_unlock(&t->lock);
    return rc;
}

/* Bytes [kept, size) of b come back from its old copy over what the write
 * left there, after whatever the write's zeroing and copies did. */
static int undo(struct ghd_tiers *t, struct ghd_buffer *b, size_t kept)
{
    struct ghd_err err = {0};
    struct ghd_stream *s = NULL;
    int rc = ghd_runtime_stream_acquire(b->rt, &s, &err);
    if (rc == 0)
        rc = ghd_buffer_order(b, s, &err);
    if (s) {
        int sync = b->rt->dev.ops->stream_sync(&b->rt->dev, s, NULL);
        rc = rc ? rc : sync;
        ghd_runtime_stream_release(b->rt, s);
    }
    if (rc == 0)
        rc = copy_in_sync(t, b, (enum ghd_tier)b->behind, b->d_ptr, kept, &err);
    if (rc == 0)
        atomic_store(&b->zero_done, 1); /* every byte written, every copy completed */
    return rc;
}

void ghd_tier_release_whole(struct ghd_buffer *b, uint64_t kept)
{
    struct ghd_tiers *t = b->tiers;
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    if (b->behind && kept < b->size) {
        b->moving = 1; /* the others wait for the old bytes */
        pthread_mutex_unlock(&t->lock);
        int rc = undo(t, b, (size_t)kept);
        pthread_mutex_lock(&t->lock);
        if (rc) { /* neither the write's bytes nor the old ones: never shown */
            b->unreadable = 1;
            t->stats[b->device].failures++;
        }
        ghd_tier_moved_locked(t, b);
    }
    if (b->behind)
        ghd_tier_behind_drop_locked(t, b);
    pthread_mutex_unlock(&t->lock);
    ghd_tier_release(b);
}
