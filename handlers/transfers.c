/* POST /v1/transfers: moves bytes between a registered region and a buffer,
 * or between two buffers, without a request body carrying them. The core
 * reads the two ends and the byte count, finds what they name as the
 * caller's tenant sees it (a region of another tenant is not found), checks
 * the ranges and the segment and drives the copies (core/service_regions.h,
 * ghd_service_transfer_create); the handler replies. */
#include "handlers.h"

#include "base/error.h"
#include "conditional.h"
#include "core/regions/service_regions.h"

int ghd_handle_transfer_create(struct ghd_request *req, struct ghd_reply *rep)
{
    struct ghd_err err = {0};
    struct ghd_xfer_result res;
    uint64_t current = 0;
    int rc = ghd_service_transfer_create(req->svc, &req->caller, req->json, &res, &current, &err);
    if (rc == GHD_EPRECOND)
        ghd_reply_etag(rep, current, 0);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(&err, rc));
    if (res.version) /* into a buffer: its version now */
        ghd_reply_etag(rep, res.version, 0);
    double gbps = res.seconds > 0 ? (double)res.bytes / res.seconds / 1e9 : 0;
    return ghd_reply_json(rep, 200,
                          json_pack("{s:I, s:f, s:f}", "bytes", (json_int_t)res.bytes, "seconds",
                                    res.seconds, "gb_per_s", gbps));
}
