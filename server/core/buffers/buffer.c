#include "buffer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/error.h"
#include "base/log.h"
#include "core/tiers/tier_buffer.h"

#define INITIAL_SLOTS 1024

struct buffer_tenant {
    char name[GHD_TENANT_MAX + 1];
    size_t bytes, count;
    size_t device_bytes[GHD_MAX_DEVICES]; /* bytes by rt->index */
    struct buffer_tenant *next;
};

/* pre: lock held. The usage of `name`; created on first use when `create`
 * (NULL only when that allocation fails or when absent). Entries stay: there
 * are as many as tenants, which the token table bounds. */
static struct buffer_tenant *tenant_locked(struct ghd_buffer_table *t, const char *name,
                                           int create)
{
    for (struct buffer_tenant *u = t->tenants; u; u = u->next)
        if (strcmp(u->name, name) == 0)
            return u;
    if (!create)
        return NULL;
    struct buffer_tenant *u = calloc(1, sizeof(*u));
    if (!u)
        return NULL;
    snprintf(u->name, sizeof(u->name), "%s", name);
    u->next = t->tenants;
    t->tenants = u;
    return u;
}

/* pre: lock held. Takes back what a buffer of `size` on `device` counted
 * for `name`. */
static void tenant_release_locked(struct ghd_buffer_table *t, const char *name,
                                  unsigned device, size_t size)
{
    struct buffer_tenant *u = tenant_locked(t, name, 0);
    GHD_ASSERT(u && u->count > 0 && u->bytes >= size && u->device_bytes[device] >= size);
    u->count--;
    u->bytes -= size;
    u->device_bytes[device] -= size;
    t->reserved--;
}

/* Whether `more` bytes on top of `held` pass `limit` (0: no limit). */
static int past(size_t held, size_t more, size_t limit)
{
    return limit && (held > limit || more > limit - held);
}

/* pre: lock held. Reserves a buffer of `size` on rt's device for u, or says
 * which limit refuses it: the table's count (GHD_ELIMIT), the tenant's count
 * (GHD_ELIMIT), its bytes (GHD_EQUOTA) or its share of the device's pool
 * (GHD_EQUOTA). */
static int tenant_reserve_locked(struct ghd_buffer_table *t, struct buffer_tenant *u,
                                 const struct ghd_runtime *rt, size_t size)
{
    size_t share = t->tenant_device_max[rt->index];
    if ((t->max_buffers && t->reserved >= t->max_buffers) ||
        (t->tenant_max_buffers && u->count >= t->tenant_max_buffers))
        return GHD_ELIMIT;
    if (past(u->bytes, size, t->tenant_max_bytes) ||
        past(u->device_bytes[rt->index], size, share))
        return GHD_EQUOTA;
    u->count++;
    u->bytes += size;
    u->device_bytes[rt->index] += size;
    t->reserved++;
    return 0;
}

/* Each thread draws the kernel's random bytes for 16 ids at a time: an id
 * per request was a getrandom(2) per request. */
static int random_bytes(unsigned char *out, size_t len)
{
    static __thread unsigned char pool[256];
    static __thread size_t left;
    if (left < len) {
        size_t got = 0;
        while (got < sizeof(pool)) {
            ssize_t n = getrandom(pool + got, sizeof(pool) - got, 0);
            if (n < 0)
                return GHD_EINTERNAL;
            got += (size_t)n;
        }
        left = sizeof(pool);
    }
    memcpy(out, pool + sizeof(pool) - left, len);
    memset(pool + sizeof(pool) - left, 0, len); /* used once */
    left -= len;
    return 0;
}

int ghd_random_id(char out[GHD_RANDOM_ID_LEN + 1])
{
    unsigned char raw[GHD_RANDOM_ID_LEN / 2];
    if (random_bytes(raw, sizeof(raw)) != 0)
        return GHD_EINTERNAL;
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof(raw); i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[GHD_RANDOM_ID_LEN] = '\0';
    return 0;
}

