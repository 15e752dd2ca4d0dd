#include "service_internal.h"

#include <stdio.h>
#include <string.h>

#include "core/tenancy/auth.h"
#include "base/error.h"
#include "kernels/kernel.h"
#include "kernels/user/compile.h"
#include "base/log.h"
#include "core/metrics/metrics.h"
#include "core/runs/run_graph.h"
#include "core/runs/run_queue.h"
#include "core/tiers/tier.h"

static void runtime_config(const struct ghd_config *cfg, enum ghd_backend_kind kind, int ordinal,
                           struct ghd_runtime_config *rc)
{
    memset(rc, 0, sizeof(*rc));
    rc->backend = kind;
    rc->ordinal = ordinal;
    rc->pool.alignment = cfg->pool_alignment;
    rc->pool.slab_size = cfg->pool_slab;
    rc->pool.limit = cfg->pool_limit;
    rc->pool.initial = cfg->pool_initial;
    rc->pool_limit_percent = cfg->pool_limit_percent;
    rc->staging_chunk = cfg->staging_chunk;
    rc->staging_chunks = cfg->staging_chunks;
    rc->staging_small_chunk = cfg->staging_small_chunk;
    rc->staging_small_chunks = cfg->staging_small_chunks;
    rc->sync_spin_us = cfg->sync_spin_us;
    rc->staging_timeout_ms = cfg->staging_timeout_ms;
    rc->staging_hold_s = cfg->staging_hold_s;
    rc->direct_copy = (int)cfg->direct_copy;
    rc->download_block = cfg->download_block;
    rc->download_overlap = (int)cfg->download_overlap;
}

static void close_runtimes(struct ghd_service *svc)
{
    for (unsigned i = svc->runtime_count; i-- > 0;)
        ghd_runtime_destroy(&svc->runtimes[i]);
    svc->runtime_count = 0;
}

/* Opens one runtime per device of `ordinals`, in that order (index i is
 * ordinals[i]); on failure none stays open. */
static int open_devices(struct ghd_service *svc, enum ghd_backend_kind kind, const int *ordinals,
                        unsigned n, struct ghd_err *err)
{
    for (unsigned i = 0; i < n; i++) {
        struct ghd_runtime_config rc;
        struct ghd_runtime *rt = &svc->runtimes[i];
        runtime_config(&svc->cfg, kind, ordinals[i], &rc);
        int code = ghd_runtime_init(rt, &rc, err);
        if (code) {
            ghd_err_prefix(err, code, "device %d", ordinals[i]);
            close_runtimes(svc);
            return code;
        }
        rt->index = i;
        svc->runtime_count = i + 1;
    }
    return 0;
}

/* Peer access for every pair that supports it, as Triton enables it at
 * start: a copy between two GPUs then goes device to device. A pair
 * without it copies through pinned staging (core/buffer_copy.c). */
static void enable_peers(struct ghd_service *svc)
{
    for (unsigned i = 0; i < svc->runtime_count; i++) {
        struct ghd_runtime *a = &svc->runtimes[i];
        for (unsigned j = 0; j < svc->runtime_count; j++) {
            struct ghd_runtime *b = &svc->runtimes[j];
            int on = 0;
            struct ghd_err e = {0};
            if (i == j || a->dev.ordinal == b->dev.ordinal)
                continue;
            int code = a->dev.ops->peer_enable(&a->dev, &b->dev, &on, &e);
            if (code)
                ghd_log(GHD_LOG_WARN, "device %u -> %u: no peer access (%s); copies go through "
                        "pinned staging", i, j, ghd_err_text(&e, code));
            else if (on)
                a->peer_mask |= 1u << j;
        }
    }
}

/* The devices `kind` offers that --devices selects, as ordinals in the
 * order given ("all": every one, by ordinal). */
