/* Uploads (PUT, and POST with a body): body pieces of 256 KiB or more are
 * copied by DMA straight from libmicrohttpd's page-locked read buffer; smaller
 * ones are gathered in a pinned staging chunk, whose copy to the device
 * overlaps the receipt of the next chunk when a second one is free. A large
 * body that http.c reads from the socket itself lands straight in the chunks
 * (reserve/commit). */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "buffer_json.h"
#include "buffer_npy.h"
#include "conditional.h"
#include "device/hostreg.h"
#include "base/error.h"
#include "base/log.h"
#include "core/metrics.h"
#include "http/range.h"
#include "transfer.h"
#include "upload.h"

/* Body pieces at least this large go to the device without the staging ring. */
#define GHD_DIRECT_COPY_MIN ((size_t)256 << 10)


static int claim_writer(struct ghd_transfer *t, struct ghd_request *req, struct ghd_reply *rep)
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
        int total_known;
        if (ghd_content_range_parse(cr, &first, &last, &total, &total_known))
            return ghd_reply_problem(rep, req, GHD_EINVAL,
                                     "Content-Range must look like 'bytes a-b/N' or 'bytes a-b/*'");
        if (total_known && total != size)
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

int ghd_upload_open(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                    int created, const uint64_t *extent, struct ghd_transfer **out)
{
    struct ghd_transfer *t;
    *out = NULL;
    int rc = ghd_transfer_new(req, rep, b, &t);
    if (rc) {
        ghd_buffer_unref(b);
        return rc;
    }
    t->created = created;
    if ((rc = claim_writer(t, req, rep)) != 0)
        goto fail;
    if (extent) {
        t->offset = extent[0];
        t->length = extent[1];
    } else if (!created && (rc = upload_extent(req, rep, b->size, &t->offset, &t->length)) != 0) {
        goto fail;
    } else if (created) {
        t->length = b->size;
    }
    /* If-Match is checked with the writer flag held, so no other upload can
     * move the version between the check and this write, and after the
     * request's own checks, so a malformed request is a 400 whatever its
     * tags. The version moves when the write starts and again when the
     * writer lets go (ghd_upload_finish, or transfer.c for one cut short). */
    if ((rc = ghd_if_match_check(req, rep, ghd_buffer_version(b))) != 0)
        goto fail;
    ghd_buffer_bump(b);
    *out = t;
    return 0; /* the staging chunk is taken when the first bytes arrive */
fail: /* begin failed: cleanup is not called, so release here; nothing was written */
    if (t->writer) {
        atomic_store(&b->writing, 0);
        t->writer = 0;
    }
    ghd_transfer_free(t, req->svc);
    return rc;
}

static int put_begin(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_buffer *b;
    int rc = ghd_buffer_lookup(req, rep, &b);
    if (rc)
        return rc;
    struct ghd_transfer *t;
    rc = ghd_upload_open(req, rep, b, 0, NULL, &t);
    req->state = t;
    return rc;
}

int ghd_upload_create_spec(struct ghd_request *req, struct ghd_reply *rep,
                           struct ghd_buffer_spec *spec)
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
    *spec = (struct ghd_buffer_spec){
        .size = req->content_length,
        .pending = 1, /* no GET or list sees the bytes before they have all arrived */
        .alignment = (size_t)align,
        .label = ghd_request_query(req, "label"),
        .ttl_s = (time_t)ttl,
    };
    return 0;
}

static int create_begin(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_buffer_spec spec;
    int rc = ghd_upload_create_spec(req, rep, &spec);
    if (rc)
        return rc;
    struct ghd_buffer *b;
    rc = ghd_buffer_create_for(req, rep, &spec, &b);
    if (rc)
        return rc;
    struct ghd_transfer *t;
    rc = ghd_upload_open(req, rep, b, 1, NULL, &t);
    req->state = t;
    return rc;
}

/* Queues the filled part of the current chunk to the device and switches to
 * the other chunk, waiting for that one's previous copy. */
static int flush_chunk(struct ghd_transfer *t)
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
    ghd_transfer_take_second_chunk(t);
    t->cur = (t->cur + 1) % t->nchunks;
    return ghd_transfer_chunk_ready(t, t->chunk[t->cur]);
}

