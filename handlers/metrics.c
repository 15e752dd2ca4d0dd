/* GET /metrics: the Prometheus exposition of server/core/metrics.c, with
 * the gauges their owners report now (core/gauges.c). */
#include "handlers.h"

#include <stdlib.h>

#include "base/error.h"
#include "core/gauges.h"
#include "core/metrics.h"

int ghd_handle_metrics(struct ghd_request *req, struct ghd_reply *rep)
{
    char *text;
    size_t len;
    struct ghd_metrics_gauges g;
    ghd_gauges_collect(req->svc, &g);
    int rc = ghd_metrics_render(req->svc->metrics, &g, &text, &len);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "cannot render the metrics");
    rc = ghd_reply_text(rep, 200, GHD_METRICS_CONTENT_TYPE, text, len);
    free(text);
    if (rc)
        return ghd_reply_problem(rep, req, rc, "cannot render the metrics");
    ghd_reply_header(rep, "Cache-Control", "no-store");
    return 0;
}
