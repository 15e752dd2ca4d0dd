/* Downloads (GET, HEAD): bodies of 32 MiB or more are copied by DMA straight
 * into libmicrohttpd's page-locked response buffer; smaller ones go through a
 * pinned staging chunk, the next window prefetched into a second one while the
 * first is sent. A body that http.c sends on the socket itself is sent
 * straight from those chunks (download_window). */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "buffer_json.h"
#include "buffer_npy.h"
#include "conditional.h"
#include "device/hostreg.h"
#include "base/error.h"
#include "core/metrics.h"
#include "http/range.h"
#include "transfer.h"

struct download {
    struct ghd_transfer *t;
    struct ghd_service *svc;
    int direct;       /* large download: try DMA into the HTTP layer's buffer */
    char *reg_buf;    /* that buffer, once page-locked */
    size_t reg_len;
    void *reg_base;   /* what to unlock */
    size_t prefix_len; /* .npy: the header sent before the bytes */
    char prefix[GHD_NPY_FORMAT_MAX];
};

/* Downloads at least this large copy straight into the HTTP layer's buffer. */
#define GHD_DIRECT_DOWNLOAD_MIN ((uint64_t)32 << 20)

/* Copies the next piece straight from the device into `buf`, which the HTTP
 * layer owns and sends from: no staging ring, no memcpy. Returns the count,
 * 0 when `buf` is not page-locked (the caller stages), or a GHD_E* code. */
static ssize_t download_direct(struct download *d, uint64_t pos, char *buf, size_t max)
{
    struct ghd_transfer *t = d->t;
    struct ghd_device *dev = &t->rt->dev;
    if (!d->reg_buf) {
        if (ghd_hostreg_pages(dev, buf, max, &d->reg_base) != 0) {
            d->direct = 0;
            return 0;
        }
        d->reg_buf = buf;
        d->reg_len = max;
    }
    if (buf != d->reg_buf || max > d->reg_len)
        return 0;
    size_t n = t->length - pos < max ? (size_t)(t->length - pos) : max;
    int rc = dev->ops->copy_d2h(dev, buf, (char *)t->buf->d_ptr + t->offset + pos, n, t->stream);
    if (rc == 0)
        rc = dev->ops->stream_sync(dev, t->stream);
    if (rc)
        return rc;
    t->sent += n;
    return (ssize_t)n;
}

static void download_buffers_done(void *ctx)
{
    struct download *d = ctx;
    if (d->reg_base)
        ghd_hostreg_release(&d->t->rt->dev, d->reg_base);
    d->reg_base = NULL;
    d->reg_buf = NULL;
    d->direct = 0;
}

/* Downloads move in windows of at most this size, each sent soon after its
 * DMA wrote it while the next one is fetched. On the socket path whole 8 MiB
 * chunks prefetched a chunk ahead ran slower than the direct path; 2 MiB
 * windows narrowed the gap (tests/bench/RESULTS.md, runs 7 and 8), and with a
 * client that no longer reads a cold pattern the two paths measure the same
 * (run 17): the kernel's send path, not the device copy, limits one connection. */
#define GHD_DOWNLOAD_WINDOW ((size_t)2 << 20)

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
                                t->stream);
    if (rc == 0)
        rc = dev->ops->event_record(dev, c->done, t->stream);
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

static ssize_t download_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    struct download *d = ctx;
    struct ghd_transfer *t = d->t;
    if (d->direct) {
        ssize_t n = download_direct(d, pos, buf, max);
        if (n != 0)
            return n;
    }
    const char *data = NULL;
    ssize_t avail = staged_window(t, pos, &data);
    if (avail < 0)
        return avail;
    if ((size_t)avail > max)
        avail = (ssize_t)max;
    memcpy(buf, data, (size_t)avail);
    t->sent += (uint64_t)avail;
    return avail;
}

/* For an HTTP layer that sends from the socket itself: the pinned chunk. */
static ssize_t download_window(void *ctx, uint64_t pos, const char **data)
{
    struct download *d = ctx;
    ssize_t avail = staged_window(d->t, pos, data);
    if (avail > 0)
        d->t->sent += (uint64_t)avail;
    return avail;
}

