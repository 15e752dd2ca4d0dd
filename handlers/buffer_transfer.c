/* The bytes of buffers: uploads stream through two pinned staging chunks per
 * request (the copy of one overlaps the receive into the other), downloads
 * prefetch the next window into the second chunk while the first is sent.
 * Memory use is two chunks per transfer, whatever the body size. */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "buffer_json.h"
#include "server/device/hostreg.h"
#include "server/error.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/range.h"
#include "server/service.h"

/* Body pieces at least this large go to the device without the staging ring. */
#define GHD_DIRECT_COPY_MIN ((size_t)256 << 10)

struct transfer {
    struct ghd_buffer *buf;
    struct ghd_runtime *rt;
    struct ghd_stream *stream;
    struct ghd_staging_chunk *chunk[2];
    uint64_t offset;   /* first byte of the buffer this transfer touches */
    uint64_t length;   /* bytes the transfer may move */
    uint64_t received; /* upload: body bytes taken so far */
    uint64_t flushed;  /* upload: bytes handed to the device */
    size_t fill;       /* upload: bytes waiting in chunk[cur] */
    int cur;
    int nchunks;   /* staging chunks held: 1, or 2 to overlap copies and the network */
    int writer;    /* holds the buffer's single-writer flag */
    int created;   /* POST with a body: the buffer is new and dropped on failure */
    int completed; /* the handler replied with success */
    int64_t window[2]; /* download: window index held by each chunk, -1 = none */
    uint64_t sent;     /* download: bytes handed to the network */
    double started;    /* ghd_metrics_now() at the start, for the throughput metric */
};

static int transfer_new(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                        struct transfer **out)
{
    struct transfer *t = calloc(1, sizeof(*t));
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
    *out = t;
    return 0;
}

/* Takes one staging chunk, replying 503 with Retry-After when the ring stays
 * busy for --staging-timeout-ms. A second chunk, which lets a copy overlap the
 * network, is taken later and only if one is free (take_second_chunk). */
static int transfer_take_chunk(struct transfer *t, struct ghd_request *req,
                               struct ghd_reply *rep)
{
    unsigned timeout = req->svc->cfg.staging_timeout_ms;
    int rc = ghd_staging_acquire(&t->rt->staging, timeout, &t->chunk[0]);
    if (rc) {
        ghd_reply_header(rep, "Retry-After", "1");
        return ghd_reply_problem(rep, req, rc,
                                 "all %u staging chunks stayed busy for %u ms; retry later",
                                 t->rt->staging.stats.chunks, timeout);
    }
    t->nchunks = 1;
    return 0;
}

/* Double-buffers a transfer longer than one chunk when a chunk is free now;
 * without one it goes on with a single chunk, just without the overlap. */
static void take_second_chunk(struct transfer *t)
{
    if (t->nchunks == 1 && t->length > t->chunk[0]->size &&
        ghd_staging_acquire(&t->rt->staging, 0, &t->chunk[1]) == 0)
        t->nchunks = 2;
}

/* Waits for the device work of this transfer, then gives everything back. */
static void transfer_free(struct transfer *t, struct ghd_service *svc)
{
    if (!t)
        return;
    struct ghd_device *dev = &t->rt->dev;
    if (dev->ops->stream_sync(dev, t->stream) != 0)
        ghd_log(GHD_LOG_ERROR, "transfer: stream sync failed: %s", dev->last_error);
    for (int i = 0; i < 2; i++) {
        if (t->chunk[i])
            t->chunk[i]->pending = 0; /* the stream is idle */
        ghd_staging_release(&t->rt->staging, t->chunk[i]);
    }
    ghd_runtime_stream_release(t->rt, t->stream);
    if (t->writer)
        atomic_store(&t->buf->writing, 0);
    if (t->created && !t->completed)
        ghd_buffer_remove(&svc->buffers, t->buf->id, t->buf->tenant[0] ? t->buf->tenant : NULL);
    ghd_buffer_unref(t->buf);
    free(t);
}

/* ---- uploads --------------------------------------------------------- */

static int claim_writer(struct transfer *t, struct ghd_request *req, struct ghd_reply *rep)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&t->buf->writing, &expected, 1))
        return ghd_reply_problem(rep, req, GHD_EBUSY,
                                 "another upload to this buffer is in progress");
    t->writer = 1;
    return 0;
}

