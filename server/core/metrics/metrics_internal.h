/* The inside of struct ghd_metrics, shared by the recorders (metrics.c) and
 * the exposition (metrics_render.c); nothing else includes it. */
#ifndef GHD_CORE_METRICS_METRICS_INTERNAL_H
#define GHD_CORE_METRICS_METRICS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/strbuf.h"
#include "base/tenant.h"
#include "metrics.h"

/* Counters are relaxed atomics: each is exact on its own, and a scrape that
 * sees one a request later than another is harmless. */
typedef atomic_uint_fast64_t counter;

static inline uint64_t get(counter *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static inline void add(counter *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* ---- histograms ---------------------------------------------------------- */

#define MAX_BUCKETS 20

/* Per-bucket (not cumulative) counts; the sum is kept in integer units of
 * `scale` (nanoseconds for seconds) so that it can be an atomic. */
struct histogram {
    counter bucket[MAX_BUCKETS + 1]; /* the last one is +Inf */
    counter count;
    counter sum;
};

struct histogram_spec {
    const double *bounds;
    unsigned nbounds;
    double scale; /* sum units per observed unit */
};

static inline void observe(struct histogram *h, const struct histogram_spec *spec, double v)
{
    unsigned i = 0;
    while (i < spec->nbounds && v > spec->bounds[i])
        i++;
    add(&h->bucket[i], 1);
    add(&h->count, 1);
    if (v > 0)
        add(&h->sum, (uint64_t)(v * spec->scale + 0.5));
}

/* The buckets of each histogram family (metrics.c). */
extern const struct histogram_spec duration_spec, throughput_spec, device_spec, phase_spec;
/* The phase labels of gpuhttpd_run_phase_seconds, in run.h's order (metrics.c). */
extern const char *const run_phase_names[GHD_METRICS_RUN_PHASES];

/* ---- requests, transfers and runs: what is counted -------------------------- */

#define MAX_ROUTES 63 /* one more slot counts unmatched requests */

/* The method labels, "other" last (metrics.c). */
#define METHOD_COUNT 8
extern const char *const method_names[METHOD_COUNT];

/* requests_total{route,method,code}: an open-addressed table whose keys are
 * claimed once with a compare-and-swap and never move. */
#define REQUEST_SLOTS 2048
struct request_slot {
    atomic_uint key; /* 0 = free; else 1 + (route << 13 | method << 10 | code) */
    counter count;
    struct histogram duration; /* request_duration_seconds{route,method,code} */
};

#define OUTCOME_COUNT 3
extern const char *const outcome_names[OUTCOME_COUNT]; /* metrics.c */

struct run_row {
    char kernel[64];
    unsigned index; /* the device's */
    uint64_t outcomes[OUTCOME_COUNT];
    struct histogram device; /* only touched under runs_lock; atomics regardless */
};

/* Everything one service counts (core/service.h owns it). Requests and
 * transfers are recorded lock-free; the route labels are set before the
 * first request and read by every recorder. */
struct ghd_metrics {
    struct request_slot request_slots[REQUEST_SLOTS];
    counter requests_dropped; /* the table was full: never expected */
    counter route_requests[MAX_ROUTES + 1];
    counter route_bytes_in[MAX_ROUTES + 1];
    counter route_bytes_out[MAX_ROUTES + 1];
    const char *route_labels[MAX_ROUTES];
    atomic_size_t route_label_count;

    /* Per device: [device][direction]. */
    counter transfer_bytes[GHD_METRICS_DEVICES][2];
    counter transfer_direct_bytes[GHD_METRICS_DEVICES][2];
    struct histogram transfer_throughput[GHD_METRICS_DEVICES][2];
    counter staging_capped[2];         /* [0] address, [1] tenant */
    counter staging_overlap_capped[2]; /* the same, for second chunks */
    counter socket_upload_bytes[2];    /* [0] straight into the chunks, [1] bounced */

    pthread_mutex_t runs_lock;
    /* atomics: observed without runs_lock */
    struct histogram run_queue_wait[GHD_METRICS_DEVICES];
    struct histogram run_phase[GHD_METRICS_RUN_PHASES];
    /* Rows by (kernel, device); the last one is "other". */
    struct run_row run_rows[GHD_METRICS_KERNELS + 1];
    unsigned run_row_count;

    counter device_losses[GHD_METRICS_DEVICES];
    /* One more than the highest device index recorded: the devices rendered
     * (with at least the snapshot's, and device 0). */
    atomic_uint devices_seen;
    counter connections_refused[2]; /* [0] per address, [1] total */
    counter connections_shed;       /* closed to make room (http/conn_guard.h) */
    counter inline_defs[2][3];      /* [kernel, module][miss, memory, disk] */

    /* Per tenant (metrics_tenants.c), newest first, under tenants_lock: one
     * row per tenant that ran or moved bytes; the token table bounds them. */
    pthread_mutex_t tenants_lock;
    struct tenant_row *tenants;
    atomic_int tenant_label; /* /metrics shows the rows (--metrics-tenant-label) */
};

struct tenant_row {
    char name[GHD_TENANT_MAX + 1]; /* "" for the untenanted */
    struct ghd_metrics_tenant figures;
    struct tenant_row *next;
};

/* The per-tenant families, when tenant_label is on (metrics_tenants.c). */
void ghd_metrics_render_tenants(struct ghd_metrics *m, struct ghd_strbuf *t);
/* Frees the rows (metrics_free). */
void ghd_metrics_tenants_free(struct ghd_metrics *m);

/* The "cache" labels of inline definitions, by index (metrics.c). */
extern const char *const inline_from[3];

#endif
