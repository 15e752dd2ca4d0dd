/* What a service records (requests, transfers, staging caps, runs, device
 * losses, refused connections) and the exposition of it; the families of the
 * gauge snapshot are metrics_snapshot.c's, the text format's pieces
 * prom_text.c's. */
#include "metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "metrics_snapshot.h"
#include "prom_text.h"

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
                                         0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
static const struct histogram_spec duration_spec = {duration_bounds, 16, 1e9};

static const double throughput_bounds[] = {1e6,   1e7, 1e8,  2.5e8,  5e8,  1e9,
                                           2.5e9, 5e9, 1e10, 2.5e10, 5e10, 1e11};
static const struct histogram_spec throughput_spec = {throughput_bounds, 12, 1};

static const double device_bounds[] = {1e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05,
                                       0.1,  0.5,  1,    5,    10,   60};
static const struct histogram_spec device_spec = {device_bounds, 13, 1e9};

/* ---- requests, transfers and runs: what is counted -------------------------- */

#define MAX_ROUTES 63 /* one more slot counts unmatched requests */

static const char *const method_names[] = {"GET",    "HEAD",  "POST",    "PUT",
                                           "DELETE", "PATCH", "OPTIONS", "other"};
#define METHOD_COUNT (sizeof(method_names) / sizeof(method_names[0]))

/* requests_total{route,method,code}: an open-addressed table whose keys are
 * claimed once with a compare-and-swap and never move. */
#define REQUEST_SLOTS 2048
struct request_slot {
    atomic_uint key; /* 0 = free; else 1 + (route << 13 | method << 10 | code) */
    counter count;
    struct histogram duration; /* request_duration_seconds{route,method,code} */
};

static const char *const outcome_names[] = {"succeeded", "failed", "canceled"};
#define OUTCOME_COUNT 3

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
    /* Rows by (kernel, device); the last one is "other". */
    struct run_row run_rows[GHD_METRICS_KERNELS + 1];
    unsigned run_row_count;

    counter device_losses[GHD_METRICS_DEVICES];
    /* One more than the highest device index recorded: the devices rendered
     * (with at least the snapshot's, and device 0). */
    atomic_uint devices_seen;
    counter connections_refused[2]; /* [0] per address, [1] total */
    counter inline_defs[2][3];      /* [kernel, module][miss, memory, disk] */
};

int ghd_metrics_new(struct ghd_metrics **out)
{
    struct ghd_metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return GHD_ENOHOSTMEM;
    pthread_mutex_init(&m->runs_lock, NULL);
    *out = m;
    return 0;
}

void ghd_metrics_free(struct ghd_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->runs_lock);
    free(m);
}

/* ---- recording ------------------------------------------------------------- */

void ghd_metrics_set_routes(struct ghd_metrics *m, const char *const *templates, size_t count)
{
    if (!m)
        return;
    if (count > MAX_ROUTES)
        count = MAX_ROUTES;
    for (size_t i = 0; i < count; i++)
        m->route_labels[i] = templates[i];
    atomic_store_explicit(&m->route_label_count, count, memory_order_release);
}

/* The index of a route template among the labels; the unmatched slot for
 * anything else. The templates are the router's, so usually the pointer
 * matches. */