int ghd_owned_id(const char *prefix, char out[GHD_BUFFER_ID_LEN + 1])
{
    GHD_ASSERT(strlen(prefix) == GHD_OWNER_PREFIX_LEN);
    memcpy(out, prefix, GHD_OWNER_PREFIX_LEN);
    return ghd_random_id(out + GHD_OWNER_PREFIX_LEN);
}

static struct ghd_buffer *buffer_of(struct ghd_list_node *n)
{
    return ghd_list_entry(n, struct ghd_buffer, link);
}

int ghd_buffer_table_init(struct ghd_buffer_table *t, const char *id_prefix)
{
    memset(t, 0, sizeof(*t));
    GHD_ASSERT(strlen(id_prefix) == GHD_OWNER_PREFIX_LEN);
    memcpy(t->id_prefix, id_prefix, sizeof(t->id_prefix));
    int rc = ghd_idmap_init(&t->by_id, INITIAL_SLOTS);
    if (rc != 0)
        return rc;
    ghd_list_init(&t->all);
    pthread_mutex_init(&t->lock, NULL);
    return 0;
}

/* The block goes back to the pool only after its zeroing has run: a later
 * owner's data must not be overwritten by it. Every user of the buffer waited
 * for its own work before dropping its reference. */
static void buffer_free(struct ghd_buffer *b)
{
    struct ghd_runtime *rt = b->rt;
    if (b->zeroed) {
        struct ghd_err err = {0};
        if (rt->dev.ops->event_sync(&rt->dev, b->zeroed, &err) != 0)
            ghd_log(GHD_LOG_ERROR, "buffer %s: zeroing did not complete: %s", b->id,
                    ghd_err_text(&err, GHD_EDEVICE));
        ghd_runtime_event_release(rt, b->zeroed);
    }
    pthread_mutex_destroy(&b->zero_lock);
    pthread_mutex_destroy(&b->desc_lock);
    if (b->tiers)
        ghd_tier_forget(b); /* its block, host copy or file, wherever it is */
    else
        ghd_pool_free(&rt->pool, b->block);
    free(b);
}

/* pre: lock held. Unlinks b from the hash chain and the creation list. */
static void unlink_locked(struct ghd_buffer_table *t, struct ghd_buffer *b)
{
    if (t->on_leave)
        t->on_leave(t->on_leave_ctx, b);
    ghd_idmap_remove(&t->by_id, &b->by_id);
    ghd_list_remove(&t->all, &b->link);
    t->count--;
    t->bytes -= b->size;
    tenant_release_locked(t, b->tenant, b->device, b->size);
}

void ghd_buffer_table_destroy(struct ghd_buffer_table *t)
{
    while (!ghd_list_empty(&t->all)) {
        struct ghd_buffer *b = buffer_of(t->all.first);
        unlink_locked(t, b);
        ghd_buffer_unref(b);
    }
    while (t->tenants) {
        struct buffer_tenant *u = t->tenants;
        t->tenants = u->next;
        free(u);
    }
    ghd_idmap_destroy(&t->by_id);
    pthread_mutex_destroy(&t->lock);
}

/* Pool blocks are reused as they are: without zeroing a new buffer would
 * show the bytes of a deleted one, possibly another tenant's. The zeroing is
 * queued by the buffer's first user, on that user's stream ahead of its own
 * work, and its event orders every later user after it on the device until
 * it is seen complete. So creating a buffer touches no device, and one
 * deleted unused never does. */
