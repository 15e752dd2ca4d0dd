/* The HTTP side of tracing: a request's trace context from its headers,
 * and its own span with OpenTelemetry's HTTP server attributes. */
#include "trace_http.h"

#include <stdio.h>

#include "base/trace_export.h"
#include "core/service.h"

void ghd_http_trace_begin(struct ghd_request *req)
{
    ghd_trace_ctx_start(&req->trace_ctx, ghd_request_header(req, "traceparent"),
                        ghd_request_header(req, "tracestate"));
    req->trace = req->svc ? ghd_tracer_start(ghd_service_tracer(req->svc), &req->trace_ctx)
                          : NULL;
}

void ghd_http_trace_end(struct ghd_request *req, int status)
{
    struct ghd_trace *tr = req->trace;
    if (!tr)
        return;
    req->trace = NULL;
    ghd_trace_phase(tr, GHD_SPAN_REPLY, "reply");
    const char *route = req->route ? req->route : "(unmatched)";
    snprintf(tr->request_name, sizeof(tr->request_name), "%s %s", req->method, route);
    ghd_trace_phase(tr, GHD_SPAN_REQUEST, tr->request_name);
    ghd_trace_attr_str(tr, GHD_SPAN_REQUEST, "http.request.method", req->method);
    ghd_trace_attr_str(tr, GHD_SPAN_REQUEST, "http.route", route);
    ghd_trace_attr_num(tr, GHD_SPAN_REQUEST, "http.response.status_code", status);
    ghd_trace_attr_str(tr, GHD_SPAN_REQUEST, "gpuhttpd.request_id", req->request_id);
    ghd_trace_unref(tr);
}
