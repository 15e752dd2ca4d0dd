/* /v1/usage: what the caller's tenant holds and may hold (buffers and their
 * bytes on each device, runs queued or running and kept, kernels), and
 * nothing of another tenant's. The figures and limits are the core's
 * (core/service_usage.h). */
#include "handlers.h"

#include "core/tenancy/service_usage.h"

int ghd_handle_usage(struct ghd_request *req, struct ghd_reply *rep)
{
    return ghd_reply_json(rep, 200, ghd_service_usage_new(req->svc, &req->caller));
}
