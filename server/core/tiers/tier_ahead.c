/* Room kept ahead (tier.h, struct ghd_tier_config's `ahead`): a thread that,
 * when a device's pool has less room than `ahead` of its largest recent
 * allocations, moves that device's least recently used idle buffers out in
 * the background. A page-in then finds its room free and its copy in runs
 * while the thread's copy out of the next victim does (the copy engines of
 * the two directions work at once), instead of after it. */
#include "tier.h"

#include <stdint.h>

#include "base/error.h"
#include "tier_internal.h"

/* The most one allocation can get from the pool now: its largest free
 * block, or what its limit still lets it reserve. */
static size_t room_of(struct ghd_pool *p)
{
    struct ghd_pool_stats st;
    ghd_pool_get_stats(p, &st);
    if (!st.limit)
        return SIZE_MAX;
    size_t unreserved = st.limit > st.reserved ? st.limit - st.reserved : 0;
    return st.largest_free > unreserved ? st.largest_free : unreserved;
}

/* pre: lock held. The room device d keeps ahead: `ahead` of its largest
 * allocations, but no more than a sixteenth of its pool (a small pool would
 * otherwise give up a large share of itself) unless one allocation needs it. */
static size_t want_locked(struct ghd_tiers *t, unsigned d)
{
    size_t largest = t->largest[d], share = t->rts[d].pool.cfg.limit / 16;
    size_t cap = share > largest ? share : largest;
    size_t want = largest * t->ahead;
    return want < cap ? want : cap;
}

void ghd_tier_ahead_note(struct ghd_tiers *t, struct ghd_runtime *rt, size_t size)
{
    if (!t || !t->ahead)
        return;
    unsigned d = rt->index;
    pthread_mutex_lock(&t->lock);
    if (size > t->largest[d])
        t->largest[d] = size;
    size_t want = want_locked(t, d);
    pthread_mutex_unlock(&t->lock);
    if (room_of(&rt->pool) >= want)
        return;
    pthread_mutex_lock(&t->lock);
    t->short_mask |= 1u << d;
    pthread_cond_signal(&t->pressure);
    pthread_mutex_unlock(&t->lock);
}

/* Spills device d's idle buffers until its pool has `want` bytes of room,
 * nothing idle is left or a spill fails. */
static void room_ahead(struct ghd_tiers *t, unsigned d, size_t want)
{
    struct ghd_runtime *rt = &t->rts[d];
    while (room_of(&rt->pool) < want) {
        pthread_mutex_lock(&t->lock);
        struct ghd_buffer *v = t->stop ? NULL : ghd_tier_victim_locked(t, d);
        pthread_mutex_unlock(&t->lock);
        if (!v)
            return;
        struct ghd_err why = {0};
        int rc = ghd_tier_spill_device(t, v, GHD_TIER_HOST, &why);
        ghd_buffer_unref(v);
        if (rc)
            return;
    }
}

static void *ahead_thread(void *arg)
{
    struct ghd_tiers *t = arg;
    pthread_mutex_lock(&t->lock);
    while (!t->stop) {
        if (!t->short_mask) {
            pthread_cond_wait(&t->pressure, &t->lock);
            continue;
        }
        unsigned d = (unsigned)__builtin_ctz(t->short_mask);
        t->short_mask &= ~(1u << d);
        size_t want = want_locked(t, d);
        pthread_mutex_unlock(&t->lock);
        room_ahead(t, d, want);
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int ghd_tier_ahead_start(struct ghd_tiers *t)
{
    if (!t->ahead)
        return 0;
    if (pthread_create(&t->ahead_thread, NULL, ahead_thread, t) != 0)
        return GHD_EINTERNAL;
    t->ahead_started = 1;
    return 0;
}

void ghd_tier_ahead_stop(struct ghd_tiers *t)
{
    if (t->ahead_started) {
        pthread_mutex_lock(&t->lock);
        t->stop = 1;
        pthread_cond_signal(&t->pressure);
        pthread_mutex_unlock(&t->lock);
        pthread_join(t->ahead_thread, NULL);
        t->ahead_started = 0;
    }
}
