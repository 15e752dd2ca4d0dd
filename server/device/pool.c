/* Slab-and-bin allocator for device memory. Each slab is a list of chunks in
 * address order; free chunks are also threaded on a bin chosen by size class
 * (four classes per power of two), searched upward from the request's class.
 * Device memory is never touched from here: chunk headers live on the host. */
#include "pool.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"

struct pool_chunk {
    struct pool_slab *slab;
    size_t offset; /* from the slab's base */
    size_t size;
    int free;
    struct pool_chunk *prev, *next;   /* address order within the slab */
    struct pool_chunk *bprev, *bnext; /* bin list, free chunks only */
    void *user;                       /* aligned pointer handed out */
    size_t requested;
};

struct pool_slab {
    char *base;
    size_t size;
    size_t used;
    struct pool_chunk *chunks;
    struct pool_slab *next;
};

struct ghd_pool_block {
    struct pool_chunk chunk;
};

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) & ~(a - 1);
}

static int is_pow2(size_t v)
{
    return v && !(v & (v - 1));
}

/* Size class: four per power of two, so bins stay within 25% of a request. */
static unsigned bin_of(size_t size)
{
    if (size < 1024)
        return 0;
    unsigned log2 = 63u - (unsigned)__builtin_clzll(size);
    unsigned sub = (unsigned)((size >> (log2 - 2)) & 3u);
    unsigned bin = (log2 - 9) * 4 + sub;
    return bin < GHD_POOL_BINS ? bin : GHD_POOL_BINS - 1;
}

static void bin_insert(struct ghd_pool *p, struct pool_chunk *c)
{
    unsigned b = bin_of(c->size);
    c->bprev = NULL;
    c->bnext = p->bins[b];
    if (c->bnext)
        c->bnext->bprev = c;
    p->bins[b] = c;
}

static void bin_remove(struct ghd_pool *p, struct pool_chunk *c)
{
    if (c->bprev)
        c->bprev->bnext = c->bnext;
    else
        p->bins[bin_of(c->size)] = c->bnext;
    if (c->bnext)
        c->bnext->bprev = c->bprev;
    c->bprev = c->bnext = NULL;
}

static struct pool_chunk *chunk_new(struct pool_slab *s, size_t offset, size_t size)
{
    struct pool_chunk *c = calloc(1, sizeof(struct ghd_pool_block));
    if (!c)
        return NULL;
    c->slab = s;
    c->offset = offset;
    c->size = size;
    c->free = 1;
    return c;
}

static int slab_add(struct ghd_pool *p, size_t size)
{
    if (p->cfg.limit && p->stats.reserved + size > p->cfg.limit)
        return GHD_ENOMEM;
    struct pool_slab *s = calloc(1, sizeof(*s));
    if (!s)
        return GHD_ENOHOSTMEM;
    void *base = NULL;
    int rc = p->dev->ops->mem_alloc(p->dev, size, &base, NULL);
    if (rc) {
        free(s);
        return rc == GHD_EDEVICE ? GHD_ENOMEM : rc;
    }
    s->base = base;
    s->size = size;
    s->chunks = chunk_new(s, 0, size);
    if (!s->chunks) {
        p->dev->ops->mem_free(p->dev, base);
        free(s);
        return GHD_ENOHOSTMEM;
    }
    s->next = p->slabs;
    p->slabs = s;
    p->stats.reserved += size;
    p->stats.slabs++;
    p->stats.slab_allocs++;
    bin_insert(p, s->chunks);
    return 0;
}

static void slab_release(struct ghd_pool *p, struct pool_slab *s)
{
    struct pool_chunk *c = s->chunks;
    bin_remove(p, c);
    free(c);
    p->dev->ops->mem_free(p->dev, s->base);
    p->stats.reserved -= s->size;
    p->stats.slabs--;
    free(s);
}

