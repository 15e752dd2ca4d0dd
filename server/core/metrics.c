#include "metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "base/process_stats.h"

/* Counters are relaxed atomics: each is exact on its own, and a scrape that
 * sees one a request later than another is harmless. */
typedef atomic_uint_fast64_t counter;

static uint64_t get(counter *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static void add(counter *c, uint64_t n)
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

static void observe(struct histogram *h, const struct histogram_spec *spec, double v)
{
    unsigned i = 0;
    while (i < spec->nbounds && v > spec->bounds[i])
        i++;
    add(&h->bucket[i], 1);
    add(&h->count, 1);
    if (v > 0)
        add(&h->sum, (uint64_t)(v * spec->scale + 0.5));
}

static const double duration_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25,   0.5,   1,      2.5,   5,    10,    30,    60};
static const struct histogram_spec duration_spec = {duration_bounds, 16, 1e9};

static const double throughput_bounds[] = {1e6,   1e7, 1e8,   2.5e8, 5e8,  1e9,
                                           2.5e9, 5e9, 1e10,  2.5e10, 5e10, 1e11};
static const struct histogram_spec throughput_spec = {throughput_bounds, 12, 1};

static const double device_bounds[] = {1e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1,
                                       0.5,  1,    5,    10,   60};
static const struct histogram_spec device_spec = {device_bounds, 13, 1e9};

/* ---- requests -------------------------------------------------------------- */

#define MAX_ROUTES 63 /* one more slot counts unmatched requests */

static const char *const method_names[] = {"GET",     "HEAD",  "POST",  "PUT",
                                           "DELETE",  "PATCH", "OPTIONS", "other"};
#define METHOD_COUNT (sizeof(method_names) / sizeof(method_names[0]))

/* requests_total{route,method,code}: an open-addressed table whose keys are
 * claimed once with a compare-and-swap and never move. */
#define REQUEST_SLOTS 2048
struct request_slot {
    atomic_uint key; /* 0 = free; else 1 + (route << 13 | method << 10 | code) */
    counter count;
    struct histogram duration; /* request_duration_seconds{route,method,code} */
};

static struct request_slot request_slots[REQUEST_SLOTS];
static counter requests_dropped; /* the table was full: never expected */
static counter route_requests[MAX_ROUTES + 1];
static counter route_bytes_in[MAX_ROUTES + 1];
static counter route_bytes_out[MAX_ROUTES + 1];

static counter transfer_bytes[2];
static counter transfer_direct_bytes[2];
static counter staging_capped[2];         /* [0] address, [1] tenant */
static counter staging_overlap_capped[2]; /* the same, for second chunks */
static struct histogram transfer_throughput[2];

/* The route templates requests are labelled with (ghd_metrics_set_routes);
 * set before the first request, read by every recorder. */
static const char *route_labels[MAX_ROUTES];
static atomic_size_t route_label_count;

void ghd_metrics_set_routes(const char *const *templates, size_t count)
{
    if (count > MAX_ROUTES)
        count = MAX_ROUTES;
    for (size_t i = 0; i < count; i++)
        route_labels[i] = templates[i];
    atomic_store_explicit(&route_label_count, count, memory_order_release);
}

/* The index of a route template among the labels; the unmatched slot for
 * anything else. The templates are the router's, so usually the pointer
 * matches. */
static unsigned route_index(const char *route, size_t *count_out)
{
    size_t n = atomic_load_explicit(&route_label_count, memory_order_acquire);
    *count_out = n;
    if (!route)
        return MAX_ROUTES;
    for (size_t i = 0; i < n; i++)
        if (route_labels[i] == route || strcmp(route_labels[i], route) == 0)
            return (unsigned)i;
    return MAX_ROUTES;
}

static unsigned method_index(const char *method)
{
    for (unsigned i = 0; method && i + 1 < METHOD_COUNT; i++)
        if (strcmp(method, method_names[i]) == 0)
            return i;
    return METHOD_COUNT - 1;
}

