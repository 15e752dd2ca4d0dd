/* Definitions by value: one entry per content, built once, shared; see
 * inline_defs.h for the rules. Building happens outside the lock (a
 * compile can take a second); two requests that build the same content at
 * once both build it, and the first one stored is the one kept. */
#define _GNU_SOURCE /* asprintf */
#include "inline_defs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/hash.h"
#include "base/json_text.h"
#include "base/tenant.h"
#include "kernels/user/define.h"

enum { KERNEL, MODULE };

struct entry {
    int kind;
    char hash[GHD_SHA256_NAME_LEN + 1];
    char tenant[GHD_TENANT_MAX + 1]; /* charged to */
    struct ghd_ukernel *kernel;      /* KERNEL */
    struct ghd_rmodule *module;      /* MODULE */
    struct ghd_list_node link;
};

static struct entry *entry_of(struct ghd_list_node *n)
{
    return n ? ghd_list_entry(n, struct entry, link) : NULL;
}

static void entry_free(struct entry *e)
{
    if (!e)
        return;
    ghd_ukernel_unref(e->kernel);
    ghd_rmodule_unref(e->module);
    free(e);
}

int ghd_inline_defs_init(struct ghd_inline_defs *c, const struct ghd_inline_config *cfg,
                         struct ghd_err *err)
{
    memset(c, 0, sizeof(*c));
    int rc = ghd_diskcache_open(&c->disk, cfg->cache_dir, cfg->cache_max_bytes, err);
    if (rc)
        return rc;
    pthread_mutex_init(&c->lock, NULL);
    ghd_list_init(&c->lru);
    c->max = cfg->max;
    c->tenant_max_kernels = cfg->tenant_max_kernels;
    c->tenant_max_modules = cfg->tenant_max_modules;
    return 0;
}

void ghd_inline_defs_destroy(struct ghd_inline_defs *c)
{
    while (!ghd_list_empty(&c->lru))
        entry_free(entry_of(ghd_list_pop_front(&c->lru)));
    pthread_mutex_destroy(&c->lock);
}

unsigned ghd_inline_defs_count(struct ghd_inline_defs *c)
{
    pthread_mutex_lock(&c->lock);
    unsigned n = c->count;
    pthread_mutex_unlock(&c->lock);
    return n;
}

/* The canonical text of a definition and its content address. */
static int name_content(json_t *def, char **canonical, char hash[GHD_SHA256_NAME_LEN + 1])
{
    *canonical = ghd_json_dumps(def, JSON_COMPACT | JSON_SORT_KEYS);
    if (!*canonical)
        return GHD_ENOHOSTMEM;
    ghd_sha256_name(*canonical, strlen(*canonical), hash);
    return 0;
}

/* pre: lock held. The entry of this content (on `rt` for a module), moved
 * to the front, or NULL. Entries are told apart by their SHA-256 alone: no
 * collision of it is known, so two texts with one hash are not expected. */
static struct entry *find_locked(struct ghd_inline_defs *c, int kind, const char *hash,
                                 const struct ghd_runtime *rt)
{
    for (struct entry *e = entry_of(c->lru.first); e; e = entry_of(e->link.next)) {
        if (e->kind != kind || strcmp(e->hash, hash) != 0 ||
            (kind == MODULE && e->module->rt != rt))
            continue;
        ghd_list_remove(&c->lru, &e->link);
        ghd_list_push_front(&c->lru, &e->link);
        return e;
    }
    return NULL;
}

/* pre: lock held. Takes e out of the list onto *gone (freed after the lock). */
static void evict_locked(struct ghd_inline_defs *c, struct entry *e, struct ghd_list *gone)
{
    ghd_list_remove(&c->lru, &e->link);
    c->count--;
    ghd_list_push_back(gone, &e->link);
}

/* pre: lock held. Stores e at the front, charged to e->tenant, after the
 * tenant's own least recently used of its kind once it holds its share,
 * and the least recently used of all past max, have gone to *gone. */
static void add_locked(struct ghd_inline_defs *c, struct entry *e, struct ghd_list *gone)
{
    unsigned share = e->kind == KERNEL ? c->tenant_max_kernels : c->tenant_max_modules;
    unsigned held = 0;
    struct entry *oldest = NULL;
    for (struct entry *o = entry_of(c->lru.first); o; o = entry_of(o->link.next))
        if (o->kind == e->kind && strcmp(o->tenant, e->tenant) == 0) {
            held++;
            oldest = o;
        }
    if (share && held >= share)
        evict_locked(c, oldest, gone);
    ghd_list_push_front(&c->lru, &e->link);
    c->count++;
    while (c->count > c->max)
        evict_locked(c, entry_of(c->lru.last), gone);
}

