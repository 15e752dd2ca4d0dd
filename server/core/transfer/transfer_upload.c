/* The upload sink: body pieces of 256 KiB or more are copied by DMA straight
 * from the network side's page-locked read buffer; smaller ones are gathered
 * in a pinned staging chunk, whose copy to the device overlaps the receipt of
 * the next chunk when a second one is free. A body received in place lands
 * straight in the chunks (reserve/commit). */
#include "transfer.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/log.h"
#include "device/hostreg.h"
#include "core/metrics/metrics.h"
#include "transfer_internal.h"

/* Body pieces at least this large go to the device without the staging ring. */
#define GHD_DIRECT_COPY_MIN ((size_t)256 << 10)

int ghd_sink_open(struct ghd_buffer *b, int created_here, int whole,
                  const struct ghd_transfer_client *client, struct ghd_transfer **out,
                  struct ghd_err *err)
{
    struct ghd_transfer *t;
    struct ghd_buffer_table *created = created_here ? client->buffers : NULL;
    *out = NULL;
    int rc = ghd_transfer_new(b, GHD_TRANSFER_UPLOAD, whole && !created_here, client, &t, err);
    if (rc) {
        if (created) /* a buffer made for this upload must not stay behind, unseen */
            ghd_buffer_discard(created, b);
        ghd_buffer_unref(b);
        return rc;
    }
    t->created = created;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&b->writing, &expected, 1)) {
        ghd_transfer_free(t);
        return ghd_err_set(err, GHD_EBUSY, "another upload to this buffer is in progress");
    }
    t->writer = 1;
    *out = t;
    return 0; /* the staging chunk is taken when the first bytes arrive */
}

void ghd_sink_start(struct ghd_transfer *t, uint64_t offset, uint64_t length)
{
    t->offset = offset;
    t->length = length;
    t->started = 1;
    ghd_buffer_bump(t->buf);
}

static char *device_at(const struct ghd_transfer *t)
{
    return (char *)t->buf->d_ptr + t->offset + t->flushed;
}

/* Queues the filled part of the current chunk to the device and switches to
 * the other chunk, waiting for that one's previous copy. */
static int flush_chunk(struct ghd_transfer *t)
{
    struct ghd_device *dev = &t->rt->dev;
    struct ghd_staging_chunk *c = t->chunk[t->cur];
    if (t->fill == 0)
        return 0;
    if (t->trace)
        ghd_transfer_trace_begin(t, t->cur, c->done, t->fill);
    int rc = dev->ops->copy_h2d(dev, device_at(t), c->h_ptr, t->fill, t->stream, &t->dev_err);
    if (rc)
        return rc;
    rc = dev->ops->event_record(dev, c->done, t->stream, &t->dev_err);
    if (rc)
        return rc;
    c->pending = 1;
    t->flushed += t->fill;
    t->fill = 0;
    ghd_transfer_take_second_chunk(t);
    t->cur = (t->cur + 1) % t->nchunks;
    return ghd_transfer_chunk_ready(t, t->chunk[t->cur]);
}

/* Copies `len` bytes at `data` to the device and waits: the caller reuses
 * that memory for its next piece. */
static int copy_now(struct ghd_transfer *t, const char *data, size_t len)
{
    struct ghd_device *dev = &t->rt->dev;
    uint64_t start = t->trace ? ghd_clock_ns() : 0;
    int rc = dev->ops->copy_h2d(dev, device_at(t), data, len, t->stream, &t->dev_err);
    if (rc == 0)
        rc = dev->ops->stream_sync(dev, t->stream, &t->dev_err);
    if (rc == 0)
        t->flushed += len;
    if (t->trace && rc == 0)
        ghd_transfer_trace_now(t, start, len);
    return rc;
}

/* Copies a body piece straight from the network side's (page-locked) read
 * buffer to the device, skipping the staging ring. */
static int copy_direct(struct ghd_transfer *t, const char *data, size_t len)
{
    int rc = flush_chunk(t); /* earlier bytes first; the stream keeps the order */
    if (rc == 0 && (rc = copy_now(t, data, len)) == 0)
        t->direct_bytes += len;
    return rc;
}

static int body_too_long(const struct ghd_transfer *t, struct ghd_err *err)
{
    return ghd_err_set(err, GHD_ETOOBIG, "the body is longer than the %llu bytes it may write",
                       (unsigned long long)t->length);
}

static int copy_failed(const struct ghd_transfer *t, int rc, struct ghd_err *err)
{
    return ghd_transfer_device_error(t, rc, "device copy failed", err);
}

#define SLOW_PIECE ((size_t)64 << 10)

/* An upload that held its staging chunks for the runtime's staging hold (a
 * trickle just over --min-transfer-rate would hold them for ever, and 32 such
 * starved the ring): what it has is copied to the device, the chunks go back,
 * and its later pieces go through a small heap buffer, each copied and
 * waited for at once. Slow, but the ring is never held by a slow client. */
