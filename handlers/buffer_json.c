/* What the buffer handlers share (buffer_json.h): reading an array
 * description and query parameters, the buffer a path names, a new buffer
 * for the request's tenant (its rules are the core's, core/service_buffers.h)
 * and the 201. */
#include "buffer_json.h"

#include <stdio.h>
#include <string.h>

#include "conditional.h"
#include "base/error.h"
#include "base/parse.h"
#include "base/suggest.h"
#include "core/npy.h"
#include "core/service_buffers.h"
#include "kernels/kernel.h"

int ghd_array_desc_json(struct ghd_request *req, struct ghd_reply *rep, json_t *dtype,
                        json_t *shape, uint64_t size, struct ghd_array_desc *out)
{
    memset(out, 0, sizeof(*out));
    /* A string the schema allows; which names are element types is the
     * server's (a 422, as for a run's dtype). */
    if (!json_is_string(dtype))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "'dtype' must be a string, one of %s",
                                 ghd_array_dtype_names());
    /* NumPy's names ("float32", "<f4") describe it by ours. */
    const char *name = ghd_dtype_canonical(json_string_value(dtype));
    if (!ghd_array_itemsize(name)) {
        char hint[96];
        ghd_suggest_clause(hint, sizeof(hint), ghd_array_dtype_suggest(json_string_value(dtype)));
        return ghd_reply_problem(rep, req, GHD_EUNPROC,
                                 "'dtype': '%.32s' is not an element type%s (one of %s)",
                                 json_string_value(dtype), hint, ghd_array_dtype_names());
    }
    snprintf(out->dtype, sizeof(out->dtype), "%s", name);
    size_t item = ghd_array_itemsize(out->dtype);
    if (!shape) { /* one dimension, as many elements as the bytes hold */
        if (!size || size % item)
            return ghd_reply_problem(rep, req, GHD_EUNPROC,
                                     "give 'shape': %llu bytes are not a whole number of "
                                     "%zu-byte %s elements",
                                     (unsigned long long)size, item, out->dtype);
        out->ndim = 1;
        out->shape[0] = size / item;
        return 0;
    }
    /* What ArrayShape states is a 400; what depends on the size a 422. */
    if (!json_is_array(shape) || json_array_size(shape) > GHD_ARRAY_NDIM_MAX)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "'shape' must be an array of at most %d non-negative integers",
                                 GHD_ARRAY_NDIM_MAX);
    size_t i;
    json_t *v;
    json_array_foreach(shape, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return ghd_reply_problem(rep, req, GHD_EINVAL,
                                     "'shape' must be an array of at most %d non-negative "
                                     "integers",
                                     GHD_ARRAY_NDIM_MAX);
        out->shape[i] = (uint64_t)json_integer_value(v);
    }
    out->ndim = (unsigned)json_array_size(shape);
    uint64_t bytes;
    if (ghd_array_nbytes(out, NULL, &bytes) != 0)
        return ghd_reply_problem(rep, req, GHD_EUNPROC, "the shape's byte count overflows");
    if (size && bytes != size)
        return ghd_reply_problem(rep, req, GHD_EUNPROC,
                                 "a %s array of that shape is %llu bytes, but the buffer's size "
                                 "is %llu",
                                 out->dtype, (unsigned long long)bytes, (unsigned long long)size);
    return 0;
}

int ghd_buffer_lookup(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer **out)
{
    struct ghd_err err = {0};
    int rc = ghd_service_buffer_find(req->svc, req->tenant, req->params[0], out, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : 0;
}

int ghd_buffer_create_for(struct ghd_request *req, struct ghd_reply *rep,
                          const struct ghd_buffer_spec *spec, struct ghd_buffer **out)
{
    struct ghd_err err = {0};
    /* ?near=<id>: next to that buffer. A proxy routes the request to its
     * owner; here it must exist for this tenant (421 or 410 for an id this
     * start did not make, 404 otherwise), and the new buffer is made on the
     * same device. */
    const char *near = ghd_request_query(req, "near");
    struct ghd_buffer_spec s = *spec;
    int rc;
    if (near) {
        struct ghd_buffer *beside;
        if ((rc = ghd_service_buffer_find(req->svc, req->tenant, near, &beside, &err)) != 0)
            return ghd_reply_problem(rep, req, rc, "near: %s", err.detail);
        unsigned dev = beside->device;
        ghd_buffer_unref(beside);
        if (s.has_device && s.device != (long long)dev)
            return ghd_reply_problem(rep, req, GHD_EUNPROC,
                                     "'device' %lld and near=%.64s (on device %u) disagree; give "
                                     "one of them",
                                     s.device, near, dev);
        s.has_device = 1;
        s.device = dev;
    }
    rc = ghd_service_buffer_create(req->svc, req->tenant, &s, out, &err);
    if (rc == GHD_ELIMIT) /* --tenant-max-buffers */
        ghd_reply_header(rep, "Retry-After", "1");
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : 0;
}

int ghd_buffer_reply_created(struct ghd_request *req, struct ghd_reply *rep,
                             struct ghd_buffer *b)
{
    ghd_reply_header(rep, "Location", "/v1/buffers/%s", b->id);
    ghd_reply_etag(rep, ghd_buffer_version(b), 0);
    int rc = ghd_reply_json(rep, 201, ghd_buffer_json_new(b));
    ghd_buffer_unref(b);
    return rc ? ghd_reply_problem(rep, req, rc, NULL) : 0;
}

int ghd_buffer_query_uint(struct ghd_request *req, struct ghd_reply *rep, const char *name,
                          uint64_t max, uint64_t *out)
{
    const char *v = ghd_request_query(req, name);
    if (!v)
        return 0;
    uint64_t n;
    if (ghd_parse_u64(v, &n) || n > max)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "query parameter '%s' must be an integer from 0 to %llu", name,
                                 (unsigned long long)max);
    *out = n;
    return 0;
}
