#ifndef GHD_HTTP_TRACE_HTTP_H
#define GHD_HTTP_TRACE_HTTP_H

#include "request.h"

/* A request's W3C trace context, from its traceparent and tracestate
 * headers (base/trace.h): a valid traceparent continues the caller's trace,
 * anything else starts a new one; the request gets a span id of its own. */
void ghd_http_trace_begin(struct ghd_request *req);

#endif