int ghd_pool_init(struct ghd_pool *p, struct ghd_device *dev, const struct ghd_pool_config *cfg)
{
    GHD_ASSERT(is_pow2(cfg->alignment) && cfg->alignment >= 256);
    memset(p, 0, sizeof(*p));
    p->dev = dev;
    p->cfg = *cfg;
    if (!p->cfg.slab_size)
        p->cfg.slab_size = (size_t)256 << 20;
    p->cfg.slab_size = round_up(p->cfg.slab_size, (size_t)2 << 20);
    p->stats.limit = cfg->limit;
    pthread_mutex_init(&p->lock, NULL);
    if (cfg->initial) {
        int rc = slab_add(p, round_up(cfg->initial, (size_t)2 << 20));
        if (rc) {
            pthread_mutex_destroy(&p->lock);
            return rc;
        }
    }
    return 0;
}

void ghd_pool_destroy(struct ghd_pool *p)
{
    while (p->slabs) {
        struct pool_slab *s = p->slabs;
        p->slabs = s->next;
        if (s->chunks && s->chunks->next == NULL && s->chunks->free) {
            slab_release(p, s);
            continue;
        }
        ghd_log(GHD_LOG_WARN, "pool: destroying a slab with live blocks");
        for (struct pool_chunk *c = s->chunks, *n; c; c = n) {
            n = c->next;
            free(c);
        }
        p->dev->ops->mem_free(p->dev, s->base);
        free(s);
    }
    pthread_mutex_destroy(&p->lock);
}

/* The user pointer is aligned inside the chunk; `need` covers the worst shift. */
static struct pool_chunk *find_fit(struct ghd_pool *p, size_t need)
{
    for (unsigned b = bin_of(need); b < GHD_POOL_BINS; b++) {
        struct pool_chunk *best = NULL;
        for (struct pool_chunk *c = p->bins[b]; c; c = c->bnext)
            if (c->size >= need && (!best || c->size < best->size))
                best = c;
        if (best)
            return best;
    }
    return NULL;
}

static int split(struct ghd_pool *p, struct pool_chunk *c, size_t size)
{
    if (c->size - size < p->cfg.alignment)
        return 0;
    struct pool_chunk *rest = chunk_new(c->slab, c->offset + size, c->size - size);
    if (!rest)
        return GHD_ENOHOSTMEM;
    rest->prev = c;
    rest->next = c->next;
    if (c->next)
        c->next->prev = rest;
    c->next = rest;
    c->size = size;
    bin_insert(p, rest);
    return 0;
}

static size_t trim_locked(struct ghd_pool *p)
{
    size_t released = 0;
    struct pool_slab **link = &p->slabs;
    while (*link) {
        struct pool_slab *s = *link;
        if (s->used == 0) {
            *link = s->next;
            released += s->size;
            slab_release(p, s);
        } else {
            link = &s->next;
        }
    }
    return released;
}

static int alloc_locked(struct ghd_pool *p, size_t size, size_t align,
                        struct ghd_pool_block **out)
{
#ifdef GHD_TESTABLE
    if (p->fail_countdown > 0 && --p->fail_countdown == 0)
        return GHD_ENOMEM;
#endif
    size_t need = round_up(size ? size : 1, p->cfg.alignment) + (align - p->cfg.alignment);
    struct pool_chunk *c = find_fit(p, need);
    if (!c) {
        size_t slab = need > p->cfg.slab_size ? round_up(need, (size_t)2 << 20) : p->cfg.slab_size;
        int rc = slab_add(p, slab);
        if (rc == GHD_ENOMEM && trim_locked(p) > 0)
            rc = slab_add(p, slab);
        if (rc == GHD_ENOMEM && slab > need) /* a smaller slab may still fit the limit */
            rc = slab_add(p, slab = round_up(need, (size_t)2 << 20));
        if (rc)
            return rc;
        c = find_fit(p, need);
        GHD_ASSERT(c != NULL);
    }
    bin_remove(p, c);
    int rc = split(p, c, need);
    if (rc) {
        bin_insert(p, c);
        return rc;
    }
    c->free = 0;
    c->requested = size;
    uintptr_t base = (uintptr_t)c->slab->base + c->offset;
    c->user = (void *)round_up(base, align);
    c->slab->used += c->size;
    p->stats.in_use += c->size;
    if (p->stats.in_use > p->stats.peak)
        p->stats.peak = p->stats.in_use;
    p->stats.allocations++;
    p->stats.live_blocks++;
    *out = (struct ghd_pool_block *)c;
    return 0;
}

