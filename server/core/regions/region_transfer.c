/* Transfers between regions and buffers: the ranges and the segment's size
 * are checked, the destination buffer's writer flag and version are handled
 * as for a PUT, and the bytes move by DMA in chunks on one stream of the
 * buffer's runtime. */
#include "region.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/fault_guard.h"
#include "core/tiers/tier.h"
#include "core/buffers/write_conds.h"

enum end_kind { END_HOST, END_DEVICE };

/* An end as the copy loop sees it. */
struct end_view {
    const char *field; /* "from" or "to", for details */
    char *base;        /* first byte of the buffer or region */
    uint64_t size;
    enum end_kind kind;
};

static void end_view_of(const struct ghd_xfer_end *e, const char *field, struct end_view *v)
{
    v->field = field;
    if (e->buffer) {
        v->base = e->buffer->d_ptr;
        v->size = e->buffer->size;
        v->kind = END_DEVICE;
    } else {
        v->base = e->region->ptr;
        v->size = e->region->size;
        v->kind = e->region->kind == GHD_REGION_SHM ? END_HOST : END_DEVICE;
    }
}

static const char *end_noun(const struct ghd_xfer_end *e)
{
    return e->buffer ? "buffer" : "region";
}

static const char *end_id(const struct ghd_xfer_end *e)
{
    return e->buffer ? e->buffer->id : e->region->id;
}

static int range_check(const struct ghd_xfer_end *e, const struct end_view *v, uint64_t bytes,
                       struct ghd_err *err)
{
    if (e->offset > v->size)
        return ghd_err_set(err, GHD_ERANGE, "'%s.offset' %llu is past the end of %s %s (%llu bytes)",
                           v->field, (unsigned long long)e->offset, end_noun(e), end_id(e),
                           (unsigned long long)v->size);
    if (bytes > v->size - e->offset)
        return ghd_err_set(err, GHD_ERANGE,
                           "'bytes' %llu from '%s.offset' %llu passes the end of %s %s (%llu "
                           "bytes)",
                           (unsigned long long)bytes, v->field, (unsigned long long)e->offset,
                           end_noun(e), end_id(e), (unsigned long long)v->size);
    return 0;
}

/* The client may have shrunk its segment since registration: the mapping
 * then ends in pages that fault. */
static int segment_check(const struct ghd_xfer_end *e, uint64_t end, struct ghd_err *err)
{
    const struct ghd_region *r = e->region;
    if (!r || r->kind != GHD_REGION_SHM)
        return 0;
    struct stat st;
    if (fstat(r->fd, &st) != 0)
        st.st_size = 0; /* the descriptor is the server's own: not expected */
    if ((uint64_t)st.st_size < end)
        return ghd_err_set(err, GHD_EBUSY,
                           "region %s: segment '%.64s' is now %lld bytes, shorter than the "
                           "transfer's end at byte %llu (it was truncated after registration; "
                           "unregister it and register it again)",
                           r->id, r->name, (long long)st.st_size, (unsigned long long)end);
    return 0;
}

static int truncated(const struct ghd_xfer_end *e, struct ghd_err *err)
{
    return ghd_err_set(err, GHD_EBUSY,
                       "region %s: segment '%.64s' shrank during the transfer (the bytes past "
                       "its new end are gone); unregister it and register it again",
                       e->region->id, e->region->name);
}

/* One device copy, as the fault guard calls it. */
struct copy_call {
    struct ghd_device *dev;
    struct ghd_stream *stream;
    enum end_kind from, to;
    char *dst;
    const char *src;
    size_t n;
    struct ghd_err *err;
};

static int copy_run(void *ctx)
{
    struct copy_call *c = ctx;
    const struct ghd_device_ops *ops = c->dev->ops;
    if (c->from == END_HOST)
        return ops->copy_h2d(c->dev, c->dst, c->src, c->n, c->stream, c->err);
    if (c->to == END_HOST)
        return ops->copy_d2h(c->dev, c->dst, c->src, c->n, c->stream, c->err);
    return ops->copy_d2d(c->dev, c->dst, c->src, c->n, c->stream, c->err);
}

