/* Every tenant's user kernels, in one list under one lock: a tenant holds a
 * bounded number (--tenant-max-kernels), lookups are by the request's
 * tenant, and another tenant's kernel is never found (404, as if it did
 * not exist). */
#include "ukernel.h"

#include <string.h>

#include "base/error.h"

void ghd_ukernel_store_init(struct ghd_ukernel_store *s, unsigned tenant_max)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
    s->tenant_max = tenant_max;
}

static struct ghd_ukernel *kernel_of(struct ghd_list_node *n)
{
    return ghd_list_entry(n, struct ghd_ukernel, link);
}

void ghd_ukernel_store_destroy(struct ghd_ukernel_store *s)
{
    while (!ghd_list_empty(&s->all))
        ghd_ukernel_unref(kernel_of(ghd_list_pop_front(&s->all)));
    pthread_mutex_destroy(&s->lock);
}

static int owned_by(const struct ghd_ukernel *k, const char *tenant)
{
    return strcmp(k->tenant, tenant ? tenant : "") == 0;
}

int ghd_ukernel_store_add(struct ghd_ukernel_store *s, struct ghd_ukernel *k)
{
    if (ghd_kernel_find(k->def.name))
        return GHD_EBUSY;
    unsigned count = 0;
    int rc = 0;
    pthread_mutex_lock(&s->lock);
    for (struct ghd_ukernel *o = kernel_of(s->all.first); o; o = kernel_of(o->link.next)) {
        if (owned_by(o, k->tenant)) {
            count++;
            if (strcmp(o->def.name, k->def.name) == 0)
                rc = GHD_EBUSY;
        }
    }
    if (rc == 0 && s->tenant_max && count >= s->tenant_max)
        rc = GHD_ELIMIT;
    if (rc == 0) {
        ghd_ukernel_ref(k);
        ghd_list_push_back(&s->all, &k->link);
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ghd_ukernel_store_find_new(struct ghd_ukernel_store *s, const char *tenant,
                               const char *name, struct ghd_ukernel **out)
{
    int rc = GHD_ENOENT;
    pthread_mutex_lock(&s->lock);
    for (struct ghd_ukernel *k = kernel_of(s->all.first); k; k = kernel_of(k->link.next))
        if (owned_by(k, tenant) && strcmp(k->def.name, name) == 0) {
            ghd_ukernel_ref(k);
            *out = k;
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ghd_ukernel_store_remove(struct ghd_ukernel_store *s, const char *tenant, const char *name)
{
    struct ghd_ukernel *gone = NULL;
    pthread_mutex_lock(&s->lock);
    for (struct ghd_ukernel *k = kernel_of(s->all.first); k; k = kernel_of(k->link.next))
        if (owned_by(k, tenant) && strcmp(k->def.name, name) == 0) {
            gone = k;
            ghd_list_remove(&s->all, &k->link);
            break;
        }
    pthread_mutex_unlock(&s->lock);
    if (!gone)
        return GHD_ENOENT;
    ghd_ukernel_unref(gone); /* after the lock: runs may still hold it */
    return 0;
}

void ghd_ukernel_store_describe(struct ghd_ukernel_store *s, const char *tenant, json_t *list)
{
    struct ghd_ukernel *mine[256];
    size_t n = 0;
    pthread_mutex_lock(&s->lock);
    for (struct ghd_ukernel *k = kernel_of(s->all.first); k && n < sizeof(mine) / sizeof(mine[0]);
         k = kernel_of(k->link.next))
        if (owned_by(k, tenant)) {
            ghd_ukernel_ref(k);
            mine[n++] = k;
        }
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < n; i++) { /* JSON built outside the lock */
        json_array_append_new(list, ghd_ukernel_describe_new(mine[i]));
        ghd_ukernel_unref(mine[i]);
    }
}

int ghd_kernel_lookup_new(struct ghd_ukernel_store *s, const char *tenant, const char *name,
                          const struct ghd_kernel **out)
{
    const struct ghd_kernel *k = ghd_kernel_find(name);
    if (k) {
        *out = k;
        return 0;
    }
    struct ghd_ukernel *u;
    if (!s || !name || ghd_ukernel_store_find_new(s, tenant, name, &u) != 0)
        return GHD_ENOENT;
    *out = &u->base;
    return 0;
}

/* The members of a definition, in the order a reader compares them. */
static const char *const def_members[] = {"kind", "in",       "out",         "body",
                                          "map",  "reduce",   "identity",    "post",
                                          "reduce_type",      "description", "name"};

/* A member's value as a definition means it: kind defaults to elementwise. */
static const json_t *def_member(const json_t *def, const char *key, json_t *elementwise)
{
    const json_t *v = json_object_get(def, key);
    return !v && strcmp(key, "kind") == 0 ? elementwise : v;
}

const char *ghd_ukernel_definition_diff(const json_t *stored, const json_t *given)
{
    json_t *ew = json_string("elementwise");
    const char *first = NULL;
    for (size_t i = 0; !first && i < sizeof(def_members) / sizeof(def_members[0]); i++) {
        const json_t *a = def_member(stored, def_members[i], ew);
        const json_t *b = def_member(given, def_members[i], ew);
        if ((a || b) && !(a && b && json_equal(a, b)))
            first = def_members[i];
    }
    json_decref(ew);
    return first;
}