/* Copies a body piece straight from the HTTP layer's (page-locked) read
 * buffer to the device, skipping the staging ring; the copy has completed when
 * this returns, since the HTTP layer reuses that buffer for the next piece. */
static int copy_direct(struct ghd_transfer *t, const char *data, size_t len)
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

static int body_too_long(const struct ghd_transfer *t, struct ghd_request *req,
                         struct ghd_reply *rep)
{
    return ghd_reply_problem(rep, req, GHD_ETOOBIG,
                             "the body is longer than the %llu bytes it may write",
                             (unsigned long long)t->length);
}

static int copy_failed(const struct ghd_transfer *t, struct ghd_request *req,
                       struct ghd_reply *rep, int rc)
{
    return ghd_reply_problem(rep, req, rc, "device copy failed: %s", t->rt->dev.last_error);
}

#define SLOW_PIECE ((size_t)64 << 10)

/* An upload that held its staging chunks for --staging-hold seconds (a
 * trickle just over --min-transfer-rate would hold them for ever, and 32 such
 * starved the ring): what it has is copied to the device, the chunks go back,
 * and its later pieces go through a small heap buffer, each copied and
 * waited for at once. Slow, but the ring is never held by a slow client. */
static int go_slow(struct ghd_transfer *t, struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_device *dev = &t->rt->dev;
    if (t->fill) {
        int rc = dev->ops->copy_h2d(dev, (char *)t->buf->d_ptr + t->offset + t->flushed,
                                    t->chunk[t->cur]->h_ptr, t->fill, t->stream);
        if (rc)
            return copy_failed(t, req, rep, rc);
        t->flushed += t->fill;
        t->fill = 0;
    }
    ghd_transfer_release_chunks(t);
    t->slow_buf = malloc(SLOW_PIECE);
    if (!t->slow_buf)
        return ghd_reply_problem(rep, req, GHD_ENOHOSTMEM, "out of host memory");
    ghd_log(GHD_LOG_INFO, "request %s: upload slower than one staging chunk per %u s "
                          "(--staging-hold): goes on without staging",
            req->request_id, req->svc->cfg.staging_hold_s);
    return 0;
}

/* Receiving in place: the socket's bytes land in the current pinned chunk,
 * which goes to the device when full while the next one fills. */
int ghd_upload_reserve(struct ghd_transfer *t, struct ghd_request *req, struct ghd_reply *rep,
                       char **space, size_t *len)
{
    uint64_t left = t->length - t->received;
    if (left == 0)
        return body_too_long(t, req, rep);
    unsigned hold_s = req->svc->cfg.staging_hold_s;
    if (t->nchunks && hold_s && ghd_metrics_now() - t->chunk_since > (double)hold_s) {
        int rc = go_slow(t, req, rep);
        if (rc)
            return rc;
    }
    if (t->slow_buf) {
        *space = t->slow_buf;
        *len = SLOW_PIECE < left ? SLOW_PIECE : (size_t)left;
        return 0;
    }
    /* Taken only now that bytes are here to fill it: a client that sends a
     * head (Expect: 100-continue, or a stalled body) holds no chunk. A busy
     * ring is then a 503 written mid-body (http.c refuse_mid_body). */
    if (t->nchunks == 0) {
        int rc = ghd_transfer_take_chunk(t, req, rep);
        if (rc)
            return rc;
    }
    struct ghd_staging_chunk *c = t->chunk[t->cur];
    size_t room = c->size - t->fill;
    *space = (char *)c->h_ptr + t->fill;
    *len = room < left ? room : (size_t)left;
    return 0;
}

int ghd_upload_commit(struct ghd_transfer *t, struct ghd_request *req, struct ghd_reply *rep,
                      size_t n)
{
    if (t->slow_buf) {
        struct ghd_device *dev = &t->rt->dev;
        t->received += n;
        int rc = dev->ops->copy_h2d(dev, (char *)t->buf->d_ptr + t->offset + t->flushed,
                                    t->slow_buf, n, t->stream);
        if (rc == 0)
            rc = dev->ops->stream_sync(dev, t->stream);
        if (rc)
            return copy_failed(t, req, rep, rc);
        t->flushed += n;
        return 0;
    }
    t->received += n;
    t->fill += n;
    if (t->fill < t->chunk[t->cur]->size)
        return 0;
    int rc = flush_chunk(t);
    return rc ? copy_failed(t, req, rep, rc) : 0;
}