/* pre: lock held. A new reference to what e holds, read under the lock
 * (once it is released another request may evict e). */
static void take_locked(const struct entry *e, struct ghd_ukernel **k, struct ghd_rmodule **m)
{
    if (e->kind == KERNEL) {
        ghd_ukernel_ref(e->kernel);
        *k = e->kernel;
    } else {
        ghd_rmodule_ref(e->module);
        *m = e->module;
    }
}

/* Stores `e` (built by this request) unless the same content was stored
 * meanwhile, whose built form is then taken and e freed; *k or *m is a new
 * reference to what is kept. */
static void keep(struct ghd_inline_defs *c, struct entry *e, const struct ghd_runtime *rt,
                 struct ghd_ukernel **k, struct ghd_rmodule **m)
{
    struct ghd_list gone;
    ghd_list_init(&gone);
    pthread_mutex_lock(&c->lock);
    struct entry *have = find_locked(c, e->kind, e->hash, rt);
    take_locked(have ? have : e, k, m);
    if (!have)
        add_locked(c, e, &gone);
    pthread_mutex_unlock(&c->lock);
    if (have)
        entry_free(e);
    while (!ghd_list_empty(&gone)) /* after the lock: unloading may sync the device */
        entry_free(entry_of(ghd_list_pop_front(&gone)));
}

/* A new reference to the built form of this content (*k or *m): 1, or 0
 * when there is none. */
static int lookup(struct ghd_inline_defs *c, int kind, const char *hash,
                  const struct ghd_runtime *rt, struct ghd_ukernel **k, struct ghd_rmodule **m)
{
    pthread_mutex_lock(&c->lock);
    struct entry *e = find_locked(c, kind, hash, rt);
    if (e)
        take_locked(e, k, m);
    pthread_mutex_unlock(&c->lock);
    return e != NULL;
}

static struct entry *entry_new(int kind, const char *hash, const char *tenant)
{
    struct entry *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->kind = kind;
    snprintf(e->hash, sizeof(e->hash), "%s", hash);
    snprintf(e->tenant, sizeof(e->tenant), "%s", tenant ? tenant : "");
    return e;
}

/* The content address of `def` (*canonical the text hashed, the caller's
 * to free) and, when its built form is in memory (on `rt`, for a module),
 * a new reference to it in *k or *m: 1 (nothing left to free); 0 when it
 * must be built; or a code. */
static int find(struct ghd_inline_defs *c, int kind, json_t *def, const struct ghd_runtime *rt,
                char **canonical, char hash[GHD_SHA256_NAME_LEN + 1], struct ghd_ukernel **k,
                struct ghd_rmodule **m, const char **from, struct ghd_err *err)
{
    if (!json_is_object(def))
        return ghd_err_set(err, GHD_EINVAL, "the %s must be a JSON object",
                           kind == KERNEL ? "definition" : "module");
    if (name_content(def, canonical, hash) != 0)
        return ghd_err_set(err, GHD_ENOHOSTMEM, "out of host memory");
    if (!lookup(c, kind, hash, rt, k, m))
        return 0;
    free(*canonical);
    *from = "memory";
    return 1;
}

/* Stores what this request built, *k or *m (whose reference it steals),
 * and hands back in its place a new reference to what is kept. */
static int store(struct ghd_inline_defs *c, int kind, const char *hash, const char *tenant,
                 const struct ghd_runtime *rt, struct ghd_ukernel **k, struct ghd_rmodule **m,
                 struct ghd_err *err)
{
    struct entry *e = entry_new(kind, hash, tenant);
    if (!e) {
        ghd_ukernel_unref(*k);
        ghd_rmodule_unref(*m);
        return ghd_err_set(err, GHD_ENOHOSTMEM, "out of host memory");
    }
    e->kernel = *k;
    e->module = *m;
    keep(c, e, rt, k, m);
    return 0;
}

/* ---- user kernels: the checked definition on disk ---------------------------- */

/* What a saved definition is valid for: this build's language, the limits
 * it was checked under, and the definition itself. */
