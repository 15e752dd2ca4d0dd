/* What uploads and downloads share: the transfer's stream, staging chunks and
 * buffer reference, and their release once the device work has completed. */
#include "transfer.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "base/trace_span.h"
#include "core/metrics/metrics.h"
#include "transfer_internal.h"

int ghd_transfer_device_error(const struct ghd_transfer *t, int rc, const char *what,
                              struct ghd_err *err)
{
    return ghd_err_set(err, rc, "%s: %s", what, ghd_err_text(&t->dev_err, rc));
}

/* Holds b where the transfer needs it: an upload on its device, a download
 * wherever it is. */
static int tier_take(struct ghd_transfer *t, int whole, struct ghd_err *err)
{
    int rc = t->dir == GHD_TRANSFER_DOWNLOAD ? ghd_tier_read_begin(t->buf, &t->src, err)
             : whole                         ? ghd_tier_hold_whole(t->buf, &t->fresh, err)
                                             : ghd_tier_hold(t->buf, err);
    t->tier_held = rc == 0;
    return rc;
}

static void tier_give(struct ghd_transfer *t)
{
    if (!t->tier_held)
        return;
    if (t->dir == GHD_TRANSFER_DOWNLOAD)
        ghd_tier_read_end(t->buf, &t->src);
    else if (t->fresh) /* what it did not write, when cut short, comes back */
        ghd_tier_release_whole(t->buf, t->completed ? t->offset + t->received : 0);
    else
        ghd_tier_release(t->buf);
    t->tier_held = 0;
}

int ghd_transfer_new(struct ghd_buffer *b, enum ghd_transfer_dir dir, int whole,
                     const struct ghd_transfer_client *client, struct ghd_transfer **out,
                     struct ghd_err *err)
{
    struct ghd_transfer *t = calloc(1, sizeof(*t));
    if (!t)
        return ghd_err_set(err, GHD_ENOHOSTMEM, "out of host memory");
    t->buf = b;
    t->rt = b->rt;
    t->dir = dir;
    t->src.fd = -1;
    t->caps = client->caps;
    t->metrics = client->metrics;
    snprintf(t->request_id, sizeof(t->request_id), "%s", client->request_id ? client->request_id : "");
    snprintf(t->address, sizeof(t->address), "%s", client->address ? client->address : "");
    snprintf(t->tenant, sizeof(t->tenant), "%s", client->tenant ? client->tenant : "");
    t->window[0] = t->window[1] = -1;
    t->started_at = ghd_clock_s();
    int rc = ghd_runtime_stream_acquire(t->rt, &t->stream, &t->dev_err);
    if (rc) {
        ghd_transfer_device_error(t, rc, "cannot create a device stream", err);
        goto fail;
    }
    rc = tier_take(t, whole, err);
    if (rc)
        goto fail;
    rc = t->src.tier == GHD_TIER_DEVICE ? ghd_buffer_order(b, t->stream, &t->dev_err) : 0;
    if (rc) {
        ghd_transfer_device_error(t, rc, "cannot order the transfer on the device", err);
        goto fail;
    }
    t->trace = client->trace;
    if (t->trace)
        ghd_trace_ref(t->trace);
    *out = t;
    return 0;
fail:
    tier_give(t);
    ghd_runtime_stream_release(t->rt, t->stream);
    free(t);
    return rc;
}

/* Takes one staging chunk, GHD_ETIMEDOUT when the ring stays busy for the
 * runtime's staging timeout. A second chunk, which lets a copy overlap the
 * network, is taken later and only if one is free (take_second_chunk). */
/* Counts one more chunk of t->staging for the transfer's address and tenant. */
static int caps_take(struct ghd_transfer *t, unsigned timeout_ms, struct ghd_err *err)
{
    if (!t->caps)
        return 0;
    return ghd_staging_caps_take(t->caps, t->staging, t->staging->stats.chunks, t->address,
                                 t->tenant, timeout_ms, err);
}

static void caps_give(struct ghd_transfer *t)
{
    if (t->caps)
        ghd_staging_caps_give(t->caps, t->staging, t->address, t->tenant);
}

