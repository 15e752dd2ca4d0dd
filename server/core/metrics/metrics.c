/* What a service records (requests, transfers, staging caps, runs, device
 * losses, refused connections); the exposition of it is metrics_render.c's,
 * the families of the gauge snapshot metrics_snapshot.c's, the text format's
 * pieces prom_text.c's. */
#include "metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "metrics_internal.h"

static const double duration_bounds[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25,   0.5,   1,      2.5,   5,    10,    30,   60};
const struct histogram_spec duration_spec = {duration_bounds, 16, 1e9};

/* A small run's phases take microseconds. */
static const double phase_bounds[] = {1e-6,   2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4,
                                      2.5e-4, 5e-4,   1e-3, 1e-2, 0.1,    1};
const struct histogram_spec phase_spec = {phase_bounds, 13, 1e9};
const char *const run_phase_names[GHD_METRICS_RUN_PHASES] = {
    "parse", "prepare", "queue", "launch", "complete", "wake", "reply"};

static const double throughput_bounds[] = {1e6,   1e7, 1e8,  2.5e8,  5e8,  1e9,
                                           2.5e9, 5e9, 1e10, 2.5e10, 5e10, 1e11};
const struct histogram_spec throughput_spec = {throughput_bounds, 12, 1};

static const double device_bounds[] = {1e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05,
                                       0.1,  0.5,  1,    5,    10,   60};
const struct histogram_spec device_spec = {device_bounds, 13, 1e9};

const char *const method_names[METHOD_COUNT] = {"GET",    "HEAD",  "POST",    "PUT",
                                           "DELETE", "PATCH", "OPTIONS", "other"};

const char *const outcome_names[OUTCOME_COUNT] = {"succeeded", "failed", "canceled"};

int ghd_metrics_new(struct ghd_metrics **out)
{
    struct ghd_metrics *m = calloc(1, sizeof(*m));
    if (!m)
        return GHD_ENOHOSTMEM;
    pthread_mutex_init(&m->runs_lock, NULL);
    pthread_mutex_init(&m->tenants_lock, NULL);
    *out = m;
    return 0;
}

void ghd_metrics_free(struct ghd_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->runs_lock);
    ghd_metrics_tenants_free(m);
    pthread_mutex_destroy(&m->tenants_lock);
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

void ghd_metrics_run_phases(struct ghd_metrics *m, const double seconds[GHD_METRICS_RUN_PHASES])
{
    for (unsigned i = 0; m && i < GHD_METRICS_RUN_PHASES; i++)
        if (seconds[i] >= 0)
            observe(&m->run_phase[i], &phase_spec, seconds[i]);
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

void ghd_metrics_connection_shed(struct ghd_metrics *m)
{
    if (m)
        add(&m->connections_shed, 1);
}

const char *const inline_from[3] = {"miss", "memory", "disk"};

void ghd_metrics_inline(struct ghd_metrics *m, int module, const char *from)
{
    unsigned i = 0; /* "miss" unless it names another */
    for (unsigned f = 1; f < 3; f++)
        if (strcmp(from, inline_from[f]) == 0)
            i = f;
    if (m)
        add(&m->inline_defs[module != 0][i], 1);
}
