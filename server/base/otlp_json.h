#ifndef GHD_BASE_OTLP_JSON_H
#define GHD_BASE_OTLP_JSON_H

#include <stddef.h>

struct ghd_trace;

/* The OTLP/JSON ExportTraceServiceRequest of `n` finished traces
 * (trace_span.h), every span used in them, as OTLP's JSON encoding writes
 * it: ids as lowercase hex, times as decimal strings of Unix nanoseconds,
 * enums as integers. `instance` is the resource's service.instance.id.
 * A malloc'ed string (its length in *len) or NULL when out of memory;
 * *spans gets how many spans it holds. */
char *ghd_otlp_json(struct ghd_trace *const *traces, size_t n, const char *instance,
                    size_t *len, size_t *spans);

#endif