static int select_devices(struct ghd_service *svc, enum ghd_backend_kind kind, int *ordinals,
                          unsigned *n, struct ghd_err *err)
{
    struct ghd_device_id ids[GHD_DEVICE_LIST_MAX];
    unsigned count = 0;
    int rc = ghd_device_list(kind, svc->cfg.host_devices, ids, &count, err);
    if (rc)
        return rc;
    *n = 0;
    const char *sel = svc->cfg.devices;
    if (strcmp(sel, "all") == 0) {
        for (unsigned i = 0; i < count && *n < GHD_MAX_DEVICES; i++)
            ordinals[(*n)++] = ids[i].ordinal;
        return 0;
    }
    for (const char *p = sel;; p++) {
        size_t len = strcspn(p, ",");
        unsigned i = 0;
        while (i < count && !(strncmp(ids[i].uuid, p, len) == 0 && ids[i].uuid[len] == '\0') &&
               !(len < 3 && atoi(p) == ids[i].ordinal && p[0] >= '0' && p[0] <= '9'))
            i++;
        if (i == count)
            return ghd_err_set(err, GHD_EUNAVAIL,
                               "--devices: no %s device '%.*s' (%u present: ordinals 0 to %u)",
                               ghd_backend_name(kind), (int)len, p, count, count - 1);
        for (unsigned k = 0; k < *n; k++)
            if (ordinals[k] == ids[i].ordinal)
                return ghd_err_set(err, GHD_EINVAL, "--devices names device %d twice (as '%.*s')",
                                   ids[i].ordinal, (int)len, p);
        ordinals[(*n)++] = ids[i].ordinal;
        if (!p[len])
            return 0;
        p += len;
    }
}

static void log_devices(const struct ghd_service *svc)
{
    for (unsigned i = 0; i < svc->runtime_count; i++) {
        const struct ghd_device *dev = &svc->runtimes[i].dev;
        if (dev->kind == GHD_BACKEND_CUDA)
            ghd_log(GHD_LOG_INFO, "backend cuda: device %u is CUDA device %d %s (%s, %s), "
                    "%.1f GiB, CUDA runtime %s", i, dev->ordinal, dev->name, dev->uuid, dev->arch,
                    (double)dev->total_memory / (1 << 30), dev->runtime_version);
    }
    if (svc->runtimes[0].dev.kind == GHD_BACKEND_HOST)
        ghd_log(GHD_LOG_INFO, "backend host: reference kernels in host memory (%u simulated "
                "device%s)", svc->runtime_count, svc->runtime_count == 1 ? "" : "s");
}

/* A backend's selected devices, opened, with peer access between them. */
static int open_backend(struct ghd_service *svc, enum ghd_backend_kind kind, struct ghd_err *err)
{
    int ordinals[GHD_MAX_DEVICES];
    unsigned n = 0;
    int rc = select_devices(svc, kind, ordinals, &n, err);
    if (rc == 0)
        rc = open_devices(svc, kind, ordinals, n, err);
    if (rc)
        return rc;
    enable_peers(svc);
    log_devices(svc);
    return 0;
}

static int open_runtimes(struct ghd_service *svc, struct ghd_err *err)
{
    struct ghd_err dev = {0};
    if (svc->cfg.backend != GHD_CHOICE_HOST) {
        int rc_cuda = open_backend(svc, GHD_BACKEND_CUDA, &dev);
        if (rc_cuda == 0)
            return 0;
        if (svc->cfg.backend == GHD_CHOICE_CUDA)
            return ghd_err_set(err, rc_cuda, "--backend cuda: %s", ghd_err_text(&dev, rc_cuda));
        ghd_log(GHD_LOG_INFO, "backend auto: CUDA not usable (%s); using the host backend",
                ghd_err_text(&dev, rc_cuda));
    }
    memset(&dev, 0, sizeof(dev));
    int rc_host = open_backend(svc, GHD_BACKEND_HOST, &dev);
    if (rc_host)
        return ghd_err_set(err, rc_host, "host backend: %s", ghd_err_text(&dev, rc_host));
    return 0;
}

/* Without tokens anyone who can connect owns every buffer: loopback only,
 * unless the operator says otherwise. Checked before the backend is set up,
 * which may take seconds on a GPU, so the refusal comes at once. */
