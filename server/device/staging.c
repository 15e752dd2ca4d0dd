#include "staging.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/error.h"

int ghd_staging_init(struct ghd_staging *st, struct ghd_device *dev, size_t chunk_size,
                     unsigned count)
{
    GHD_ASSERT(count > 0 && chunk_size > 0);
    memset(st, 0, sizeof(*st));
    st->dev = dev;
    st->chunks = calloc(count, sizeof(*st->chunks));
    st->free_list = calloc(count, sizeof(*st->free_list));
    if (!st->chunks || !st->free_list) {
        free(st->chunks);
        free(st->free_list);
        return GHD_ENOHOSTMEM;
    }
    int rc = 0;
    unsigned made = 0;
    for (; made < count; made++) {
        struct ghd_staging_chunk *c = &st->chunks[made];
        c->index = made;
        c->size = chunk_size;
        rc = dev->ops->host_alloc(dev, chunk_size, &c->h_ptr, NULL);
        if (rc)
            break;
        rc = dev->ops->event_new(dev, &c->done, NULL);
        if (rc) {
            dev->ops->host_free(dev, c->h_ptr);
            break;
        }
        st->free_list[st->free_count++] = c;
    }
    if (rc) {
        while (made-- > 0) {
            dev->ops->event_free(dev, st->chunks[made].done);
            dev->ops->host_free(dev, st->chunks[made].h_ptr);
        }
        free(st->chunks);
        free(st->free_list);
        return rc;
    }
    pthread_mutex_init(&st->lock, NULL);
    ghd_cond_init_monotonic(&st->available);
    st->stats.chunks = count;
    st->stats.chunk_size = chunk_size;
    return 0;
}

void ghd_staging_destroy(struct ghd_staging *st)
{
    GHD_ASSERT(st->free_count == st->stats.chunks);
    for (unsigned i = 0; i < st->stats.chunks; i++) {
        struct ghd_staging_chunk *c = &st->chunks[i];
        if (c->pending)
            (void)st->dev->ops->event_sync(st->dev, c->done, NULL);
        st->dev->ops->event_free(st->dev, c->done);
        st->dev->ops->host_free(st->dev, c->h_ptr);
    }
    free(st->chunks);
    free(st->free_list);
    pthread_cond_destroy(&st->available);
    pthread_mutex_destroy(&st->lock);
}

int ghd_staging_acquire(struct ghd_staging *st, unsigned timeout_ms,
                        struct ghd_staging_chunk **out)
{
    struct timespec deadline = ghd_clock_deadline(CLOCK_MONOTONIC, timeout_ms);
    pthread_mutex_lock(&st->lock);
#ifdef GHD_TESTABLE
    if (st->fail_countdown > 0 && --st->fail_countdown == 0) {
        st->stats.timeouts++;
        pthread_mutex_unlock(&st->lock);
        return GHD_ETIMEDOUT;
    }
#endif
    if (st->free_count == 0 && timeout_ms == 0) { /* a try: no wait, no 503 */
        pthread_mutex_unlock(&st->lock);
        return GHD_ETIMEDOUT;
    }
    if (st->free_count == 0)
        st->stats.waits++;
    while (st->free_count == 0) {
        int e = pthread_cond_timedwait(&st->available, &st->lock, &deadline);
        if (e == ETIMEDOUT && st->free_count == 0) {
            st->stats.timeouts++;
            pthread_mutex_unlock(&st->lock);
            return GHD_ETIMEDOUT;
        }
    }
    struct ghd_staging_chunk *c = st->free_list[--st->free_count];
    st->stats.acquires++;
    st->stats.busy++;
    if (st->stats.busy > st->stats.peak_busy)
        st->stats.peak_busy = st->stats.busy;
    pthread_mutex_unlock(&st->lock);
    if (c->pending) {
        int rc = st->dev->ops->event_sync(st->dev, c->done, NULL);
        c->pending = 0;
        if (rc) {
            ghd_staging_release(st, c);
            return rc;
        }
    }
    *out = c;
    return 0;
}

void ghd_staging_release(struct ghd_staging *st, struct ghd_staging_chunk *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&st->lock);
    GHD_ASSERT(st->free_count < st->stats.chunks);
    st->free_list[st->free_count++] = c;
    st->stats.busy--;
    pthread_cond_signal(&st->available);
    pthread_mutex_unlock(&st->lock);
}

void ghd_staging_get_stats(struct ghd_staging *st, struct ghd_staging_stats *out)
{
    if (!st->chunks) { /* a ring that was never set up (the small one, when off) */
        memset(out, 0, sizeof(*out));
        return;
    }
    pthread_mutex_lock(&st->lock);
    *out = st->stats;
    pthread_mutex_unlock(&st->lock);
}

#ifdef GHD_TESTABLE
void ghd_staging_fail_nth(struct ghd_staging *st, long n)
{
    pthread_mutex_lock(&st->lock);
    st->fail_countdown = n;
    pthread_mutex_unlock(&st->lock);
}
#endif
