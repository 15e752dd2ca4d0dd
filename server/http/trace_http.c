/* The HTTP side of tracing: a request's trace context from its headers. */
#include "trace_http.h"

void ghd_http_trace_begin(struct ghd_request *req)
{
    ghd_trace_ctx_start(&req->trace_ctx, ghd_request_header(req, "traceparent"),
                        ghd_request_header(req, "tracestate"));
}