static int go_slow(struct ghd_transfer *t, struct ghd_err *err)
{
    struct ghd_device *dev = &t->rt->dev;
    uint64_t start = t->trace ? ghd_clock_ns() : 0;
    size_t copied = t->fill;
    if (t->fill) {
        int rc = dev->ops->copy_h2d(dev, device_at(t), t->chunk[t->cur]->h_ptr, t->fill,
                                    t->stream, &t->dev_err);
        if (rc)
            return copy_failed(t, rc, err);
        t->flushed += t->fill;
        t->fill = 0;
    }
    ghd_transfer_release_chunks(t); /* waits for the copy */
    if (t->trace && copied)
        ghd_transfer_trace_now(t, start, copied);
    t->slow_buf = malloc(SLOW_PIECE);
    if (!t->slow_buf)
        return ghd_err_set(err, GHD_ENOHOSTMEM, "out of host memory");
    ghd_log(GHD_LOG_INFO, "request %s: upload slower than one staging chunk per %u s "
                          "(--staging-hold): goes on without staging",
            t->request_id, t->rt->staging_hold_s);
    return 0;
}

int ghd_sink_reserve(struct ghd_transfer *t, char **space, size_t *len, struct ghd_err *err)
{
    uint64_t left = t->length - t->received;
    if (left == 0)
        return body_too_long(t, err);
    unsigned hold_s = t->rt->staging_hold_s;
    if (t->nchunks && hold_s && ghd_clock_s() - t->chunk_since > (double)hold_s) {
        int rc = go_slow(t, err);
        if (rc)
            return rc;
    }
    if (t->slow_buf) {
        *space = t->slow_buf;
        *len = SLOW_PIECE < left ? SLOW_PIECE : (size_t)left;
        return 0;
    }
    /* Taken only now that bytes are here to fill it: a client that sends a
     * head (Expect: 100-continue, or a stalled body) holds no chunk. */
    if (t->nchunks == 0) {
        int rc = ghd_transfer_take_chunk(t, err);
        if (rc)
            return rc;
    }
    struct ghd_staging_chunk *c = t->chunk[t->cur];
    size_t room = c->size - t->fill;
    *space = (char *)c->h_ptr + t->fill;
    *len = room < left ? room : (size_t)left;
    return 0;
}

int ghd_sink_commit(struct ghd_transfer *t, size_t n, struct ghd_err *err)
{
    t->received += n;
    if (t->slow_buf) {
        int rc = copy_now(t, t->slow_buf, n);
        return rc ? copy_failed(t, rc, err) : 0;
    }
    t->fill += n;
    if (t->fill < t->chunk[t->cur]->size)
        return 0;
    int rc = flush_chunk(t);
    return rc ? copy_failed(t, rc, err) : 0;
}

int ghd_sink_write(struct ghd_transfer *t, const char *data, size_t len, struct ghd_err *err)
{
    if (t->received + len > t->length)
        return body_too_long(t, err);
    if (t->rt->direct_copy && len >= GHD_DIRECT_COPY_MIN &&
        ghd_hostreg_thread_covers(&t->rt->dev, data, len)) {
        t->received += len;
        int rc = copy_direct(t, data, len);
        return rc ? copy_failed(t, rc, err) : 0;
    }
    while (len) { /* through the chunks, as a body received in place fills them */
        char *space = NULL;
        size_t room = 0;
        int rc = ghd_sink_reserve(t, &space, &room, err);
        if (rc)
            return rc;
        size_t n = room < len ? room : len;
        memcpy(space, data, n);
        data += n;
        len -= n;
        if ((rc = ghd_sink_commit(t, n, err)) != 0)
            return rc;
    }
    return 0;
}

int ghd_sink_flush(struct ghd_transfer *t, struct ghd_err *err)
{
    int rc = flush_chunk(t);
    if (rc == 0)
        rc = t->rt->dev.ops->stream_sync(&t->rt->dev, t->stream, &t->dev_err);
    return rc ? copy_failed(t, rc, err) : 0;
}

void ghd_sink_complete(struct ghd_transfer *t, const struct ghd_array_desc *desc)
{
    t->completed = 1;
    if (desc) /* .npy: the bytes and their description change together */
        ghd_buffer_desc_set(t->buf, desc);
    ghd_buffer_uploaded_extend(t->buf, t->offset, t->received);
    /* Every byte is on the device: a client told so may start the next
     * upload at once, even before this transfer is freed. */
    ghd_buffer_bump(t->buf);
    atomic_store(&t->buf->writing, 0);
    t->writer = 0;
    ghd_metrics_transfer(t->metrics, t->rt->index, GHD_TRANSFER_UPLOAD, t->received,
                         ghd_clock_s() - t->started_at);
    if (t->created)
        ghd_buffer_publish(t->buf);
}
