/* Regions for tenants: whether they are on, on which device one registers,
 * lookups and removal as the tenant sees them, a region's public JSON, and
 * transfers between what a request names. */
#include "service_regions.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error.h"
#include "core/service_internal.h"
#include "core/buffers/service_buffers.h"
#include "region_request.h"
#include "core/service_devices.h"

/* 0 when regions are on, else GHD_EFORBIDDEN naming the flag: the first
 * check of every region operation a caller reaches. */
static int regions_allowed(const struct ghd_service *svc, struct ghd_err *err)
{
    if (svc->regions.allowed)
        return 0;
    return ghd_err_set(err, GHD_EFORBIDDEN,
                       "regions are off on this server (start it with --allow-shm)");
}

json_t *ghd_service_region_summary_new(struct ghd_service *svc, const struct ghd_caller *caller)
{
    const char *tenant = caller->tenant;
    struct ghd_region_table *t = &svc->regions;
    struct ghd_region **list;
    unsigned n;
    size_t pinned;
    /* `usage` counts what `regions` lists. */
    if (ghd_region_tenant_list_new(t, tenant, &list, &n, &pinned) != 0)
        return NULL;
    json_t *regions = json_array();
    for (unsigned i = 0; i < n; i++) {
        json_array_append_new(regions, ghd_service_region_json_new(svc, list[i]));
        ghd_region_unref(t, list[i]);
    }
    free(list);
    json_t *shm = t->allowed ? json_pack("{s:b, s:s}", "enabled", 1, "host", t->host)
                             : json_pack("{s:b}", "enabled", 0);
    return json_pack("{s:o, s:{s:i, s:I}, s:o}", "shm", shm, "usage", "regions", (int)n,
                     "pinned", (json_int_t)pinned, "regions", regions);
}

int ghd_service_region_create(struct ghd_service *svc, const struct ghd_caller *caller,
                              json_t *body, struct ghd_region **out, struct ghd_err *err)
{
    *out = NULL;
    int rc = regions_allowed(svc, err);
    struct ghd_region_request rq;
    if (rc == 0)
        rc = ghd_region_request_parse(body, &rq, err);
    if (rc)
        return rc;
    rq.spec.tenant = caller->tenant;
    struct ghd_runtime *rt;
    rc = ghd_service_device(svc, rq.device, &rt, err);
    return rc ? rc : ghd_region_register_new(&svc->regions, rt, &rq.spec, out, err);
}

int ghd_service_region_find(struct ghd_service *svc, const struct ghd_caller *caller,
                            const char *id, struct ghd_region **out, struct ghd_err *err)
{
    int rc = regions_allowed(svc, err);
    if (rc)
        return rc;
    if (ghd_region_find_new(&svc->regions, id, caller->tenant, out) != 0)
        return ghd_err_set(err, GHD_ENOENT, "no region with id '%.64s'", id);
    return 0;
}

void ghd_service_region_release(struct ghd_service *svc, struct ghd_region *r)
{
    ghd_region_unref(&svc->regions, r);
}

int ghd_service_region_remove(struct ghd_service *svc, const struct ghd_caller *caller,
                              const char *id, struct ghd_err *err)
{
    int rc = regions_allowed(svc, err);
    if (rc)
        return rc;
    if (ghd_region_remove(&svc->regions, id, caller->tenant) != 0)
        return ghd_err_set(err, GHD_ENOENT, "no region with id '%.64s'", id);
    return 0;
}

json_t *ghd_service_region_json_new(struct ghd_service *svc, const struct ghd_region *r)
{
    char created[32];
    struct tm tm;
    gmtime_r(&r->created, &tm);
    strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tm);
    /* Device memory, or a segment the CUDA backend page-locked; the host
     * backend's host_register locks nothing. */
    int pinned = r->kind == GHD_REGION_CUDA_IPC ||
                 (r->pinned != NULL && r->rt->dev.kind != GHD_BACKEND_HOST);
    json_t *o = json_pack("{s:s, s:s, s:I, s:i, s:b, s:s, s:f, s:I}", "id", r->id, "kind",
                          r->kind == GHD_REGION_SHM ? "shm" : "cuda_ipc", "size",
                          (json_int_t)r->size, "device", (int)r->rt->index, "pinned", pinned, "created",
                          created, "register_ms", r->register_s * 1e3, "transfers",
                          (json_int_t)ghd_region_transfers(&svc->regions, r));
    if (o && r->kind == GHD_REGION_SHM)
        json_object_set_new(o, "shm", json_string(r->name));
    return o;
}

int ghd_service_xfer_end_find(struct ghd_service *svc, const struct ghd_caller *caller,
                              const char *field,
                              int is_region, const char *id, struct ghd_xfer_end *end,
                              struct ghd_err *err)
{
    const char *tenant = caller->tenant;
    /* An id of another instance or start never gets here: http/body.c
     * answered it 421 or 410, naming where in the body it was. */
    struct ghd_err lost = {0};
    int rc = is_region ? ghd_region_find_new(&svc->regions, id, tenant, &end->region)
                       : ghd_service_buffer_find(svc, caller, id, &end->buffer, &lost);
    if (rc == GHD_EDEVLOST)
        return ghd_err_set(err, rc, "'%s.buffer': %s", field, lost.detail);
    if (rc)
        return ghd_err_set(err, GHD_ENOENT, "'%s.%s': no %s with id '%.64s'", field,
                           is_region ? "region" : "buffer", is_region ? "region" : "buffer", id);
    return 0;
}

void ghd_service_xfer_end_release(struct ghd_service *svc, struct ghd_xfer_end *end)
{
    ghd_region_unref(&svc->regions, end->region);
    if (end->buffer)
        ghd_buffer_unref(end->buffer);
}

/* A buffer read into a region or another buffer is read whole, as a copy
 * reads it (ghd_service_buffer_copy): refused while a writer of it is in
 * flight or when a write started meanwhile, never a mix of two states. A
 * transfer within one buffer moves that buffer's version itself, twice
 * (its start and its end, as for any write). */
int ghd_service_transfer(struct ghd_service *svc, const struct ghd_xfer_end *from,
                         const struct ghd_xfer_end *to, uint64_t bytes,
                         const struct ghd_versions *if_match, struct ghd_xfer_result *res,
                         uint64_t *current, struct ghd_err *err)
{
    const struct ghd_buffer *src = from->buffer;
    uint64_t v = src ? ghd_buffer_version(src) : 0;
    int rc = src ? ghd_service_source_quiet(svc, src, "transfer", err) : 0;
    if (rc == 0)
        rc = ghd_region_transfer(&svc->regions, from, to, bytes, if_match, res, current, err);
    if (rc == 0 && src)
        rc = ghd_service_source_moved(src, src == to->buffer ? v + 2 : v, "transfer", err);
    return rc;
}