void ghd_metrics_request(const char *route, const char *method, int status, double seconds,
                         uint64_t bytes_in, uint64_t bytes_out)
{
    size_t n;
    unsigned r = route_index(route, &n);
    /* The counters last: whoever sees them move sees the rest moved too. */
    add(&route_requests[r], 1);
    add(&route_bytes_in[r], bytes_in);
    add(&route_bytes_out[r], bytes_out);
    unsigned m = method_index(method);
    unsigned code = status >= 100 && status <= 999 ? (unsigned)status : 0;
    unsigned key = 1 + (r << 13 | m << 10 | code);
    unsigned h = (key * 2654435761u) % REQUEST_SLOTS;
    for (unsigned probe = 0; probe < REQUEST_SLOTS; probe++) {
        struct request_slot *s = &request_slots[(h + probe) % REQUEST_SLOTS];
        unsigned seen = atomic_load_explicit(&s->key, memory_order_acquire);
        if (seen == 0) {
            unsigned expected = 0;
            seen = atomic_compare_exchange_strong(&s->key, &expected, key) ? key : expected;
        }
        if (seen == key) {
            observe(&s->duration, &duration_spec, seconds);
            atomic_fetch_add_explicit(&s->count, 1, memory_order_release);
            return;
        }
    }
    add(&requests_dropped, 1);
}

void ghd_metrics_transfer(enum ghd_transfer_dir dir, uint64_t bytes, double seconds)
{
    unsigned d = dir == GHD_TRANSFER_DOWNLOAD;
    add(&transfer_bytes[d], bytes);
    if (bytes > 0 && seconds > 0)
        observe(&transfer_throughput[d], &throughput_spec, (double)bytes / seconds);
}

void ghd_metrics_transfer_direct(enum ghd_transfer_dir dir, uint64_t bytes)
{
    add(&transfer_direct_bytes[dir == GHD_TRANSFER_DOWNLOAD], bytes);
}

void ghd_metrics_staging_capped(int tenant)
{
    add(&staging_capped[tenant != 0], 1);
}

void ghd_metrics_staging_overlap_capped(int tenant)
{
    add(&staging_overlap_capped[tenant != 0], 1);
}

/* ---- runs -------------------------------------------------------------------- */

static const char *const outcome_names[] = {"succeeded", "failed", "canceled"};
#define OUTCOME_COUNT 3

struct run_row {
    char kernel[64];
    uint64_t outcomes[OUTCOME_COUNT];
    struct histogram device; /* only touched under runs_lock; atomics regardless */
};

static pthread_mutex_t runs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct histogram run_queue_wait; /* atomics: observed without runs_lock */
static struct run_row run_rows[GHD_METRICS_KERNELS + 1]; /* + "other" */
static unsigned run_row_count;

void ghd_metrics_run(const char *kernel, const char *outcome, double device_seconds,
                     double queued_seconds)
{
    unsigned o = 0;
    while (o < OUTCOME_COUNT && strcmp(outcome, outcome_names[o]) != 0)
        o++;
    if (o == OUTCOME_COUNT)
        o = 1; /* an unknown outcome is a failure */
    if (!kernel || !*kernel)
        kernel = "unknown";
    pthread_mutex_lock(&runs_lock);
    struct run_row *row = NULL;
    for (unsigned i = 0; i < run_row_count && !row; i++)
        if (strcmp(run_rows[i].kernel, kernel) == 0)
            row = &run_rows[i];
    if (!row && run_row_count < GHD_METRICS_KERNELS && strlen(kernel) < sizeof(row->kernel)) {
        row = &run_rows[run_row_count++];
        snprintf(row->kernel, sizeof(row->kernel), "%s", kernel);
    }
    if (!row) {
        row = &run_rows[GHD_METRICS_KERNELS];
        snprintf(row->kernel, sizeof(row->kernel), "other");
    }
    row->outcomes[o]++;
    if (device_seconds > 0)
        observe(&row->device, &device_spec, device_seconds);
    pthread_mutex_unlock(&runs_lock);
    if (queued_seconds >= 0)
        observe(&run_queue_wait, &duration_spec, queued_seconds);
}

/* ---- rendering ---------------------------------------------------------------- */

struct text {
    char *buf;
    size_t len, cap;
    int failed;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    if (!t->buf) {
        t->cap = 4096;
        t->buf = malloc(t->cap);
        if (!t->buf) {
            t->failed = 1;
            return;
        }
    }
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = 1;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap * 2 + (size_t)n + 1;
        char *grown = realloc(t->buf, cap);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->buf = grown;
        t->cap = cap;
    }
}

/* A label value with \, " and newline escaped, as the text format requires. */
static void put_label_value(struct text *t, const char *v)
{
    for (; v && *v; v++) {
        if (*v == '\\')
            put(t, "\\\\");
        else if (*v == '"')
            put(t, "\\\"");
        else if (*v == '\n')
            put(t, "\\n");
        else
            put(t, "%c", *v);
    }
}

