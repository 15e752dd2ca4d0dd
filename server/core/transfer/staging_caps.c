#include "staging_caps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/error.h"
#include "core/metrics/metrics.h"

/* One address or tenant holding chunks of one ring; kept only while it holds
 * some, so the list is never longer than the chunks held. */
struct staging_holder {
    const void *ring;
    int is_tenant;
    unsigned held;
    struct staging_holder *next;
    char name[72];
};

void ghd_staging_caps_init(struct ghd_staging_caps *c, unsigned address_share,
                           unsigned tenant_share, struct ghd_metrics *metrics)
{
    memset(c, 0, sizeof(*c));
    c->address_share = address_share;
    c->tenant_share = tenant_share;
    c->metrics = metrics;
    pthread_mutex_init(&c->lock, NULL);
    ghd_cond_init_monotonic(&c->changed);
}

void ghd_staging_caps_destroy(struct ghd_staging_caps *c)
{
    GHD_ASSERT(c->holders == NULL);
    pthread_cond_destroy(&c->changed);
    pthread_mutex_destroy(&c->lock);
}

static int counted(const char *name)
{
    return name && *name;
}

/* The link that points at the holder of `name`, or the list's end (*link
 * NULL) when it holds nothing; pre: the lock is held. */
static struct staging_holder **find(struct ghd_staging_caps *c, const void *ring, int is_tenant,
                                    const char *name)
{
    struct staging_holder **p = &c->holders;
    for (; *p; p = &(*p)->next)
        if ((*p)->ring == ring && (*p)->is_tenant == is_tenant &&
            strcmp((*p)->name, name) == 0)
            return p;
    return p;
}

static unsigned held_locked(struct ghd_staging_caps *c, const void *ring, int is_tenant,
                            const char *name)
{
    struct staging_holder **p = find(c, ring, is_tenant, name);
    return *p ? (*p)->held : 0;
}

static unsigned cap_of(unsigned share, unsigned ring_chunks)
{
    unsigned cap = (unsigned)((unsigned long long)ring_chunks * share / 100);
    return cap ? cap : 1;
}

/* pre: the lock is held. */
static int add(struct ghd_staging_caps *c, const void *ring, int is_tenant, const char *name,
               int delta)
{
    struct staging_holder **p = find(c, ring, is_tenant, name);
    if (!*p) {
        GHD_ASSERT(delta > 0);
        struct staging_holder *h = calloc(1, sizeof(*h));
        if (!h)
            return GHD_ENOHOSTMEM;
        h->ring = ring;
        h->is_tenant = is_tenant;
        snprintf(h->name, sizeof(h->name), "%s", name);
        *p = h;
    }
    struct staging_holder *h = *p;
    GHD_ASSERT(delta > 0 || h->held > 0);
    h->held += (unsigned)delta;
    if (h->held == 0) {
        *p = h->next;
        free(h);
    }
    return 0;
}

/* Which cap keeps this holder from one more chunk: "address", "tenant" or
 * NULL; pre: the lock is held. */
static const char *at_cap(struct ghd_staging_caps *c, const void *ring, unsigned ring_chunks,
                          const char *address, const char *tenant)
{
    if (counted(address) && c->address_share &&
        held_locked(c, ring, 0, address) >= cap_of(c->address_share, ring_chunks))
        return "address";
    if (counted(tenant) && c->tenant_share &&
        held_locked(c, ring, 1, tenant) >= cap_of(c->tenant_share, ring_chunks))
        return "tenant";
    return NULL;
}

int ghd_staging_caps_take(struct ghd_staging_caps *c, const void *ring, unsigned ring_chunks,
                          const char *address, const char *tenant, unsigned timeout_ms,
                          struct ghd_err *err)
{
    struct timespec deadline = ghd_clock_deadline(CLOCK_MONOTONIC, timeout_ms);
    int rc = 0;
    pthread_mutex_lock(&c->lock);
    const char *cap;
    while ((cap = at_cap(c, ring, ring_chunks, address, tenant)) != NULL) {
        if (timeout_ms == 0 ||
            pthread_cond_timedwait(&c->changed, &c->lock, &deadline) == ETIMEDOUT) {
            cap = at_cap(c, ring, ring_chunks, address, tenant);
            break;
        }
    }
    if (cap) {
        int tenant_cap = cap[0] == 't';
        unsigned share = tenant_cap ? c->tenant_share : c->address_share;
        rc = ghd_err_set(err, GHD_ELIMIT,
                         "%s %s holds %u of the %u staging chunks, the most one %s may hold "
                         "(--staging-%s-share %u%%); retry when one of its transfers ends",
                         tenant_cap ? "tenant" : "client address", tenant_cap ? tenant : address,
                         cap_of(share, ring_chunks), ring_chunks, cap, cap, share);
    } else {
        if (counted(address))
            rc = add(c, ring, 0, address, 1);
        if (rc == 0 && counted(tenant) && (rc = add(c, ring, 1, tenant, 1)) != 0 &&
            counted(address))
            add(c, ring, 0, address, -1);
        if (rc)
            ghd_err_set(err, rc, "out of host memory");
    }
    pthread_mutex_unlock(&c->lock);
    if (cap && timeout_ms)
        ghd_metrics_staging_capped(c->metrics, cap[0] == 't');
    else if (cap) /* a try that misses (a second chunk) is no refusal: counted apart */
        ghd_metrics_staging_overlap_capped(c->metrics, cap[0] == 't');
    return rc;
}

void ghd_staging_caps_give(struct ghd_staging_caps *c, const void *ring, const char *address,
                           const char *tenant)
{
    pthread_mutex_lock(&c->lock);
    if (counted(address))
        add(c, ring, 0, address, -1);
    if (counted(tenant))
        add(c, ring, 1, tenant, -1);
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
}
