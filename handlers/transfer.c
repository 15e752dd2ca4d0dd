/* What uploads and downloads share: the transfer's stream, staging chunks and
 * buffer reference, and their release once the device work has completed. */
#include "transfer.h"

#include <stdlib.h>

#include "base/error.h"
#include "base/log.h"
#include "core/metrics.h"

int ghd_transfer_new(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                        struct ghd_transfer **out)
{
    struct ghd_transfer *t = calloc(1, sizeof(*t));
    if (!t)
        return ghd_reply_problem(rep, req, GHD_ENOHOSTMEM, "out of host memory");
    t->buf = b;
    t->rt = b->rt;
    t->window[0] = t->window[1] = -1;
    t->started = ghd_metrics_now();
    int rc = ghd_runtime_stream_acquire(t->rt, &t->stream);
    if (rc) {
        free(t);
        return ghd_reply_problem(rep, req, rc, "cannot create a device stream: %s",
                                 b->rt->dev.last_error);
    }
    rc = ghd_buffer_order(b, t->stream);
    if (rc) {
        ghd_runtime_stream_release(t->rt, t->stream);
        free(t);
        return ghd_reply_problem(rep, req, rc, "cannot order the transfer on the device: %s",
                                 b->rt->dev.last_error);
    }
    *out = t;
    return 0;
}

/* Takes one staging chunk, replying 503 with Retry-After when the ring stays
 * busy for --staging-timeout-ms. A second chunk, which lets a copy overlap the
 * network, is taken later and only if one is free (take_second_chunk). */
int ghd_transfer_take_chunk(struct ghd_transfer *t, struct ghd_request *req,
                               struct ghd_reply *rep)
{
    unsigned timeout = req->svc->cfg.staging_timeout_ms;
    struct ghd_staging *small = &t->rt->staging_small;
    t->staging = small->chunks && t->length <= small->stats.chunk_size ? small : &t->rt->staging;
    int rc = ghd_staging_acquire(t->staging, timeout, &t->chunk[0]);
    if (rc) {
        ghd_reply_header(rep, "Retry-After", "1");
        return ghd_reply_problem(rep, req, rc,
                                 "all %u staging chunks stayed busy for %u ms; retry later",
                                 t->staging->stats.chunks, timeout);
    }
    t->nchunks = 1;
    t->chunk_since = ghd_metrics_now();
    return 0;
}

/* Double-buffers a transfer longer than one chunk when a chunk is free now;
 * without one it goes on with a single chunk, just without the overlap. */
void ghd_transfer_take_second_chunk(struct ghd_transfer *t)
{
    if (t->nchunks == 1 && t->length > t->chunk[0]->size &&
        ghd_staging_acquire(t->staging, 0, &t->chunk[1]) == 0)
        t->nchunks = 2;
}

void ghd_transfer_release_chunks(struct ghd_transfer *t)
{
    struct ghd_device *dev = &t->rt->dev;
    if (dev->ops->stream_sync(dev, t->stream) != 0)
        ghd_log(GHD_LOG_ERROR, "transfer: stream sync failed: %s", dev->last_error);
    for (int i = 0; i < 2; i++) {
        if (t->chunk[i])
            t->chunk[i]->pending = 0; /* the stream is idle */
        if (t->staging)
            ghd_staging_release(t->staging, t->chunk[i]);
        t->chunk[i] = NULL;
    }
    t->nchunks = 0;
    t->cur = 0;
}

/* Waits for the device work of this transfer, then gives everything back. */
void ghd_transfer_free(struct ghd_transfer *t, struct ghd_service *svc)
{
    if (!t)
        return;
    ghd_transfer_release_chunks(t);
    free(t->slow_buf);
    ghd_runtime_stream_release(t->rt, t->stream);
    if (t->writer) { /* a write cut short moved bytes too: a new version */
        ghd_buffer_bump(t->buf);
        atomic_store(&t->buf->writing, 0);
    }
    if (t->created && !t->completed)
        ghd_buffer_discard(&svc->buffers, t->buf);
    ghd_buffer_unref(t->buf);
    free(t);
}

int ghd_transfer_chunk_ready(struct ghd_transfer *t, struct ghd_staging_chunk *c)
{
    if (!c->pending)
        return 0;
    c->pending = 0;
    return t->rt->dev.ops->event_sync(&t->rt->dev, c->done);
}
