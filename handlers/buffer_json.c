/* What the buffer handlers share (buffer_json.h): a buffer's metadata JSON,
 * the lookup of the buffer a path names, the checks of a new buffer's
 * parameters and its creation for the request's tenant, and the 201. */
#include "buffer_json.h"

#include <stdio.h>
#include <string.h>

#include "conditional.h"
#include "base/error.h"
#include "base/parse.h"
#include "base/suggest.h"
#include "core/npy.h"
#include "core/service.h"

static void iso_time(time_t t, char *buf, size_t len)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *ghd_buffer_json_new(const struct ghd_buffer *b)
{
    char created[32];
    iso_time(b->created, created, sizeof(created));
    json_t *obj = json_pack("{s:s, s:I, s:I, s:i, s:s, s:s}", "id", b->id, "size",
                            (json_int_t)b->size, "alignment", (json_int_t)b->alignment, "device",
                            b->device, "created", created, "label", b->label);
    if (obj && b->expires) {
        char expires[32];
        iso_time(b->expires, expires, sizeof(expires));
        json_object_set_new(obj, "expires", json_string(expires));
    }
    if (obj) {
        json_object_set_new(obj, "version", json_integer((json_int_t)ghd_buffer_version(b)));
        json_object_set_new(obj, "uploaded", json_integer((json_int_t)ghd_buffer_uploaded(b)));
        struct ghd_array_desc d;
        ghd_buffer_desc_get(b, &d);
        if (d.dtype[0]) {
            json_t *shape = json_array();
            for (unsigned i = 0; i < d.ndim; i++)
                json_array_append_new(shape, json_integer((json_int_t)d.shape[i]));
            json_object_set_new(obj, "dtype", json_string(d.dtype));
            json_object_set_new(obj, "shape", shape);
        }
    }
    return obj;
}

int ghd_array_desc_json(struct ghd_request *req, struct ghd_reply *rep, json_t *dtype,
                        json_t *shape, uint64_t size, struct ghd_array_desc *out)
{
    memset(out, 0, sizeof(*out));
    /* A string the schema allows; which names are element types is the
     * server's (a 422, as for a run's dtype). */
    if (!json_is_string(dtype))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "'dtype' must be a string, one of %s",
                                 ghd_array_dtype_names());
    if (!ghd_array_itemsize(json_string_value(dtype))) {
        char hint[96];
        ghd_suggest_clause(hint, sizeof(hint), ghd_array_dtype_suggest(json_string_value(dtype)));
        return ghd_reply_problem(rep, req, GHD_EUNPROC,
                                 "'dtype': '%.32s' is not an element type%s (one of %s)",
                                 json_string_value(dtype), hint, ghd_array_dtype_names());
    }
    snprintf(out->dtype, sizeof(out->dtype), "%s", json_string_value(dtype));
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
    int rc = ghd_buffer_find_new(&req->svc->buffers, req->params[0], req->tenant, out);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "no buffer with id '%.64s'", req->params[0]);
    return 0;
}

static int spec_check(struct ghd_request *req, struct ghd_reply *rep,
                      const struct ghd_buffer_spec *spec)
{
    const struct ghd_config *cfg = &req->svc->cfg;
    /* The status rule (openapi.yaml, "Bad input"): what the schemas bound
     * (BufferCreate's size >= 1, in json_spec; alignment <= 2 MiB and label
     * <= 128 characters, body or query alike) is 400; what they cannot state
     * is 422, such as the empty body of the octet-stream form. */
    if (spec->size == 0)
        return ghd_reply_problem(rep, req, GHD_EUNPROC, "size must be at least 1 byte");
    if (spec->ttl_s < 0 || spec->ttl_s > GHD_BUFFER_TTL_MAX)
        return ghd_reply_problem(rep, req, GHD_EUNPROC,
                                 "ttl_s must be from 0 to %lld seconds (ten years)",
                                 (long long)GHD_BUFFER_TTL_MAX);
    if (spec->alignment > ((size_t)1 << 21))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "alignment must be at most 2097152");
    if (spec->alignment & (spec->alignment - 1))
        return ghd_reply_problem(rep, req, GHD_EUNPROC, "alignment must be a power of two");
    if (spec->label) {
        size_t chars = 0;
        for (const char *c = spec->label; *c; c++)
            chars += ((unsigned char)*c & 0xc0) != 0x80; /* UTF-8 lead bytes */
        if (chars > GHD_LABEL_MAX)
            return ghd_reply_problem(rep, req, GHD_EINVAL,
                                     "label is longer than %d characters", GHD_LABEL_MAX);
        if (strlen(spec->label) > GHD_LABEL_MAX)
            return ghd_reply_problem(rep, req, GHD_EUNPROC, "label is longer than %d bytes",
                                     GHD_LABEL_MAX);
        for (const char *c = spec->label; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                return ghd_reply_problem(rep, req, GHD_EUNPROC,
                                         "label must not contain control characters");
        /* The query form brings raw bytes; a label that is not UTF-8 could
         * never be written as JSON (the 201, meta and lists would fail). */
        json_t *probe = json_string(spec->label);
        if (!probe)
            return ghd_reply_problem(rep, req, GHD_EUNPROC, "label must be valid UTF-8");
        json_decref(probe);
    }
    /* Last: a malformed request is a 422 whatever its size, not a 413. */
    if (spec->size > cfg->max_buffer_size)
        return ghd_reply_problem(rep, req, GHD_ETOOBIG,
                                 "size %zu exceeds the largest buffer allowed, %zu bytes "
                                 "(--max-buffer-size)",
                                 spec->size, cfg->max_buffer_size);
    return 0;
}

int ghd_buffer_create_for(struct ghd_request *req, struct ghd_reply *rep,
                          const struct ghd_buffer_spec *spec, struct ghd_buffer **out)
{
    int rc = spec_check(req, rep, spec);
    if (rc)
        return rc;
    struct ghd_buffer_spec s = *spec;
    s.tenant = req->tenant;
    if (!s.ttl_s)
        s.ttl_s = req->svc->cfg.default_ttl_s;
    struct ghd_runtime *rt = ghd_service_runtime(req->svc, 0);
    rc = ghd_buffer_create_new(&req->svc->buffers, rt, &s, out);
    if (rc == GHD_EQUOTA || rc == GHD_ELIMIT) {
        size_t bytes, count;
        ghd_buffer_tenant_usage(&req->svc->buffers, s.tenant, &bytes, &count);
        const char *who = s.tenant ? s.tenant : "(none)";
        if (rc == GHD_EQUOTA)
            return ghd_reply_problem(rep, req, rc,
                                     "tenant '%s' holds %zu bytes; %zu more would pass its "
                                     "limit of %zu bytes (--tenant-max-bytes)",
                                     who, bytes, s.size, req->svc->cfg.tenant_max_bytes);
        ghd_reply_header(rep, "Retry-After", "1");
        return ghd_reply_problem(rep, req, rc,
                                 "tenant '%s' holds %zu buffers, its limit "
                                 "(--tenant-max-buffers); delete some first",
                                 who, count);
    }
    if (rc == GHD_ENOMEM) {
        struct ghd_pool_stats st;
        ghd_pool_get_stats(&rt->pool, &st);
        return ghd_reply_problem(rep, req, rc,
                                 "cannot allocate %zu bytes: the device pool holds %zu bytes "
                                 "in use of a %zu-byte limit",
                                 s.size, st.in_use, st.limit);
    }
    if (rc)
        return ghd_reply_problem(rep, req, rc, "cannot allocate the buffer");
    return 0;
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
