/* Per-tenant figures (metrics.h, struct ghd_metrics_tenant): counted for
 * every tenant, shown on /metrics with a `tenant` label only when the
 * operator turns it on. Rows are found by name under a mutex: a run's end
 * and a transfer's end count once each, rare next to what they cost. */
#include <stdlib.h>
#include <string.h>

#include "metrics_internal.h"
#include "prom_text.h"

/* pre: tenants_lock held. The row of `tenant`, made when `create`; NULL
 * when there is none (or no memory for it). */
static struct tenant_row *row_locked(struct ghd_metrics *m, const char *tenant, int create)
{
    if (!tenant)
        tenant = "";
    for (struct tenant_row *r = m->tenants; r; r = r->next)
        if (strcmp(r->name, tenant) == 0)
            return r;
    if (!create || strlen(tenant) > GHD_TENANT_MAX)
        return NULL;
    struct tenant_row *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    memcpy(r->name, tenant, strlen(tenant) + 1);
    r->next = m->tenants;
    m->tenants = r;
    return r;
}

void ghd_metrics_tenant_run(struct ghd_metrics *m, const char *tenant, double device_seconds)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->tenants_lock);
    struct tenant_row *r = row_locked(m, tenant, 1);
    if (r) {
        r->figures.runs++;
        if (device_seconds > 0)
            r->figures.device_seconds += device_seconds;
    }
    pthread_mutex_unlock(&m->tenants_lock);
}

void ghd_metrics_tenant_bytes(struct ghd_metrics *m, const char *tenant,
                              enum ghd_transfer_dir dir, uint64_t bytes)
{
    if (!m || !bytes)
        return;
    pthread_mutex_lock(&m->tenants_lock);
    struct tenant_row *r = row_locked(m, tenant, 1);
    if (r)
        r->figures.bytes[dir == GHD_TRANSFER_DOWNLOAD] += bytes;
    pthread_mutex_unlock(&m->tenants_lock);
}

struct ghd_metrics_tenant ghd_metrics_tenant_get(struct ghd_metrics *m, const char *tenant)
{
    struct ghd_metrics_tenant f = {0};
    if (!m)
        return f;
    pthread_mutex_lock(&m->tenants_lock);
    const struct tenant_row *r = row_locked(m, tenant, 0);
    if (r)
        f = r->figures;
    pthread_mutex_unlock(&m->tenants_lock);
    return f;
}

void ghd_metrics_tenant_label(struct ghd_metrics *m, int on)
{
    if (m)
        atomic_store(&m->tenant_label, on != 0);
}

void ghd_metrics_tenants_free(struct ghd_metrics *m)
{
    struct tenant_row *r = m->tenants, *next;
    for (; r; r = next) {
        next = r->next;
        free(r);
    }
    m->tenants = NULL;
}

static void put_row_start(struct ghd_strbuf *t, const char *family, const struct tenant_row *r)
{
    ghd_strbuf_put(t, "%s{tenant=\"", family);
    ghd_prom_label(t, r->name);
    ghd_strbuf_put(t, "\"");
}

void ghd_metrics_render_tenants(struct ghd_metrics *m, struct ghd_strbuf *t)
{
    if (!atomic_load(&m->tenant_label))
        return;
    static const char *const dirs[2] = {"upload", "download"};
    pthread_mutex_lock(&m->tenants_lock);
    ghd_prom_family(t, "gpuhttpd_tenant_runs_total", "counter",
                    "Runs of each tenant that a worker took and that ended (--metrics-tenant-label; "
                    "tenant \"\" is the untenanted).");
    for (const struct tenant_row *r = m->tenants; r; r = r->next) {
        put_row_start(t, "gpuhttpd_tenant_runs_total", r);
        ghd_strbuf_put(t, "} %llu\n", (unsigned long long)r->figures.runs);
    }
    ghd_prom_family(t, "gpuhttpd_tenant_device_seconds_total", "counter",
                    "Device time of each tenant's ended runs, in seconds (CUDA events on the GPU, "
                    "wall time on the host backend).");
    for (const struct tenant_row *r = m->tenants; r; r = r->next) {
        put_row_start(t, "gpuhttpd_tenant_device_seconds_total", r);
        ghd_strbuf_put(t, "} ");
        ghd_prom_number(t, r->figures.device_seconds);
        ghd_strbuf_put(t, "\n");
    }
    ghd_prom_family(t, "gpuhttpd_tenant_transfer_bytes_total", "counter",
                    "Bytes each tenant's buffer transfers moved, by direction (counted as a "
                    "transfer ends, finished or not).");
    for (const struct tenant_row *r = m->tenants; r; r = r->next)
        for (unsigned d = 0; d < 2; d++) {
            put_row_start(t, "gpuhttpd_tenant_transfer_bytes_total", r);
            ghd_strbuf_put(t, ",direction=\"%s\"} %llu\n", dirs[d],
                           (unsigned long long)r->figures.bytes[d]);
        }
    pthread_mutex_unlock(&m->tenants_lock);
}
