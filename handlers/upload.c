/* The upload path that raw and .npy bodies share: where a body writes,
 * its preconditions, its bytes into the transfer engine (core/transfer.h,
 * the upload sink) and the reply once it is complete. */
#include "upload.h"

#include <stdlib.h>

#include "buffer_json.h"
#include "conditional.h"
#include "base/error.h"
#include "base/parse.h"
#include "http/range.h"
#include "transfer.h"

int ghd_upload_begin(struct ghd_request *req, struct ghd_reply *rep)
{
    req->upload = calloc(1, sizeof(*req->upload));
    return req->upload ? 0 : ghd_reply_problem(rep, req, GHD_ENOHOSTMEM, "out of host memory");
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
        int rc = ghd_content_range_parse(cr, &first, &last, &total, &total_known);
        if (rc == GHD_EINVAL)
            return ghd_reply_problem(rep, req, rc,
                                     "Content-Range '%.64s' must look like 'bytes a-b/N' or "
                                     "'bytes a-b/*', with a <= b",
                                     cr);
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
        if (ghd_parse_u64(off, offset))
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

struct sink_start {
    struct ghd_transfer *t;
    uint64_t offset, length;
};

static void start_sink(void *ctx)
{
    struct sink_start *s = ctx;
    ghd_sink_start(s->t, s->offset, s->length);
}

int ghd_upload_open(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer *b,
                    int created, const uint64_t *extent)
{
    struct ghd_err err = {0};
    struct ghd_transfer *t;
    uint64_t offset = 0, length = b->size;
    struct ghd_transfer_client client;
    ghd_transfer_client_of(req, &client);
    int rc = 0;
    if (extent) {
        offset = extent[0];
        length = extent[1];
    } else if (!created && (rc = upload_extent(req, rep, b->size, &offset, &length)) != 0) {
        ghd_buffer_unref(b);
        return rc;
    }
    /* Every byte, unless cut short: a spilled buffer's old bytes stay out. */
    int whole = offset == 0 && length == b->size &&
                (req->has_content_length || ghd_request_header(req, "Content-Range"));
    rc = ghd_sink_open(b, created, whole, &client, &t, &err);
    if (rc)
        return ghd_transfer_reply_problem(rep, req, rc, &err);
    /* If-Match and If-None-Match are checked with the writer flag held, so
     * no other upload can write meanwhile, in one step with the write's
     * start (a run's if_match is another conditional writer), and after the
     * request's own checks, so a malformed request is a 400 whatever its
     * tags. The version moves when the write starts and again when the
     * writer lets go (ghd_upload_finish, or ghd_transfer_free for one cut
     * short). */
    struct sink_start s = {t, offset, length};
    if ((rc = ghd_conditional_start(req, rep, b, created, start_sink, &s)) != 0)
        goto fail;
    req->upload->t = t;
    return 0;
fail: /* nothing was written: the version stays, a new buffer is dropped */
    ghd_transfer_free(t);
    return rc;
}

/* ?shape= as the JSON array the description is read from: "3,4" is [3, 4],
 * "" is [] (a scalar); NULL when it is not that form. */
static json_t *query_shape(const char *v)
{
    json_t *shape = json_array();
    for (const char *p = v; shape && *p;) {
        uint64_t n;
        if (!(p = ghd_parse_u64_prefix(p, &n)) || n > (uint64_t)INT64_MAX ||
            (*p && (*p != ',' || !p[1])) ||
            json_array_append_new(shape, json_integer((json_int_t)n))) {
            json_decref(shape);
            return NULL;
        }
        p += *p == ',';
    }
    return shape;
}

int ghd_upload_query_desc(struct ghd_request *req, struct ghd_reply *rep, uint64_t size,
                          struct ghd_array_desc *out, int *described)
{
    const char *dtype = ghd_request_query(req, "dtype");
    const char *shape = ghd_request_query(req, "shape");
    *described = 0;
    if (!dtype && !shape)
        return 0;
    if (!dtype)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "?shape= describes elements of a ?dtype=: give both");
    json_t *jshape = NULL;
    if (shape && !(jshape = query_shape(shape)))
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "?shape= must be comma-separated non-negative integers (3,4; "
                                 "empty for a scalar), not '%.64s'",
                                 shape);
    json_t *jdtype = json_string(dtype);
    int rc = jdtype ? ghd_array_desc_json(req, rep, jdtype, jshape, size, out)
                    : ghd_reply_problem(rep, req, GHD_EINVAL, "?dtype= must be UTF-8");
    json_decref(jdtype);
    json_decref(jshape);
    uint64_t bytes = 0;
    if (rc == 0 && (ghd_array_nbytes(out, NULL, &bytes) != 0 || bytes != size))
        rc = ghd_reply_problem(rep, req, GHD_EUNPROC,
                               "a %s array of that shape is %llu bytes, but the buffer's size is "
                               "%llu",
                               out->dtype, (unsigned long long)bytes, (unsigned long long)size);
    *described = rc == 0;
    return rc;
}