static int check_exposure(const struct ghd_service *svc, struct ghd_err *err)
{
    const struct ghd_config *cfg = &svc->cfg;
    if (ghd_auth_is_loopback(cfg->bind) || ghd_auth_enabled(svc->auth))
        return 0;
    if (!cfg->allow_unauthenticated)
        return ghd_err_set(err, GHD_EINVAL,
                           "--bind %s is not a loopback address and no tokens are set: give "
                           "--tokens-file or GHD_TOKENS, or pass --allow-unauthenticated",
                           cfg->bind);
    ghd_log(GHD_LOG_WARN, "serving %s without authentication (--allow-unauthenticated): "
                          "anyone who can reach it can read, write and delete buffers",
            cfg->bind);
    return 0;
}

/* The buffer and region tables with their quotas; on failure neither. */
static int open_tables(struct ghd_service *svc, struct ghd_err *err)
{
    const struct ghd_config *cfg = &svc->cfg;
    int rc = ghd_buffer_table_init(&svc->buffers, svc->owner.prefix);
    if (rc)
        return ghd_err_set(err, rc, "buffer table: %s", ghd_strerror(rc));
    ghd_tenant_limits_init(&svc->limits, cfg, ghd_auth_enabled(svc->auth), svc->runtimes,
                           svc->runtime_count);
    svc->buffers.max_buffers = cfg->max_buffers;
    svc->buffers.tenant_max_bytes = svc->limits.max_bytes;
    memcpy(svc->buffers.tenant_device_max, svc->limits.device_max_bytes,
           sizeof(svc->buffers.tenant_device_max));
    svc->buffers.tenant_max_buffers = svc->limits.max_buffers;
    rc = ghd_tiers_open(cfg, svc->runtimes, svc->runtime_count, &svc->buffers.tiers, err);
    if (rc == 0 && (rc = ghd_region_table_init(&svc->regions, svc->owner.prefix)) != 0)
        ghd_err_set(err, rc, "region table: %s", ghd_strerror(rc));
    if (rc) {
        ghd_buffer_table_destroy(&svc->buffers);
        ghd_tiers_free(svc->buffers.tiers);
        return rc;
    }
    svc->regions.allowed = (int)cfg->allow_shm;
    svc->regions.allow_shared = (int)cfg->shm_allow_shared;
    svc->regions.tenant_max_regions = cfg->tenant_max_regions;
    svc->regions.tenant_max_pinned = cfg->tenant_max_pinned;
    return 0;
}

static int open_run_queue(struct ghd_service *svc, struct ghd_err *err)
{
    const struct ghd_config *cfg = &svc->cfg;
    struct ghd_run_queue_config qc = {.workers = cfg->run_workers,
                                      .queue_limit = cfg->run_queue_limit,
                                      .tenant_max_runs = svc->limits.max_runs,
                                      .runs_kept = cfg->runs_kept,
                                      .keep_s = cfg->run_keep_s,
                                      .shared = ghd_auth_enabled(svc->auth),
                                      .priority = (int)cfg->run_priority,
                                      .inline_runs = (int)cfg->run_inline,
                                      .graphs = cfg->run_graphs,
                                      .metrics = svc->metrics};
    int rc = ghd_run_queue_new(&qc, svc->runtimes, svc->runtime_count, &svc->runs);
    if (rc)
        return ghd_err_set(err, rc, "run queue: %s", ghd_strerror(rc));
    /* A buffer that leaves the table leaves the graphs that name it. */
    svc->buffers.on_leave = ghd_run_graphs_forget_buffer;
    svc->buffers.on_leave_ctx = ghd_run_queue_graphs(svc->runs);
    return 0;
}

/* NVRTC for user kernels, on the CUDA backend only. Its absence is no
 * reason not to start: the CUDA backend then answers 501 for them. */
static int open_compiler(struct ghd_service *svc, struct ghd_err *err)
{
    const struct ghd_config *cfg = &svc->cfg;
    if (svc->runtimes[0].dev.kind != GHD_BACKEND_CUDA)
        return 0;
    struct ghd_ucompiler_config cc = {.cache_dir = cfg->kernel_cache_dir,
                                      .cache_max_bytes = cfg->kernel_cache_max,
                                      .workers = cfg->compile_workers,
                                      .queue = cfg->compile_queue};
    struct ghd_err cerr = {0};
    int rc = ghd_ucompiler_new(&cc, &svc->compiler, &cerr);
    if (rc == GHD_ENOTSUP) {
        ghd_log(GHD_LOG_WARN, "user kernels: %s (the CUDA backend answers 501 for them)",
                cerr.detail);
        return 0;
    }
    if (rc)
        return ghd_err_set(err, rc, "user kernel compiler: %s", cerr.detail);
    return 0;
}

