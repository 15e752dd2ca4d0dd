/* Spilling (tier.h): the copies out of a device's pool to the host tier and
 * the disk tier, with the buffer marked moving while a copy runs outside
 * the lock, and the device block freed only once the copy out of it has
 * completed. Paging in is tier_in.c's. */
#include "tier.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "tier_disk.h"
#include "tier_internal.h"

/* Tenants told apart when choosing whom to evict first. */
#define TIER_TENANTS 32

double ghd_tier_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct ghd_buffer *of_link(struct ghd_list_node *n)
{
    return ghd_list_entry(n, struct ghd_buffer, tier_link);
}

static struct ghd_list *list_of(struct ghd_tiers *t, const struct ghd_buffer *b)
{
    if (b->tier == GHD_TIER_DEVICE)
        return &t->lru[b->device];
    return b->tier == GHD_TIER_HOST ? &t->host_lru : NULL;
}

void ghd_tier_touch_locked(struct ghd_tiers *t, struct ghd_buffer *b)
{
    b->last_used = ghd_tier_now();
    struct ghd_list *l = list_of(t, b);
    if (l && l->last != &b->tier_link) {
        ghd_list_remove(l, &b->tier_link);
        ghd_list_push_back(l, &b->tier_link);
    }
}

void ghd_tier_moved_locked(struct ghd_tiers *t, struct ghd_buffer *b)
{
    b->moving = 0;
    pthread_cond_broadcast(&t->changed);
}

int ghd_tier_settle_locked(struct ghd_tiers *t, struct ghd_buffer *b, struct ghd_err *err)
{
    while (b->moving && !b->unreadable)
        pthread_cond_wait(&t->changed, &t->lock);
    if (b->unreadable)
        return ghd_err_set(err, GHD_EUNREADABLE,
                           "buffer %s was spilled out of device memory and its bytes cannot be "
                           "read back; delete it",
                           b->id);
    return 0;
}

/* A reference to b unless its last one is going (it is being freed). */
static int ref_live(struct ghd_buffer *b)
{
    int n = atomic_load(&b->refs);
    while (n > 0 && !atomic_compare_exchange_weak(&b->refs, &n, n + 1))
        ;
    return n > 0;
}

/* Whether nothing uses b (a pin aside: the callers weigh it). */
static int unused(const struct ghd_buffer *b)
{
    /* A pending buffer is being written by its first user (an upload, a
     * copy) right now. */
    return !b->holds && !b->readers && !b->moving && !b->unreadable &&
           !atomic_load(&b->pending) && atomic_load(&b->refs) > 0;
}

static int idle(const struct ghd_buffer *b)
{
    return unused(b) && !b->pinned;
}

/* Whether b's tenant holds more than `share` bytes of the list. */
static int over_share(const struct ghd_buffer *b, const char *names[], const size_t bytes[],
                      unsigned n, size_t share)
{
    for (unsigned i = 0; i < n; i++)
        if (strcmp(names[i], b->tenant) == 0)
            return bytes[i] > share;
    return 0;
}

/* The least recently used idle buffer of a tenant over its share (the
 * pool's limit over the tenants with buffers there), pinned or not (a pin
 * holds only within the tenant's share: one tenant pinning the pool would
 * otherwise leave every other one 507), else the least recently used idle
 * one. */