/* Where a PUT writes: Content-Range, else ?offset=, else from byte 0. */
static int upload_extent(struct ghd_request *req, struct ghd_reply *rep, uint64_t size,
                         uint64_t *offset, uint64_t *length)
{
    const char *cr = ghd_request_header(req, "Content-Range");
    const char *off = ghd_request_query(req, "offset");
    if (cr && off) /* one would be ignored, malformed or not */
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "give Content-Range or ?offset=, not both");
    if (cr) {
        uint64_t first, last, total;
        if (ghd_content_range_parse(cr, &first, &last, &total))
            return ghd_reply_problem(rep, req, GHD_EINVAL,
                                     "Content-Range must look like 'bytes a-b/N' or 'bytes a-b/*'");
        if (total != UINT64_MAX && total != size)
            return ghd_reply_problem(rep, req, GHD_ERANGE,
                                     "Content-Range total %llu differs from the buffer size %llu",
                                     (unsigned long long)total, (unsigned long long)size);
        if (last >= size)
            return ghd_reply_problem(rep, req, GHD_ERANGE,
                                     "Content-Range ends at byte %llu, past the buffer's %llu bytes",
                                     (unsigned long long)last, (unsigned long long)size);
        *offset = first;
        *length = last - first + 1;
        if (req->has_content_length && req->content_length != *length)
            return ghd_reply_problem(rep, req, GHD_EINVAL,
                                     "Content-Length %llu differs from the Content-Range length %llu",
                                     (unsigned long long)req->content_length,
                                     (unsigned long long)*length);
        return 0;
    }
    *offset = 0;
    if (off) {
        char *end;
        if (*off < '0' || *off > '9')
            return ghd_reply_problem(rep, req, GHD_EINVAL, "offset must be a byte count");
        *offset = strtoull(off, &end, 10);
        if (*end)
            return ghd_reply_problem(rep, req, GHD_EINVAL, "offset must be a byte count");
        if (*offset > size)
            return ghd_reply_problem(rep, req, GHD_ERANGE, "offset %llu is past the buffer's end",
                                     (unsigned long long)*offset);
    }
    *length = size - *offset;
    if (req->has_content_length) {
        if (req->content_length > *length)
            return ghd_reply_problem(rep, req, GHD_ETOOBIG,
                                     "the body (%llu bytes) does not fit: %llu bytes from offset "
                                     "%llu to the buffer's end",
                                     (unsigned long long)req->content_length,
                                     (unsigned long long)*length, (unsigned long long)*offset);
        *length = req->content_length;
    }
    return 0;
}

static int upload_start(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                        int created)
{
    struct transfer *t;
    int rc = transfer_new(req, rep, b, &t);
    if (rc) {
        ghd_buffer_unref(b);
        return rc;
    }
    t->created = created;
    req->state = t;
    if ((rc = claim_writer(t, req, rep)) != 0)
        return rc;
    if (!created && (rc = upload_extent(req, rep, b->size, &t->offset, &t->length)) != 0)
        return rc;
    if (created)
        t->length = b->size;
    return transfer_take_chunk(t, req, rep);
}

static int put_begin(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_buffer *b;
    int rc = ghd_buffer_lookup(req, rep, &b);
    if (rc)
        return rc;
    rc = upload_start(req, rep, b, 0);
    if (rc) { /* begin failed: cleanup is not called, so release here */
        transfer_free(req->state, req->svc);
        req->state = NULL;
    }
    return rc;
}

static int create_begin(struct ghd_request *req, struct ghd_reply *rep)
{
    if (!req->has_content_length)
        return ghd_reply_problem(rep, req, GHD_ELENGTH,
                                 "creating a buffer from a body needs Content-Length");
    uint64_t ttl = 0, align = 0; /* "false" or "-1" is a 400, not a silent 0 */
    int rc = ghd_buffer_query_uint(req, rep, "ttl_s", (uint64_t)INT64_MAX, &ttl);
    if (rc == 0)
        rc = ghd_buffer_query_uint(req, rep, "alignment", (uint64_t)INT64_MAX, &align);
    if (rc)
        return rc;
    struct ghd_buffer_spec spec = {
        .size = req->content_length,
        .alignment = (size_t)align,
        .label = ghd_request_query(req, "label"),
        .ttl_s = (time_t)ttl,
    };
    rc = ghd_buffer_spec_check(req, rep, &spec);
    if (rc)
        return rc;
    struct ghd_buffer *b;
    rc = ghd_buffer_create_for(req, rep, &spec, &b);
    if (rc)
        return rc;
    rc = upload_start(req, rep, b, 1);
    if (rc) {
        transfer_free(req->state, req->svc);
        req->state = NULL;
    }
    return rc;
}

static int chunk_ready(struct transfer *t, struct ghd_staging_chunk *c)
{
    if (!c->pending)
        return 0;
    c->pending = 0;
    return t->rt->dev.ops->event_sync(&t->rt->dev, c->done);
}

/* Queues the filled part of the current chunk to the device and switches to
 * the other chunk, waiting for that one's previous copy. */