int ghd_buffer_order(struct ghd_buffer *b, struct ghd_stream *s, struct ghd_err *error)
{
    /* Once the zeroing has completed, work queued from now on runs after it
     * anyway: no lock, no device call. */
    if (atomic_load_explicit(&b->zero_done, memory_order_acquire))
        return 0;
    struct ghd_device *dev = &b->rt->dev;
    pthread_mutex_lock(&b->zero_lock);
    int rc;
    if (b->zeroed) {
        rc = dev->ops->event_done(dev, b->zeroed, error);
        if (rc == 0) {
            rc = dev->ops->stream_wait_event(dev, s, b->zeroed, error);
        } else if (rc == 1) {
            atomic_store_explicit(&b->zero_done, 1, memory_order_release);
            rc = 0;
        }
    } else {
        rc = ghd_runtime_event_acquire(b->rt, &b->zeroed, error);
        if (rc == 0)
            rc = dev->ops->memset(dev, b->d_ptr, 0, b->size, s, error);
        if (rc == 0)
            rc = dev->ops->event_record(dev, b->zeroed, s, error);
        if (rc && b->zeroed) { /* the next user zeroes it again */
            ghd_runtime_event_release(b->rt, b->zeroed);
            b->zeroed = NULL;
        }
    }
    pthread_mutex_unlock(&b->zero_lock);
    return rc;
}

void ghd_buffer_mark_written(struct ghd_buffer *b)
{
    GHD_ASSERT(atomic_load(&b->pending) && !b->zeroed);
    atomic_store_explicit(&b->zero_done, 1, memory_order_release);
}

void ghd_buffer_reorder(struct ghd_buffer *b, struct ghd_event *e)
{
    pthread_mutex_lock(&b->zero_lock);
    if (b->zeroed)
        ghd_runtime_event_release(b->rt, b->zeroed);
    b->zeroed = e;
    atomic_store_explicit(&b->zero_done, 0, memory_order_release);
    pthread_mutex_unlock(&b->zero_lock);
}

int ghd_buffer_create_new(struct ghd_buffer_table *t, struct ghd_runtime *rt,
                          const struct ghd_buffer_spec *spec, struct ghd_buffer **out)
{
    struct ghd_buffer *b = calloc(1, sizeof(*b));
    if (!b)
        return GHD_ENOHOSTMEM;
    int rc = ghd_owned_id(t->id_prefix, b->id);
    if (rc)
        goto fail;
    snprintf(b->tenant, sizeof(b->tenant), "%s", spec->tenant ? spec->tenant : "");
    /* Reserve the tenant's share first, so concurrent creations cannot pass
     * the limits together. */
    pthread_mutex_lock(&t->lock);
    struct buffer_tenant *u = tenant_locked(t, b->tenant, 1);
    rc = u ? tenant_reserve_locked(t, u, rt, spec->size) : GHD_ENOHOSTMEM;
    pthread_mutex_unlock(&t->lock);
    if (rc)
        goto fail;
    rc = ghd_tier_alloc(t->tiers, rt, spec->size, spec->alignment, &b->block, NULL);
    if (rc) {
        pthread_mutex_lock(&t->lock);
        tenant_release_locked(t, b->tenant, rt->index, spec->size);
        pthread_mutex_unlock(&t->lock);
        goto fail;
    }
    b->rt = rt;
    b->d_ptr = ghd_pool_block_ptr(b->block);
    b->size = spec->size;
    b->alignment = spec->alignment > rt->pool.cfg.alignment ? spec->alignment
                                                            : rt->pool.cfg.alignment;
    b->device = rt->index;
    b->created = time(NULL);
    b->ttl_s = spec->ttl_s;
    b->expires = spec->ttl_s && !spec->pending ? b->created + spec->ttl_s : 0;
    snprintf(b->label, sizeof(b->label), "%s", spec->label ? spec->label : "");
    atomic_init(&b->refs, 2); /* the table's and the caller's */
    atomic_init(&b->writing, 0);
    atomic_init(&b->pending, spec->pending);
    pthread_mutex_init(&b->zero_lock, NULL);
    pthread_mutex_init(&b->desc_lock, NULL);
    atomic_init(&b->version, 1);
    atomic_init(&b->uploaded, 0);
    if (spec->desc)
        b->desc = *spec->desc;
    b->tiers = t->tiers;
    ghd_tier_adopt(b);
    pthread_mutex_lock(&t->lock);
    ghd_idmap_insert(&t->by_id, &b->by_id, b->id);
    b->seq = ++t->next_seq;
    ghd_list_push_back(&t->all, &b->link);
    t->count++;
    t->bytes += b->size;
    pthread_mutex_unlock(&t->lock);
    *out = b;
    return 0;
fail:
    free(b);
    return rc;
}