static void family(struct text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The shortest decimal form that reads back as the same double, as
 * Prometheus' own clients write floats. */
static void put_number(struct text *t, double v)
{
    if (v < 9e15 && v > -9e15 && v == (double)(int64_t)v) {
        put(t, "%lld", (long long)v);
        return;
    }
    char s[32];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(s, sizeof(s), "%.*g", prec, v);
        if (strtod(s, NULL) == v)
            break;
    }
    put(t, "%s", s);
}

/* One histogram's series; `labels` is what comes before le, e.g. route="/x",
 * or "" for none. */
static void put_histogram(struct text *t, const char *name, const char *labels,
                          struct histogram *h, const struct histogram_spec *spec)
{
    uint64_t cumulative = 0;
    const char *sep = labels[0] ? "," : "";
    for (unsigned i = 0; i < spec->nbounds; i++) {
        cumulative += get(&h->bucket[i]);
        put(t, "%s_bucket{%s%sle=\"", name, labels, sep);
        put_number(t, spec->bounds[i]);
        put(t, "\"} %llu\n", (unsigned long long)cumulative);
    }
    cumulative += get(&h->bucket[spec->nbounds]);
    /* The count is read after the buckets; the +Inf bucket must equal it. */
    put(t, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
        (unsigned long long)cumulative);
    put(t, "%s_sum%s%s%s ", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "");
    put_number(t, (double)get(&h->sum) / spec->scale);
    put(t, "\n%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
        (unsigned long long)cumulative);
}

static const char *route_name(size_t n, unsigned r)
{
    return r < n ? route_labels[r] : "(unmatched)";
}

/* Slot i's labels (route, method, code) after `prefix`; 0 (and nothing
 * written) where the slot is still free. Both per-slot families use it. */
static int put_slot_labels(struct text *t, const char *prefix, unsigned i, size_t n)
{
    unsigned key = atomic_load_explicit(&request_slots[i].key, memory_order_acquire);
    if (!key)
        return 0;
    key--;
    unsigned r = key >> 13, m = (key >> 10) & 7, code = key & 1023;
    put(t, "%sroute=\"", prefix);
    put_label_value(t, route_name(n, r));
    put(t, "\",method=\"%s\",code=\"%u\"", method_names[m], code);
    return 1;
}

static void render_requests(struct text *t)
{
    size_t n;
    route_index(NULL, &n);
    family(t, "gpuhttpd_http_requests_total", "counter",
           "HTTP requests answered, by route template, method and status code.");
    for (unsigned i = 0; i < REQUEST_SLOTS; i++) {
        if (!put_slot_labels(t, "gpuhttpd_http_requests_total{", i, n))
            continue;
        put(t, "} %llu\n",
            (unsigned long long)atomic_load_explicit(&request_slots[i].count,
                                                     memory_order_acquire));
    }
    family(t, "gpuhttpd_http_requests_unrecorded_total", "counter",
           "HTTP requests not broken down by label because the label table was full.");
    put(t, "gpuhttpd_http_requests_unrecorded_total %llu\n",
        (unsigned long long)get(&requests_dropped));

    family(t, "gpuhttpd_http_request_duration_seconds", "histogram",
           "Time from a request's first byte to its completion, by route template, method "
           "and status code.");
    for (unsigned i = 0; i < REQUEST_SLOTS; i++) {
        struct text label = {0};
        if (!put_slot_labels(&label, "", i, n))
            continue;
        if (label.failed) {
            t->failed = 1;
        } else {
            put_histogram(t, "gpuhttpd_http_request_duration_seconds", label.buf,
                          &request_slots[i].duration, &duration_spec);
        }
        free(label.buf);
    }
    static const char *const names[2] = {"gpuhttpd_http_request_body_bytes_total",
                                         "gpuhttpd_http_response_body_bytes_total"};
    static const char *const helps[2] = {"Request body bytes read, by route template.",
                                         "Response body bytes sent, by route template."};
    for (int dir = 0; dir < 2; dir++) {
        family(t, names[dir], "counter", helps[dir]);
        for (unsigned r = 0; r <= MAX_ROUTES; r++) {
            if ((r >= n && r != MAX_ROUTES) || get(&route_requests[r]) == 0)
                continue;
            put(t, "%s{route=\"", names[dir]);
            put_label_value(t, route_name(n, r));
            put(t, "\"} %llu\n",
                (unsigned long long)get(dir ? &route_bytes_out[r] : &route_bytes_in[r]));
        }
    }
}

