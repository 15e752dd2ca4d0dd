/* The tenant-scoped store (tenant_store.h). Quota and listing are decided
 * here only, for every kind of object a tenant names. */
#include "tenant_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tenant.h"

/* One tenant's objects: allocated at its first, freed with its last. */
struct tenant_list {
    struct ghd_idmap_node node; /* id: name */
    char name[GHD_TENANT_MAX + 1];
    struct ghd_list objects; /* oldest first */
    unsigned count;
};

static const char *tenant_name(const char *tenant)
{
    return tenant ? tenant : "";
}

void ghd_tstore_init(struct ghd_tstore *s, const struct ghd_tstore_type *type,
                     unsigned tenant_max)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->lock, NULL);
    s->type = type;
    s->tenant_max = tenant_max;
}

/* pre: s's lock held. */
static struct tenant_list *list_of(const struct ghd_tstore *s, const char *tenant)
{
    if (!s->tenants.slots)
        return NULL;
    struct ghd_idmap_node *n = ghd_idmap_find(&s->tenants, tenant_name(tenant));
    return n ? ghd_container_of(n, struct tenant_list, node) : NULL;
}

/* pre: s's lock held. The tenant's object `name`, or NULL. */
static struct ghd_tstore_entry *find_locked(const struct ghd_tstore *s, const char *tenant,
                                            const char *name)
{
    if (!s->names.slots)
        return NULL;
    for (struct ghd_idmap_node *n = ghd_idmap_find(&s->names, name); n;
         n = ghd_idmap_find_next(n)) {
        struct ghd_tstore_entry *e = ghd_container_of(n, struct ghd_tstore_entry, by_name);
        if (strcmp(e->tenant, tenant_name(tenant)) == 0)
            return e;
    }
    return NULL;
}

void ghd_tstore_destroy(struct ghd_tstore *s)
{
    for (size_t i = 0; s->tenants.slots && i <= s->tenants.mask; i++)
        while (s->tenants.slots[i]) {
            struct tenant_list *t = ghd_container_of(s->tenants.slots[i], struct tenant_list,
                                                     node);
            ghd_idmap_remove(&s->tenants, &t->node);
            while (!ghd_list_empty(&t->objects)) {
                struct ghd_list_node *n = ghd_list_pop_front(&t->objects);
                s->type->unref(ghd_container_of(n, struct ghd_tstore_entry, link));
            }
            free(t);
        }
    ghd_idmap_destroy(&s->names);
    ghd_idmap_destroy(&s->tenants);
    pthread_mutex_destroy(&s->lock);
}

/* pre: s's lock held. The quota, which both the room asked for before
 * costly work and the add itself go by. */
static int room_locked(const struct ghd_tstore *s, const char *tenant)
{
    const struct tenant_list *t = list_of(s, tenant);
    return s->tenant_max && t && t->count >= s->tenant_max ? GHD_ELIMIT : 0;
}

/* pre: s's lock held. The maps get their slots with the first object. */
static int tenant_list_get(struct ghd_tstore *s, const char *tenant, struct tenant_list **out)
{
    if ((!s->names.slots && ghd_idmap_init(&s->names, 16) != 0) ||
        (!s->tenants.slots && ghd_idmap_init(&s->tenants, 16) != 0))
        return GHD_ENOHOSTMEM;
    struct tenant_list *t = list_of(s, tenant);
    if (!t) {
        if (!(t = calloc(1, sizeof(*t))))
            return GHD_ENOHOSTMEM;
        snprintf(t->name, sizeof(t->name), "%s", tenant_name(tenant));
        ghd_idmap_insert(&s->tenants, &t->node, t->name);
    }
    *out = t;
    return 0;
}

int ghd_tstore_add(struct ghd_tstore *s, struct ghd_tstore_entry *e, const char *tenant,
                   const char *name, struct ghd_tstore_entry **have)
{
    struct tenant_list *t = NULL;
    int rc = 0;
    if (have)
        *have = NULL;
    pthread_mutex_lock(&s->lock);
    struct ghd_tstore_entry *o = find_locked(s, tenant, name);
    if (o) {
        rc = GHD_EBUSY;
        if (have) {
            s->type->ref(o);
            *have = o;
        }
    } else if ((rc = room_locked(s, tenant)) == 0 &&
               (rc = tenant_list_get(s, tenant, &t)) == 0) {
        e->tenant = t->name;
        s->type->ref(e);
        ghd_idmap_insert(&s->names, &e->by_name, name);
        ghd_list_push_back(&t->objects, &e->link);
        t->count++;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ghd_tstore_find_new(struct ghd_tstore *s, const char *tenant, const char *name,
                        struct ghd_tstore_entry **out)
{
    pthread_mutex_lock(&s->lock);
    struct ghd_tstore_entry *e = find_locked(s, tenant, name);
    if (e)
        s->type->ref(e);
    pthread_mutex_unlock(&s->lock);
    if (!e)
        return GHD_ENOENT;
    *out = e;
    return 0;
}

int ghd_tstore_remove(struct ghd_tstore *s, const char *tenant, const char *name)
{
    pthread_mutex_lock(&s->lock);
    struct ghd_tstore_entry *e = find_locked(s, tenant, name);
    struct tenant_list *t = e ? list_of(s, tenant) : NULL;
    if (e) {
        ghd_idmap_remove(&s->names, &e->by_name);
        ghd_list_remove(&t->objects, &e->link);
        if (--t->count == 0)
            ghd_idmap_remove(&s->tenants, &t->node);
        else
            t = NULL;
    }
    pthread_mutex_unlock(&s->lock);
    if (!e)
        return GHD_ENOENT;
    free(t); /* the tenant's last object: its list goes too */
    s->type->unref(e);
    return 0;
}

unsigned ghd_tstore_count(struct ghd_tstore *s, const char *tenant)
{
    pthread_mutex_lock(&s->lock);
    const struct tenant_list *t = list_of(s, tenant);
    unsigned n = t ? t->count : 0;
    pthread_mutex_unlock(&s->lock);
    return n;
}

int ghd_tstore_room(struct ghd_tstore *s, const char *tenant)
{
    pthread_mutex_lock(&s->lock);
    int rc = room_locked(s, tenant);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int ghd_tstore_describe(struct ghd_tstore *s, const char *tenant, json_t *list)
{
    struct ghd_tstore_entry **mine = NULL;
    unsigned n = 0;
    pthread_mutex_lock(&s->lock);
    const struct tenant_list *t = list_of(s, tenant);
    if (t && !(mine = malloc(t->count * sizeof(*mine)))) {
        pthread_mutex_unlock(&s->lock);
        return GHD_ENOHOSTMEM;
    }
    for (struct ghd_list_node *l = t ? t->objects.first : NULL; l; l = l->next) {
        mine[n] = ghd_container_of(l, struct ghd_tstore_entry, link);
        s->type->ref(mine[n++]);
    }
    pthread_mutex_unlock(&s->lock);
    for (unsigned i = 0; i < n; i++) { /* the JSON outside the lock */
        json_array_append_new(list, s->type->describe_new(mine[i]));
        s->type->unref(mine[i]);
    }
    free(mine);
    return 0;
}
