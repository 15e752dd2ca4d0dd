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
#include "core/buffers/array_json.h"
#include "core/buffers/npy.h"
#include "core/buffers/service_buffers.h"
#include "kernels/kernel.h"

int ghd_array_desc_json(struct ghd_request *req, struct ghd_reply *rep, json_t *dtype,
                        json_t *shape, uint64_t size, struct ghd_array_desc *out)
{
    struct ghd_err err = {0};
    int rc = ghd_array_desc_from_json(dtype, shape, size, out, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : 0;
}

int ghd_buffer_lookup(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer **out)
{
    struct ghd_err err = {0};
    int rc = ghd_service_buffer_find(req->svc, &req->caller, req->params[0], out, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : 0;
}

int ghd_buffer_create_for(struct ghd_request *req, struct ghd_reply *rep,
                          const struct ghd_buffer_spec *spec, struct ghd_buffer **out)
{
    struct ghd_err err = {0};
    struct ghd_buffer_spec s = *spec;
    s.near = ghd_request_query(req, "near"); /* the core places it beside that buffer */
    int rc = ghd_service_buffer_create(req->svc, &req->caller, &s, out, &err);
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
