/* The Prometheus exposition of what a service recorded (metrics.c): every
 * family in the text format 0.0.4, with the gauges of a snapshot
 * (metrics_snapshot.c). */
#include "metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "metrics_internal.h"
#include "metrics_snapshot.h"
#include "prom_text.h"

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
    size_t n = atomic_load_explicit(&m->route_label_count, memory_order_acquire);
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
                   "Of those, the bytes copied by DMA straight from the network side's read "
                   "buffer to the device, skipping the staging ring (uploads, --direct-copy; "
                   "downloads are sent straight from their staging chunk, and count 0 here).",
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
    ghd_prom_family(t, "gpuhttpd_connections_shed_total", "counter",
                    "Connections without a complete request head (waiting for one, or idle "
                    "between requests) closed, oldest first, to make room for new ones "
                    "once 90% of --connection-limit were open.");
    ghd_strbuf_put(t, "gpuhttpd_connections_shed_total %llu\n",
                   (unsigned long long)get(&m->connections_shed));
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
    ghd_prom_family(t, "gpuhttpd_run_phase_seconds", "histogram",
                    "Where the time of runs that their request waited for went: parse (body, "
                    "JSON, route), prepare (run record, steps checked), queue (to the start), "
                    "launch, complete (the wait for the device), wake (to the waiter), reply.");
    for (unsigned i = 0; i < GHD_METRICS_RUN_PHASES; i++) {
        char label[32];
        snprintf(label, sizeof(label), "phase=\"%s\"", run_phase_names[i]);
        put_histogram(t, "gpuhttpd_run_phase_seconds", label, &m->run_phase[i], &phase_spec);
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
    ghd_metrics_render_tenants(m, &t);
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