static unsigned route_index(struct ghd_metrics *m, const char *route, size_t *count_out)
{
    size_t n = atomic_load_explicit(&m->route_label_count, memory_order_acquire);
    *count_out = n;
    if (!route)
        return MAX_ROUTES;
    for (size_t i = 0; i < n; i++)
        if (m->route_labels[i] == route || strcmp(m->route_labels[i], route) == 0)
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

void ghd_metrics_request(struct ghd_metrics *m, const char *route, const char *method, int status,
                         double seconds, uint64_t bytes_in, uint64_t bytes_out)
{
    if (!m)
        return;
    size_t n;
    unsigned r = route_index(m, route, &n);
    /* The counters last: whoever sees them move sees the rest moved too. */
    add(&m->route_requests[r], 1);
    add(&m->route_bytes_in[r], bytes_in);
    add(&m->route_bytes_out[r], bytes_out);
    unsigned meth = method_index(method);
    unsigned code = status >= 100 && status <= 999 ? (unsigned)status : 0;
    unsigned key = 1 + (r << 13 | meth << 10 | code);
    unsigned h = (key * 2654435761u) % REQUEST_SLOTS;
    for (unsigned probe = 0; probe < REQUEST_SLOTS; probe++) {
        struct request_slot *s = &m->request_slots[(h + probe) % REQUEST_SLOTS];
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
    add(&m->requests_dropped, 1);
}

/* The row of device `device`, remembered as seen. */
static unsigned device_slot(struct ghd_metrics *m, unsigned device)
{
    unsigned d = device < GHD_METRICS_DEVICES ? device : GHD_METRICS_DEVICES - 1;
    unsigned seen = atomic_load_explicit(&m->devices_seen, memory_order_relaxed);
    while (seen < d + 1 &&
           !atomic_compare_exchange_weak_explicit(&m->devices_seen, &seen, d + 1,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    return d;
}

void ghd_metrics_transfer(struct ghd_metrics *m, unsigned device, enum ghd_transfer_dir dir,
                          uint64_t bytes, double seconds)
{
    if (!m)
        return;
    unsigned d = dir == GHD_TRANSFER_DOWNLOAD, dev = device_slot(m, device);
    add(&m->transfer_bytes[dev][d], bytes);
    if (bytes > 0 && seconds > 0)
        observe(&m->transfer_throughput[dev][d], &throughput_spec, (double)bytes / seconds);
}

void ghd_metrics_transfer_direct(struct ghd_metrics *m, unsigned device,
                                 enum ghd_transfer_dir dir, uint64_t bytes)
{
    if (!m)
        return;
    add(&m->transfer_direct_bytes[device_slot(m, device)][dir == GHD_TRANSFER_DOWNLOAD], bytes);
}

void ghd_metrics_socket_upload(struct ghd_metrics *m, int bounced, uint64_t bytes)
{
    if (m)
        add(&m->socket_upload_bytes[bounced != 0], bytes);
}

void ghd_metrics_staging_capped(struct ghd_metrics *m, int tenant)
{
    if (!m)
        return;
    add(&m->staging_capped[tenant != 0], 1);
}

void ghd_metrics_staging_overlap_capped(struct ghd_metrics *m, int tenant)
{
    if (!m)
        return;
    add(&m->staging_overlap_capped[tenant != 0], 1);
}

void ghd_metrics_run(struct ghd_metrics *m, unsigned device, const char *kernel,
                     const char *outcome, double device_seconds, double queued_seconds)
{
    if (!m)
        return;
    unsigned dev = device_slot(m, device);
    unsigned o = 0;
    while (o < OUTCOME_COUNT && strcmp(outcome, outcome_names[o]) != 0)
        o++;
    if (o == OUTCOME_COUNT)
        o = 1; /* an unknown outcome is a failure */
    if (!kernel || !*kernel)
        kernel = "unknown";
    pthread_mutex_lock(&m->runs_lock);
    struct run_row *row = NULL;
    for (unsigned i = 0; i < m->run_row_count && !row; i++)
        if (m->run_rows[i].index == dev && strcmp(m->run_rows[i].kernel, kernel) == 0)
            row = &m->run_rows[i];
    if (!row && m->run_row_count < GHD_METRICS_KERNELS && strlen(kernel) < sizeof(row->kernel)) {
        row = &m->run_rows[m->run_row_count++];
        snprintf(row->kernel, sizeof(row->kernel), "%s", kernel);
        row->index = dev;
    }
    if (!row) { /* "other" keeps the device of its first run */
        row = &m->run_rows[GHD_METRICS_KERNELS];
        if (!row->kernel[0])
            row->index = dev;
        snprintf(row->kernel, sizeof(row->kernel), "other");
    }
    row->outcomes[o]++;
    if (device_seconds > 0)
        observe(&row->device, &device_spec, device_seconds);
    pthread_mutex_unlock(&m->runs_lock);
    if (queued_seconds >= 0)
        observe(&m->run_queue_wait[dev], &duration_spec, queued_seconds);
}

void ghd_metrics_device_lost(struct ghd_metrics *m, unsigned device)
{
    if (m)
        add(&m->device_losses[device_slot(m, device)], 1);
}

void ghd_metrics_connection_refused(struct ghd_metrics *m, int total)
{
    if (m)
        add(&m->connections_refused[total != 0], 1);
}

static const char *const inline_from[3] = {"miss", "memory", "disk"};

void ghd_metrics_inline(struct ghd_metrics *m, int module, const char *from)
{
    unsigned i = 0; /* "miss" unless it names another */
    for (unsigned f = 1; f < 3; f++)
        if (strcmp(from, inline_from[f]) == 0)
            i = f;
    if (m)
        add(&m->inline_defs[module != 0][i], 1);
}

/* ---- the exposition of what was recorded ------------------------------------ */

/* One histogram's series; `labels` is what comes before le, e.g. route="/x",
 * or "" for none. */
static void put_histogram(struct ghd_strbuf *t, const char *name, const char *labels,
                          struct histogram *h, const struct histogram_spec *spec)
{
    uint64_t cumulative = 0;
    const char *sep = labels[0] ? "," : "";
    for (unsigned i = 0; i < spec->nbounds; i++) {
        cumulative += get(&h->bucket[i]);
        ghd_strbuf_put(t, "%s_bucket{%s%sle=\"", name, labels, sep);
        ghd_prom_number(t, spec->bounds[i]);
        ghd_strbuf_put(t, "\"} %llu\n", (unsigned long long)cumulative);
    }
    cumulative += get(&h->bucket[spec->nbounds]);
    /* The count is read after the buckets; the +Inf bucket must equal it. */
    ghd_strbuf_put(t, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
                   (unsigned long long)cumulative);
    ghd_strbuf_put(t, "%s_sum%s%s%s ", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "");
    ghd_prom_number(t, (double)get(&h->sum) / spec->scale);
    ghd_strbuf_put(t, "\n%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels,
                   labels[0] ? "}" : "", (unsigned long long)cumulative);
}

static const char *route_name(struct ghd_metrics *m, size_t n, unsigned r)
{
    return r < n ? m->route_labels[r] : "(unmatched)";
}

/* Slot i's labels (route, method, code) after `prefix`; 0 (and nothing
 * written) where the slot is still free. Both per-slot families use it. */
static int put_slot_labels(struct ghd_metrics *m, struct ghd_strbuf *t, const char *prefix,
                           unsigned i, size_t n)
{
    unsigned key = atomic_load_explicit(&m->request_slots[i].key, memory_order_acquire);
    if (!key)
        return 0;
    key--;
    unsigned r = key >> 13, meth = (key >> 10) & 7, code = key & 1023;
    ghd_strbuf_put(t, "%sroute=\"", prefix);
    ghd_prom_label(t, route_name(m, n, r));
    ghd_strbuf_put(t, "\",method=\"%s\",code=\"%u\"", method_names[meth], code);
    return 1;
}

static void render_requests(struct ghd_metrics *m, struct ghd_strbuf *t)
{
    size_t n;
    route_index(m, NULL, &n);
    ghd_prom_family(t, "gpuhttpd_http_requests_total", "counter",
                    "HTTP requests answered, by route template, method and status code.");
    for (unsigned i = 0; i < REQUEST_SLOTS; i++) {
        if (!put_slot_labels(m, t, "gpuhttpd_http_requests_total{", i, n))
            continue;
        ghd_strbuf_put(t, "} %llu\n",
                       (unsigned long long)atomic_load_explicit(&m->request_slots[i].count,
                                                                memory_order_acquire));
    }
    ghd_prom_family(t, "gpuhttpd_http_requests_unrecorded_total", "counter",
                    "HTTP requests not broken down by label because the label table was full.");
    ghd_strbuf_put(t, "gpuhttpd_http_requests_unrecorded_total %llu\n",
                   (unsigned long long)get(&m->requests_dropped));

    ghd_prom_family(t, "gpuhttpd_http_request_duration_seconds", "histogram",
                    "Time from a request's first byte to its completion, by route template, method "
                    "and status code.");
    for (unsigned i = 0; i < REQUEST_SLOTS; i++) {
        struct ghd_strbuf label = {0};
        if (!put_slot_labels(m, &label, "", i, n))
            continue;
        if (label.failed) {
            t->failed = 1;
        } else {
            put_histogram(t, "gpuhttpd_http_request_duration_seconds", label.buf,
                          &m->request_slots[i].duration, &duration_spec);
        }
        free(label.buf);
    }
    static const char *const names[2] = {"gpuhttpd_http_request_body_bytes_total",
                                         "gpuhttpd_http_response_body_bytes_total"};
    static const char *const helps[2] = {"Request body bytes read, by route template.",
                                         "Response body bytes sent, by route template."};
    for (int dir = 0; dir < 2; dir++) {
        ghd_prom_family(t, names[dir], "counter", helps[dir]);
        for (unsigned r = 0; r <= MAX_ROUTES; r++) {
            if ((r >= n && r != MAX_ROUTES) || get(&m->route_requests[r]) == 0)
                continue;
            ghd_strbuf_put(t, "%s{route=\"", names[dir]);
            ghd_prom_label(t, route_name(m, n, r));
            ghd_strbuf_put(
                t, "\"} %llu\n",
                (unsigned long long)get(dir ? &m->route_bytes_out[r] : &m->route_bytes_in[r]));
        }
    }
}

/* A counter family with one label of two values. */
static void put_pair(struct ghd_strbuf *t, const char *name, const char *help, const char *label,
                     const char *const values[2], counter c[2])
{
    ghd_prom_family(t, name, "counter", help);
    for (int i = 0; i < 2; i++)
        ghd_strbuf_put(t, "%s{%s=\"%s\"} %llu\n", name, label, values[i],
                       (unsigned long long)get(&c[i]));
}

/* A counter family by direction and device. */
static void put_directions(struct ghd_strbuf *t, const char *name, const char *help,
                           counter c[][2], unsigned ndev)
{
    static const char *const dirs[2] = {"upload", "download"};
    ghd_prom_family(t, name, "counter", help);
    for (unsigned dev = 0; dev < ndev; dev++)
        for (int i = 0; i < 2; i++)
            ghd_strbuf_put(t, "%s{direction=\"%s\",device=\"%u\"} %llu\n", name, dirs[i], dev,
                           (unsigned long long)get(&c[dev][i]));
}

static void render_transfers(struct ghd_metrics *m, struct ghd_strbuf *t, unsigned ndev)
{
    static const char *const dirs[2] = {"upload", "download"};
    put_directions(t, "gpuhttpd_transfer_bytes_total",
                   "Buffer bytes moved by uploads (network to device) and downloads (device to "
                   "network), by device.",
                   m->transfer_bytes, ndev);
    ghd_prom_family(t, "gpuhttpd_transfer_throughput_bytes_per_second", "histogram",
                    "Throughput of each buffer transfer, in bytes per second.");
    for (unsigned dev = 0; dev < ndev; dev++)
        for (int d = 0; d < 2; d++) {
            char label[48];
            snprintf(label, sizeof(label), "direction=\"%s\",device=\"%u\"", dirs[d], dev);
            put_histogram(t, "gpuhttpd_transfer_throughput_bytes_per_second", label,
                          &m->transfer_throughput[dev][d], &throughput_spec);
        }
    put_directions(t, "gpuhttpd_transfer_direct_bytes_total",
                   "Of those, the bytes copied by DMA straight between the device and the network "
                   "side's buffer, skipping the staging ring (--direct-copy).",
                   m->transfer_direct_bytes, ndev);
    static const char *const into[2] = {"chunk", "bounce"};
    put_pair(t, "gpuhttpd_socket_upload_bytes_total",
             "Upload body bytes received on the socket past libmicrohttpd "
             "(--socket-upload-min): straight into the pinned chunks, or through the "
             "--socket-bounce buffer (while at most --socket-bounce-uploads receive).",
             "into", into, m->socket_upload_bytes);
    static const char *const caps[2] = {"address", "tenant"};
    put_pair(t, "gpuhttpd_staging_capped_total",
             "Transfers refused a staging chunk (429) because their client address or tenant "
             "held its share of the ring (--staging-address-share, --staging-tenant-share).",
             "cap", caps, m->staging_capped);
    put_pair(t, "gpuhttpd_staging_overlap_capped_total",
             "Tries for a transfer's second (overlap) staging chunk that missed because its "
             "client address or tenant held its share of the ring; the transfer goes on with "
             "one chunk, its copy not overlapping the network, and tries again at each chunk "
             "it fills.",
             "cap", caps, m->staging_overlap_capped);
}

static void render_device_losses(struct ghd_metrics *m, struct ghd_strbuf *t, unsigned ndev)
{
    ghd_prom_family(
        t, "gpuhttpd_device_losses_total", "counter",
        "Times a device was lost: a kernel faulted or a run passed --run-timeout (its buffers, "
        "runs and modules then answer 503).");
    for (unsigned dev = 0; dev < ndev; dev++)
        ghd_strbuf_put(t, "gpuhttpd_device_losses_total{device=\"%u\"} %llu\n", dev,
                       (unsigned long long)get(&m->device_losses[dev]));
}

static void render_connections_refused(struct ghd_metrics *m, struct ghd_strbuf *t)
{
    static const char *const limits[2] = {"address", "total"};
    put_pair(t, "gpuhttpd_connections_refused_total",
             "Connections closed as they were accepted: their client address held "
             "--per-ip-connection-limit, or --connection-limit were open.",
             "limit", limits, m->connections_refused);
}

static void render_inline(struct ghd_metrics *m, struct ghd_strbuf *t)
{
    static const char *const kinds[2] = {"kernel", "module"};
    ghd_prom_family(t, "gpuhttpd_inline_definitions_total", "counter",
                    "User kernels and raw modules that run steps sent by value, by where "
                    "their built form came from: memory, disk (the cache folder: nothing "
                    "parsed or compiled) or miss (built for the request).");
    for (int k = 0; k < 2; k++)
        for (int f = 0; f < 3; f++)
            ghd_strbuf_put(t, "gpuhttpd_inline_definitions_total{kind=\"%s\",cache=\"%s\"} "
                           "%llu\n", kinds[k], inline_from[f],
                           (unsigned long long)get(&m->inline_defs[k][f]));
}

static void render_runs(struct ghd_metrics *m, struct ghd_strbuf *t,
                        const struct ghd_metrics_gauges *g, unsigned ndev)
{
    pthread_mutex_lock(&m->runs_lock);
    ghd_prom_family(t, "gpuhttpd_runs_total", "counter",
                    "Runs that ended, by kernel (a built-in's name; \"user\" for user kernels, "
                    "\"raw\" for raw modules, \"pipeline\" for runs of steps), outcome and "
                    "device.");
    for (unsigned i = 0; i <= GHD_METRICS_KERNELS; i++) {
        struct run_row *row = &m->run_rows[i];
        if (i >= m->run_row_count && i != GHD_METRICS_KERNELS)
            continue;
        if (!row->kernel[0])
            continue;
        for (unsigned o = 0; o < OUTCOME_COUNT; o++) {
            ghd_strbuf_put(t, "gpuhttpd_runs_total{kernel=\"");
            ghd_prom_label(t, row->kernel);
            ghd_strbuf_put(t, "\",outcome=\"%s\",device=\"%u\"} %llu\n", outcome_names[o],
                           row->index, (unsigned long long)row->outcomes[o]);
        }
    }
    ghd_prom_family(t, "gpuhttpd_run_device_seconds", "histogram",
                    "Device time of each run that reached the device, by kernel and device.");
    for (unsigned i = 0; i <= GHD_METRICS_KERNELS; i++) {
        struct run_row *row = &m->run_rows[i];
        if ((i >= m->run_row_count && i != GHD_METRICS_KERNELS) || !row->kernel[0])
            continue;
        struct ghd_strbuf label = {0};
        ghd_strbuf_put(&label, "kernel=\"");
        ghd_prom_label(&label, row->kernel);
        ghd_strbuf_put(&label, "\",device=\"%u\"", row->index);
        if (!label.failed)
            put_histogram(t, "gpuhttpd_run_device_seconds", label.buf, &row->device, &device_spec);
        else
            t->failed = 1;
        free(label.buf);
    }
    pthread_mutex_unlock(&m->runs_lock);
    ghd_prom_family(t, "gpuhttpd_run_queue_seconds", "histogram",
                    "Time from a run's submission until a worker of its device started it.");
    for (unsigned dev = 0; dev < ndev; dev++) {
        char label[24];
        snprintf(label, sizeof(label), "device=\"%u\"", dev);
        put_histogram(t, "gpuhttpd_run_queue_seconds", label, &m->run_queue_wait[dev],
                      &duration_spec);
    }
    if (g) {
        ghd_prom_family(t, "gpuhttpd_runs_active", "gauge", "Runs queued or running now.");
        ghd_strbuf_put(t, "gpuhttpd_runs_active %u\n", g->runs_active);
        ghd_prom_family(t, "gpuhttpd_run_workers", "gauge",
                        "Runs that may execute at once (--run-workers).");
        ghd_strbuf_put(t, "gpuhttpd_run_workers %u\n", g->run_workers);
    }
}

int ghd_metrics_render(struct ghd_metrics *m, const struct ghd_metrics_gauges *g, char **out,
                       size_t *len)
{
    struct ghd_strbuf t = {0};
    unsigned ndev = atomic_load_explicit(&m->devices_seen, memory_order_relaxed);
    if (g && g->device_count > ndev)
        ndev = g->device_count < GHD_METRICS_DEVICES ? g->device_count : GHD_METRICS_DEVICES;
    if (ndev == 0)
        ndev = 1;
    ghd_metrics_process_render(&t);
    render_requests(m, &t);
    render_transfers(m, &t, ndev);
    render_device_losses(m, &t, ndev);
    render_connections_refused(m, &t);
    render_inline(m, &t);
    render_runs(m, &t, g, ndev);
    if (g)
        ghd_metrics_snapshot_render(&t, g);
    if (t.failed || !t.buf) {
        free(t.buf);
        return GHD_ENOHOSTMEM;
    }
    *out = t.buf;
    *len = t.len;
    return 0;
}