static int copy_chunks(const struct ghd_xfer_end *from, const struct ghd_xfer_end *to,
                       const struct end_view *vf, const struct end_view *vt, uint64_t bytes,
                       struct ghd_runtime *rt, struct ghd_stream *s, struct ghd_err *err)
{
    struct ghd_device *dev = &rt->dev;
    /* The shared segment, whose pages may vanish under a CPU copy. */
    const struct ghd_xfer_end *seg = vf->kind == END_HOST ? from : vt->kind == END_HOST ? to : NULL;
    /* Only the host backend's copies are the CPU's own, and only they are
     * guarded: a DMA backend reads the segment's page-locked pages, which a
     * truncated file does not take away (and a jump out of a driver call
     * would leave its locks held). */
    int guarded = seg && dev->kind == GHD_BACKEND_HOST;
    for (uint64_t done = 0; done < bytes;) {
        size_t n = bytes - done < GHD_XFER_CHUNK ? (size_t)(bytes - done) : GHD_XFER_CHUNK;
        int rc = seg ? segment_check(seg, seg->offset + done + n, err) : 0;
        if (rc)
            return rc;
        struct copy_call c = {dev, s, vf->kind, vt->kind, vt->base + to->offset + done,
                              vf->base + from->offset + done, n, err};
        int faulted = 0;
        if (guarded)
            rc = ghd_fault_guard_run(seg->region->ptr, seg->region->size, copy_run, &c, &faulted);
        else
            rc = copy_run(&c);
        if (faulted)
            return truncated(seg, err);
        if (rc) {
            ghd_err_prefix(err, rc, "device copy failed");
            return rc;
        }
        done += n;
    }
    int rc = dev->ops->stream_sync(dev, s, err);
    if (rc)
        ghd_err_prefix(err, rc, "device copy failed");
    return rc;
}

static void bump(void *ctx)
{
    ghd_buffer_bump(ctx);
}

/* Claims the destination buffer as a PUT does: its single writer, then the
 * version compared and moved in one step with other conditional writers. */
static int writer_start(struct ghd_buffer *b, const struct ghd_versions *if_match,
                        uint64_t *current, struct ghd_err *err)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&b->writing, &expected, 1))
        return ghd_err_set(err, GHD_EBUSY, "another upload to buffer %s is in progress", b->id);
    struct ghd_write_conds c = {.has_match = if_match != NULL};
    if (if_match)
        c.match = *if_match;
    uint64_t v = 0;
    if (ghd_buffer_write_start(b, &c, bump, b, &v) != 0) {
        atomic_store(&b->writing, 0);
        if (current)
            *current = v;
        return ghd_err_set(err, GHD_EPRECOND,
                           "'if_match' does not name buffer %s's version: it is now \"v%llu\" "
                           "(another client wrote it); read it again and retry",
                           b->id, (unsigned long long)v);
    }
    return 0;
}

static int ends_check(const struct ghd_xfer_end *from, const struct ghd_xfer_end *to,
                      uint64_t bytes, struct end_view *vf, struct end_view *vt,
                      struct ghd_err *err)
{
    if (!from->buffer && !to->buffer)
        return ghd_err_set(err, GHD_EUNPROC,
                           "one end of a transfer must be a buffer ('from' and 'to' both name "
                           "regions)");
    end_view_of(from, "from", vf);
    end_view_of(to, "to", vt);
    int rc = range_check(from, vf, bytes, err);
    if (rc == 0)
        rc = range_check(to, vt, bytes, err);
    if (rc)
        return rc;
    if (from->buffer && from->buffer == to->buffer &&
        from->offset < to->offset + bytes && to->offset < from->offset + bytes)
        return ghd_err_set(err, GHD_EUNPROC,
                           "'from' and 'to' overlap in buffer %s; copy through a second buffer",
                           from->buffer->id);
    struct ghd_runtime *rt = to->buffer ? to->buffer->rt : from->buffer->rt;
    if (from->buffer && to->buffer && from->buffer->rt != to->buffer->rt)
        return ghd_err_set(err, GHD_EUNPROC,
                           "buffer %s is on device %u, buffer %s on device %u: a transfer "
                           "between buffers stays on one device (POST /v1/buffers "
                           "{\"copy_of\": id, \"device\": k} copies across devices)",
                           from->buffer->id, from->buffer->device, to->buffer->id,
                           to->buffer->device);
    const struct ghd_xfer_end *reg = from->region ? from : to->region ? to : NULL;
    if (reg && reg->region->kind == GHD_REGION_CUDA_IPC && reg->region->rt != rt)
        return ghd_err_set(err, GHD_EUNPROC,
                           "region %s is on device %u, buffer %s on device %u",
                           reg->region->id, reg->region->rt->index,
                           to->buffer ? to->buffer->id : from->buffer->id, rt->index);
    return 0;
}