/* A counter family with one label of two values. */
static void put_pair(struct text *t, const char *name, const char *help, const char *label,
                     const char *const values[2], counter c[2])
{
    family(t, name, "counter", help);
    for (int i = 0; i < 2; i++)
        put(t, "%s{%s=\"%s\"} %llu\n", name, label, values[i],
            (unsigned long long)get(&c[i]));
}

static void render_transfers(struct text *t)
{
    static const char *const dirs[2] = {"upload", "download"};
    put_pair(t, "gpuhttpd_transfer_bytes_total",
             "Buffer bytes moved by uploads (network to device) and downloads (device to "
             "network).",
             "direction", dirs, transfer_bytes);
    family(t, "gpuhttpd_transfer_throughput_bytes_per_second", "histogram",
           "Throughput of each buffer transfer, in bytes per second.");
    for (int d = 0; d < 2; d++) {
        char label[32];
        snprintf(label, sizeof(label), "direction=\"%s\"", dirs[d]);
        put_histogram(t, "gpuhttpd_transfer_throughput_bytes_per_second", label,
                      &transfer_throughput[d], &throughput_spec);
    }
    put_pair(t, "gpuhttpd_transfer_direct_bytes_total",
             "Of those, the bytes copied by DMA straight between the device and the network "
             "side's buffer, skipping the staging ring (--direct-copy).",
             "direction", dirs, transfer_direct_bytes);
    static const char *const caps[2] = {"address", "tenant"};
    put_pair(t, "gpuhttpd_staging_capped_total",
             "Transfers refused a staging chunk (429) because their client address or tenant "
             "held its share of the ring (--staging-address-share, --staging-tenant-share).",
             "cap", caps, staging_capped);
    put_pair(t, "gpuhttpd_staging_overlap_capped_total",
             "Tries for a transfer's second (overlap) staging chunk that missed because its "
             "client address or tenant held its share of the ring; the transfer goes on with "
             "one chunk, its copy not overlapping the network, and tries again at each chunk "
             "it fills.",
             "cap", caps, staging_overlap_capped);
}

static counter device_losses;

void ghd_metrics_device_lost(void)
{
    add(&device_losses, 1);
}

static void render_device_losses(struct text *t)
{
    family(t, "gpuhttpd_device_losses_total", "counter",
           "Times the device was lost: a kernel faulted or a run passed --run-timeout (device "
           "routes then answer 503).");
    put(t, "gpuhttpd_device_losses_total %llu\n", (unsigned long long)get(&device_losses));
}

static counter connections_refused[2]; /* [0] per address, [1] total */

void ghd_metrics_connection_refused(int total)
{
    add(&connections_refused[total != 0], 1);
}

static void render_connections_refused(struct text *t)
{
    static const char *const limits[2] = {"address", "total"};
    put_pair(t, "gpuhttpd_connections_refused_total",
             "Connections closed as they were accepted: their client address held "
             "--per-ip-connection-limit, or --connection-limit were open.",
             "limit", limits, connections_refused);
}

static void render_runs(struct text *t, const struct ghd_metrics_gauges *g)
{
    pthread_mutex_lock(&runs_lock);
    family(t, "gpuhttpd_runs_total", "counter",
           "Runs that ended, by kernel (a built-in's name; \"user\" for user kernels, \"raw\" "
           "for raw modules, \"pipeline\" for runs of steps) and outcome.");
    for (unsigned i = 0; i <= GHD_METRICS_KERNELS; i++) {
        struct run_row *row = &run_rows[i];
        if (i >= run_row_count && i != GHD_METRICS_KERNELS)
            continue;
        if (!row->kernel[0])
            continue;
        for (unsigned o = 0; o < OUTCOME_COUNT; o++) {
            put(t, "gpuhttpd_runs_total{kernel=\"");
            put_label_value(t, row->kernel);
            put(t, "\",outcome=\"%s\"} %llu\n", outcome_names[o],
                (unsigned long long)row->outcomes[o]);
        }
    }
    family(t, "gpuhttpd_run_device_seconds", "histogram",
           "Device time of each run that reached the device, by kernel.");
    for (unsigned i = 0; i <= GHD_METRICS_KERNELS; i++) {
        struct run_row *row = &run_rows[i];
        if ((i >= run_row_count && i != GHD_METRICS_KERNELS) || !row->kernel[0])
            continue;
        struct text label = {0};
        put(&label, "kernel=\"");
        put_label_value(&label, row->kernel);
        put(&label, "\"");
        if (!label.failed)
            put_histogram(t, "gpuhttpd_run_device_seconds", label.buf, &row->device,
                          &device_spec);
        else
            t->failed = 1;
        free(label.buf);
    }
    pthread_mutex_unlock(&runs_lock);
    family(t, "gpuhttpd_run_queue_seconds", "histogram",
           "Time from a run's submission until a worker started it.");
    put_histogram(t, "gpuhttpd_run_queue_seconds", "", &run_queue_wait, &duration_spec);
    if (g) {
        family(t, "gpuhttpd_runs_active", "gauge", "Runs queued or running now.");
        put(t, "gpuhttpd_runs_active %u\n", g->runs_active);
        family(t, "gpuhttpd_run_workers", "gauge", "Runs that may execute at once (--run-workers).");
        put(t, "gpuhttpd_run_workers %u\n", g->run_workers);
    }
}