static int flush_chunk(struct transfer *t)
{
    struct ghd_device *dev = &t->rt->dev;
    struct ghd_staging_chunk *c = t->chunk[t->cur];
    if (t->fill == 0)
        return 0;
    char *dst = (char *)t->buf->d_ptr + t->offset + t->flushed;
    int rc = dev->ops->copy_h2d(dev, dst, c->h_ptr, t->fill, t->stream);
    if (rc)
        return rc;
    rc = dev->ops->event_record(dev, c->done, t->stream);
    if (rc)
        return rc;
    c->pending = 1;
    t->flushed += t->fill;
    t->fill = 0;
    take_second_chunk(t);
    t->cur = (t->cur + 1) % t->nchunks;
    return chunk_ready(t, t->chunk[t->cur]);
}

/* Copies a body piece straight from the HTTP layer's (page-locked) read
 * buffer to the device, skipping the staging ring; the copy has completed when
 * this returns, since the HTTP layer reuses that buffer for the next piece. */
static int copy_direct(struct transfer *t, const char *data, size_t len)
{
    struct ghd_device *dev = &t->rt->dev;
    int rc = flush_chunk(t); /* earlier bytes first; the stream keeps the order */
    if (rc)
        return rc;
    rc = dev->ops->copy_h2d(dev, (char *)t->buf->d_ptr + t->offset + t->flushed, data, len,
                            t->stream);
    if (rc == 0)
        rc = dev->ops->stream_sync(dev, t->stream);
    if (rc == 0)
        t->flushed += len;
    return rc;
}

static int put_write(struct ghd_request *req, struct ghd_reply *rep, const char *data, size_t len)
{
    struct transfer *t = req->state;
    if (t->received + len > t->length)
        return ghd_reply_problem(rep, req, GHD_ETOOBIG,
                                 "the body is longer than the %llu bytes it may write",
                                 (unsigned long long)t->length);
    t->received += len;
    if (req->svc->cfg.direct_copy && len >= GHD_DIRECT_COPY_MIN &&
        ghd_hostreg_thread_covers(&t->rt->dev, data, len)) {
        int rc = copy_direct(t, data, len);
        if (rc)
            return ghd_reply_problem(rep, req, rc, "device copy failed: %s", t->rt->dev.last_error);
        return 0;
    }
    while (len) {
        struct ghd_staging_chunk *c = t->chunk[t->cur];
        size_t n = c->size - t->fill;
        if (n > len)
            n = len;
        memcpy((char *)c->h_ptr + t->fill, data, n);
        t->fill += n;
        data += n;
        len -= n;
        if (t->fill == c->size) {
            int rc = flush_chunk(t);
            if (rc)
                return ghd_reply_problem(rep, req, rc, "device copy failed: %s",
                                         t->rt->dev.last_error);
        }
    }
    return 0;
}

static void upload_cleanup(struct ghd_request *req)
{
    transfer_free(req->state, req->svc);
    req->state = NULL;
}

int ghd_handle_buffer_put(struct ghd_request *req, struct ghd_reply *rep)
{
    struct transfer *t = req->state;
    if (!t)
        return ghd_reply_problem(rep, req, GHD_EMEDIA, "the body must be application/octet-stream");
    int rc = flush_chunk(t);
    if (rc == 0)
        rc = t->rt->dev.ops->stream_sync(&t->rt->dev, t->stream);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "device copy failed: %s", t->rt->dev.last_error);
    /* A chunked body must fill its Content-Range, as a Content-Length must. */
    if (!t->created && t->received != t->length && ghd_request_header(req, "Content-Range"))
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "the body (%llu bytes) is shorter than its Content-Range (%llu bytes)",
                                 (unsigned long long)t->received, (unsigned long long)t->length);
    t->completed = 1;
    /* Every byte is on the device: a client that reads this reply may start
     * the next upload at once, even before this connection is torn down. */
    atomic_store(&t->buf->writing, 0);
    t->writer = 0;
    ghd_metrics_transfer(GHD_TRANSFER_UPLOAD, t->received, ghd_metrics_now() - t->started);
    if (t->created) {
        ghd_buffer_ref(t->buf);
        return ghd_buffer_reply_created(req, rep, t->buf);
    }
    return ghd_reply_json(rep, 200,
                          json_pack("{s:s, s:I, s:I}", "id", t->buf->id, "offset",
                                    (json_int_t)t->offset, "bytes_written",
                                    (json_int_t)t->received));
}

const struct ghd_upload_ops ghd_buffer_put_upload = {put_begin, put_write, upload_cleanup};
const struct ghd_upload_ops ghd_buffer_create_upload = {create_begin, put_write, upload_cleanup};

/* ---- downloads ------------------------------------------------------- */

