#ifndef GHD_HTTP_TRACE_HTTP_H
#define GHD_HTTP_TRACE_HTTP_H

#include "request.h"

/* A request's W3C trace context, from its traceparent and tracestate
 * headers (base/trace.h): a valid traceparent continues the caller's trace,
 * anything else starts a new one; the request gets a span id of its own.
 * With tracing on (--otlp-endpoint) the exporter decides whether it is
 * sampled: then req->trace records its phases (base/trace_span.h). */
void ghd_http_trace_begin(struct ghd_request *req);
/* Ends the request's current phase (pre: req->trace). */
static inline void ghd_http_trace_phase(struct ghd_request *req, enum ghd_span_slot slot,
                                        const char *name)
{
    ghd_trace_phase(req->trace, slot, name);
}
/* The request is done with `status`: its reply phase and its own span end,
 * and its reference goes (the trace is exported once a run or transfer
 * holding it lets go too). No-op when not sampled. */
void ghd_http_trace_end(struct ghd_request *req, int status);

#endif
