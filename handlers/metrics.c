/* GET /metrics: the Prometheus exposition of server/core/metrics/metrics.c, with
 * the gauges their owners report now (core/gauges.c). */
#include "handlers.h"

#include <stdlib.h>

#include "base/error.h"
#include "core/metrics/gauges.h"

int ghd_handle_metrics(struct ghd_request *req, struct ghd_reply *rep)
{
    char *text;
    size_t len;
    int rc = ghd_service_metrics_render(req->svc, &text, &len);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "cannot render the metrics");
    rc = ghd_reply_text(rep, 200, GHD_METRICS_CONTENT_TYPE, text, len);
    free(text);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "cannot render the metrics");
    ghd_reply_header(rep, "Cache-Control", "no-store");
    return 0;
}
