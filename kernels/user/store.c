/* Every tenant's user kernels, in the tenant-scoped store
 * (base/tenant_store.h): a tenant holds a bounded number
 * (--tenant-max-kernels), lookups are by the request's tenant, and another
 * tenant's kernel is never found (404, as if it did not exist). */
#include "ukernel.h"

#include <string.h>

#include "base/error.h"

static struct ghd_ukernel *kernel_of(struct ghd_tstore_entry *e)
{
    return ghd_container_of(e, struct ghd_ukernel, entry);
}

static void entry_ref(struct ghd_tstore_entry *e)
{
    ghd_ukernel_ref(kernel_of(e));
}

static void entry_unref(struct ghd_tstore_entry *e)
{
    ghd_ukernel_unref(kernel_of(e));
}

static json_t *entry_describe_new(struct ghd_tstore_entry *e)
{
    return ghd_ukernel_describe_new(kernel_of(e));
}

static const struct ghd_tstore_type kernels = {
    .ref = entry_ref, .unref = entry_unref, .describe_new = entry_describe_new};

void ghd_ukernel_store_init(struct ghd_ukernel_store *s, unsigned tenant_max)
{
    ghd_tstore_init(&s->s, &kernels, tenant_max);
}

void ghd_ukernel_store_destroy(struct ghd_ukernel_store *s)
{
    ghd_tstore_destroy(&s->s);
}

int ghd_ukernel_store_add(struct ghd_ukernel_store *s, struct ghd_ukernel *k)
{
    if (ghd_kernel_find(k->def.name))
        return GHD_EBUSY;
    return ghd_tstore_add(&s->s, &k->entry, k->tenant, k->def.name, NULL);
}

int ghd_ukernel_store_find_new(struct ghd_ukernel_store *s, const char *tenant,
                               const char *name, struct ghd_ukernel **out)
{
    struct ghd_tstore_entry *e;
    int rc = ghd_tstore_find_new(&s->s, tenant, name, &e);
    if (rc == 0)
        *out = kernel_of(e);
    return rc;
}

int ghd_ukernel_store_remove(struct ghd_ukernel_store *s, const char *tenant, const char *name)
{
    return ghd_tstore_remove(&s->s, tenant, name);
}

int ghd_ukernel_store_describe(struct ghd_ukernel_store *s, const char *tenant, json_t *list)
{
    return ghd_tstore_describe(&s->s, tenant, list);
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
