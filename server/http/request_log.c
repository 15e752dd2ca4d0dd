/* Every request's access line and metrics: the ones libmicrohttpd handed
 * to us when they complete, and the ones it refused itself. */
#include "request_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "core/metrics/metrics.h"
#include "head.h"

/* The buffer or run id for the access log: the one the path names, else
 * the one a create made (its Location). NULL for other requests. */
static const char *resource_of(const struct ghd_http_request *hr)
{
    if (hr->req.route && strstr(hr->req.route, "{id}") && hr->req.param_count)
        return hr->req.params[0];
    for (unsigned i = 0; i < hr->rep.header_count; i++)
        if (strcmp(hr->rep.header_names[i], "Location") == 0 &&
            strncmp(hr->rep.header_values[i], "/v1/", 4) == 0)
            return strrchr(hr->rep.header_values[i], '/') + 1;
    return NULL;
}

void ghd_http_log_request(const struct ghd_http_request *hr, struct ghd_metrics *m,
                          const char *client, int status)
{
    char trace_id[33];
    ghd_trace_hex(hr->req.trace_ctx.trace_id, 16, trace_id);
    struct ghd_access_record rec = {
        .request_id = hr->req.request_id,
        .trace_id = trace_id,
        .path = hr->req.path,
        .resource = resource_of(hr),
        .client = client,
        .detail = hr->rep.problem_detail,
        .method = hr->req.method,
        .route = hr->req.route ? hr->req.route : "(unmatched)",
        .status = status,
        .bytes_in = hr->req.bytes_in,
        .bytes_out = hr->bytes_out,
        .duration_ms = ghd_clock_ms() - hr->started_ms,
        .tenant = hr->req.caller.tenant,
        .kernel = hr->req.run_kernel[0] ? hr->req.run_kernel : NULL,
        .device_ms = hr->req.run_device_ms,
    };
    ghd_log_access(&rec);
    ghd_metrics_request(m, rec.route, rec.method, rec.status, rec.duration_ms / 1e3,
                        rec.bytes_in, rec.bytes_out);
}

/* libmicrohttpd refuses malformed HTTP itself (its problem+json, see
 * server/mhd/gpuhttpd.patch) before any request reaches on_request; its log
 * message is then the only trace, so it becomes the request's access line
 * (route "(unparsed)", a fresh request id), as every request gets one. */
void ghd_http_log_refusal(struct ghd_metrics *m, const char *msg)
{
    static const char mark[] = "Error processing request (HTTP response code is ";
    const char *p = strstr(msg, mark);
    char text[400] = "";
    int status;
    if (p) {
        status = atoi(p + sizeof(mark) - 1);
        if (status < 400 || status > 599)
            return;
        const char *detail = strstr(p, "('");
        if (detail) {
            snprintf(text, sizeof(text), "%s", detail + 2);
            char *end = strstr(text, "'))");
            if (end)
                *end = '\0';
        }
    } else if (strstr(msg, "in the request line")) {
        /* A request line it will not read (a bare CR): closed, no reply. */
        status = 400;
        snprintf(text, sizeof(text), "closed without a reply: %s", msg);
    } else {
        return;
    }
    char request_id[GHD_REQUEST_ID_MAX + 1];
    ghd_http_random_request_id(request_id);
    struct ghd_access_record rec = {
        .request_id = request_id,
        .method = "(unparsed)",
        .route = "(unparsed)",
        .status = status,
        .detail = text,
    };
    ghd_log_access(&rec);
    ghd_metrics_request(m, rec.route, rec.method, rec.status, 0, 0, 0);
}
