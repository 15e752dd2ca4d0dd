/* Buffer resources: create (JSON), list, metadata, delete. Transfers of the
 * bytes themselves live in buffer_upload.c and buffer_download.c. */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buffer_json.h"
#include "conditional.h"
#include "base/error.h"
#include "base/parse.h"
#include "core/buffers/npy.h"
#include "core/buffers/service_buffers.h"
#include "core/tiers/service_tiers.h"

/* JSON Schema's integer: 4096 and 4096.0 alike, since JSON does not tell
 * them apart and some clients only have doubles. */
static int json_uint(json_t *v, uint64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return 1;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d >= 0 && d <= 9007199254740992.0 && (double)(uint64_t)d == d) {
            *out = (uint64_t)d;
            return 1;
        }
    }
    return 0;
}

/* "device": k, in a create's body or a copy's. */
static int json_device(struct ghd_request *req, struct ghd_reply *rep, json_t *value,
                       struct ghd_buffer_spec *spec)
{
    uint64_t u;
    if (!json_uint(value, &u) || u > (uint64_t)INT64_MAX)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "'device' must be a non-negative integer (GET /v1/devices lists "
                                 "the devices)");
    spec->has_device = 1;
    spec->device = (long long)u;
    return 0;
}

static int json_spec(struct ghd_request *req, struct ghd_reply *rep, struct ghd_buffer_spec *spec,
                     struct ghd_array_desc *desc)
{
    const char *key;
    json_t *value;
    memset(spec, 0, sizeof(*spec));
    int have_size = 0;
    json_t *dtype = json_object_get(req->json, "dtype"), *shape = json_object_get(req->json, "shape");
    json_object_foreach(req->json, key, value) {
        if (strcmp(key, "size") == 0 || strcmp(key, "alignment") == 0 ||
            strcmp(key, "ttl_s") == 0) {
            uint64_t u;
            if (!json_uint(value, &u) || u > (uint64_t)INT64_MAX)
                return ghd_reply_problem(rep, req, GHD_EINVAL,
                                         "'%s' must be a non-negative integer", key);
            size_t v = (size_t)u;
            if (key[0] == 's') {
                spec->size = v;
                have_size = 1;
            } else if (key[0] == 'a') {
                spec->alignment = v;
            } else {
                spec->ttl_s = (time_t)v;
            }
        } else if (strcmp(key, "label") == 0) {
            if (!json_is_string(value))
                return ghd_reply_problem(rep, req, GHD_EINVAL, "'label' must be a string");
            spec->label = json_string_value(value);
        } else if (strcmp(key, "device") == 0) {
            int rc = json_device(req, rep, value, spec);
            if (rc)
                return rc;
        } else if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0) {
            return ghd_reply_problem(rep, req, GHD_EINVAL,
                                     "unknown field '%.64s' (allowed: size, alignment, label, "
                                     "ttl_s, dtype, shape, device, copy_of)",
                                     key);
        }
    }
    if (shape && !dtype)
        return ghd_reply_problem(rep, req, GHD_EUNPROC, "'shape' needs a 'dtype'");
    if (dtype) {
        /* The array's bytes are the size; a size given too must agree. */
        if (!shape) /* BufferCreateArray requires both */
            return ghd_reply_problem(rep, req, GHD_EINVAL, "give 'shape' with 'dtype'");
        int rc = ghd_array_desc_json(req, rep, dtype, shape, have_size ? spec->size : 0, desc);
        if (rc)
            return rc;
        uint64_t bytes = 0;
        ghd_array_nbytes(desc, NULL, &bytes); /* checked by ghd_array_desc_json */
        spec->size = (size_t)bytes;
        spec->desc = desc;
        return 0;
    }
    if (!have_size)
        return ghd_reply_problem(rep, req, GHD_EINVAL, "'size' is required");
    if (spec->size == 0) /* BufferCreate's minimum: 1 */
        return ghd_reply_problem(rep, req, GHD_EINVAL, "'size' must be at least 1 byte");
    return 0;
}