static int visible(const struct ghd_buffer *b, const char *tenant, time_t now)
{
    if (atomic_load(&b->pending) || (b->expires && b->expires <= now))
        return 0;
    return strcmp(b->tenant, tenant ? tenant : "") == 0;
}

static struct ghd_buffer *find_locked(struct ghd_buffer_table *t, const char *id,
                                      const char *tenant)
{
    if (strlen(id) != GHD_BUFFER_ID_LEN)
        return NULL;
    struct ghd_idmap_node *n = ghd_idmap_find(&t->by_id, id);
    if (!n)
        return NULL;
    struct ghd_buffer *b = ghd_container_of(n, struct ghd_buffer, by_id);
    return visible(b, tenant, time(NULL)) ? b : NULL;
}

int ghd_buffer_find_new(struct ghd_buffer_table *t, const char *id, const char *tenant,
                        struct ghd_buffer **out)
{
    pthread_mutex_lock(&t->lock);
    struct ghd_buffer *b = find_locked(t, id, tenant);
    if (b)
        ghd_buffer_ref(b);
    pthread_mutex_unlock(&t->lock);
    if (!b)
        return GHD_ENOENT;
    *out = b;
    return 0;
}

int ghd_buffer_remove(struct ghd_buffer_table *t, const char *id, const char *tenant)
{
    return ghd_buffer_remove_match(t, id, tenant, NULL, NULL, NULL);
}

/* The version is compared under the table lock, so two conditional DELETEs
 * cannot both succeed; a write may still start until the unlink. */
int ghd_buffer_remove_match(struct ghd_buffer_table *t, const char *id, const char *tenant,
                            int (*match)(const void *ctx, uint64_t version), const void *ctx,
                            uint64_t *current)
{
    int rc = 0;
    pthread_mutex_lock(&t->lock);
    struct ghd_buffer *b = find_locked(t, id, tenant);
    if (!b) {
        rc = GHD_ENOENT;
    } else {
        uint64_t v = atomic_load(&b->version);
        if (current)
            *current = v;
        if (!match || match(ctx, v))
            unlink_locked(t, b);
        else
            rc = GHD_EPRECOND;
    }
    pthread_mutex_unlock(&t->lock);
    if (rc)
        return rc;
    ghd_buffer_unref(b);
    return 0;
}

uint64_t ghd_buffer_version(const struct ghd_buffer *b)
{
    return atomic_load(&((struct ghd_buffer *)b)->version);
}

void ghd_buffer_bump(struct ghd_buffer *b)
{
    atomic_fetch_add(&b->version, 1);
}

uint64_t ghd_buffer_uploaded(const struct ghd_buffer *b)
{
    return atomic_load(&((struct ghd_buffer *)b)->uploaded);
}

void ghd_buffer_uploaded_extend(struct ghd_buffer *b, uint64_t offset, uint64_t len)
{
    /* One writer at a time: no other thread stores the prefix meanwhile. */
    uint64_t now = atomic_load(&b->uploaded);
    if (offset <= now && offset + len > now)
        atomic_store(&b->uploaded, offset + len);
}

int ghd_versions_has(const struct ghd_versions *s, uint64_t version)
{
    if (s->any)
        return 1;
    for (unsigned i = 0; i < s->n; i++)
        if (s->versions[i] == version)
            return 1;
    return 0;
}

/* The lock is not part of the buffer's logical state, hence the cast. */
void ghd_buffer_desc_get(const struct ghd_buffer *b, struct ghd_array_desc *out)
{
    pthread_mutex_t *lock = (pthread_mutex_t *)&b->desc_lock;
    pthread_mutex_lock(lock);
    *out = b->desc;
    pthread_mutex_unlock(lock);
}

void ghd_buffer_desc_set(struct ghd_buffer *b, const struct ghd_array_desc *d)
{
    pthread_mutex_lock(&b->desc_lock);
    if (d)
        b->desc = *d;
    else
        memset(&b->desc, 0, sizeof(b->desc));
    atomic_fetch_add(&b->shape_epoch, 1);
    pthread_mutex_unlock(&b->desc_lock);
    ghd_buffer_bump(b);
}

