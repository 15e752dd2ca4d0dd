/* The download source: the bytes go by DMA into a pinned staging chunk, a
 * window at a time, and the network side sends each window straight from
 * the chunk (no memcpy). With --download-overlap 1 the next window is
 * copied into the chunk's other half while one is sent. */
#include "transfer.h"

#include <string.h>

#include "base/err.h"
#include "base/error.h"
#include "core/tiers/tier_disk.h"
#include "transfer_internal.h"

/* Windows are at most --download-block (4 MiB unless set), at most the
 * chunk (half of it with overlap). Run 48 (tests/bench/RESULTS.md): the
 * send of bytes the DMA has just written, in the CPU's cache still, beat
 * the overlap, whose sends read bytes written a window earlier (1.13x at
 * 16 connections); both beat copying into libmicrohttpd's own response
 * buffer, the path before (runs up to 47). */
#define GHD_DOWNLOAD_BLOCK ((size_t)4 << 20)

int ghd_source_open(struct ghd_buffer *b, uint64_t offset, uint64_t length,
                    const struct ghd_transfer_client *client, struct ghd_transfer **out,
                    struct ghd_err *err)
{
    struct ghd_transfer *t;
    *out = NULL;
    int rc = ghd_transfer_new(b, GHD_TRANSFER_DOWNLOAD, 0, client, &t, err);
    if (rc) {
        ghd_buffer_unref(b);
        return rc;
    }
    t->offset = offset;
    t->length = length;
    rc = ghd_transfer_take_chunk(t, err);
    if (rc) {
        ghd_transfer_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

/* --download-block, at most the chunk. */
static size_t download_block(const struct ghd_transfer *t)
{
    size_t chunk = t->chunk[0]->size;
    size_t block = t->rt->download_block ? t->rt->download_block : GHD_DOWNLOAD_BLOCK;
    return block < chunk ? block : chunk;
}

/* How many windows chunk[0] holds at once: two when the next one's copy
 * overlaps the send (--download-overlap 1) and the download needs more
 * than one, else one. */
static int window_slots(const struct ghd_transfer *t)
{
    return t->rt->download_overlap && t->length > download_block(t) ? 2 : 1;
}

static size_t window_size(const struct ghd_transfer *t)
{
    size_t block = download_block(t);
    size_t share = t->chunk[0]->size / (size_t)window_slots(t);
    return block < share ? block : share;
}

/* Window w goes into slot w % slots of the chunk; the first slot's copy is
 * signalled by the chunk's event, the second's by one the download makes
 * when it first needs it. */
static struct ghd_event *slot_event(struct ghd_transfer *t, int slot, int **pending)
{
    if (slot == 0) {
        *pending = &t->chunk[0]->pending;
        return t->chunk[0]->done;
    }
    *pending = &t->half_pending;
    return t->half_done;
}

static int slot_wait(struct ghd_transfer *t, int slot)
{
    int *pending;
    struct ghd_event *done = slot_event(t, slot, &pending);
    if (!*pending)
        return 0;
    *pending = 0;
    int rc = t->rt->dev.ops->event_sync(&t->rt->dev, done, &t->dev_err);
    if (t->trace && rc == 0)
        ghd_transfer_trace_end(t, slot);
    return rc;
}

/* A window of a spilled buffer, from the host tier or its file (core/tier.h). */
static int spilled_window(struct ghd_transfer *t, char *dst, uint64_t at, size_t n)
{
    if (t->src.tier == GHD_TIER_HOST) {
        memcpy(dst, t->src.h_ptr + at, n);
        return 0;
    }
    return ghd_tier_file_read(t->src.fd, dst, n, t->src.offset + at, &t->dev_err);
}

/* Queues the copy of window `w` into its half, unless it is there already
 * or past the end. */
static int fetch_window(struct ghd_transfer *t, size_t window, int slots, int64_t w)
{
    if ((uint64_t)w * window >= t->length)
        return 0;
    int slot = (int)(w % slots);
    if (t->window[slot] == w)
        return 0;
    struct ghd_device *dev = &t->rt->dev;
    int rc = slot_wait(t, slot); /* the half still holds an earlier window in flight */
    if (rc == 0 && slot == 1 && !t->half_done)
        rc = dev->ops->event_new(dev, &t->half_done, &t->dev_err);
    if (rc)
        return rc;
    uint64_t start = (uint64_t)w * window;
    size_t n = t->length - start < window ? (size_t)(t->length - start) : window;
    char *dst = (char *)t->chunk[0]->h_ptr + (size_t)slot * window;
    if (t->src.tier != GHD_TIER_DEVICE) { /* spilled: read where it is, nothing queued */
        rc = spilled_window(t, dst, t->offset + start, n);
        if (rc == 0)
            t->window[slot] = w;
        return rc;
    }
    if (t->trace)
        ghd_transfer_trace_begin(t, slot, slot == 0 ? t->chunk[0]->done : t->half_done, n);
    rc = dev->ops->copy_d2h(dev, dst, (char *)t->buf->d_ptr + t->offset + start, n, t->stream,
                            &t->dev_err);
    int *pending;
    struct ghd_event *done = slot_event(t, slot, &pending);
    if (rc == 0)
        rc = dev->ops->event_record(dev, done, t->stream, &t->dev_err);
    if (rc)
        return rc;
    *pending = 1;
    t->window[slot] = w;
    return 0;
}

ssize_t ghd_source_read(struct ghd_transfer *t, uint64_t pos, const char **data)
{
    GHD_ASSERT(pos < t->length);
    size_t window = window_size(t);
    int slots = window_slots(t);
    int64_t w = (int64_t)(pos / window);
    int slot = (int)(w % slots);
    int rc = fetch_window(t, window, slots, w);
    if (rc == 0 && slots == 2) /* the next window is copied while this one is sent */
        rc = fetch_window(t, window, slots, w + 1);
    if (rc == 0)
        rc = slot_wait(t, slot);
    if (rc)
        return rc;
    size_t in_window = (size_t)(pos % window);
    uint64_t avail = window - in_window;
    if (avail > t->length - pos)
        avail = t->length - pos;
    *data = (const char *)t->chunk[0]->h_ptr + (size_t)slot * window + in_window;
    t->sent += avail;
    return (ssize_t)avail;
}
