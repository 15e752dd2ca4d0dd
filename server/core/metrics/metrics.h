#ifndef GHD_CORE_METRICS_METRICS_H
#define GHD_CORE_METRICS_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/trace_export.h"
#include "device/pool.h"
#include "device/staging.h"
#include "core/tiers/tier.h"

/* One service's Prometheus metrics: the service owns a struct ghd_metrics
 * (core/service.h) and hands it to what records into it (the HTTP layer,
 * transfers, the run queue, the staging caps, the watchdog), so two services
 * in one process (the tests start many) count apart. Recorders may be called
 * from any thread while the metrics exist; a NULL one records nothing (a
 * run queue or staging caps made without a service).
 *
 * Requests and transfers are recorded lock-free into fixed arrays of atomics
 * (indexed by route, method, status code and histogram bucket), so the
 * request path pays a few relaxed increments. Runs take a short mutex: they
 * are rare next to the device time they cost. Metrics are a leaf: they are
 * fed values (the recorders below) and, to render, a snapshot of the live
 * gauges that their owners collected (struct ghd_metrics_gauges, filled by
 * core/gauges.c); they read no other module's state and take no other
 * module's lock. Labels carry route templates, kernel names and device
 * indices (the `device` of the API: a device's position in the service's
 * table), never buffer, run or request ids. */

enum ghd_transfer_dir { GHD_TRANSFER_UPLOAD, GHD_TRANSFER_DOWNLOAD };

struct ghd_metrics; /* opaque */

/* Every counter at 0. 0 or GHD_ENOHOSTMEM. */
int ghd_metrics_new(struct ghd_metrics **out);
/* pre: no recorder is running or will run. NULL is a no-op. */
void ghd_metrics_free(struct ghd_metrics *m);

/* The route templates requests are labelled with, set at start by the HTTP
 * layer from its route table (static strings: they are kept, not copied);
 * at most 63, the rest count as "(unmatched)". */
void ghd_metrics_set_routes(struct ghd_metrics *m, const char *const *templates, size_t count);

/* One request, once it is done: the matched route template (NULL or any
 * string that is not one of ghd_metrics_set_routes' counts as "(unmatched)"),
 * the method, the status sent (499: the client left first), the time from
 * its first byte to its completion, and the body bytes read and sent. */
void ghd_metrics_request(struct ghd_metrics *m, const char *route, const char *method, int status,
                         double seconds, uint64_t bytes_in, uint64_t bytes_out);

/* The devices recorders tell apart (indices 0 to 15); an index past them
 * counts as the last. */
#define GHD_METRICS_DEVICES 16

/* One buffer transfer that moved `bytes` between the network and device
 * `device` in `seconds`: counted in the byte totals and, when both are
 * positive, as one throughput observation (bytes per second). */
void ghd_metrics_transfer(struct ghd_metrics *m, unsigned device, enum ghd_transfer_dir dir,
                          uint64_t bytes, double seconds);

/* Bytes of one transfer that went by DMA straight between the device and the
 * network side's buffer, skipping the staging ring (and its memcpy). */
void ghd_metrics_transfer_direct(struct ghd_metrics *m, unsigned device,
                                 enum ghd_transfer_dir dir, uint64_t bytes);

/* Bytes of an upload's body received on its socket past libmicrohttpd
 * (--socket-upload-min): through the --socket-bounce buffer (bounced 1) or
 * straight into the pinned chunks (0). */
void ghd_metrics_socket_upload(struct ghd_metrics *m, int bounced, uint64_t bytes);

/* One transfer refused a staging chunk because its client address
 * (tenant 0) or its tenant (tenant 1) held its share of the ring. */
void ghd_metrics_staging_capped(struct ghd_metrics *m, int tenant);
/* One try for a transfer's second (overlap) chunk missed because its
 * client address (tenant 0) or tenant (tenant 1) held its share. */
void ghd_metrics_staging_overlap_capped(struct ghd_metrics *m, int tenant);

/* One run that ended on device `device`. `kernel` is the kernel's metric label (a built-in's
 * name, "user" or "raw": ghd_kernel_metric_label), or "pipeline" for runs
 * submitted as steps; `outcome` is "succeeded", "failed" or "canceled";
 * `device_seconds` the device time of its steps (observed when > 0);
 * `queued_seconds` its wait for a worker (observed when >= 0; negative: no
 * worker took it). At most GHD_METRICS_KERNELS distinct kernel labels are
 * kept; later ones are counted as "other". */
