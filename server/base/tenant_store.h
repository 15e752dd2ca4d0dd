#ifndef GHD_BASE_TENANT_STORE_H
#define GHD_BASE_TENANT_STORE_H

/* One store of named, reference-counted objects that tenants own (a
 * tenant's user kernels, its raw modules): a tenant finds, removes, counts
 * and lists only its own (another tenant's is not found, as if it did not
 * exist), holds at most tenant_max of them, and lists them in the order it
 * added them. One lock; names through an id map (idmap.h) and each
 * tenant's entries in a list of their own, so that neither a lookup nor a
 * listing walks another tenant's. The objects are their owners': the store
 * reaches them through its type's callbacks (Redis's dict and its
 * dictType), and each embeds a struct ghd_tstore_entry. */
#include <jansson.h>
#include <pthread.h>

#include "idmap.h"
#include "list.h"

struct ghd_tstore_entry {
    struct ghd_idmap_node by_name; /* id: the object's name */
    struct ghd_list_node link;     /* its tenant's list, oldest first */
    const char *tenant;            /* the store's copy of the owner's name; "" for none */
};

struct ghd_tstore_type {
    void (*ref)(struct ghd_tstore_entry *e);
    void (*unref)(struct ghd_tstore_entry *e);
    /* Its listing entry, a new reference; called without the store's lock. */
    json_t *(*describe_new)(struct ghd_tstore_entry *e);
};

struct ghd_tstore {
    pthread_mutex_t lock;
    const struct ghd_tstore_type *type;
    unsigned tenant_max;      /* objects per tenant; 0 = no limit */
    struct ghd_idmap names;   /* every entry by name; no slots until the first add */
    struct ghd_idmap tenants; /* each tenant's list and count, by tenant */
};

void ghd_tstore_init(struct ghd_tstore *s, const struct ghd_tstore_type *type,
                     unsigned tenant_max);
/* Drops the store's reference to every object. */
void ghd_tstore_destroy(struct ghd_tstore *s);

/* Adds e as `tenant`'s (NULL: none) object `name` and takes a reference.
 * pre: name stays alive and unchanged as long as e is in the store (the
 * object keeps it). GHD_EBUSY when the tenant has an object of
 * that name (*have, where have is not NULL, then a new reference to it),
 * GHD_ELIMIT at tenant_max, GHD_ENOHOSTMEM. */
int ghd_tstore_add(struct ghd_tstore *s, struct ghd_tstore_entry *e, const char *tenant,
                   const char *name, struct ghd_tstore_entry **have);
/* The tenant's object `name`, a new reference; GHD_ENOENT otherwise. */
int ghd_tstore_find_new(struct ghd_tstore *s, const char *tenant, const char *name,
                        struct ghd_tstore_entry **out);
/* Takes the tenant's object `name` out and drops the store's reference
 * (after the lock: a run may hold another). GHD_ENOENT when there is none. */
int ghd_tstore_remove(struct ghd_tstore *s, const char *tenant, const char *name);
/* How many objects the tenant has. */
unsigned ghd_tstore_count(struct ghd_tstore *s, const char *tenant);
/* 0 while the tenant may add an object, GHD_ELIMIT at tenant_max (asked
 * before costly work; the add checks again). */
int ghd_tstore_room(struct ghd_tstore *s, const char *tenant);
/* Appends the descriptions of all the tenant's objects to `list`, oldest
 * first: references taken under the lock, the JSON built after it. 0, or
 * GHD_ENOHOSTMEM (nothing appended). */
int ghd_tstore_describe(struct ghd_tstore *s, const char *tenant, json_t *list);

#endif
