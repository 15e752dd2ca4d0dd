/* POST /v1/transfers: moves bytes between a registered region and a buffer,
 * or between two buffers, without a request body carrying them. The handler
 * reads the two ends and the byte count, finds what they name (a region of
 * another tenant is not found) and replies; the core (core/region.h) checks
 * the ranges and the segment and drives the copies. */
#include "handlers.h"

#include <string.h>

#include "base/error.h"
#include "base/json_text.h"
#include "conditional.h"
#include "core/service_regions.h"

/* One end, {"region": id, "offset": a} or {"buffer": id, "offset": a}; on
 * success it holds a reference ghd_service_xfer_end_release drops. */
static int end_read(struct ghd_request *req, struct ghd_reply *rep, json_t *body,
                    const char *field, struct ghd_xfer_end *out)
{
    memset(out, 0, sizeof(*out));
    json_t *e = json_object_get(body, field);
    if (!json_is_object(e))
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "'%s' must be an object naming a 'region' or a 'buffer'", field);
    static const char *const keys[] = {"region", "buffer", "offset", NULL};
    const char *unknown = ghd_json_unknown_key(e, keys);
    if (unknown)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "'%s': unknown field '%.64s' (allowed: region, buffer, offset)",
                                 field, unknown);
    json_t *region = json_object_get(e, "region"), *buffer = json_object_get(e, "buffer");
    json_t *offset = json_object_get(e, "offset");
    if (!region == !buffer || !json_is_string(region ? region : buffer))
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "'%s' must name exactly one of 'region' and 'buffer' (an id)",
                                 field);
    if (offset && (!json_is_integer(offset) || json_integer_value(offset) < 0))
        return ghd_reply_problem(rep, req, GHD_EINVAL, "'%s.offset' must be a byte count", field);
    out->offset = offset ? (uint64_t)json_integer_value(offset) : 0;
    struct ghd_err err = {0};
    int rc = ghd_service_xfer_end_find(req->svc, &req->caller, field, region != NULL,
                                       json_string_value(region ? region : buffer), out, &err);
    return rc ? ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc)) : 0;
}

static int if_match_read(struct ghd_request *req, struct ghd_reply *rep, json_t *body,
                         struct ghd_versions *out, int *present)
{
    json_t *tag = json_object_get(body, "if_match");
    *present = tag != NULL;
    if (!tag)
        return 0;
    if (!json_is_string(tag) || ghd_etag_list_parse(json_string_value(tag), out) != 0)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "'if_match' must be entity tags like \"\\\"v3\\\"\" or \"*\"");
    return 0;
}

static int transfer_reply(struct ghd_request *req, struct ghd_reply *rep,
                          const struct ghd_xfer_end *from, const struct ghd_xfer_end *to,
                          uint64_t bytes, const struct ghd_versions *if_match)
{
    struct ghd_err err = {0};
    struct ghd_xfer_result res;
    uint64_t current = 0;
    int rc = ghd_service_transfer(req->svc, from, to, bytes, if_match, &res, &current, &err);
    if (rc == GHD_EPRECOND)
        ghd_reply_etag(rep, current, 0);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc));
    if (to->buffer)
        ghd_reply_etag(rep, res.version, 0);
    double gbps = res.seconds > 0 ? (double)res.bytes / res.seconds / 1e9 : 0;
    return ghd_reply_json(rep, 200,
                          json_pack("{s:I, s:f, s:f}", "bytes", (json_int_t)res.bytes, "seconds",
                                    res.seconds, "gb_per_s", gbps));
}

int ghd_handle_transfer_create(struct ghd_request *req, struct ghd_reply *rep)
{
    json_t *body = req->json;
    if (!json_is_object(body))
        return ghd_reply_problem(rep, req, GHD_EJSON, "the body must be a JSON object");
    static const char *const keys[] = {"from", "to", "bytes", "if_match", NULL};
    const char *unknown = ghd_json_unknown_key(body, keys);
    if (unknown)
        return ghd_reply_problem(rep, req, GHD_EINVAL,
                                 "unknown field '%.64s' (allowed: from, to, bytes, if_match)",
                                 unknown);
    json_t *bytes = json_object_get(body, "bytes");
    if (!json_is_integer(bytes) || json_integer_value(bytes) < 1)
        return ghd_reply_problem(rep, req, GHD_EINVAL, "'bytes' must be an integer of at least 1");
    struct ghd_versions want = {0};
    int has_if_match;
    int rc = if_match_read(req, rep, body, &want, &has_if_match);
    if (rc)
        return rc;
    struct ghd_xfer_end from, to;
    if ((rc = end_read(req, rep, body, "from", &from)) != 0)
        return rc;
    if ((rc = end_read(req, rep, body, "to", &to)) == 0) {
        if (has_if_match && !to.buffer)
            rc = ghd_reply_problem(rep, req, GHD_EUNPROC,
                                   "'if_match' is for a transfer into a buffer ('to' names a "
                                   "region)");
        else
            rc = transfer_reply(req, rep, &from, &to, (uint64_t)json_integer_value(bytes),
                                has_if_match ? &want : NULL);
        ghd_service_xfer_end_release(req->svc, &to);
    }
    ghd_service_xfer_end_release(req->svc, &from);
    return rc;
}
