/* The download source: downloads of 32 MiB or more are copied by DMA straight
 * into the network side's page-locked response buffer; smaller ones go
 * through a pinned staging chunk, the next window prefetched into a second
 * one while the first is sent. */
#include "transfer.h"

#include <string.h>

#include "base/err.h"
#include "base/error.h"
#include "base/log.h"
#include "device/hostreg.h"
#include "transfer_ring.h"

/* Downloads at least this large copy straight into the caller's buffer. */
#define GHD_DIRECT_DOWNLOAD_MIN ((uint64_t)32 << 20)

/* Downloads move in windows of at most this size, each sent soon after its
 * DMA wrote it while the next one is fetched. On the socket path whole 8 MiB
 * chunks prefetched a chunk ahead ran slower than the direct path; 2 MiB
 * windows narrowed the gap (tests/bench/RESULTS.md, runs 7 and 8), and with a
 * client that no longer reads a cold pattern the two paths measure the same
 * (run 17): the kernel's send path, not the device copy, limits one connection. */
#define GHD_DOWNLOAD_WINDOW ((size_t)2 << 20)

/* The pieces the network side asks for: at most --download-block (4 MiB
 * unless set), at most a chunk. */
#define GHD_DOWNLOAD_BLOCK ((size_t)4 << 20)

int ghd_source_open(struct ghd_buffer *b, uint64_t offset, uint64_t length,
                    const struct ghd_transfer_client *client, struct ghd_transfer **out,
                    struct ghd_err *err)
{
    struct ghd_transfer *t;
    *out = NULL;
    int rc = ghd_transfer_new(b, client, &t, err);
    if (rc) {
        ghd_buffer_unref(b);
        return rc;
    }
    t->dir = GHD_TRANSFER_DOWNLOAD;
    t->offset = offset;
    t->length = length;
    rc = ghd_transfer_take_chunk(t, err);
    if (rc) {
        ghd_transfer_free(t);
        return rc;
    }
    t->direct = t->rt->direct_copy && length >= GHD_DIRECT_DOWNLOAD_MIN;
    *out = t;
    return 0;
}

size_t ghd_source_block(const struct ghd_transfer *t)
{
    size_t chunk = t->chunk[0]->size;
    size_t block = t->rt->download_block ? t->rt->download_block : GHD_DOWNLOAD_BLOCK;
    return chunk < block ? chunk : block;
}

/* Copies the next piece straight from the device into buf + head, where
 * `buf` is memory the caller owns and sends from: no staging ring, no
 * memcpy. Returns the count, 0 when `buf` is not page-locked (the caller
 * stages), or a GHD_E* code. */
static ssize_t read_direct(struct ghd_transfer *t, uint64_t pos, char *buf, size_t head,
                           size_t max)
{
    struct ghd_device *dev = &t->rt->dev;
    if (!t->reg_buf) {
        struct ghd_err err = {0};
        int rc = ghd_hostreg_pages(dev, buf, max, &t->reg_base, &err);
        if (rc != 0) {
            /* Visible, since the staged path costs a memcpy per window. */
            ghd_log(GHD_LOG_INFO, "request %s: the response buffer could not be page-locked "
                                  "(%s): the download goes through the staging ring",
                    t->request_id, ghd_err_text(&err, rc));
            t->direct = 0;
            return 0;
        }
        t->reg_buf = buf;
        t->reg_len = max;
    }
    if (buf < t->reg_buf || buf + max > t->reg_buf + t->reg_len)
        return 0;
    size_t room = max - head;
    size_t n = t->length - pos < room ? (size_t)(t->length - pos) : room;
    int rc = dev->ops->copy_d2h(dev, buf + head, (char *)t->buf->d_ptr + t->offset + pos, n,
                                t->stream, &t->dev_err);
    if (rc == 0)
        rc = dev->ops->stream_sync(dev, t->stream, &t->dev_err);
    if (rc)
        return rc;
    t->sent += n;
    t->direct_bytes += n;
    return (ssize_t)n;
}

static size_t window_size(const struct ghd_transfer *t)
{
    size_t chunk = t->chunk[0]->size;
    return chunk < GHD_DOWNLOAD_WINDOW ? chunk : GHD_DOWNLOAD_WINDOW;
}

/* Queues window `w` (relative to t->offset) into chunk w % nchunks. */
static int fetch_window(struct ghd_transfer *t, int64_t w)
{
    size_t size = window_size(t);
    if ((uint64_t)w * size >= t->length)
        return 0;
    int slot = (int)(w % t->nchunks);
    struct ghd_staging_chunk *c = t->chunk[slot];
    if (t->window[slot] == w)
        return 0;
    if (c->pending) { /* the slot still holds an earlier window in flight */
        int rc = ghd_transfer_chunk_ready(t, c);
        if (rc)
            return rc;
    }
    struct ghd_device *dev = &t->rt->dev;
    uint64_t start = (uint64_t)w * size;
    size_t n = t->length - start < size ? (size_t)(t->length - start) : size;
    int rc = dev->ops->copy_d2h(dev, c->h_ptr, (char *)t->buf->d_ptr + t->offset + start, n,
                                t->stream, &t->dev_err);
    if (rc == 0)
        rc = dev->ops->event_record(dev, c->done, t->stream, &t->dev_err);
    if (rc)
        return rc;
    c->pending = 1;
    t->window[slot] = w;
    return 0;
}

/* The staged bytes from `pos` on, in the pinned chunk holding them; the next
 * window is prefetched into the second chunk while these are sent. */
static ssize_t staged_window(struct ghd_transfer *t, uint64_t pos, const char **data)
{
    size_t window = window_size(t);
    int64_t w = (int64_t)(pos / window);
    ghd_transfer_take_second_chunk(t);
    int rc = fetch_window(t, w);
    if (rc == 0 && t->nchunks == 2) /* prefetch the next window while this one is sent */
        rc = fetch_window(t, w + 1);
    struct ghd_staging_chunk *c = t->chunk[w % t->nchunks];
    if (rc == 0)
        rc = ghd_transfer_chunk_ready(t, c);
    if (rc)
        return rc;
    size_t in_window = (size_t)(pos % window);
    size_t avail = window - in_window;
    if (avail > t->length - pos)
        avail = (size_t)(t->length - pos);
    *data = (const char *)c->h_ptr + in_window;
    return (ssize_t)avail;
}

ssize_t ghd_source_read(struct ghd_transfer *t, uint64_t pos, char *buf, size_t head,
                        size_t max)
{
    GHD_ASSERT(head < max);
    if (t->direct) {
        ssize_t n = read_direct(t, pos, buf, head, max);
        if (n != 0)
            return n;
    }
    const char *data = NULL;
    ssize_t avail = staged_window(t, pos, &data);
    if (avail < 0)
        return avail;
    if ((size_t)avail > max - head)
        avail = (ssize_t)(max - head);
    memcpy(buf + head, data, (size_t)avail);
    t->sent += (uint64_t)avail;
    return avail;
}