/* Definitions that runs send by value, kept in memory and beside the
 * compiler's entries in --kernel-cache-dir. */
static int open_inline_defs(struct ghd_service *svc, struct ghd_err *err)
{
    const struct ghd_config *cfg = &svc->cfg;
    struct ghd_inline_config ic = {.max = cfg->inline_cache,
                                   .tenant_max_kernels = cfg->tenant_max_kernels,
                                   .tenant_max_modules = cfg->tenant_max_modules,
                                   .cache_dir = cfg->kernel_cache_dir,
                                   .cache_max_bytes = cfg->kernel_cache_max};
    return ghd_inline_defs_init(&svc->inline_defs, &ic, err);
}

/* cuBLAS handles now, one per device, not on a request. */
static int warm_kernels(struct ghd_service *svc, struct ghd_err *err)
{
    for (unsigned i = 0; i < svc->runtime_count; i++) {
        struct ghd_err warm = {0};
        int rc = ghd_kernels_warmup(&svc->runtimes[i], &warm);
        if (rc)
            return ghd_err_set(err, rc, "kernel library on device %u: %s", i,
                               ghd_err_text(&warm, rc));
    }
    return 0;
}

/* The service's loss (every device) and each device's. */
static void losses_init(struct ghd_service *svc)
{
    ghd_devloss_init(&svc->devloss);
    for (unsigned i = 0; i < GHD_MAX_DEVICES; i++)
        ghd_devloss_init(&svc->device_loss[i]);
}

static void losses_destroy(struct ghd_service *svc)
{
    ghd_devloss_destroy(&svc->devloss);
    for (unsigned i = 0; i < GHD_MAX_DEVICES; i++)
        ghd_devloss_destroy(&svc->device_loss[i]);
}

/* The watchdog's and the run queue's word that a device is lost. */
static void device_lost(void *ctx, unsigned device, const char *reason)
{
    ghd_service_device_lost(ctx, device, reason);
}

/* The tokens and the metrics token (from its file too), then whether the
 * bind is exposed without them. On failure nothing stays open. */
static int open_auth(struct ghd_service *svc, struct ghd_err *err)
{
    const struct ghd_config *cfg = &svc->cfg;
    int rc = ghd_auth_new(cfg->tokens_file, cfg->tokens, cfg->metrics_token, &svc->auth, err);
    if (rc)
        return rc;
    if (cfg->metrics_token_file[0])
        rc = ghd_auth_metrics_file(svc->auth, cfg->metrics_token_file, err);
    if (rc == 0)
        rc = check_exposure(svc, err);
    if (rc) {
        ghd_auth_free(svc->auth);
        svc->auth = NULL;
    }
    return rc;
}