void ghd_buffer_publish(struct ghd_buffer *b)
{
    /* Written before pending is cleared: the expiry sweep, which skips
     * pending buffers, reads it only after it has seen pending at 0. */
    if (b->ttl_s)
        b->expires = time(NULL) + b->ttl_s;
    atomic_store(&b->pending, 0);
}

void ghd_buffer_discard(struct ghd_buffer_table *t, struct ghd_buffer *b)
{
    int linked = 0;
    pthread_mutex_lock(&t->lock);
    for (struct ghd_idmap_node *n = ghd_idmap_find(&t->by_id, b->id); n;
         n = ghd_idmap_find_next(n))
        linked |= n == &b->by_id;
    if (linked)
        unlink_locked(t, b);
    pthread_mutex_unlock(&t->lock);
    if (linked)
        ghd_buffer_unref(b); /* the table's reference */
}

void ghd_buffer_ref(struct ghd_buffer *b)
{
    atomic_fetch_add(&b->refs, 1);
}

void ghd_buffer_unref(struct ghd_buffer *b)
{
    if (b && atomic_fetch_sub(&b->refs, 1) == 1)
        buffer_free(b);
}

size_t ghd_buffer_list(struct ghd_buffer_table *t, const char *tenant, uint64_t after_seq,
                       size_t limit, void (*fn)(const struct ghd_buffer *b, void *ctx),
                       void *ctx, int *more)
{
    size_t n = 0;
    time_t now = time(NULL);
    *more = 0;
    pthread_mutex_lock(&t->lock);
    for (struct ghd_buffer *b = buffer_of(t->all.first); b; b = buffer_of(b->link.next)) {
        if (b->seq <= after_seq || !visible(b, tenant, now))
            continue;
        if (n == limit) {
            *more = 1;
            break;
        }
        fn(b, ctx);
        n++;
    }
    pthread_mutex_unlock(&t->lock);
    return n;
}

void ghd_buffer_tenant_usage(struct ghd_buffer_table *t, const char *tenant, size_t *bytes,
                             size_t *count)
{
    pthread_mutex_lock(&t->lock);
    struct buffer_tenant *u = tenant_locked(t, tenant ? tenant : "", 0);
    *bytes = u ? u->bytes : 0;
    *count = u ? u->count : 0;
    pthread_mutex_unlock(&t->lock);
}

size_t ghd_buffer_tenant_bytes_on(struct ghd_buffer_table *t, const char *tenant,
                                  unsigned device)
{
    GHD_ASSERT(device < GHD_MAX_DEVICES);
    pthread_mutex_lock(&t->lock);
    struct buffer_tenant *u = tenant_locked(t, tenant ? tenant : "", 0);
    size_t bytes = u ? u->device_bytes[device] : 0;
    pthread_mutex_unlock(&t->lock);
    return bytes;
}

void ghd_buffer_table_totals(struct ghd_buffer_table *t, size_t *count, size_t *bytes)
{
    pthread_mutex_lock(&t->lock);
    *count = t->count;
    *bytes = t->bytes;
    pthread_mutex_unlock(&t->lock);
}

size_t ghd_buffer_expire(struct ghd_buffer_table *t, time_t now)
{
    struct ghd_list dead;
    size_t n = 0;
    ghd_list_init(&dead);
    pthread_mutex_lock(&t->lock);
    for (struct ghd_buffer *b = buffer_of(t->all.first), *next; b; b = next) {
        next = buffer_of(b->link.next);
        if (!atomic_load(&b->pending) && b->expires && b->expires <= now) {
            unlink_locked(t, b);
            ghd_list_push_back(&dead, &b->link); /* released after the lock */
            n++;
        }
    }
    pthread_mutex_unlock(&t->lock);
    while (!ghd_list_empty(&dead))
        ghd_buffer_unref(buffer_of(ghd_list_pop_front(&dead)));
    return n;
}
