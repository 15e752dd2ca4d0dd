/* Devices for requests: the table's runtimes by index, placement, each
 * device's loss and the service's readiness from them, GET /v1/devices. */
#include "service_devices.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "core/metrics/metrics.h"
#include "core/runs/run_queue.h"
#include "service_internal.h"

/* The device's state now: 0 ready, or 1 lost with the reason in *why (may
 * be NULL). A device whose context no longer answers is lost for good (a
 * CUDA sticky error poisons it), so a failed health check marks it. */
static int device_lost(struct ghd_service *svc, unsigned i, int ask_health, struct ghd_err *why)
{
    if (ghd_devloss_get(&svc->device_loss[i], why))
        return 1;
    if (!ask_health)
        return 0;
    struct ghd_err e = {0};
    int rc = ghd_runtime_health(&svc->runtimes[i], &e);
    if (rc == 0)
        return 0;
    char reason[sizeof(e.detail) + 32];
    snprintf(reason, sizeof(reason), "its health check failed: %s", ghd_err_text(&e, rc));
    ghd_service_device_lost(svc, i, reason);
    ghd_devloss_get(&svc->device_loss[i], why);
    return 1;
}

int ghd_service_device_usable(struct ghd_service *svc, const struct ghd_runtime *rt,
                              const char *what, struct ghd_err *err)
{
    struct ghd_err why = {0};
    if (!device_lost(svc, rt->index, 0, &why))
        return 0;
    return ghd_err_set(err, GHD_EDEVLOST, "%s%sdevice %u is lost (%s); the other devices still "
                       "serve", what ? what : "", what ? ": " : "", rt->index, why.detail);
}

int ghd_service_device(struct ghd_service *svc, long long index, struct ghd_runtime **out,
                       struct ghd_err *err)
{
    unsigned n = svc->runtime_count;
    if (index < 0 || index >= (long long)n)
        return ghd_err_set(err, GHD_EUNPROC,
                           "'device' %lld: this server has %s%u (GET /v1/devices lists them)",
                           index, n == 1 ? "only device " : "devices 0 to ", n - 1);
    struct ghd_runtime *rt = &svc->runtimes[index];
    int rc = ghd_service_device_usable(svc, rt, NULL, err);
    if (rc)
        return rc;
    *out = rt;
    return 0;
}

/* What a new buffer of the pool could still take: its limit (or, without
 * one, the device's free memory plus what the pool holds unused) less what
 * is in use. */
static size_t pool_free(struct ghd_runtime *rt)
{
    struct ghd_pool_stats st;
    ghd_pool_get_stats(&rt->pool, &st);
    if (st.limit)
        return st.limit > st.in_use ? st.limit - st.in_use : 0;
    size_t mem_free = 0, total = 0;
    if (rt->dev.ops->mem_info(&rt->dev, &mem_free, &total, NULL) != 0)
        mem_free = 0;
    return mem_free + (st.reserved - st.in_use);
}

int ghd_service_place(struct ghd_service *svc, struct ghd_runtime **out, struct ghd_err *err)
{
    unsigned n = svc->runtime_count, best = n;
    if (strcmp(svc->cfg.placement, "round-robin") == 0) {
        unsigned start = atomic_fetch_add(&svc->place_next, 1);
        for (unsigned k = 0; k < n && best == n; k++)
            if (!device_lost(svc, (start + k) % n, 0, NULL))
                best = (start + k) % n;
    } else {
        size_t most = 0;
        for (unsigned i = 0; i < n; i++) {
            if (device_lost(svc, i, 0, NULL))
                continue;
            size_t f = pool_free(&svc->runtimes[i]);
            if (best == n || f > most) {
                best = i;
                most = f;
            }
        }
    }
    if (best == n)
        return ghd_err_set(err, GHD_EDEVLOST, "every device is lost: this server places nothing "
                           "until it restarts");
    *out = &svc->runtimes[best];
    return 0;
}

void ghd_service_device_lost(struct ghd_service *svc, unsigned index, const char *reason)
{
    GHD_ASSERT(index < svc->runtime_count);
    if (!ghd_devloss_mark(&svc->device_loss[index], "%s", reason))
        return;
    unsigned lost = atomic_fetch_add(&svc->devices_lost, 1) + 1;
    int all = lost == svc->runtime_count;
    ghd_log(GHD_LOG_ERROR, "device %u (%s %d) lost: %s; %s%s", index,
            ghd_backend_name(svc->runtimes[index].dev.kind), svc->runtimes[index].dev.ordinal,
            reason,
            all ? "no device is left: device routes answer 503 from now on"
                : "its buffers, runs and modules answer 503 from now on, the other devices serve",
            svc->cfg.on_device_loss[0] == 'e' ? " and the server exits (--on-device-loss exit)"
                                              : " (--on-device-loss stay)");
    ghd_metrics_device_lost(svc->metrics, index);
    if (svc->runs)
        ghd_run_queue_device_lost(svc->runs, index, reason);
    if (all && svc->runtime_count == 1)
        ghd_devloss_mark(&svc->devloss, "%s", reason);
    else if (all)
        ghd_devloss_mark(&svc->devloss, "every device is lost; the last, device %u: %s", index,
                         reason);
}