int ghd_service_init(struct ghd_service *svc, const struct ghd_config *cfg, struct ghd_err *err)
{
    memset(svc, 0, sizeof(*svc));
    svc->cfg = *cfg;
    svc->started = time(NULL);
    if (ghd_owner_init(&svc->owner, cfg->instance) != 0)
        return ghd_err_set(err, GHD_EINTERNAL, "cannot draw a boot id (getrandom failed)");
    int rc = ghd_cluster_new(cfg->advertise_url, cfg->instance, cfg->peers, &svc->cluster, err);
    if (rc)
        return rc;
    if ((rc = ghd_metrics_new(&svc->metrics)) != 0) {
        ghd_cluster_free(svc->cluster);
        return ghd_err_set(err, rc, "metrics: %s", ghd_strerror(rc));
    }
    ghd_metrics_tenant_label(svc->metrics, (int)cfg->metrics_tenant_label);
    ghd_staging_caps_init(&svc->staging_caps, cfg->staging_address_share,
                          cfg->staging_tenant_share, svc->metrics);
    if ((rc = ghd_service_tracing_open(svc, err)) != 0)
        goto destroy_metrics;
    if ((rc = open_auth(svc, err)) != 0)
        goto destroy_metrics;
    if ((rc = open_runtimes(svc, err)) != 0)
        goto destroy_auth;
    if ((rc = open_tables(svc, err)) != 0)
        goto destroy_runtime;
    if ((rc = warm_kernels(svc, err)) != 0)
        goto destroy_buffers;
    if ((rc = open_run_queue(svc, err)) != 0)
        goto destroy_buffers;
    ghd_ukernel_store_init(&svc->kernels, cfg->tenant_max_kernels);
    ghd_rmodule_store_init(&svc->modules, cfg->tenant_max_modules);
    svc->kernel_limits.max_definition = cfg->kernel_max_definition;
    svc->kernel_limits.max_depth = cfg->kernel_max_depth;
    svc->kernel_limits.max_elements = cfg->max_elements;
    losses_init(svc);
    if ((rc = open_compiler(svc, err)) != 0)
        goto destroy_stores;
    if ((rc = open_inline_defs(svc, err)) != 0) {
        ghd_ucompiler_free(svc->compiler);
        goto destroy_stores;
    }
    if (ghd_watchdog_start(&svc->watchdog, svc->runs, cfg->run_timeout_s, svc->runtime_count,
                           device_lost, svc) != 0) {
        rc = ghd_err_set(err, GHD_EINTERNAL, "cannot start the run deadline watchdog thread");
        ghd_inline_defs_destroy(&svc->inline_defs);
        ghd_ucompiler_free(svc->compiler);
        goto destroy_stores;
    }
    atomic_store(&svc->ready, 1);
    return 0;
destroy_stores:
    svc->buffers.on_leave = NULL; /* the graphs go with the queue */
    ghd_run_queue_free(svc->runs);
    svc->runs = NULL;
    ghd_rmodule_store_destroy(&svc->modules);
    ghd_ukernel_store_destroy(&svc->kernels);
    losses_destroy(svc);
destroy_buffers:
    for (unsigned i = 0; i < svc->runtime_count; i++)
        ghd_kernels_release(&svc->runtimes[i]);
    ghd_region_table_destroy(&svc->regions);
    ghd_buffer_table_destroy(&svc->buffers);
    ghd_tiers_free(svc->buffers.tiers); /* after every buffer went */
destroy_runtime:
    close_runtimes(svc);
destroy_auth:
    ghd_auth_free(svc->auth);
    svc->auth = NULL;
destroy_metrics:
    ghd_tracer_free(svc->tracer);
    svc->tracer = NULL;
    ghd_staging_caps_destroy(&svc->staging_caps);
    ghd_metrics_free(svc->metrics);
    svc->metrics = NULL;
    ghd_cluster_free(svc->cluster);
    svc->cluster = NULL;
    return rc;
}

void ghd_service_destroy(struct ghd_service *svc)
{
    atomic_store(&svc->ready, 0);
    ghd_watchdog_stop(&svc->watchdog);
    svc->buffers.on_leave = NULL; /* the graphs go with the queue */
    ghd_run_queue_free(svc->runs);
    ghd_ukernel_store_destroy(&svc->kernels); /* after the runs that held kernels */
    ghd_rmodule_store_destroy(&svc->modules);
    ghd_inline_defs_destroy(&svc->inline_defs);
    losses_destroy(svc);
    ghd_ucompiler_free(svc->compiler);
    svc->compiler = NULL;
    ghd_region_table_destroy(&svc->regions);
    ghd_buffer_table_destroy(&svc->buffers);
    ghd_tiers_free(svc->buffers.tiers); /* after every buffer went */
    for (unsigned i = 0; i < svc->runtime_count; i++)
        ghd_kernels_release(&svc->runtimes[i]);
    close_runtimes(svc);
    ghd_auth_free(svc->auth);
    svc->auth = NULL;
    ghd_staging_caps_destroy(&svc->staging_caps);
    ghd_tracer_free(svc->tracer); /* after the runs: each may hold a trace */
    svc->tracer = NULL;
    ghd_metrics_free(svc->metrics); /* last: everything above recorded into it */
    svc->metrics = NULL;
    ghd_cluster_free(svc->cluster);
    svc->cluster = NULL;
}

struct ghd_runtime *ghd_service_runtime(struct ghd_service *svc, unsigned index)
{
    return index < svc->runtime_count ? &svc->runtimes[index] : NULL;
}