/* The buffer ends on their devices for the copy (core/tier.h), the views
 * pointing at where they are now; on failure neither is held. */
static int ends_hold(const struct ghd_xfer_end *from, const struct ghd_xfer_end *to,
                     struct end_view *vf, struct end_view *vt, struct ghd_err *err)
{
    int rc = from->buffer ? ghd_tier_hold(from->buffer, err) : 0;
    if (rc == 0 && to->buffer && (rc = ghd_tier_hold(to->buffer, err)) != 0 && from->buffer)
        ghd_tier_release(from->buffer);
    if (rc)
        return rc;
    if (from->buffer)
        vf->base = from->buffer->d_ptr;
    if (to->buffer)
        vt->base = to->buffer->d_ptr;
    return 0;
}

static void ends_release(const struct ghd_xfer_end *from, const struct ghd_xfer_end *to)
{
    if (from->buffer)
        ghd_tier_release(from->buffer);
    if (to->buffer)
        ghd_tier_release(to->buffer);
}

int ghd_region_transfer(struct ghd_region_table *t, const struct ghd_xfer_end *from,
                        const struct ghd_xfer_end *to, uint64_t bytes,
                        const struct ghd_versions *if_match, struct ghd_xfer_result *res,
                        uint64_t *current, struct ghd_err *err)
{
    memset(res, 0, sizeof(*res));
    struct end_view vf = {0}, vt = {0};
    int rc = ends_check(from, to, bytes, &vf, &vt, err);
    if (rc)
        return rc;
    const struct ghd_xfer_end *seg = vf.kind == END_HOST ? from : vt.kind == END_HOST ? to : NULL;
    if (seg && (rc = segment_check(seg, seg->offset + bytes, err)) != 0)
        return rc;
    struct ghd_runtime *rt = to->buffer ? to->buffer->rt : from->buffer->rt;
    if (to->buffer && (rc = writer_start(to->buffer, if_match, current, err)) != 0)
        return rc;
    struct ghd_stream *s = NULL;
    double t0 = ghd_clock_s();
    int held = (rc = ends_hold(from, to, &vf, &vt, err)) == 0;
    if (rc == 0)
        rc = ghd_runtime_stream_acquire(rt, &s, err);
    if (rc == 0 && from->buffer)
        rc = ghd_buffer_order(from->buffer, s, err);
    if (rc == 0 && to->buffer && to->buffer != from->buffer)
        rc = ghd_buffer_order(to->buffer, s, err);
    if (rc == 0)
        rc = copy_chunks(from, to, &vf, &vt, bytes, rt, s, err);
    if (s) {
        if (rc) /* nothing may still be copying when the references go */
            (void)rt->dev.ops->stream_sync(&rt->dev, s, NULL);
        ghd_runtime_stream_release(rt, s);
    }
    if (held)
        ends_release(from, to);
    res->seconds = ghd_clock_s() - t0;
    if (to->buffer) { /* a write cut short moved bytes too: the version moves either way */
        if (rc == 0)
            ghd_buffer_uploaded_extend(to->buffer, to->offset, bytes);
        ghd_buffer_bump(to->buffer);
        res->version = ghd_buffer_version(to->buffer);
        atomic_store(&to->buffer->writing, 0);
    }
    if (rc)
        return rc;
    res->bytes = bytes;
    pthread_mutex_lock(&t->lock);
    if (from->region)
        from->region->transfers++;
    if (to->region)
        to->region->transfers++;
    pthread_mutex_unlock(&t->lock);
    return 0;
}
