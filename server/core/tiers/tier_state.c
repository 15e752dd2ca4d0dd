/* The tiers' life and what they show (tier.h): opening and closing, a
 * buffer's arrival and departure, downloads that read a spilled buffer
 * where it is, residency asked for by a client, and the figures. */
#include "tier.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/error.h"
#include "core/config/config.h"
#include "tier_disk.h"
#include "tier_internal.h"

static const char *const names[GHD_TIER_COUNT] = {"device", "host", "disk"};

const char *ghd_tier_name(enum ghd_tier t)
{
    return t < GHD_TIER_COUNT ? names[t] : "device";
}

int ghd_tier_parse(const char *name, enum ghd_tier *out)
{
    for (int i = 0; i < GHD_TIER_COUNT; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *out = (enum ghd_tier)i;
            return 0;
        }
    return GHD_EINVAL;
}

/* The host tier's pool takes its slabs through these: the first device's
 * page-locked host memory. */
static int host_slab_alloc(struct ghd_device *shim, size_t size, void **ptr, struct ghd_err *error)
{
    struct ghd_tiers *t = ghd_container_of(shim, struct ghd_tiers, host_dev);
    return t->real->ops->host_alloc(t->real, size, ptr, error);
}

static void host_slab_free(struct ghd_device *shim, void *ptr)
{
    struct ghd_tiers *t = ghd_container_of(shim, struct ghd_tiers, host_dev);
    t->real->ops->host_free(t->real, ptr);
}

static int open_host(struct ghd_tiers *t, size_t bytes, struct ghd_err *err)
{
    t->host_ops = *t->real->ops;
    t->host_ops.mem_alloc = host_slab_alloc;
    t->host_ops.mem_free = host_slab_free;
    t->host_dev = *t->real;
    t->host_dev.ops = &t->host_ops;
    size_t slab = (size_t)256 << 20;
    if (slab > bytes)
        slab = bytes & ~(((size_t)2 << 20) - 1);
    struct ghd_pool_config pc = {.alignment = 4096, .slab_size = slab ? slab : (size_t)2 << 20,
                                 .limit = bytes};
    int rc = ghd_pool_init(&t->host_pool, &t->host_dev, &pc);
    if (rc)
        return ghd_err_set(err, rc, "host tier: cannot open its pool");
    t->has_host = 1;
    t->host_cap = bytes;
    return 0;
}

/* Whether a disk tier of `bytes` is larger than half the host's memory. */
static int beyond_the_cache(size_t bytes)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 && bytes > (size_t)pages * (size_t)page / 2;
}

static int open_disk(struct ghd_tiers *t, const char *dir, size_t bytes, int direct,
                     struct ghd_err *err)
{
    if (strlen(dir) >= sizeof(t->dir))
        return ghd_err_set(err, GHD_EINVAL, "--disk-tier: the path is too long");
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return ghd_err_set(err, GHD_EINVAL, "--disk-tier %s: cannot create it: %s", dir,
                           strerror(errno));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return ghd_err_set(err, GHD_EINVAL, "--disk-tier %s is not a folder", dir);
    struct statvfs vfs;
    if (!bytes && statvfs(dir, &vfs) == 0)
        bytes = (size_t)vfs.f_bavail * vfs.f_frsize;
    if (!bytes)
        return ghd_err_set(err, GHD_EINVAL, "--disk-tier %s: no free space", dir);
    snprintf(t->dir, sizeof(t->dir), "%s", dir);
    t->has_disk = 1;
    t->disk_cap = bytes;
    t->direct = direct == GHD_TIER_DIRECT_AUTO ? beyond_the_cache(bytes) : direct;
    return 0;
}

int ghd_tiers_new(const struct ghd_tier_config *cfg, struct ghd_runtime *rts, unsigned count,
                  struct ghd_tiers **out, struct ghd_err *err)
{
    *out = NULL;
    int disk = cfg->disk_dir && cfg->disk_dir[0];
    if (!cfg->host_bytes && !disk)
        return 0;
    struct ghd_tiers *t = calloc(1, sizeof(*t));
    if (!t)
        return ghd_err_set(err, GHD_ENOHOSTMEM, "no host memory for the tiers");
    t->rts = rts;
    t->count = count;
    t->real = &rts[0].dev; /* page-locked host memory comes from the first device */
    t->wait_ms = cfg->wait_ms;
    t->ahead = cfg->ahead;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->changed, NULL);
    pthread_cond_init(&t->pressure, NULL);
    pthread_mutex_init(&t->copy_lock, NULL);
    int rc = cfg->host_bytes ? open_host(t, cfg->host_bytes, err) : 0;
    for (unsigned i = 0; i < count && rc == 0; i++)
        rc = rts[i].dev.ops->stream_new(&rts[i].dev, &t->copy[i], err);
    if (rc == 0 && disk)
        rc = open_disk(t, cfg->disk_dir, cfg->disk_bytes, cfg->direct, err);
    if (rc) {
        ghd_tiers_free(t);
        return rc;
    }
    for (unsigned i = 0; i < count; i++)
        ghd_tier_reclaim_attach(t, &rts[i], &t->reclaim[i]);
    if (ghd_tier_ahead_start(t) != 0) {
        ghd_tiers_free(t);
        return ghd_err_set(err, GHD_EINTERNAL, "cannot start the tiers' thread");
    }
    *out = t;
    return 0;
}

