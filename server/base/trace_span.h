#ifndef GHD_BASE_TRACE_SPAN_H
#define GHD_BASE_TRACE_SPAN_H

#include <stdatomic.h>
#include <stdint.h>

#include "trace.h"

/* One sampled request's spans, recorded while it runs and handed to the
 * exporter (trace_export.h) when the last holder lets go: the request, and
 * a run or transfer it started, each hold a reference. Spans are written
 * by the threads that own each phase (the request's, a run worker); a slot
 * is claimed atomically, so they never share one.
 *
 * The request's phases tile it: parse, body (or staging for an upload),
 * handle, reply each start where the one before ended (ghd_trace_phase),
 * so their durations add up to the request's. Copies, the run's queue wait
 * and its kernels are children of the phase they happen in. */

#define GHD_TRACE_MAX_SPANS 160
/* Slots inside the trace itself: a request's phases, a run's kernels or a
 * small transfer's copies. The rest (a large upload's copies) come in one
 * allocation when first needed, so a sampled healthz costs a few KiB. */
#define GHD_TRACE_INLINE_SPANS 16
#define GHD_SPAN_MAX_ATTRS 4

/* The fixed slots: the request and its phases. */
enum ghd_span_slot {
    GHD_SPAN_REQUEST,
    GHD_SPAN_PARSE,  /* the head: checks, route, token */
    GHD_SPAN_BODY,   /* the body received ("body", or "staging" for an upload) */
    GHD_SPAN_HANDLE, /* the handler (an upload's finish) */
    GHD_SPAN_REPLY,  /* the reply sent */
    GHD_SPAN_FIXED
};

struct ghd_span_attr {
    const char *key; /* a static string */
    int is_num;
    int64_t num;
    char str[56];
};

struct ghd_span {
    const char *name; /* a static string; NULL: the slot is unused */
    uint8_t id[8];
    int parent; /* a slot; -1: the request's own parent (the caller's span, or none) */
    uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
    unsigned nattr;
    struct ghd_span_attr attr[GHD_SPAN_MAX_ATTRS];
};


struct ghd_trace {
    atomic_int refs;
    /* Where it goes when the last reference drops (the exporter,
     * base/trace_export.h, which it does not know); NULL: freed. */
    void (*sink)(void *sink_ctx, struct ghd_trace *tr);
    void *sink_ctx;
    struct ghd_trace_ctx ctx;
    int64_t wall_offset_ns; /* CLOCK_REALTIME minus CLOCK_MONOTONIC at its start */
    uint64_t phase_end_ns;  /* where the next phase starts */
    atomic_uint next;       /* the next free slot past the fixed ones */
    atomic_uint dropped;    /* spans that found no free slot */
    char request_name[96];  /* the request span's name: "METHOD /route/template" */
    struct ghd_span spans[GHD_TRACE_INLINE_SPANS]; /* the fixed slots first */
    _Atomic(struct ghd_span *) more; /* slots from GHD_TRACE_INLINE_SPANS on, or NULL */
};

/* A new trace for `ctx` (copied), started now, the request span's id its
 * span id; NULL when out of memory. One reference, the caller's. */
struct ghd_trace *ghd_trace_new(void (*sink)(void *sink_ctx, struct ghd_trace *tr), void *sink_ctx,
                               const struct ghd_trace_ctx *ctx);
void ghd_trace_ref(struct ghd_trace *tr);
/* Drops a reference; the last hands the trace to its tracer (or frees it
 * without one). NULL is a no-op. */
void ghd_trace_unref(struct ghd_trace *tr);
/* Frees a trace nobody holds (the exporter, once it is sent or dropped). */
void ghd_trace_free(struct ghd_trace *tr);
/* Ends the phase in fixed slot `slot` now, named `name`: it started where
 * the last phase ended (the request's start for the first). */
void ghd_trace_phase(struct ghd_trace *tr, enum ghd_span_slot slot, const char *name);
/* Records a span under `parent` (a slot); returns its slot, or -1 when the
 * trace is full (counted in `dropped`). */
int ghd_trace_span(struct ghd_trace *tr, const char *name, int parent, uint64_t start_ns,
                   uint64_t end_ns);
/* The span in `slot`, or NULL (a slot past the inline ones never claimed). */
const struct ghd_span *ghd_trace_slot_const(const struct ghd_trace *tr, int slot);
/* How many slots were claimed (some may be unused fixed ones: name NULL). */
unsigned ghd_trace_used(const struct ghd_trace *tr);
/* Attributes of the span in `slot` (up to GHD_SPAN_MAX_ATTRS; more are
 * dropped). A string longer than the slot's room is cut. */
void ghd_trace_attr_str(struct ghd_trace *tr, int slot, const char *key, const char *value);
void ghd_trace_attr_num(struct ghd_trace *tr, int slot, const char *key, int64_t value);

#endif