int ghd_transfer_take_chunk(struct ghd_transfer *t, struct ghd_err *err)
{
    unsigned timeout = t->rt->staging_timeout_ms;
    t->staging = ghd_runtime_staging_for(t->rt, t->length);
    int rc = caps_take(t, timeout, err);
    if (rc)
        return rc;
    rc = ghd_staging_acquire(t->staging, timeout, &t->chunk[0]);
    if (rc) {
        caps_give(t);
        return ghd_err_set(err, rc, "all %u staging chunks stayed busy for %u ms; retry later",
                           t->staging->stats.chunks, timeout);
    }
    t->nchunks = 1;
    t->chunk_since = ghd_clock_s();
    return 0;
}

/* Double-buffers a transfer longer than one chunk when a chunk is free now;
 * without one it goes on with a single chunk, just without the overlap. */
void ghd_transfer_take_second_chunk(struct ghd_transfer *t)
{
    if (t->nchunks != 1 || t->length <= t->chunk[0]->size || caps_take(t, 0, NULL) != 0)
        return;
    if (ghd_staging_acquire(t->staging, 0, &t->chunk[1]) == 0)
        t->nchunks = 2;
    else
        caps_give(t);
}

void ghd_transfer_release_chunks(struct ghd_transfer *t)
{
    struct ghd_device *dev = &t->rt->dev;
    if (dev->ops->stream_sync(dev, t->stream, &t->dev_err) != 0)
        ghd_log(GHD_LOG_ERROR, "transfer: stream sync failed: %s",
                ghd_err_text(&t->dev_err, GHD_EDEVICE));
    else if (t->trace) /* the copies still open have completed: their events go back */
        for (int i = 0; i < 2; i++)
            ghd_transfer_trace_end(t, i);
    for (int i = 0; i < 2; i++) {
        if (t->chunk[i])
            t->chunk[i]->pending = 0; /* the stream is idle */
        if (t->chunk[i]) {
            ghd_staging_release(t->staging, t->chunk[i]);
            caps_give(t);
        }
        t->chunk[i] = NULL;
    }
    t->nchunks = 0;
    t->cur = 0;
}

int ghd_transfer_chunk_ready(struct ghd_transfer *t, struct ghd_staging_chunk *c)
{
    if (!c->pending)
        return 0;
    c->pending = 0;
    int rc = t->rt->dev.ops->event_sync(&t->rt->dev, c->done, &t->dev_err);
    if (t->trace && rc == 0)
        ghd_transfer_trace_end(t, c == t->chunk[1]);
    return rc;
}

/* Waits for the device work of this transfer, then gives everything back. */
void ghd_transfer_free(struct ghd_transfer *t)
{
    if (!t)
        return;
    if (t->dir == GHD_TRANSFER_DOWNLOAD) /* an upload is counted when it completes */
        ghd_metrics_transfer(t->metrics, t->rt->index, GHD_TRANSFER_DOWNLOAD, t->sent,
                             ghd_clock_s() - t->started_at);
    ghd_metrics_transfer_direct(t->metrics, t->rt->index, t->dir, t->direct_bytes);
    ghd_metrics_tenant_bytes(t->metrics, t->tenant, t->dir,
                             t->dir == GHD_TRANSFER_DOWNLOAD ? t->sent : t->received);
    ghd_transfer_release_chunks(t); /* the stream is idle from here on */
    if (t->trace)
        ghd_transfer_trace_free(t);
    if (t->half_done)
        t->rt->dev.ops->event_free(&t->rt->dev, t->half_done);
    free(t->slow_buf);
    tier_give(t); /* after the stream's work on the buffer has completed */
    ghd_runtime_stream_release(t->rt, t->stream);
    if (t->writer) {
        if (t->started) /* a write cut short moved bytes too: a new version */
            ghd_buffer_bump(t->buf);
        atomic_store(&t->buf->writing, 0);
    }
    if (t->created && !t->completed)
        ghd_buffer_discard(t->created, t->buf);
    ghd_buffer_unref(t->buf);
    free(t);
}