int ghd_upload_write(struct ghd_transfer *t, struct ghd_request *req, struct ghd_reply *rep,
                     const char *data, size_t len)
{
    if (t->received + len > t->length)
        return body_too_long(t, req, rep);
    if (req->svc->cfg.direct_copy && len >= GHD_DIRECT_COPY_MIN &&
        ghd_hostreg_thread_covers(&t->rt->dev, data, len)) {
        t->received += len;
        int rc = copy_direct(t, data, len);
        return rc ? copy_failed(t, req, rep, rc) : 0;
    }
    while (len) { /* through the chunks, as the socket path fills them */
        char *space = NULL;
        size_t room = 0;
        int rc = ghd_upload_reserve(t, req, rep, &space, &room);
        if (rc)
            return rc;
        size_t n = room < len ? room : len;
        memcpy(space, data, n);
        data += n;
        len -= n;
        if ((rc = ghd_upload_commit(t, req, rep, n)) != 0)
            return rc;
    }
    return 0;
}

static int put_reserve(struct ghd_request *req, struct ghd_reply *rep, char **space, size_t *len)
{
    return ghd_upload_reserve(req->state, req, rep, space, len);
}

static int put_commit(struct ghd_request *req, struct ghd_reply *rep, size_t n)
{
    return ghd_upload_commit(req->state, req, rep, n);
}

static int put_write(struct ghd_request *req, struct ghd_reply *rep, const char *data, size_t len)
{
    return ghd_upload_write(req->state, req, rep, data, len);
}

static void upload_cleanup(struct ghd_request *req)
{
    ghd_transfer_free(req->state, req->svc);
    req->state = NULL;
}

int ghd_handle_buffer_put(struct ghd_request *req, struct ghd_reply *rep)
{
    if (req->state && ghd_request_media_is(req, "application/x-npy"))
        return ghd_npy_upload_finish(req, rep);
    struct ghd_transfer *t = req->state;
    if (!t)
        return ghd_reply_problem(rep, req, GHD_EMEDIA, "the body must be application/octet-stream");
    return ghd_upload_finish(t, req, rep, NULL);
}

int ghd_upload_finish(struct ghd_transfer *t, struct ghd_request *req, struct ghd_reply *rep,
                      const struct ghd_array_desc *desc)
{
    int rc = flush_chunk(t);
    if (rc == 0)
        rc = t->rt->dev.ops->stream_sync(&t->rt->dev, t->stream);
    if (rc)
        return copy_failed(t, req, rep, rc);
    /* A chunked body must fill its Content-Range, as a Content-Length must. */
    if (!t->created && t->received != t->length && ghd_request_header(req, "Content-Range"))
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "the body (%llu bytes) is shorter than its Content-Range (%llu bytes)",
                                 (unsigned long long)t->received, (unsigned long long)t->length);
    t->completed = 1;
    if (desc) /* .npy: the bytes and their description change together */
        ghd_buffer_desc_set(t->buf, desc);
    /* Every byte is on the device: a client that reads this reply may start
     * the next upload at once, even before this connection is torn down. */
    ghd_buffer_bump(t->buf);
    atomic_store(&t->buf->writing, 0);
    t->writer = 0;
    ghd_metrics_transfer(GHD_TRANSFER_UPLOAD, t->received, ghd_metrics_now() - t->started);
    if (t->created) {
        ghd_buffer_publish(t->buf);
        ghd_buffer_ref(t->buf);
        return ghd_buffer_reply_created(req, rep, t->buf);
    }
    ghd_reply_etag(rep, ghd_buffer_version(t->buf), 0);
    return ghd_reply_json(rep, 200,
                          json_pack("{s:s, s:I, s:I}", "id", t->buf->id, "offset",
                                    (json_int_t)t->offset, "bytes_written",
                                    (json_int_t)t->received));
}

const struct ghd_upload_ops ghd_buffer_put_upload = {put_begin,   put_write,  upload_cleanup,
                                                     put_reserve, put_commit, &ghd_npy_put_upload};
const struct ghd_upload_ops ghd_buffer_create_upload = {
    create_begin, put_write, upload_cleanup, put_reserve, put_commit, &ghd_npy_create_upload};