/* The gauges of one staging ring (the main one, or the small one under
 * gpuhttpd_staging_small_*) on every device. */
static void render_staging(struct text *t, const struct ghd_metrics_gauges *g, unsigned nrt,
                           int small)
{
    static const struct {
        const char *name, *type, *help;
    } gauges[] = {
        {"chunks", "gauge", "Pinned staging chunks in the ring."},
        {"chunk_bytes", "gauge", "Size of one pinned staging chunk."},
        {"chunks_busy", "gauge", "Staging chunks held by transfers now."},
        {"chunks_busy_peak", "gauge", "Most staging chunks held at once since start."},
        {"acquires_total", "counter", "Staging chunks handed out."},
        {"waits_total", "counter", "Staging chunk requests that had to wait for a chunk."},
        {"timeouts_total", "counter", "Staging chunk requests that gave up (answered 503)."},
    };
    uint64_t v[GHD_METRICS_DEVICES][sizeof(gauges) / sizeof(gauges[0])];
    for (unsigned i = 0; i < nrt; i++) {
        const struct ghd_staging_stats *ss =
            small ? &g->devices[i].staging_small : &g->devices[i].staging;
        uint64_t row[] = {ss->chunks,    ss->chunk_size, ss->busy,    ss->peak_busy,
                          ss->acquires, ss->waits,      ss->timeouts};
        memcpy(v[i], row, sizeof(row));
    }
    for (size_t k = 0; k < sizeof(gauges) / sizeof(gauges[0]); k++) {
        char name[96], help[160];
        snprintf(name, sizeof(name), "gpuhttpd_staging_%s%s", small ? "small_" : "",
                 gauges[k].name);
        snprintf(help, sizeof(help), "%s%s",
                 small ? "Small ring (transfers that fit in one small chunk): " : "",
                 gauges[k].help);
        family(t, name, gauges[k].type, help);
        for (unsigned i = 0; i < nrt; i++)
            put(t, "%s{device=\"%d\"} %llu\n", name, g->devices[i].ordinal,
                (unsigned long long)v[i][k]);
    }
}