static char *disk_key(const struct ghd_ulimits *lim, const char *canonical)
{
    char *key = NULL;
    if (asprintf(&key, "udef %s %zu %zu depth %u text %zu\n%s", ghd_ulang_id,
                 sizeof(struct ghd_udef), sizeof(struct ghd_unode), lim->max_depth,
                 lim->max_definition, canonical) < 0)
        return NULL;
    return key;
}

static int disk_load(struct ghd_inline_defs *c, const char *key, struct ghd_udef *d)
{
    void *parts[2];
    size_t lens[2];
    if (!key || !ghd_diskcache_get(&c->disk, "udef", key, parts, lens, 2))
        return 0;
    int ok = ghd_udef_load(parts[0], lens[0], parts[1], lens[1], d) == 0;
    free(parts[0]);
    free(parts[1]);
    return ok;
}

static void disk_save(struct ghd_inline_defs *c, const char *key, const struct ghd_udef *d)
{
    if (!key)
        return;
    struct ghd_udef head;
    ghd_udef_save(d, &head);
    const void *parts[2] = {&head, d->nodes ? (const void *)d->nodes : ""};
    size_t lens[2] = {sizeof(head), (size_t)d->nnodes * sizeof(struct ghd_unode)};
    ghd_diskcache_put(&c->disk, "udef", key, parts, lens, 2);
}

/* The kernel built from the folder's entry, or from the definition (then
 * saved there); *from says which. */
static int build_kernel(struct ghd_inline_defs *c, json_t *def, const char *canonical,
                        const struct ghd_ulimits *lim, struct ghd_ucompiler *compiler,
                        struct ghd_ukernel **out, const char **from, struct ghd_err *err)
{
    char *key = c->disk.dir[0] ? disk_key(lim, canonical) : NULL;
    struct ghd_udef d;
    int rc;
    if (disk_load(c, key, &d)) {
        *from = "disk";
        rc = ghd_ukernel_new_checked(&d, def, lim, "", compiler, out);
        if (rc)
            ghd_err_set(err, rc, "out of host memory");
    } else {
        *from = "miss";
        rc = ghd_ukernel_new(def, lim, "", compiler, out, err);
        if (rc == 0)
            disk_save(c, key, &(*out)->def);
    }
    free(key);
    return rc;
}

int ghd_inline_kernel(struct ghd_inline_defs *c, json_t *def, const struct ghd_ulimits *lim,
                      struct ghd_ucompiler *compiler, const char *tenant,
                      struct ghd_ukernel **out, const char **from, struct ghd_err *err)
{
    char *canonical, hash[GHD_SHA256_NAME_LEN + 1];
    struct ghd_rmodule *none = NULL;
    int rc = find(c, KERNEL, def, NULL, &canonical, hash, out, &none, from, err);
    if (rc)
        return rc < 0 ? rc : 0;
    rc = build_kernel(c, def, canonical, lim, compiler, out, from, err);
    free(canonical);
    if (rc)
        return rc;
    snprintf((*out)->hash, sizeof((*out)->hash), "%s", hash);
    return store(c, KERNEL, hash, tenant, NULL, out, &none, err);
}

/* ---- raw modules ------------------------------------------------------------ */

int ghd_inline_module(struct ghd_inline_defs *c, json_t *body,
                      const struct ghd_inline_module_ctx *ctx, const char *tenant,
                      struct ghd_rmodule **out, const char **from, struct ghd_err *err)
{
    char *canonical, hash[GHD_SHA256_NAME_LEN + 1];
    struct ghd_ukernel *none = NULL;
    int rc = find(c, MODULE, body, ctx->rt, &canonical, hash, &none, out, from, err);
    if (rc)
        return rc < 0 ? rc : 0;
    free(canonical);
    rc = ghd_rmodule_new(body, ctx->max_source, ctx->id_prefix, "", ctx->compiler, ctx->rt, out,
                         err);
    if (rc)
        return rc;
    snprintf((*out)->hash, sizeof((*out)->hash), "%s", hash);
    /* what the compiler's cache answered: memory or disk, or it compiled */
    const char *cache = (*out)->cache;
    *from = strcmp(cache, "memory") == 0 ? "memory" : strcmp(cache, "disk") == 0 ? "disk" : "miss";
    return store(c, MODULE, hash, tenant, ctx->rt, &none, out, err);
}