unsigned ghd_service_devices_lost(struct ghd_service *svc, struct ghd_err *err)
{
    unsigned lost = atomic_load(&svc->devices_lost);
    for (unsigned i = 0; lost && err && i < svc->runtime_count; i++)
        if (ghd_devloss_get(&svc->device_loss[i], err))
            break;
    return lost;
}

/* `figures`: the pool's sums and the free memory, which every tenant's
 * buffers move; without it a device says what it is and its limits. */
static json_t *device_json_new(struct ghd_service *svc, unsigned i, int figures)
{
    struct ghd_runtime *rt = &svc->runtimes[i];
    struct ghd_device *dev = &rt->dev;
    struct ghd_pool_stats ps;
    ghd_pool_get_stats(&rt->pool, &ps);
    size_t mem_free = 0, total = dev->total_memory;
    struct ghd_err why = {0};
    int lost = device_lost(svc, i, 1, &why);
    if (!lost && dev->ops->mem_info(dev, &mem_free, &total, NULL) != 0)
        mem_free = 0;
    json_t *peers = json_array();
    for (unsigned j = 0; j < svc->runtime_count; j++)
        if (rt->peer_mask & (1u << j))
            json_array_append_new(peers, json_integer(j));
    json_t *o = json_pack("{s:i, s:i, s:s, s:s, s:s, s:{s:I, s:I}, s:{s:I, s:I, s:I}, s:s, s:o}",
                          "index", (int)i, "ordinal", dev->ordinal, "name", dev->name, "uuid",
                          dev->uuid, "architecture", dev->arch, "memory", "total",
                          (json_int_t)total, "free", (json_int_t)mem_free, "pool", "limit",
                          (json_int_t)ps.limit, "used", (json_int_t)ps.in_use, "buffers",
                          (json_int_t)ps.live_blocks, "state", lost ? "lost" : "ready",
                          "peer_access", peers);
    if (o && lost)
        json_object_set_new(o, "reason", json_string(why.detail));
    if (o && !figures) {
        json_object_del(json_object_get(o, "memory"), "free");
        json_object_del(json_object_get(o, "pool"), "used");
        json_object_del(json_object_get(o, "pool"), "buffers");
    }
    return o;
}

json_t *ghd_service_devices_json_new(struct ghd_service *svc, const struct ghd_caller *caller)
{
    int figures = (caller->perms & GHD_PERM_FIGURES) != 0;
    json_t *list = json_array();
    for (unsigned i = 0; i < svc->runtime_count; i++)
        json_array_append_new(list, device_json_new(svc, i, figures));
    return json_pack("{s:o}", "devices", list);
}

int ghd_service_devices_ready(struct ghd_service *svc, json_t **devices, struct ghd_err *err)
{
    unsigned n = svc->runtime_count, lost = 0;
    char detail[GHD_ERR_DETAIL] = "";
    size_t used = 0;
    json_t *list = json_array();
    for (unsigned i = 0; i < n; i++) {
        struct ghd_err why = {0};
        int l = device_lost(svc, i, 1, &why);
        json_t *d = json_pack("{s:i, s:s}", "index", (int)i, "state", l ? "lost" : "ready");
        if (l) {
            json_object_set_new(d, "reason", json_string(why.detail));
            int w = snprintf(detail + used, sizeof(detail) - used, "%sdevice %u is lost: %s",
                             lost ? "; " : "", i, why.detail);
            if (w > 0)
                used = used + (size_t)w < sizeof(detail) ? used + (size_t)w : sizeof(detail) - 1;
            lost++;
        }
        json_array_append_new(list, d);
    }
    if (devices)
        *devices = list;
    else
        json_decref(list);
    struct ghd_err all = {0};
    if (ghd_devloss_get(&svc->devloss, &all)) /* the service as a whole */
        return ghd_err_set(err, GHD_EDEVLOST, "%s", lost ? detail : all.detail);
    int need_all = strcmp(svc->cfg.ready_needs, "all") == 0;
    if (lost == 0 || (!need_all && lost < n))
        return 0;
    if (lost < n)
        return ghd_err_set(err, GHD_EDEVLOST, "%s (--ready-needs all; %u of %u devices ready)",
                           detail, n - lost, n);
    return ghd_err_set(err, GHD_EDEVLOST, "%s", detail);
}