int ghd_tiers_open(const struct ghd_config *cfg, struct ghd_runtime *rts, unsigned count,
                   struct ghd_tiers **out, struct ghd_err *err)
{
    struct ghd_tier_config tc = {.host_bytes = cfg->host_tier,
                                 .disk_dir = cfg->disk_tier,
                                 .disk_bytes = cfg->disk_tier_size,
                                 .wait_ms = GHD_TIER_WAIT_MS,
                                 .ahead = GHD_TIER_AHEAD,
                                 .direct = GHD_TIER_DIRECT_AUTO};
    if (cfg->spill && !tc.host_bytes) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        tc.host_bytes = pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 2 : 0;
    }
    *out = NULL;
    if (!cfg->spill && !cfg->host_tier && !cfg->disk_tier[0])
        return 0;
    return ghd_tiers_new(&tc, rts, count, out, err);
}

void ghd_tiers_free(struct ghd_tiers *t)
{
    if (!t)
        return;
    ghd_tier_ahead_stop(t); /* first: it moves buffers */
    for (unsigned i = 0; i < t->count; i++)
        if (t->rts[i].pool.reclaim_ctx == &t->reclaim[i])
            t->rts[i].pool.reclaim = NULL;
    if (t->real)
        ghd_tier_io_free(t);
    if (t->has_host)
        ghd_pool_destroy(&t->host_pool);
    for (unsigned i = 0; i < t->count; i++)
        if (t->copy[i]) /* idle: every buffer went, each after its users' work */
            t->rts[i].dev.ops->stream_free(&t->rts[i].dev, t->copy[i]);
    pthread_mutex_destroy(&t->copy_lock);
    pthread_cond_destroy(&t->changed);
    pthread_cond_destroy(&t->pressure);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void ghd_tier_adopt(struct ghd_buffer *b)
{
    struct ghd_tiers *t = b->tiers;
    b->last_used = ghd_tier_now();
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    b->tier = GHD_TIER_DEVICE;
    ghd_list_push_back(&t->lru[b->device], &b->tier_link);
    pthread_mutex_unlock(&t->lock);
}

void ghd_tier_forget(struct ghd_buffer *b)
{
    struct ghd_tiers *t = b->tiers;
    pthread_mutex_lock(&t->lock);
    GHD_ASSERT(!b->holds && !b->readers && !b->moving);
    if (b->tier == GHD_TIER_DEVICE) {
        ghd_list_remove(&t->lru[b->device], &b->tier_link);
        ghd_pool_free(&b->rt->pool, b->block);
    } else if (b->tier == GHD_TIER_HOST) {
        ghd_list_remove(&t->host_lru, &b->tier_link);
        ghd_pool_free(&t->host_pool, b->h_block);
    } else {
        ghd_tier_file_remove(t->dir, b->id);
        t->disk_used -= b->size;
    }
    ghd_tier_behind_drop_locked(t, b);
    ghd_tier_orphan_reap_locked(t, b, 1); /* the buffer's users all waited for its copy */
    b->block = b->h_block = NULL;
    pthread_mutex_unlock(&t->lock);
}

int ghd_tier_read_begin(struct ghd_buffer *b, struct ghd_tier_read *r, struct ghd_err *err)
{
    struct ghd_tiers *t = b->tiers;
    memset(r, 0, sizeof(*r));
    r->fd = -1;
    r->tier = GHD_TIER_DEVICE;
    if (!t)
        return 0;
    pthread_mutex_lock(&t->lock);
    int rc = ghd_tier_settle_locked(t, b, err);
    r->tier = (enum ghd_tier)b->tier;
    if (rc == 0 && b->tier == GHD_TIER_DISK) {
        /* Opened under the lock: a page-in removes the file only after. */
        struct ghd_tier_file_id f = {t->dir, b->id, b->size, 0, t->direct};
        rc = ghd_tier_file_open(&f, &r->fd, err);
        r->offset = 0;
        if (rc)
            b->unreadable = 1;
    }
    if (rc == 0 && b->tier == GHD_TIER_HOST)
        r->h_ptr = ghd_pool_block_ptr(b->h_block);
    if (rc == 0) {
        if (b->tier == GHD_TIER_DEVICE)
            b->holds++;
        else
            b->readers++;
        ghd_tier_touch_locked(t, b);
    }
    pthread_mutex_unlock(&t->lock);
    return rc;
}

void ghd_tier_read_end(struct ghd_buffer *b, struct ghd_tier_read *r)
{
    struct ghd_tiers *t = b->tiers;
    if (!t)
        return;
    if (r->fd >= 0)
        close(r->fd);
    r->fd = -1;
    pthread_mutex_lock(&t->lock);
    if (r->tier == GHD_TIER_DEVICE)
        b->holds--;
    else
        b->readers--;
    ghd_tier_orphan_reap_locked(t, b, 0);
    pthread_cond_broadcast(&t->changed);
    pthread_mutex_unlock(&t->lock);
}

/* Out of the device (to host or disk) or from the host tier to disk. */
static int move_out(struct ghd_tiers *t, struct ghd_buffer *b, enum ghd_tier to,
                    struct ghd_err *err)
{
    pthread_mutex_lock(&t->lock);
    int rc = ghd_tier_settle_locked(t, b, err);
    int from = b->tier;
    if (rc == 0 && to == GHD_TIER_HOST && !t->has_host)
        rc = ghd_err_set(err, GHD_EUNPROC, "this server has no host tier (--host-tier, --spill)");
    else if (rc == 0 && to == GHD_TIER_DISK && !t->has_disk)
        rc = ghd_err_set(err, GHD_EUNPROC, "this server has no disk tier (--disk-tier)");
    else if (rc == 0 && from == GHD_TIER_DISK && to == GHD_TIER_HOST)
        rc = ghd_err_set(err, GHD_EUNPROC,
                         "buffer %s is on disk: it moves back only to the device", b->id);
    else if (rc == 0 && from != (int)to && (b->holds || b->readers))
        rc = ghd_err_set(err, GHD_EBUSY, "buffer %s is in use: retry when it is not", b->id);
    if (rc || from == (int)to) {
        if (rc == 0)
            b->pinned = 0;
        pthread_mutex_unlock(&t->lock);
        return rc;
    }
    b->pinned = 0;
    b->moving = 1;
    pthread_mutex_unlock(&t->lock);
    if (from == GHD_TIER_HOST)
        return ghd_tier_spill_host(t, b, err);
    return ghd_tier_spill_device(t, b, to, err);
}

int ghd_tier_move(struct ghd_buffer *b, enum ghd_tier to, int pin, struct ghd_err *err)
{
    struct ghd_tiers *t = b->tiers;
    if (!t)
        return to == GHD_TIER_DEVICE && !pin
                   ? 0
                   : ghd_err_set(err, GHD_EUNPROC,
                                 "tiers are off on this server (--spill, --host-tier, "
                                 "--disk-tier): every buffer stays on its device");
    if (to != GHD_TIER_DEVICE)
        return move_out(t, b, to, err);
    int rc = ghd_tier_hold(b, err);
    if (rc)
        return rc;
    pthread_mutex_lock(&t->lock);
    b->pinned = pin;
    pthread_mutex_unlock(&t->lock);
    ghd_tier_release(b);
    return 0;
}

void ghd_tier_state(const struct ghd_buffer *b, enum ghd_tier *tier, double *last_used,
                    int *pinned)
{
    struct ghd_tiers *t = b->tiers;
    if (t)
        pthread_mutex_lock(&t->lock);
    *tier = (enum ghd_tier)b->tier;
    *last_used = b->last_used;
    *pinned = b->pinned;
    if (t)
        pthread_mutex_unlock(&t->lock);
}

void ghd_tiers_stats(struct ghd_tiers *t, unsigned device, struct ghd_tier_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!t || device >= GHD_MAX_DEVICES)
        return;
    pthread_mutex_lock(&t->lock);
    *out = t->stats[device];
    pthread_mutex_unlock(&t->lock);
}

void ghd_tiers_usage(struct ghd_tiers *t, size_t *host_bytes, size_t *host_cap,
                     size_t *disk_bytes, size_t *disk_cap)
{
    *host_bytes = *host_cap = *disk_bytes = *disk_cap = 0;
    if (!t)
        return;
    struct ghd_pool_stats ps = {0};
    if (t->has_host)
        ghd_pool_get_stats(&t->host_pool, &ps);
    pthread_mutex_lock(&t->lock);
    *host_bytes = ps.in_use;
    *host_cap = t->host_cap;
    *disk_bytes = t->disk_used;
    *disk_cap = t->disk_cap;
    pthread_mutex_unlock(&t->lock);
}
