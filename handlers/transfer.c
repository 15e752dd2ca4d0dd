/* Problems from the transfer engine, as replies. */
#include "transfer.h"

#include "base/error.h"
#include "core/buffers/service_buffers.h"

int ghd_transfer_reply_problem(struct ghd_reply *rep, struct ghd_request *req, int rc,
                               const struct ghd_err *err)
{
    if (rc == GHD_ETIMEDOUT || rc == GHD_ELIMIT) /* chunks come back within seconds */
        ghd_reply_header(rep, "Retry-After", "1");
    return ghd_reply_problem(rep, req, rc, "%s", ghd_err_text(err, rc));
}

void ghd_transfer_client_of(const struct ghd_request *req, struct ghd_transfer_client *out)
{
    ghd_service_transfer_client(req->svc, req->request_id, req->client_address, &req->caller,
                                out);
    out->trace = req->trace; /* its copies are spans of the request when sampled */
}