/* {"copy_of": id, "device"?, "label"?, "ttl_s"?}: a new buffer with the
 * source's bytes, dtype and shape, on `device` (the source's without it). */
static int copy_create(struct ghd_request *req, struct ghd_reply *rep, json_t *copy_of)
{
    struct ghd_buffer_spec spec;
    memset(&spec, 0, sizeof(spec));
    if (!json_is_string(copy_of))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "'copy_of' must be a buffer id");
    const char *key;
    json_t *value;
    json_object_foreach(req->json, key, value) {
        uint64_t u;
        int rc = 0;
        if (strcmp(key, "device") == 0) {
            rc = json_device(req, rep, value, &spec);
        } else if (strcmp(key, "label") == 0) {
            if (!json_is_string(value))
                return ghd_reply_problem(rep, req, GHD_EINVAL, "'label' must be a string");
            spec.label = json_string_value(value);
        } else if (strcmp(key, "ttl_s") == 0) {
            if (!json_uint(value, &u) || u > (uint64_t)INT64_MAX)
                return ghd_reply_problem(rep, req, GHD_EINVAL,
                                         "'ttl_s' must be a non-negative integer");
            spec.ttl_s = (time_t)u;
        } else if (strcmp(key, "copy_of") != 0) {
            return ghd_reply_problem(rep, req, GHD_EINVAL,
                                     "'%.64s' does not go with 'copy_of' (a copy keeps the "
                                     "source's size, dtype and shape; allowed: copy_of, device, "
                                     "label, ttl_s)",
                                     key);
        }
        if (rc)
            return rc;
    }
    struct ghd_buffer *b;
    uint64_t version = 0;
    struct ghd_err err = {0};
    int rc = ghd_service_buffer_copy(req->svc, &req->caller, json_string_value(copy_of), &spec, &b,
                                     &version, &err);
    if (rc == GHD_ELIMIT)
        ghd_reply_header(rep, "Retry-After", "1");
    if (rc)
        return ghd_reply_problem(rep, req, rc, "%s", err.detail);
    json_t *body = ghd_buffer_json_new(b);
    json_object_set_new(body, "copy_of", json_string(json_string_value(copy_of)));
    json_object_set_new(body, "source_version", json_integer((json_int_t)version));
    ghd_reply_header(rep, "Location", "/v1/buffers/%s", b->id);
    ghd_reply_etag(rep, ghd_buffer_version(b), 0);
    ghd_buffer_unref(b);
    return ghd_reply_json(rep, 201, body);
}

int ghd_handle_buffer_create(struct ghd_request *req, struct ghd_reply *rep)
{
    /* A JSON body carries these itself; silently ignoring them would lose them. */
    static const char *const octet_only[] = {"label",  "ttl_s", "alignment",
                                             "device", "dtype", "shape"};
    for (size_t i = 0; i < sizeof(octet_only) / sizeof(octet_only[0]); i++)
        if (ghd_request_query(req, octet_only[i]))
            return ghd_reply_problem(rep, req, GHD_EINVAL,
                                     "query parameter '%s' is for the octet-stream form; give "
                                     "it in the JSON body",
                                     octet_only[i]);
    json_t *copy_of = json_object_get(req->json, "copy_of");
    if (copy_of)
        return copy_create(req, rep, copy_of);
    struct ghd_buffer_spec spec;
    struct ghd_array_desc desc;
    int rc = json_spec(req, rep, &spec, &desc);
    if (rc)
        return rc;
    struct ghd_buffer *b;
    rc = ghd_buffer_create_for(req, rep, &spec, &b);
    if (rc)
        return rc;
    return ghd_buffer_reply_created(req, rep, b);
}

int ghd_handle_buffer_meta(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_buffer *b;
    int rc = ghd_buffer_lookup(req, rep, &b);
    if (rc)
        return rc;
    uint64_t version = ghd_buffer_version(b);
    ghd_reply_etag(rep, version, 0);
    if (ghd_if_none_match_hit(req, version, 0))
        rc = ghd_reply_empty(rep, 304);
    else
        rc = ghd_reply_json(rep, 200, ghd_buffer_json_new(b));
    ghd_buffer_unref(b);
    return rc;
}