int ghd_upload_create_spec(struct ghd_request *req, struct ghd_reply *rep,
                           struct ghd_buffer_spec *spec)
{
    if (!req->has_content_length)
        return ghd_reply_problem(rep, req, GHD_ELENGTH,
                                 "creating a buffer from a body needs Content-Length");
    uint64_t ttl = 0, align = 0, device = 0; /* "false" or "-1" is a 400, not a silent 0 */
    int rc = ghd_buffer_query_uint(req, rep, "ttl_s", (uint64_t)INT64_MAX, &ttl);
    if (rc == 0)
        rc = ghd_buffer_query_uint(req, rep, "alignment", (uint64_t)INT64_MAX, &align);
    if (rc == 0)
        rc = ghd_buffer_query_uint(req, rep, "device", (uint64_t)INT64_MAX, &device);
    if (rc)
        return rc;
    *spec = (struct ghd_buffer_spec){
        .size = req->content_length,
        .pending = 1, /* no GET or list sees the bytes before they have all arrived */
        .alignment = (size_t)align,
        .label = ghd_request_query(req, "label"),
        .ttl_s = (time_t)ttl,
        .has_device = ghd_request_query(req, "device") != NULL,
        .device = (long long)device,
    };
    return 0;
}

int ghd_upload_reserve(struct ghd_request *req, struct ghd_reply *rep, char **space,
                       size_t *len)
{
    /* A busy ring is a 503 written mid-body (http.c refuse_mid_body). */
    struct ghd_err err = {0};
    int rc = ghd_sink_reserve(req->upload->t, space, len, &err);
    return rc ? ghd_transfer_reply_problem(rep, req, rc, &err) : 0;
}

int ghd_upload_commit(struct ghd_request *req, struct ghd_reply *rep, size_t n)
{
    struct ghd_err err = {0};
    int rc = ghd_sink_commit(req->upload->t, n, &err);
    return rc ? ghd_transfer_reply_problem(rep, req, rc, &err) : 0;
}

int ghd_upload_write(struct ghd_request *req, struct ghd_reply *rep, const char *data,
                     size_t len)
{
    struct ghd_err err = {0};
    int rc = ghd_sink_write(req->upload->t, data, len, &err);
    return rc ? ghd_transfer_reply_problem(rep, req, rc, &err) : 0;
}

int ghd_upload_finish(struct ghd_request *req, struct ghd_reply *rep,
                      const struct ghd_array_desc *desc)
{
    struct ghd_transfer *t = req->upload->t;
    struct ghd_err err = {0};
    int rc = ghd_sink_flush(t, &err);
    if (rc)
        return ghd_transfer_reply_problem(rep, req, rc, &err);
    /* A chunked body must fill its Content-Range, as a Content-Length must. */
    if (!t->created && t->received != t->length && ghd_request_header(req, "Content-Range"))
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "the body (%llu bytes) is shorter than its Content-Range (%llu bytes)",
                                 (unsigned long long)t->received, (unsigned long long)t->length);
    ghd_sink_complete(t, desc); /* publishes a new buffer */
    if (t->created) {
        ghd_buffer_ref(t->buf);
        return ghd_buffer_reply_created(req, rep, t->buf);
    }
    ghd_reply_etag(rep, ghd_buffer_version(t->buf), 0);
    return ghd_reply_json(rep, 200,
                          json_pack("{s:s, s:I, s:I}", "id", t->buf->id, "offset",
                                    (json_int_t)t->offset, "bytes_written",
                                    (json_int_t)t->received));
}

void ghd_upload_cleanup(struct ghd_request *req)
{
    if (!req->upload)
        return;
    ghd_transfer_free(req->upload->t);
    free(req->upload);
    req->upload = NULL;
}
