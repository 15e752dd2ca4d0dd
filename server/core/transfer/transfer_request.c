/* POST /v1/transfers as one core operation: the body's two ends and byte
 * count read, what they name found as the caller's tenant sees it (a region
 * or buffer of another tenant is not found), and the transfer made
 * (ghd_service_transfer: the ranges, the segment, the copies). */
#include "core/regions/service_regions.h"

#include <string.h>

#include "base/error.h"
#include "base/json_text.h"
#include "core/buffers/write_conds.h"

/* One end, {"region": id, "offset": a} or {"buffer": id, "offset": a}; on
 * success it holds a reference ghd_service_xfer_end_release drops. */
static int end_read(struct ghd_service *svc, const struct ghd_caller *caller, json_t *body,
                    const char *field, struct ghd_xfer_end *out, struct ghd_err *err)
{
    memset(out, 0, sizeof(*out));
    json_t *e = json_object_get(body, field);
    if (!json_is_object(e))
        return ghd_err_set(err, GHD_EINVAL,
                           "'%s' must be an object naming a 'region' or a 'buffer'", field);
    static const char *const keys[] = {"region", "buffer", "offset", NULL};
    const char *unknown = ghd_json_unknown_key(e, keys);
    if (unknown)
        return ghd_err_set(err, GHD_EINVAL,
                           "'%s': unknown field '%.64s' (allowed: region, buffer, offset)", field,
                           unknown);
    json_t *region = json_object_get(e, "region"), *buffer = json_object_get(e, "buffer");
    json_t *offset = json_object_get(e, "offset");
    if (!region == !buffer || !json_is_string(region ? region : buffer))
        return ghd_err_set(err, GHD_EINVAL,
                           "'%s' must name exactly one of 'region' and 'buffer' (an id)", field);
    if (offset && (!json_is_integer(offset) || json_integer_value(offset) < 0))
        return ghd_err_set(err, GHD_EINVAL, "'%s.offset' must be a byte count", field);
    out->offset = offset ? (uint64_t)json_integer_value(offset) : 0;
    return ghd_service_xfer_end_find(svc, caller, field, region != NULL,
                                     json_string_value(region ? region : buffer), out, err);
}

/* The body's members but the ends: its fields, "bytes" and "if_match". */
static int body_read(json_t *body, uint64_t *bytes, struct ghd_versions *want, int *has_if_match,
                     struct ghd_err *err)
{
    if (!json_is_object(body))
        return ghd_err_set(err, GHD_EJSON, "the body must be a JSON object");
    static const char *const keys[] = {"from", "to", "bytes", "if_match", NULL};
    const char *unknown = ghd_json_unknown_key(body, keys);
    if (unknown)
        return ghd_err_set(err, GHD_EINVAL,
                           "unknown field '%.64s' (allowed: from, to, bytes, if_match)", unknown);
    json_t *n = json_object_get(body, "bytes");
    if (!json_is_integer(n) || json_integer_value(n) < 1)
        return ghd_err_set(err, GHD_EINVAL, "'bytes' must be an integer of at least 1");
    *bytes = (uint64_t)json_integer_value(n);
    json_t *tag = json_object_get(body, "if_match");
    *has_if_match = tag != NULL;
    if (tag && (!json_is_string(tag) || ghd_etag_list_parse(json_string_value(tag), want) != 0))
        return ghd_err_set(err, GHD_EINVAL,
                           "'if_match' must be entity tags like \"\\\"v3\\\"\" or \"*\"");
    return 0;
}

int ghd_service_transfer_create(struct ghd_service *svc, const struct ghd_caller *caller,
                                json_t *body, struct ghd_xfer_result *res, uint64_t *current,
                                struct ghd_err *err)
{
    memset(res, 0, sizeof(*res));
    uint64_t bytes = 0;
    struct ghd_versions want = {0};
    int has_if_match = 0;
    int rc = body_read(body, &bytes, &want, &has_if_match, err);
    struct ghd_xfer_end from, to;
    if (rc || (rc = end_read(svc, caller, body, "from", &from, err)) != 0)
        return rc;
    if ((rc = end_read(svc, caller, body, "to", &to, err)) == 0) {
        if (has_if_match && !to.buffer)
            rc = ghd_err_set(err, GHD_EUNPROC,
                             "'if_match' is for a transfer into a buffer ('to' names a region)");
        else
            rc = ghd_service_transfer(svc, &from, &to, bytes, has_if_match ? &want : NULL, res,
                                      current, err);
        ghd_service_xfer_end_release(svc, &to);
    }
    ghd_service_xfer_end_release(svc, &from);
    return rc;
}