/* PATCH: sets, changes or clears the array description; the core writes
 * it (ghd_service_buffer_describe). */
int ghd_handle_buffer_patch(struct ghd_request *req, struct ghd_reply *rep)
{
    const char *key;
    json_t *value;
    json_object_foreach(req->json, key, value) {
        if (strcmp(key, "dtype") != 0 && strcmp(key, "shape") != 0)
            return ghd_reply_problem(rep, req, GHD_EINVAL,
                                     "unknown field '%.64s' (allowed: dtype, shape)", key);
    }
    const struct ghd_describe_request rq = {
        json_object_get(req->json, "dtype"), json_object_get(req->json, "shape"),
        ghd_request_header(req, "If-Match"), ghd_request_header(req, "If-None-Match")};
    struct ghd_err err = {0};
    struct ghd_buffer *b;
    uint64_t version = 0;
    int rc = ghd_service_buffer_describe(req->svc, &req->caller, req->params[0], &rq, &b,
                                         &version, &err);
    if (rc)
        return ghd_reply_write_refused(rep, req, rc, &err, version);
    ghd_reply_etag(rep, ghd_buffer_version(b), 0);
    rc = ghd_reply_json(rep, 200, ghd_buffer_json_new(b));
    ghd_buffer_unref(b);
    return rc;
}

int ghd_handle_buffer_residency(struct ghd_request *req, struct ghd_reply *rep)
{
    const char *key;
    json_t *value;
    json_object_foreach(req->json, key, value) {
        if (strcmp(key, "tier") != 0 && strcmp(key, "pin") != 0)
            return ghd_reply_problem(rep, req, GHD_EINVAL,
                                     "unknown field '%.64s' (allowed: tier, pin)", key);
    }
    json_t *tier = json_object_get(req->json, "tier"), *pin = json_object_get(req->json, "pin");
    if (!json_is_string(tier))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "tier (device, host or disk) is required");
    if (pin && !json_is_boolean(pin))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "pin must be true or false");
    struct ghd_err err = {0};
    struct ghd_buffer *b;
    int rc = ghd_service_buffer_residency(req->svc, &req->caller, req->params[0],
                                          json_string_value(tier), json_is_true(pin), &b, &err);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc));
    ghd_reply_etag(rep, ghd_buffer_version(b), 0);
    rc = ghd_reply_json(rep, 200, ghd_buffer_json_new(b));
    ghd_buffer_unref(b);
    return rc;
}

int ghd_handle_buffer_delete(struct ghd_request *req, struct ghd_reply *rep)
{
    uint64_t version = 0;
    struct ghd_err err = {0};
    int rc = ghd_service_buffer_remove(req->svc, &req->caller, req->params[0],
                                       ghd_request_header(req, "If-Match"),
                                       ghd_request_header(req, "If-None-Match"), &version, &err);
    return rc ? ghd_reply_write_refused(rep, req, rc, &err, version) : ghd_reply_empty(rep, 204);
}

static int parse_uint_query(struct ghd_request *req, const char *name, unsigned long long max,
                            unsigned long long *out)
{
    const char *v = ghd_request_query(req, name);
    if (!v)
        return 1;
    uint64_t n;
    if (ghd_parse_u64(v, &n) || n > max)
        return GHD_EINVAL;
    *out = n;
    return 0;
}

int ghd_handle_buffer_list(struct ghd_request *req, struct ghd_reply *rep)
{
    unsigned long long limit = 100;
    if (parse_uint_query(req, "limit", 1000, &limit) < 0 || limit == 0)
        return ghd_reply_problem(rep, req, GHD_EINVAL, "limit must be an integer from 1 to 1000");
    struct ghd_err err = {0};
    json_t *body;
    int rc = ghd_service_buffer_list(req->svc, &req->caller, ghd_request_query(req, "cursor"),
                                     (size_t)limit, &body, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", err.detail) : ghd_reply_json(rep, 200, body);
}