int ghd_pool_alloc(struct ghd_pool *p, size_t size, size_t alignment,
                   struct ghd_pool_block **out)
{
    size_t align = alignment > p->cfg.alignment ? alignment : p->cfg.alignment;
    if (alignment && !is_pow2(alignment))
        return GHD_EINVAL;
    if (align > p->cfg.slab_size)
        return GHD_EINVAL;
    if (size > SIZE_MAX / 2)
        return GHD_ENOMEM;
    pthread_mutex_lock(&p->lock);
    int rc = alloc_locked(p, size, align, out);
    for (unsigned attempt = 0; rc == GHD_ENOMEM && p->reclaim; attempt++) {
        pthread_mutex_unlock(&p->lock);
        int again = p->reclaim(p->reclaim_ctx, size, attempt) == 0;
        pthread_mutex_lock(&p->lock);
        if (!again)
            break;
        rc = alloc_locked(p, size, align, out);
    }
    if (rc)
        p->stats.failures++;
    pthread_mutex_unlock(&p->lock);
    return rc;
}

/* Both chunks are free and binned: both leave their bins before c is freed
 * (a freed chunk left in a bin was a use after free). */
static void merge_into_prev(struct ghd_pool *p, struct pool_chunk *c)
{
    struct pool_chunk *prev = c->prev;
    bin_remove(p, c);
    bin_remove(p, prev);
    prev->size += c->size;
    prev->next = c->next;
    if (c->next)
        c->next->prev = prev;
    free(c);
    bin_insert(p, prev);
}

void ghd_pool_free(struct ghd_pool *p, struct ghd_pool_block *block)
{
    if (!block)
        return;
    struct pool_chunk *c = &block->chunk;
    pthread_mutex_lock(&p->lock);
    GHD_ASSERT(!c->free);
    c->free = 1;
    c->slab->used -= c->size;
    p->stats.in_use -= c->size;
    p->stats.frees++;
    p->stats.live_blocks--;
    bin_insert(p, c);
    if (c->next && c->next->free)
        merge_into_prev(p, c->next);
    if (c->prev && c->prev->free)
        merge_into_prev(p, c);
    pthread_mutex_unlock(&p->lock);
}

void *ghd_pool_block_ptr(const struct ghd_pool_block *block)
{
    return block->chunk.user;
}

size_t ghd_pool_block_size(const struct ghd_pool_block *block)
{
    return block->chunk.requested;
}

void ghd_pool_get_stats(struct ghd_pool *p, struct ghd_pool_stats *out)
{
    pthread_mutex_lock(&p->lock);
    size_t free_total = 0, largest = 0;
    for (unsigned b = 0; b < GHD_POOL_BINS; b++) {
        for (struct pool_chunk *c = p->bins[b]; c; c = c->bnext) {
            free_total += c->size;
            if (c->size > largest)
                largest = c->size;
        }
    }
    *out = p->stats;
    out->largest_free = largest;
    out->fragmentation = free_total ? 1.0 - (double)largest / (double)free_total : 0.0;
    pthread_mutex_unlock(&p->lock);
}

size_t ghd_pool_trim(struct ghd_pool *p)
{
    pthread_mutex_lock(&p->lock);
    size_t released = trim_locked(p);
    pthread_mutex_unlock(&p->lock);
    return released;
}

#ifdef GHD_TESTABLE
void ghd_pool_fail_nth(struct ghd_pool *p, long n)
{
    pthread_mutex_lock(&p->lock);
    p->fail_countdown = n;
    pthread_mutex_unlock(&p->lock);
}
#endif
