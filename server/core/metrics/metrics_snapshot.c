/* The families of a gauge snapshot (struct ghd_metrics_gauges: pool,
 * staging, device memory and utilisation, buffers, build information) and of
 * the process, rendered from the values handed in alone. */
#include "metrics_snapshot.h"

#include <stdio.h>
#include <string.h>

#include "base/process_stats.h"
#include "metrics_tiers.h"

/* The gauges of one staging ring (the main one, or the small one under
 * gpuhttpd_staging_small_*) on every device. */
static void render_staging(struct ghd_strbuf *t, const struct ghd_metrics_gauges *g, unsigned nrt,
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
        uint64_t row[] = {ss->chunks,   ss->chunk_size, ss->busy,    ss->peak_busy,
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
        ghd_prom_family(t, name, gauges[k].type, help);
        for (unsigned i = 0; i < nrt; i++)
            ghd_strbuf_put(t, "%s{device=\"%u\"} %llu\n", name, g->devices[i].index,
                           (unsigned long long)v[i][k]);
    }
}

static void render_devices(struct ghd_strbuf *t, const struct ghd_metrics_gauges *g)
{
    unsigned nrt = g->device_count < GHD_METRICS_DEVICES ? g->device_count : GHD_METRICS_DEVICES;
    const struct ghd_metrics_device *d = g->devices;
#define POOL_GAUGE(name, type, help, field)                                                        \
    do {                                                                                           \
        ghd_prom_family(t, name, type, help);                                                      \
        for (unsigned i = 0; i < nrt; i++)                                                         \
            ghd_strbuf_put(t, name "{device=\"%u\"} %llu\n", d[i].index,                         \
                           (unsigned long long)d[i].pool.field);                                   \
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
        ghd_prom_family(t, mem_names[k], "gauge", mem_helps[k]);
        for (unsigned i = 0; i < nrt; i++)
            if (d[i].have_mem)
                ghd_strbuf_put(t, "%s{device=\"%u\"} %zu\n", mem_names[k], d[i].index,
                               k ? d[i].mem_free : d[i].mem_total);
    }
    ghd_prom_family(t, "gpuhttpd_device_utilization_ratio", "gauge",
                    "Fraction of the driver's last sample period in which a kernel ran on the GPU "
                    "(NVML; absent on the host backend or without the driver's NVML).");
    for (unsigned i = 0; i < nrt; i++)
        if (d[i].have_util) {
            ghd_strbuf_put(t, "gpuhttpd_device_utilization_ratio{device=\"%u\"} ", d[i].index);
            ghd_prom_number(t, d[i].util_percent / 100.0);
            ghd_strbuf_put(t, "\n");
        }
    render_staging(t, g, nrt, 0);
    render_staging(t, g, nrt, 1);
}

static void render_service(struct ghd_strbuf *t, const struct ghd_metrics_gauges *g)
{
    ghd_prom_family(t, "gpuhttpd_buffers", "gauge", "Buffers that exist now.");
    ghd_strbuf_put(t, "gpuhttpd_buffers %zu\n", g->buffers);
    ghd_prom_family(t, "gpuhttpd_buffer_bytes", "gauge",
                    "Bytes requested by the buffers that exist now.");
    ghd_strbuf_put(t, "gpuhttpd_buffer_bytes %zu\n", g->buffer_bytes);
    ghd_prom_family(t, "process_start_time_seconds", "gauge",
                    "Start time of the process since the Unix epoch in seconds.");
    ghd_strbuf_put(t, "process_start_time_seconds %lld\n", (long long)g->started);
    ghd_prom_family(t, "gpuhttpd_build_info", "gauge",
                    "Build and device information as labels; the value is always 1.");
    ghd_strbuf_put(t, "gpuhttpd_build_info{version=\"");
    ghd_prom_label(t, GHD_VERSION);
    ghd_strbuf_put(t, "\",cuda_runtime=\"");
    ghd_prom_label(t, g->cuda_runtime ? g->cuda_runtime : "none");
    ghd_strbuf_put(t, "\",backend=\"");
    ghd_prom_label(t, g->backend ? g->backend : "none");
    ghd_strbuf_put(t, "\",device=\"");
    ghd_prom_label(t, g->device_name ? g->device_name : "none");
    ghd_strbuf_put(t, "\"} 1\n");
}

void ghd_metrics_process_render(struct ghd_strbuf *t)
{
    struct ghd_process_stats st;
    ghd_process_stats_get(&st);
    ghd_prom_family(t, "process_cpu_seconds_total", "counter",
                    "User and system CPU time in seconds.");
    ghd_strbuf_put(t, "process_cpu_seconds_total ");
    ghd_prom_number(t, st.cpu_seconds);
    ghd_strbuf_put(t, "\n");
    ghd_prom_family(t, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    ghd_strbuf_put(t, "process_resident_memory_bytes %llu\n",
                   (unsigned long long)st.resident_bytes);
    ghd_prom_family(t, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
    ghd_strbuf_put(t, "process_virtual_memory_bytes %llu\n", (unsigned long long)st.virtual_bytes);
    ghd_prom_family(t, "process_open_fds", "gauge", "Number of open file descriptors.");
    ghd_strbuf_put(t, "process_open_fds %llu\n", (unsigned long long)st.open_fds);
    if (st.max_fds) {
        ghd_prom_family(t, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        ghd_strbuf_put(t, "process_max_fds %llu\n", (unsigned long long)st.max_fds);
    }
}

/* The trace exporter's counters (--otlp-endpoint). */
static void render_tracing(struct ghd_strbuf *t, const struct ghd_tracer_stats *s)
{
    ghd_prom_family(t, "gpuhttpd_trace_spans_exported_total", "counter",
                    "Spans of sampled requests an OTLP collector accepted (--otlp-endpoint).");
    ghd_strbuf_put(t, "gpuhttpd_trace_spans_exported_total %llu\n",
                   (unsigned long long)s->spans_exported);
    ghd_prom_family(t, "gpuhttpd_trace_dropped_total", "counter",
                    "Sampled requests' traces not exported: the exporter's queue was full, or "
                    "the collector failed.");
    ghd_strbuf_put(t, "gpuhttpd_trace_dropped_total %llu\n",
                   (unsigned long long)s->traces_dropped);
    ghd_prom_family(t, "gpuhttpd_trace_export_failures_total", "counter",
                    "Batches of spans the collector did not take (unreachable, or not 2xx).");
    ghd_strbuf_put(t, "gpuhttpd_trace_export_failures_total %llu\n",
                   (unsigned long long)s->exports_failed);
}

void ghd_metrics_snapshot_render(struct ghd_strbuf *t, const struct ghd_metrics_gauges *g)
{
    render_devices(t, g);
    render_service(t, g);
    render_tracing(t, &g->trace);
    if (g->have_tiers)
        ghd_metrics_tiers_render(t, g);
}
