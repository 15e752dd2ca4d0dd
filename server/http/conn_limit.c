#include "conn_limit.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/idmap.h"
#include "base/list.h"
#include "base/log.h"
#include "core/metrics/metrics.h"

struct address_count {
    struct ghd_idmap_node node;
    unsigned held;
    char address[48];
};

/* One kind of refusal's log: a line goes out when GHD_CONN_LIMIT_LOG_EVERY_S
 * passed since the last one, and says how many there were in all. */
struct refusal_log {
    double last_s; /* < 0: never */
    uint64_t count;
};

struct ghd_conn_limit {
    pthread_mutex_t lock;
    unsigned per_address;
    struct ghd_idmap addresses; /* of struct address_count, only those holding one or more */
    struct refusal_log by_address, by_total;
    struct ghd_metrics *metrics;
};

int ghd_conn_limit_new(unsigned per_address, struct ghd_metrics *metrics,
                       struct ghd_conn_limit **out)
{
    struct ghd_conn_limit *cl = calloc(1, sizeof(*cl));
    if (!cl || ghd_idmap_init(&cl->addresses, 64) != 0) {
        free(cl);
        return GHD_ENOHOSTMEM;
    }
    pthread_mutex_init(&cl->lock, NULL);
    cl->per_address = per_address;
    cl->metrics = metrics;
    cl->by_address.last_s = cl->by_total.last_s = -1;
    *out = cl;
    return 0;
}

void ghd_conn_limit_free(struct ghd_conn_limit *cl)
{
    if (!cl)
        return;
    for (size_t i = 0; i <= cl->addresses.mask; i++) {
        struct ghd_idmap_node *n = cl->addresses.slots[i];
        while (n) {
            struct ghd_idmap_node *next = n->next;
            free(ghd_container_of(n, struct address_count, node));
            n = next;
        }
    }
    ghd_idmap_destroy(&cl->addresses);
    pthread_mutex_destroy(&cl->lock);
    free(cl);
}

/* pre: cl->lock held. */
static struct address_count *find_locked(struct ghd_conn_limit *cl, const char *address)
{
    struct ghd_idmap_node *n = ghd_idmap_find(&cl->addresses, address);
    return n ? ghd_container_of(n, struct address_count, node) : NULL;
}

/* Counts one refusal (of --connection-limit when `total`, else of the cap
 * of `address`) and logs it when GHD_CONN_LIMIT_LOG_EVERY_S passed since
 * the last line of its kind. */
static void refuse(struct ghd_conn_limit *cl, int total, const char *address)
{
    struct refusal_log *r = total ? &cl->by_total : &cl->by_address;
    double now = ghd_clock_s();
    pthread_mutex_lock(&cl->lock);
    uint64_t count = ++r->count;
    int due = r->last_s < 0 || now - r->last_s >= GHD_CONN_LIMIT_LOG_EVERY_S;
    if (due)
        r->last_s = now;
    pthread_mutex_unlock(&cl->lock);
    ghd_metrics_connection_refused(cl->metrics, total);
    if (!due)
        return;
    char why[128];
    if (total)
        snprintf(why, sizeof(why), "--connection-limit connections are open");
    else
        snprintf(why, sizeof(why), "%s holds %u connections (--per-ip-connection-limit)",
                 address, cl->per_address);
    ghd_log(GHD_LOG_WARN,
            "connection refused: %s; %llu such refusals so far, logged at most every %d s", why,
            (unsigned long long)count, GHD_CONN_LIMIT_LOG_EVERY_S);
}

int ghd_conn_limit_admit(struct ghd_conn_limit *cl, const char *address)
{
    if (!cl->per_address || !address[0])
        return 1;
    pthread_mutex_lock(&cl->lock);
    struct address_count *a = find_locked(cl, address);
    int room = !a || a->held < cl->per_address;
    pthread_mutex_unlock(&cl->lock);
    if (!room)
        refuse(cl, 0, address);
    return room;
}

void ghd_conn_limit_open(struct ghd_conn_limit *cl, const char *address)
{
    if (!cl->per_address || !address[0])
        return;
    pthread_mutex_lock(&cl->lock);
    struct address_count *a = find_locked(cl, address);
    if (!a && (a = calloc(1, sizeof(*a))) != NULL) {
        snprintf(a->address, sizeof(a->address), "%s", address);
        ghd_idmap_insert(&cl->addresses, &a->node, a->address);
    }
    if (a)
        a->held++;
    pthread_mutex_unlock(&cl->lock);
}

void ghd_conn_limit_close(struct ghd_conn_limit *cl, const char *address)
{
    if (!cl->per_address || !address[0])
        return;
    pthread_mutex_lock(&cl->lock);
    struct address_count *a = find_locked(cl, address);
    if (a && --a->held == 0)
        ghd_idmap_remove(&cl->addresses, &a->node);
    else
        a = NULL;
    pthread_mutex_unlock(&cl->lock);
    free(a);
}

void ghd_conn_limit_refused_total(struct ghd_conn_limit *cl)
{
    refuse(cl, 1, NULL);
}

unsigned ghd_conn_limit_held(struct ghd_conn_limit *cl, const char *address)
{
    pthread_mutex_lock(&cl->lock);
    struct address_count *a = find_locked(cl, address);
    unsigned held = a ? a->held : 0;
    pthread_mutex_unlock(&cl->lock);
    return held;
}