/* .npy: the header, then the bytes as above (positions shifted past it). */
static ssize_t npy_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    struct download *d = ctx;
    if (pos >= d->prefix_len)
        return download_read(ctx, pos - d->prefix_len, buf, max);
    size_t n = d->prefix_len - (size_t)pos < max ? d->prefix_len - (size_t)pos : max;
    memcpy(buf, d->prefix + pos, n);
    return (ssize_t)n;
}

static ssize_t npy_window(void *ctx, uint64_t pos, const char **data)
{
    struct download *d = ctx;
    if (pos >= d->prefix_len)
        return download_window(ctx, pos - d->prefix_len, data);
    *data = d->prefix + pos;
    return (ssize_t)(d->prefix_len - (size_t)pos);
}

static void download_free(void *ctx)
{
    struct download *d = ctx;
    ghd_metrics_transfer(GHD_TRANSFER_DOWNLOAD, d->t->sent, ghd_metrics_now() - d->t->started);
    ghd_transfer_free(d->t, d->svc);
    free(d);
}

int ghd_handle_buffer_get(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_buffer *b;
    int rc = ghd_buffer_lookup(req, rep, &b);
    if (rc)
        return rc;
    /* .npy: the whole array, header first (a Range is ignored, as RFC 9110
     * allows); 406 when the buffer has no description. */
    char prefix[GHD_NPY_FORMAT_MAX];
    size_t prefix_len = 0;
    int npy = ghd_npy_wanted(req);
    if (npy && (rc = ghd_npy_download_header(req, rep, b, prefix, &prefix_len)) != 0) {
        ghd_buffer_unref(b);
        return rc;
    }
    uint64_t version = ghd_buffer_version(b);
    ghd_reply_etag(rep, version, npy);
    if (ghd_if_none_match_hit(req, version, npy)) {
        ghd_buffer_unref(b);
        return ghd_reply_empty(rep, 304);
    }
    uint64_t first = 0, last = b->size - 1;
    int partial = 0;
    const char *range = npy ? NULL : ghd_request_header(req, "Range");
    if (range) {
        rc = ghd_range_parse(range, b->size, &first, &last);
        if (rc == GHD_ERANGE) {
            ghd_reply_header(rep, "Content-Range", "bytes */%zu", b->size);
            ghd_buffer_unref(b);
            return ghd_reply_problem(rep, req, rc, "the range '%.64s' is outside the %zu-byte buffer",
                                     range, b->size);
        }
        partial = rc == 0;
        if (!partial) {
            first = 0;
            last = b->size - 1;
        }
    }
    if (!npy)
        ghd_reply_header(rep, "Accept-Ranges", "bytes");
    if (partial)
        ghd_reply_header(rep, "Content-Range", "bytes %llu-%llu/%zu", (unsigned long long)first,
                         (unsigned long long)last, b->size);
    uint64_t len = last - first + 1;
    int status = partial ? 206 : 200;
    if (strcmp(req->method, "HEAD") == 0) {
        /* Headers only: no staging, no device work. */
        ghd_buffer_unref(b);
        return ghd_reply_stream(rep, status, npy ? "application/x-npy" : "application/octet-stream",
                                prefix_len + len, 0, NULL, NULL, NULL);
    }
    struct download *d = calloc(1, sizeof(*d));
    if (!d) {
        ghd_buffer_unref(b);
        return ghd_reply_problem(rep, req, GHD_ENOHOSTMEM, "out of host memory");
    }
    d->svc = req->svc;
    memcpy(d->prefix, prefix, prefix_len);
    d->prefix_len = prefix_len;
    rc = ghd_transfer_new(req, rep, b, &d->t);
    if (rc) {
        ghd_buffer_unref(b);
        free(d);
        return rc;
    }
    d->t->offset = first;
    d->t->length = len;
    rc = ghd_transfer_take_chunk(d->t, req, rep);
    if (rc) {
        download_free(d);
        return rc;
    }
    d->direct = req->svc->cfg.direct_copy && len >= GHD_DIRECT_DOWNLOAD_MIN;
    rc = ghd_reply_stream(rep, status, npy ? "application/x-npy" : "application/octet-stream",
                          prefix_len + len,
                          d->t->chunk[0]->size < ((size_t)4 << 20) ? d->t->chunk[0]->size
                                                                   : (size_t)4 << 20,
                          npy ? npy_read : download_read, d, download_free);
    rep->reader_buffers_done = download_buffers_done;
    rep->window = npy ? npy_window : download_window;
    return rc;
}
