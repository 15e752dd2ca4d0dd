/* Whole-buffer copies between devices and within one (buffer_copy.h). The
 * paths differ in what moves the bytes: the device's copy engine within a
 * device, a peer copy across NVLink or PCIe where the pair has peer access,
 * and two copies through pinned host memory where it has not. */
#include "buffer_copy.h"

#include "base/error.h"
#include "core/tiers/tier.h"

/* The two ends of a copy and the streams it runs on. */
struct copy_job {
    struct ghd_buffer *dst, *src;
    struct ghd_runtime *from, *to; /* src->rt and dst->rt */
    struct ghd_stream *s_from, *s_to;
    struct ghd_err *err;
};

/* One stream of the source device: a copy within it, or a peer copy. */
static int copy_direct(struct copy_job *j)
{
    struct ghd_device *dev = &j->from->dev;
    size_t n = j->src->size;
    if (j->from == j->to)
        return dev->ops->copy_d2d(dev, j->dst->d_ptr, j->src->d_ptr, n, j->s_from, j->err);
    return dev->ops->copy_peer(dev, &j->to->dev, j->dst->d_ptr, j->src->d_ptr, n, j->s_from,
                               j->err);
}

/* Two staging chunks (one when the ring has a single free one): chunk k
 * is filled on the source's stream once the destination's stream has
 * emptied it (ev_to[k]), and emptied on the destination's stream once the
 * source's has filled it (ev_from[k]), so the two devices' copies overlap. */
struct staged {
    struct ghd_staging_chunk *chunk[2];
    struct ghd_event *ev_from[2], *ev_to[2];
    unsigned nchunks;
    int emptied[2]; /* ev_to[k] was recorded: chunk k is emptied after it */
};

static int staged_chunk(struct copy_job *j, struct staged *st, unsigned k, size_t off, size_t n)
{
    struct ghd_device *from = &j->from->dev, *to = &j->to->dev;
    void *h = st->chunk[k]->h_ptr;
    int rc = 0;
    if (st->emptied[k])
        rc = from->ops->stream_wait_event(from, j->s_from, st->ev_to[k], j->err);
    if (rc == 0)
        rc = from->ops->copy_d2h(from, h, (const char *)j->src->d_ptr + off, n, j->s_from, j->err);
    if (rc == 0)
        rc = from->ops->event_record(from, st->ev_from[k], j->s_from, j->err);
    if (rc == 0)
        rc = to->ops->stream_wait_event(to, j->s_to, st->ev_from[k], j->err);
    if (rc == 0)
        rc = to->ops->copy_h2d(to, (char *)j->dst->d_ptr + off, h, n, j->s_to, j->err);
    if (rc == 0)
        rc = to->ops->event_record(to, st->ev_to[k], j->s_to, j->err);
    st->emptied[k] = rc == 0;
    return rc;
}

static int staged_setup(struct copy_job *j, struct staged *st)
{
    struct ghd_staging *ring = &j->from->staging;
    int rc = ghd_staging_acquire(ring, j->from->staging_timeout_ms, &st->chunk[0]);
    if (rc)
        return ghd_err_set(j->err, rc, "no pinned staging chunk on device %u for the copy "
                           "(every one stayed busy)", j->from->index);
    st->nchunks = ghd_staging_acquire(ring, 0, &st->chunk[1]) == 0 ? 2 : 1;
    for (unsigned k = 0; k < st->nchunks && rc == 0; k++) {
        rc = ghd_runtime_event_acquire(j->from, &st->ev_from[k], j->err);
        if (rc == 0)
            rc = ghd_runtime_event_acquire(j->to, &st->ev_to[k], j->err);
    }
    return rc;
}

static void staged_release(struct copy_job *j, struct staged *st)
{
    for (unsigned k = 0; k < 2; k++) {
        if (st->chunk[k])
            ghd_staging_release(&j->from->staging, st->chunk[k]); /* both streams synced */
        ghd_runtime_event_release(j->from, st->ev_from[k]);
        ghd_runtime_event_release(j->to, st->ev_to[k]);
    }
}

static int copy_staged(struct copy_job *j)
{
    struct staged st = {0};
    int rc = staged_setup(j, &st);
    size_t size = rc == 0 ? st.chunk[0]->size : 0;
    for (size_t off = 0, k = 0; rc == 0 && off < j->src->size; off += size, k++) {
        size_t n = j->src->size - off < size ? j->src->size - off : size;
        rc = staged_chunk(j, &st, (unsigned)(k % st.nchunks), off, n);
    }
    struct ghd_device *from = &j->from->dev, *to = &j->to->dev;
    /* Nothing may still read or fill a chunk when it goes back. */
    int sync_to = to->ops->stream_sync(to, j->s_to, rc ? NULL : j->err);
    int sync_from = from->ops->stream_sync(from, j->s_from, NULL);
    if (rc == 0)
        rc = sync_to ? sync_to : sync_from;
    staged_release(j, &st);
    return rc;
}

int ghd_buffer_copy_bytes(struct ghd_buffer *dst, struct ghd_buffer *src, struct ghd_err *err)
{
    GHD_ASSERT(dst->size == src->size);
    struct copy_job j = {dst, src, src->rt, dst->rt, NULL, NULL, err};
    int peer = j.from != j.to && (j.from->peer_mask & (1u << j.to->index));
    int rc = ghd_tier_hold(src, err); /* both on their devices for the copy (core/tier.h) */
    if (rc)
        return rc;
    if ((rc = ghd_tier_hold(dst, err)) != 0) {
        ghd_tier_release(src);
        return rc;
    }
    rc = ghd_runtime_stream_acquire(j.from, &j.s_from, err);
    if (rc == 0 && j.from != j.to && !peer)
        rc = ghd_runtime_stream_acquire(j.to, &j.s_to, err);
    /* After the source's zeroing, on the stream that reads it. */
    if (rc == 0)
        rc = ghd_buffer_order(src, j.s_from, err);
    if (rc == 0 && j.s_to) {
        rc = copy_staged(&j);
    } else if (rc == 0) {
        rc = copy_direct(&j);
        int sync = j.from->dev.ops->stream_sync(&j.from->dev, j.s_from, rc ? NULL : err);
        if (rc == 0)
            rc = sync;
    }
    if (rc == 0)
        ghd_buffer_mark_written(dst);
    else
        ghd_err_prefix(err, rc, "copying buffer %s (device %u) to device %u", src->id,
                       j.from->index, j.to->index);
    ghd_runtime_stream_release(j.from, j.s_from);
    ghd_runtime_stream_release(j.to, j.s_to);
    ghd_tier_release(dst); /* both streams synced above */
    ghd_tier_release(src);
    return rc;
}