struct ghd_buffer *ghd_tier_victim_locked(struct ghd_tiers *t, unsigned dev)
{
    const char *names[TIER_TENANTS];
    size_t bytes[TIER_TENANTS];
    unsigned n = 0;
    struct ghd_list *l = &t->lru[dev];
    for (struct ghd_buffer *b = of_link(l->first); b; b = of_link(b->tier_link.next)) {
        unsigned i = 0;
        while (i < n && strcmp(names[i], b->tenant) != 0)
            i++;
        if (i == n && n < TIER_TENANTS) {
            names[n] = b->tenant;
            bytes[n++] = 0;
        }
        if (i < n)
            bytes[i] += b->size;
    }
    size_t share = n ? t->rts[dev].pool.cfg.limit / n : 0;
    struct ghd_buffer *first = NULL, *pick = NULL;
    for (struct ghd_buffer *b = of_link(l->first); b && !pick; b = of_link(b->tier_link.next)) {
        if (!unused(b))
            continue;
        if (!first && !b->pinned)
            first = b;
        if (share && over_share(b, names, bytes, n, share))
            pick = b;
    }
    pick = pick ? pick : first;
    if (!pick || !ref_live(pick))
        return NULL;
    pick->pinned = 0; /* a pin that yielded is gone, as after a move out */
    pick->moving = 1;
    return pick;
}

/* pre: lock held. Whether a buffer of device `dev` may soon be let go (a
 * user holds it, it moves, or it is being freed): worth waiting for. */
static int device_busy_locked(struct ghd_tiers *t, unsigned dev)
{
    for (struct ghd_buffer *b = of_link(t->lru[dev].first); b; b = of_link(b->tier_link.next))
        if (b->holds || b->moving || atomic_load(&b->refs) == 0)
            return 1;
    return 0;
}

/* Why the last room-making of this thread gave up: the detail of its 507. */
static _Thread_local struct ghd_err why_full;
static _Thread_local struct timespec reclaim_deadline;

/* The pool's reclaim hook (device/pool.h) for device r->rt: spills one idle
 * buffer, or waits for a held one to be let go, up to the tiers' wait for
 * the whole allocation. 0: try the allocation again. */
static int reclaim(void *ctx, size_t size, unsigned attempt)
{
    struct ghd_tier_reclaim *r = ctx;
    struct ghd_tiers *t = r->t;
    unsigned dev = r->rt->index;
    if (attempt == 0)
        reclaim_deadline = ghd_clock_deadline(CLOCK_REALTIME, t->wait_ms);
    pthread_mutex_lock(&t->lock);
    struct ghd_buffer *v = ghd_tier_victim_locked(t, dev);
    if (!v) {
        int wait = device_busy_locked(t, dev);
        int rc = wait && pthread_cond_timedwait(&t->changed, &t->lock, &reclaim_deadline) == 0
                     ? 0
                     : ghd_err_set(&why_full, GHD_ENOMEM,
                                   "device %u cannot make room for %zu bytes: every buffer left "
                                   "on it is in use%s",
                                   dev, size, wait ? " (waited for one to be let go)" : "");
        pthread_mutex_unlock(&t->lock);
        return rc;
    }
    pthread_mutex_unlock(&t->lock);
    struct ghd_err why = {0};
    int rc = ghd_tier_spill_device(t, v, GHD_TIER_HOST, &why);
    if (rc)
        ghd_err_set(&why_full, GHD_ENOMEM,
                    "device %u is full and buffer %s could not be spilled: %s", dev, v->id,
                    ghd_err_text(&why, rc));
    ghd_buffer_unref(v);
    return rc;
}

void ghd_tier_reclaim_attach(struct ghd_tiers *t, struct ghd_runtime *rt,
                             struct ghd_tier_reclaim *r)
{
    r->t = t;
    r->rt = rt;
    rt->pool.reclaim_ctx = r;
    rt->pool.reclaim = reclaim;
}

int ghd_tier_alloc(struct ghd_tiers *t, struct ghd_runtime *rt, size_t size, size_t alignment,
                   struct ghd_pool_block **out, struct ghd_err *err)
{
    memset(&why_full, 0, sizeof(why_full));
    int rc = ghd_pool_alloc(&rt->pool, size, alignment, out); /* reclaims with tiers on */
    if (rc == 0) {
        ghd_tier_ahead_note(t, rt, size);
        return 0;
    }
    if (t && rc == GHD_ENOMEM && why_full.detail[0])
        return ghd_err_set(err, rc, "%s", why_full.detail);
    return ghd_err_set(err, rc, "device %u: the pool refuses %zu bytes", rt->index, size);
}

