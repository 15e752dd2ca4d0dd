/* PATCH /v1/buffers/{id}/meta as one core operation: sets, changes or
 * clears a buffer's array description. The bytes stay as they are, so this
 * is how a reshape or a reinterpretation is made explicit; the new
 * description must cover exactly the buffer's size, and the change is a
 * conditional write like any other (write_conds.h). */
#include "service_buffers.h"

#include "array_json.h"
#include "base/error.h"
#include "write_conds.h"

struct desc_write {
    struct ghd_buffer *b;
    const struct ghd_array_desc *desc;
};

static void write_desc(void *ctx)
{
    struct desc_write *w = ctx;
    ghd_buffer_desc_set(w->b, w->desc);
}

/* The description `rq` asks for, from b's own: *clear for none. */
static int desc_next(const struct ghd_buffer *b, const struct ghd_describe_request *rq,
                     struct ghd_array_desc *next, int *clear, struct ghd_err *err)
{
    struct ghd_array_desc now;
    ghd_buffer_desc_get(b, &now);
    *clear = json_is_null(rq->dtype);
    if (*clear) /* back to raw bytes */
        return rq->shape && !json_is_null(rq->shape)
                   ? ghd_err_set(err, GHD_EUNPROC, "a 'shape' needs a dtype, not null")
                   : 0;
    json_t *current = NULL;
    if (!rq->dtype) { /* a reshape keeps the element type */
        if (!now.dtype[0])
            return ghd_err_set(err, GHD_EUNPROC,
                               "the buffer has no dtype yet; give 'dtype' with 'shape'");
        current = json_string(now.dtype);
    }
    int rc = ghd_array_desc_from_json(rq->dtype ? rq->dtype : current,
                                      json_is_null(rq->shape) ? NULL : rq->shape, b->size, next,
                                      err);
    json_decref(current);
    return rc;
}

int ghd_service_buffer_describe(struct ghd_service *svc, const struct ghd_caller *caller,
                                const char *id, const struct ghd_describe_request *rq,
                                struct ghd_buffer **out, uint64_t *current, struct ghd_err *err)
{
    *out = NULL;
    if (!rq->dtype && !rq->shape)
        return ghd_err_set(err, GHD_EINVAL, "give 'dtype', 'shape' or both");
    struct ghd_buffer *b;
    int rc = ghd_service_buffer_find(svc, caller, id, &b, err);
    if (rc)
        return rc;
    struct ghd_array_desc next;
    int clear;
    /* After the body's own checks: a malformed request is a 400 or 422
     * whatever its tags. */
    if ((rc = desc_next(b, rq, &next, &clear, err)) == 0) {
        struct desc_write w = {b, clear ? NULL : &next};
        rc = ghd_buffer_write_start_if(b, rq->if_match, rq->if_none_match, 0, write_desc, &w,
                                       current, err);
    }
    if (rc) {
        ghd_buffer_unref(b);
        return rc;
    }
    *out = b;
    return 0;
}