struct download {
    struct transfer *t;
    struct ghd_service *svc;
    int direct;       /* large download: try DMA into the HTTP layer's buffer */
    char *reg_buf;    /* that buffer, once page-locked */
    size_t reg_len;
    void *reg_base;   /* what to unlock */
};

/* Downloads at least this large copy straight into the HTTP layer's buffer. */
#define GHD_DIRECT_DOWNLOAD_MIN ((uint64_t)32 << 20)

/* Copies the next piece straight from the device into `buf`, which the HTTP
 * layer owns and sends from: no staging ring, no memcpy. Returns the count,
 * 0 when `buf` is not page-locked (the caller stages), or a GHD_E* code. */
static ssize_t download_direct(struct download *d, uint64_t pos, char *buf, size_t max)
{
    struct transfer *t = d->t;
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

/* Queues window `w` (chunk-sized, relative to t->offset) into chunk
 * w % nchunks. */
static int fetch_window(struct transfer *t, int64_t w)
{
    if ((uint64_t)w * t->chunk[0]->size >= t->length)
        return 0;
    int slot = (int)(w % t->nchunks);
    struct ghd_staging_chunk *c = t->chunk[slot];
    if (t->window[slot] == w)
        return 0;
    if (c->pending) { /* the slot still holds an earlier window in flight */
        int rc = chunk_ready(t, c);
        if (rc)
            return rc;
    }
    struct ghd_device *dev = &t->rt->dev;
    uint64_t start = (uint64_t)w * c->size;
    size_t n = t->length - start < c->size ? (size_t)(t->length - start) : c->size;
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

static ssize_t download_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    struct download *d = ctx;
    struct transfer *t = d->t;
    if (d->direct) {
        ssize_t n = download_direct(d, pos, buf, max);
        if (n != 0)
            return n;
    }
    size_t chunk = t->chunk[0]->size;
    int64_t w = (int64_t)(pos / chunk);
    take_second_chunk(t);
    int rc = fetch_window(t, w);
    if (rc == 0 && t->nchunks == 2) /* prefetch the next window while this one is sent */
        rc = fetch_window(t, w + 1);
    struct ghd_staging_chunk *c = t->chunk[w % t->nchunks];
    if (rc == 0)
        rc = chunk_ready(t, c);
    if (rc)
        return rc;
    size_t in_chunk = (size_t)(pos % chunk);
    size_t avail = chunk - in_chunk;
    if (avail > t->length - pos)
        avail = (size_t)(t->length - pos);
    if (avail > max)
        avail = max;
    memcpy(buf, (char *)c->h_ptr + in_chunk, avail);
    t->sent += avail;
    return (ssize_t)avail;
}

static void download_free(void *ctx)
{
    struct download *d = ctx;
    ghd_metrics_transfer(GHD_TRANSFER_DOWNLOAD, d->t->sent, ghd_metrics_now() - d->t->started);
    transfer_free(d->t, d->svc);
    free(d);
}

int ghd_handle_buffer_get(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_buffer *b;
    int rc = ghd_buffer_lookup(req, rep, &b);
    if (rc)
        return rc;
    uint64_t first = 0, last = b->size - 1;
    int partial = 0;
    const char *range = ghd_request_header(req, "Range");
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
    ghd_reply_header(rep, "Accept-Ranges", "bytes");
    if (partial)
        ghd_reply_header(rep, "Content-Range", "bytes %llu-%llu/%zu", (unsigned long long)first,
                         (unsigned long long)last, b->size);
    uint64_t len = last - first + 1;
    int status = partial ? 206 : 200;
    if (strcmp(req->method, "HEAD") == 0) {
        /* Headers only: no staging, no device work. */
        ghd_buffer_unref(b);
        return ghd_reply_stream(rep, status, "application/octet-stream", len, 0, NULL, NULL, NULL);
    }
    struct download *d = calloc(1, sizeof(*d));
    if (!d) {
        ghd_buffer_unref(b);
        return ghd_reply_problem(rep, req, GHD_ENOHOSTMEM, "out of host memory");
    }
    d->svc = req->svc;
    rc = transfer_new(req, rep, b, &d->t);
    if (rc) {
        ghd_buffer_unref(b);
        free(d);
        return rc;
    }
    d->t->offset = first;
    d->t->length = len;
    rc = transfer_take_chunk(d->t, req, rep);
    if (rc) {
        download_free(d);
        return rc;
    }
    d->direct = req->svc->cfg.direct_copy && len >= GHD_DIRECT_DOWNLOAD_MIN;
    rc = ghd_reply_stream(rep, status, "application/octet-stream", len,
                          d->t->chunk[0]->size < ((size_t)4 << 20) ? d->t->chunk[0]->size
                                                                   : (size_t)4 << 20,
                          download_read, d, download_free);
    rep->reader_buffers_done = download_buffers_done;
    return rc;
}
