/* Problems from the transfer engine, as replies. */
#include "transfer.h"

#include "base/error.h"

int ghd_transfer_reply_problem(struct ghd_request *req, struct ghd_reply *rep, int rc,
                               const char *detail)
{
    if (rc == GHD_ETIMEDOUT) /* a busy ring frees up in about a second */
        ghd_reply_header(rep, "Retry-After", "1");
    return ghd_reply_problem(rep, req, rc, "%s", detail);
}