int ghd_tier_disk_reserve_locked(struct ghd_tiers *t, long long n, struct ghd_err *err)
{
    if (n > 0 && (!t->has_disk || t->disk_used + (size_t)n > t->disk_cap))
        return ghd_err_set(err, GHD_ENOMEM, "%s",
                           t->has_disk ? "the disk tier is full (--disk-tier-size)"
                                       : "the host tier is full and there is no disk tier");
    t->disk_used = (size_t)((long long)t->disk_used + n);
    return 0;
}

/* Writes b's bytes to its file: from host memory h_src, or from its device
 * memory on stream s. */
static int disk_write(struct ghd_tiers *t, struct ghd_buffer *b, const char *h_src,
                      struct ghd_stream *s, struct ghd_err *err)
{
    pthread_mutex_lock(&t->lock);
    int rc = ghd_tier_disk_reserve_locked(t, (long long)b->size, err);
    pthread_mutex_unlock(&t->lock);
    if (rc)
        return rc;
    struct ghd_tier_file_id f = {t->dir, b->id, b->size, ghd_buffer_version(b), t->direct};
    int fd = -1;
    rc = ghd_tier_file_create(&f, &fd, err);
    if (rc == 0 && h_src)
        rc = ghd_tier_file_write(fd, h_src, b->size, 0, err);
    else if (rc == 0)
        rc = ghd_tier_io_to_file(t, b->rt, fd, b->d_ptr, b->size, s, err);
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = ghd_err_set(err, GHD_ENOMEM, "disk tier: closing the file failed");
    if (rc) {
        if (fd >= 0)
            ghd_tier_file_remove(t->dir, b->id);
        pthread_mutex_lock(&t->lock);
        ghd_tier_disk_reserve_locked(t, -(long long)b->size, NULL);
        pthread_mutex_unlock(&t->lock);
    }
    return rc;
}

/* A block of the host tier for `size` bytes, moving the host tier's least
 * recently used buffers to disk while it is full. */
static int host_get(struct ghd_tiers *t, size_t size, struct ghd_pool_block **out,
                    struct ghd_err *err)
{
    if (!t->has_host)
        return ghd_err_set(err, GHD_ENOMEM, "there is no host tier");
    for (;;) {
        if (ghd_pool_alloc(&t->host_pool, size, 0, out) == 0)
            return 0;
        if (!t->has_disk || size > t->host_cap)
            return ghd_err_set(err, GHD_ENOMEM, "the host tier is full (--host-tier)");
        pthread_mutex_lock(&t->lock);
        struct ghd_buffer *v = of_link(t->host_lru.first);
        while (v && !(idle(v) && ref_live(v)))
            v = of_link(v->tier_link.next);
        if (v)
            v->moving = 1;
        pthread_mutex_unlock(&t->lock);
        if (!v)
            return ghd_err_set(err, GHD_ENOMEM, "the host tier is full of buffers being read");
        int rc = ghd_tier_spill_host(t, v, err);
        ghd_buffer_unref(v);
        if (rc)
            return rc;
    }
}

void ghd_tier_count_locked(struct ghd_tiers *t, unsigned dev, int out, enum ghd_tier tier,
                           size_t bytes, double s)
{
    struct ghd_tier_stats *st = &t->stats[dev];
    if (out) {
        st->evictions[tier]++;
        st->evicted_bytes[tier] += bytes;
        st->evict_s[tier] += s;
    } else {
        st->page_ins[tier]++;
        st->page_in_bytes[tier] += bytes;
        st->page_in_s[tier] += s;
    }
}