static void render_devices(struct text *t, const struct ghd_metrics_gauges *g)
{
    unsigned nrt = g->device_count < GHD_METRICS_DEVICES ? g->device_count : GHD_METRICS_DEVICES;
    const struct ghd_metrics_device *d = g->devices;
#define POOL_GAUGE(name, type, help, field)                                              \
    do {                                                                                 \
        family(t, name, type, help);                                                     \
        for (unsigned i = 0; i < nrt; i++)                                               \
            put(t, name "{device=\"%d\"} %llu\n", d[i].ordinal,                          \
                (unsigned long long)d[i].pool.field);                                    \
    } while (0)
    POOL_GAUGE("gpuhttpd_pool_reserved_bytes", "gauge",
               "Device memory the pool holds from the backend.", reserved);
    POOL_GAUGE("gpuhttpd_pool_in_use_bytes", "gauge",
               "Device memory in blocks handed out (buffers and scratch).", in_use);
    POOL_GAUGE("gpuhttpd_pool_peak_in_use_bytes", "gauge",
               "Highest in-use device memory since start.", peak);
    POOL_GAUGE("gpuhttpd_pool_limit_bytes", "gauge",
               "Most device memory the pool may reserve (0 = no limit).", limit);
    POOL_GAUGE("gpuhttpd_pool_allocations_total", "counter", "Pool allocations that succeeded.",
               allocations);
    POOL_GAUGE("gpuhttpd_pool_allocation_failures_total", "counter",
               "Pool allocations refused (limit reached or device out of memory).", failures);
#undef POOL_GAUGE
    static const char *const mem_names[2] = {"gpuhttpd_device_memory_total_bytes",
                                             "gpuhttpd_device_memory_free_bytes"};
    static const char *const mem_helps[2] = {
        "Memory of the device (host backend: of the machine).",
        "Free memory of the device as its driver reports it, whoever holds the rest."};
    for (int k = 0; k < 2; k++) {
        family(t, mem_names[k], "gauge", mem_helps[k]);
        for (unsigned i = 0; i < nrt; i++)
            if (d[i].have_mem)
                put(t, "%s{device=\"%d\"} %zu\n", mem_names[k], d[i].ordinal,
                    k ? d[i].mem_free : d[i].mem_total);
    }
    family(t, "gpuhttpd_device_utilization_ratio", "gauge",
           "Fraction of the driver's last sample period in which a kernel ran on the GPU "
           "(NVML; absent on the host backend or without the driver's NVML).");
    for (unsigned i = 0; i < nrt; i++)
        if (d[i].have_util) {
            put(t, "gpuhttpd_device_utilization_ratio{device=\"%d\"} ", d[i].ordinal);
            put_number(t, d[i].util_percent / 100.0);
            put(t, "\n");
        }
    render_staging(t, g, nrt, 0);
    render_staging(t, g, nrt, 1);
}

static void render_service(struct text *t, const struct ghd_metrics_gauges *g)
{
    family(t, "gpuhttpd_buffers", "gauge", "Buffers that exist now.");
    put(t, "gpuhttpd_buffers %zu\n", g->buffers);
    family(t, "gpuhttpd_buffer_bytes", "gauge", "Bytes requested by the buffers that exist now.");
    put(t, "gpuhttpd_buffer_bytes %zu\n", g->buffer_bytes);
    family(t, "process_start_time_seconds", "gauge",
           "Start time of the process since the Unix epoch in seconds.");
    put(t, "process_start_time_seconds %lld\n", (long long)g->started);
    family(t, "gpuhttpd_build_info", "gauge",
           "Build and device information as labels; the value is always 1.");
    put(t, "gpuhttpd_build_info{version=\"");
    put_label_value(t, GHD_VERSION);
    put(t, "\",cuda_runtime=\"");
    put_label_value(t, g->cuda_runtime ? g->cuda_runtime : "none");
    put(t, "\",backend=\"");
    put_label_value(t, g->backend ? g->backend : "none");
    put(t, "\",device=\"");
    put_label_value(t, g->device_name ? g->device_name : "none");
    put(t, "\"} 1\n");
}

/* The standard process_* families (process_start_time_seconds is with the
 * service's gauges), as Prometheus' client libraries export them. */
static void render_process(struct text *t)
{
    struct ghd_process_stats st;
    ghd_process_stats_get(&st);
    family(t, "process_cpu_seconds_total", "counter", "User and system CPU time in seconds.");
    put(t, "process_cpu_seconds_total ");
    put_number(t, st.cpu_seconds);
    put(t, "\n");
    family(t, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    put(t, "process_resident_memory_bytes %llu\n", (unsigned long long)st.resident_bytes);
    family(t, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
    put(t, "process_virtual_memory_bytes %llu\n", (unsigned long long)st.virtual_bytes);
    family(t, "process_open_fds", "gauge", "Number of open file descriptors.");
    put(t, "process_open_fds %llu\n", (unsigned long long)st.open_fds);
    if (st.max_fds) {
        family(t, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        put(t, "process_max_fds %llu\n", (unsigned long long)st.max_fds);
    }
}

int ghd_metrics_render(const struct ghd_metrics_gauges *g, char **out, size_t *len)
{
    struct text t = {0};
    render_process(&t);
    render_requests(&t);
    render_transfers(&t);
    render_device_losses(&t);
    render_connections_refused(&t);
    render_runs(&t, g);
    if (g) {
        render_devices(&t, g);
        render_service(&t, g);
    }
    if (t.failed || !t.buf) {
        free(t.buf);
        return GHD_ENOHOSTMEM;
    }
    *out = t.buf;
    *len = t.len;
    return 0;
}