#define GHD_METRICS_KERNELS 128
void ghd_metrics_run(struct ghd_metrics *m, unsigned device, const char *kernel,
                     const char *outcome, double device_seconds, double queued_seconds);

/* A connection closed as it was accepted: its client address held
 * --per-ip-connection-limit (total 0) or --connection-limit were open
 * (total 1). */
void ghd_metrics_connection_refused(struct ghd_metrics *m, int total);
/* A connection that had not sent a complete request head, closed to make
 * room for a new one near --connection-limit. */
void ghd_metrics_connection_shed(struct ghd_metrics *m);

/* One kernel (module 0) or raw module (module 1) a run step sent by value,
 * by where its built form came from (core/inline_defs.h): "memory", "disk"
 * or "miss" (anything else counts as "miss"). */
void ghd_metrics_inline(struct ghd_metrics *m, int module, const char *from);

/* What one tenant did: runs that ended (a worker took them), their device
 * time, and bytes its transfers moved (uploads, downloads; counted when a
 * transfer ends, finished or not). Always counted: GET /v1/usage reads a
 * tenant's own; /metrics shows every tenant's with a `tenant` label only
 * when ghd_metrics_tenant_label turned it on (--metrics-tenant-label: names
 * of tenants are the operator's to expose). `tenant` NULL or "" is the
 * untenanted. */
struct ghd_metrics_tenant {
    uint64_t runs;
    double device_seconds;
    uint64_t bytes[2]; /* [enum ghd_transfer_dir] */
};
void ghd_metrics_tenant_run(struct ghd_metrics *m, const char *tenant, double device_seconds);
void ghd_metrics_tenant_bytes(struct ghd_metrics *m, const char *tenant,
                              enum ghd_transfer_dir dir, uint64_t bytes);
/* `tenant`'s figures so far (all 0 for one never seen). */
struct ghd_metrics_tenant ghd_metrics_tenant_get(struct ghd_metrics *m, const char *tenant);
void ghd_metrics_tenant_label(struct ghd_metrics *m, int on);

/* The live gauges at one scrape, each value collected by its owner. */
struct ghd_metrics_device {
    unsigned index; /* the `device` label */
    struct ghd_pool_stats pool;
    struct ghd_staging_stats staging, staging_small;
    int have_mem; /* the backend reported mem_free and mem_total */
    size_t mem_free, mem_total;
    int have_util; /* NVML reported util_percent */
    unsigned util_percent;
    struct ghd_tier_stats tiers; /* core/tier.h: moves out of and back onto the device */
};

struct ghd_metrics_gauges {
    unsigned runs_active; /* queued or running */
    unsigned run_workers;
    size_t buffers, buffer_bytes;
    time_t started;
    /* Build information labels (NULL: "none"). */
    const char *cuda_runtime, *backend, *device_name;
    unsigned device_count;
    struct ghd_metrics_device devices[GHD_METRICS_DEVICES];
    struct ghd_tracer_stats trace; /* the trace exporter's counts (all 0: tracing off) */
    /* Tiers beyond device memory (core/tier.h); have_tiers 0: off, not rendered. */
    int have_tiers;
    size_t host_tier_bytes, host_tier_capacity, disk_tier_bytes, disk_tier_capacity;
};

/* Where the time of one run that a request waited for went, in seconds per
 * phase (core/run.h's marks: parse, prepare, queue, launch, complete, wake,
 * reply), each observed in gpuhttpd_run_phase_seconds{phase}. */
#define GHD_METRICS_RUN_PHASES 7
void ghd_metrics_run_phases(struct ghd_metrics *m, const double seconds[GHD_METRICS_RUN_PHASES]);

/* Device `device` was lost (core/devloss.h): counted in
 * gpuhttpd_device_losses_total. */
void ghd_metrics_device_lost(struct ghd_metrics *m, unsigned device);

/* The Prometheus text exposition (format 0.0.4) of every metric, with the
 * live gauges of `g` when it is not NULL. *out is a NUL-terminated string
 * the caller frees. 0 or GHD_ENOHOSTMEM. */
int ghd_metrics_render(struct ghd_metrics *m, const struct ghd_metrics_gauges *g, char **out,
                       size_t *len);

/* The Content-Type of the exposition. */
#define GHD_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