int ghd_tier_spill_host(struct ghd_tiers *t, struct ghd_buffer *b, struct ghd_err *err)
{
    double t0 = ghd_clock_s();
    int rc = disk_write(t, b, ghd_pool_block_ptr(b->h_block), NULL, err);
    pthread_mutex_lock(&t->lock);
    if (rc == 0) {
        ghd_list_remove(&t->host_lru, &b->tier_link);
        ghd_pool_free(&t->host_pool, b->h_block);
        b->h_block = NULL;
        b->tier = GHD_TIER_DISK;
        ghd_tier_count_locked(t, b->device, 1, GHD_TIER_DISK, b->size, ghd_clock_s() - t0);
    } else {
        t->stats[b->device].failures++;
    }
    ghd_tier_moved_locked(t, b);
    pthread_mutex_unlock(&t->lock);
    return rc;
}

/* Copies b's device bytes to the host tier (*hb) or, with none there or
 * `to` DISK, to its file; *where says which. */
static int copy_out(struct ghd_tiers *t, struct ghd_buffer *b, enum ghd_tier to,
                    struct ghd_stream *s, struct ghd_pool_block **hb, enum ghd_tier *where,
                    struct ghd_err *err)
{
    struct ghd_device *dev = &b->rt->dev;
    int rc = ghd_buffer_order(b, s, err); /* a buffer never used is zeroed first */
    if (rc == 0 && b->h_orphan) { /* its page-in's host copy goes first, making room */
        rc = dev->ops->stream_sync(dev, s, err);
        pthread_mutex_lock(&t->lock);
        ghd_tier_orphan_reap_locked(t, b, 1);
        pthread_mutex_unlock(&t->lock);
    }
    struct ghd_err host_why = {0};
    if (rc == 0 && to == GHD_TIER_HOST && host_get(t, b->size, hb, &host_why) == 0) {
        *where = GHD_TIER_HOST;
        rc = dev->ops->copy_d2h(dev, ghd_pool_block_ptr(*hb), b->d_ptr, b->size, s, err);
        if (rc == 0)
            rc = dev->ops->stream_sync(dev, s, err);
        return rc;
    }
    if (rc == 0 && to == GHD_TIER_HOST && !t->has_disk)
        return ghd_err_set(err, GHD_ENOMEM, "%s", ghd_err_text(&host_why, GHD_ENOMEM));
    *where = GHD_TIER_DISK;
    return rc ? rc : disk_write(t, b, NULL, s, err);
}

int ghd_tier_spill_device(struct ghd_tiers *t, struct ghd_buffer *b, enum ghd_tier to,
                          struct ghd_err *err)
{
    struct ghd_runtime *rt = b->rt;
    struct ghd_stream *s = NULL;
    struct ghd_pool_block *hb = NULL;
    enum ghd_tier where = GHD_TIER_HOST;
    double t0 = ghd_clock_s();
    int rc = ghd_runtime_stream_acquire(rt, &s, err);
    if (rc == 0)
        rc = copy_out(t, b, to, s, &hb, &where, err);
    if (s)
        ghd_runtime_stream_release(rt, s);
    pthread_mutex_lock(&t->lock);
    if (rc == 0) {
        ghd_tier_orphan_reap_locked(t, b, 1); /* the copy out was ordered after its page-in */
        ghd_list_remove(&t->lru[b->device], &b->tier_link);
        ghd_pool_free(&rt->pool, b->block); /* the copy out of it has completed */
        b->block = NULL;
        b->d_ptr = NULL;
        b->tier = (int)where;
        b->h_block = hb;
        if (hb)
            ghd_list_push_back(&t->host_lru, &b->tier_link);
        atomic_store(&b->zero_done, 1); /* whatever holds it now holds its bytes */
        ghd_tier_count_locked(t, b->device, 1, where, b->size, ghd_clock_s() - t0);
    } else {
        if (hb)
            ghd_pool_free(&t->host_pool, hb);
        t->stats[b->device].failures++;
    }
    ghd_tier_moved_locked(t, b);
    pthread_mutex_unlock(&t->lock);
    return rc;
}
