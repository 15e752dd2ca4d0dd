#ifndef GHD_BASE_TRACE_EXPORT_H
#define GHD_BASE_TRACE_EXPORT_H

#include <stdint.h>

#include "err.h"
#include "trace.h"

/* The trace exporter: decides which requests are sampled, and sends the
 * finished traces of those as OTLP/HTTP JSON (ExportTraceServiceRequest,
 * https://opentelemetry.io/docs/specs/otlp/) to a collector, in batches, on
 * a thread of its own. A request never waits for it: a finished trace goes
 * into a bounded queue, or is dropped (and counted) when the queue is full. */

struct ghd_trace;
struct ghd_tracer;

struct ghd_tracer_stats {
    uint64_t spans_exported;  /* spans a collector accepted */
    uint64_t traces_dropped;  /* traces not sent: the queue was full, or the collector refused */
    uint64_t exports_failed;  /* POSTs that failed (unreachable, no 2xx) */
};

/* A tracer sending to `endpoint` (http://host:port/path; a URL without a
 * path, or "/", gets OTLP's /v1/traces), sampling new traces at `ratio`
 * (0..1; a caller's sampled flag is followed either way: parent-based).
 * `instance` names this process (service.instance.id). Starts its thread.
 * GHD_EINVAL for a bad URL, GHD_ENOHOSTMEM, GHD_EUNAVAIL without a thread. */
int ghd_tracer_new(const char *endpoint, double ratio, const char *instance,
                   struct ghd_tracer **out, struct ghd_err *err);
/* Sends what is queued (one more batch, bounded by the POST's wait), stops
 * the thread, frees. NULL is a no-op. */
void ghd_tracer_free(struct ghd_tracer *t);
/* The sampling decision for a request of `ctx` (sets ctx->sampled): its
 * trace, a new reference, when sampled; NULL otherwise or when `t` is NULL
 * (tracing off: one branch). */
struct ghd_trace *ghd_tracer_start(struct ghd_tracer *t, struct ghd_trace_ctx *ctx);
/* A finished trace into the queue (steals it), or dropped when it is full.
 * Called by ghd_trace_unref. */
void ghd_tracer_submit(struct ghd_tracer *t, struct ghd_trace *tr);
/* What it has done so far; all zero for NULL. */
void ghd_tracer_stats(struct ghd_tracer *t, struct ghd_tracer_stats *out);

#endif
