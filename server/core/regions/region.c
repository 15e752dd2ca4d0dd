/* The region table: registration (open, check, map, page-lock), lookups per
 * tenant, and unregistering that waits for the transfers in flight. */
#include "region.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"

static const char *tenant_or_none(const char *tenant)
{
    return tenant ? tenant : "";
}

/* The kernel's boot id, which every process of the host reads alike (in any
 * container too), into host; "" when it cannot be read. */
static void read_host(char *host, size_t cap)
{
    host[0] = '\0';
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (!f)
        return;
    if (!fgets(host, (int)cap, f))
        host[0] = '\0';
    fclose(f);
    host[strcspn(host, "\n")] = '\0';
}

int ghd_region_table_init(struct ghd_region_table *t, const char *id_prefix)
{
    memset(t, 0, sizeof(*t));
    GHD_ASSERT(strlen(id_prefix) == GHD_OWNER_PREFIX_LEN);
    memcpy(t->id_prefix, id_prefix, sizeof(t->id_prefix));
    read_host(t->host, sizeof(t->host));
    int rc = ghd_idmap_init(&t->by_id, 16);
    if (rc)
        return rc;
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->released, NULL);
    ghd_list_init(&t->all);
    return 0;
}

/* Gives back everything a region holds. pre: nothing else references it. */
static void region_free(struct ghd_region *r)
{
    struct ghd_device *dev = &r->rt->dev;
    if (r->kind == GHD_REGION_CUDA_IPC) {
        if (r->ptr)
            dev->ops->ipc_close(dev, r->ptr);
    } else {
        if (r->pinned)
            dev->ops->host_unregister(dev, r->pinned);
        if (r->ptr)
            munmap(r->ptr, r->size);
        if (r->fd >= 0)
            close(r->fd);
    }
    free(r);
}

void ghd_region_table_destroy(struct ghd_region_table *t)
{
    struct ghd_list_node *n;
    while ((n = ghd_list_pop_front(&t->all)) != NULL)
        region_free(ghd_container_of(n, struct ghd_region, link));
    ghd_idmap_destroy(&t->by_id);
    pthread_cond_destroy(&t->released);
    pthread_mutex_destroy(&t->lock);
}

static void usage_locked(struct ghd_region_table *t, const char *tenant, unsigned *count,
                         size_t *pinned)
{
    *count = 0;
    *pinned = 0;
    for (struct ghd_list_node *n = t->all.first; n; n = n->next) {
        struct ghd_region *r = ghd_container_of(n, struct ghd_region, link);
        if (strcmp(r->tenant, tenant) != 0)
            continue;
        (*count)++;
        *pinned += r->kind == GHD_REGION_SHM ? r->size : 0;
    }
}

void ghd_region_tenant_usage(struct ghd_region_table *t, const char *tenant, unsigned *count,
                             size_t *pinned)
{
    pthread_mutex_lock(&t->lock);
    usage_locked(t, tenant_or_none(tenant), count, pinned);
    pthread_mutex_unlock(&t->lock);
}

int ghd_region_tenant_list_new(struct ghd_region_table *t, const char *tenant,
                               struct ghd_region ***out, unsigned *n, size_t *pinned)
{
    tenant = tenant_or_none(tenant);
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&t->lock);
    unsigned count;
    usage_locked(t, tenant, &count, pinned);
    struct ghd_region **list = count ? calloc(count, sizeof(*list)) : NULL;
    if (count && !list) {
        pthread_mutex_unlock(&t->lock);
        return GHD_ENOHOSTMEM;
    }
    for (struct ghd_list_node *node = t->all.first; node; node = node->next) {
        struct ghd_region *r = ghd_container_of(node, struct ghd_region, link);
        if (strcmp(r->tenant, tenant) == 0) {
            r->refs++;
            list[(*n)++] = r;
        }
    }
    pthread_mutex_unlock(&t->lock);
    *out = list;
    return 0;
}

/* The room the tenant has for one more region of `size` page-locked bytes. */
static int limits_locked(struct ghd_region_table *t, const struct ghd_region *r,
                         struct ghd_err *err)
{
    unsigned count;
    size_t pinned;
    usage_locked(t, r->tenant, &count, &pinned);
    const char *who = r->tenant[0] ? r->tenant : "(none)";
    if (t->tenant_max_regions && count >= t->tenant_max_regions)
        return ghd_err_set(err, GHD_ELIMIT,
                           "tenant '%s' has %u regions registered, its limit "
                           "(--tenant-max-regions); unregister some first "
                           "(GET /v1/regions lists them)",
                           who, count);
    size_t add = r->kind == GHD_REGION_SHM ? r->size : 0;
    size_t max = t->tenant_max_pinned;
    if (max && (add > max || pinned > max - add))
        return ghd_err_set(err, GHD_EQUOTA,
                           "tenant '%s' has %zu bytes of regions page-locked; %zu more would "
                           "pass its limit of %zu bytes (--tenant-max-pinned)",
                           who, pinned, add, t->tenant_max_pinned);
    return 0;
}

/* A segment is one tenant's while it is registered: another tenant that
 * names it (by the same name, another link, or a name reused) is refused, so
 * that the segment's bytes are read and written for its first tenant alone. */
static int claimed_locked(struct ghd_region_table *t, const struct ghd_region *r,
                          struct ghd_err *err)
{
    if (r->kind != GHD_REGION_SHM)
        return 0;
    for (struct ghd_list_node *n = t->all.first; n; n = n->next) {
        const struct ghd_region *o = ghd_container_of(n, struct ghd_region, link);
        if (o->kind == GHD_REGION_SHM && o->st_dev == r->st_dev && o->st_ino == r->st_ino &&
            strcmp(o->tenant, r->tenant) != 0)
            return ghd_err_set(err, GHD_EBUSY,
                               "segment '%.64s' is registered by another tenant; a segment "
                               "serves one tenant at a time (create one of your own)",
                               r->name);
    }
    return 0;
}

/* "/name": one leading slash, then 1 to 254 printable characters, no slash
 * (what shm_open accepts portably). */
static int shm_name_check(const char *name, struct ghd_err *err)
{
    size_t len = name ? strlen(name) : 0;
    if (len < 2 || len > GHD_REGION_NAME_MAX || name[0] != '/')
        return ghd_err_set(err, GHD_EUNPROC,
                           "'shm' must be a segment name such as \"/mydata\": a slash and 1 to "
                           "%d more characters",
                           GHD_REGION_NAME_MAX - 1);
    for (size_t i = 1; i < len; i++)
        if (name[i] == '/' || (unsigned char)name[i] <= 0x20 || name[i] == 0x7f)
            return ghd_err_set(err, GHD_EUNPROC,
                               "'shm': a segment name has no slash after the first and no "
                               "spaces or control characters");
    return 0;
}

/* Whose the segment is and who else may open it: the server's own user's,
 * mode 0600 or narrower, unless --shm-allow-shared. A segment others can
 * open is one another tenant (or another user's process) can read and write
 * beside the transfers, and a root server would otherwise map any user's
 * segment, whatever its mode, for whoever names it. */
static int shm_owner_check(const struct stat *st, const char *name, int allow_shared,
                           struct ghd_err *err)
{
    if (allow_shared)
        return 0;
    if (st->st_uid != geteuid())
        return ghd_err_set(err, GHD_EFORBIDDEN,
                           "segment '%.64s' belongs to uid %u, not to the server's user (uid %u); "
                           "the server takes only its own user's segments (start it with "
                           "--shm-allow-shared to take others)",
                           name, (unsigned)st->st_uid, (unsigned)geteuid());
    if (st->st_mode & 077)
        return ghd_err_set(err, GHD_EFORBIDDEN,
                           "segment '%.64s' has mode %04o, which lets other users read or write "
                           "it; create it with mode 0600 (or start the server with "
                           "--shm-allow-shared)",
                           name, (unsigned)(st->st_mode & 07777));
    return 0;
}

static int shm_open_map(struct ghd_region *r, const char *name, int allow_shared,
                        struct ghd_err *err)
{
    int rc = shm_name_check(name, err);
    if (rc)
        return rc;
    snprintf(r->name, sizeof(r->name), "%s", name);
    r->fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (r->fd < 0) {
        int e = errno;
        if (e == EACCES)
            return ghd_err_set(err, GHD_EFORBIDDEN,
                               "the server may not open segment '%.64s' read-write (give the "
                               "server's user read and write permission)",
                               name);
        return ghd_err_set(err, GHD_EUNPROC,
                           "no shared-memory segment '%.64s' on the server's host: %s (create "
                           "it with shm_open on the same host first)",
                           name, strerror(e));
    }
    struct stat st;
    if (fstat(r->fd, &st) != 0)
        return ghd_err_set(err, GHD_EINTERNAL, "fstat of segment '%.64s': %s", name,
                           strerror(errno));
    r->st_dev = st.st_dev;
    r->st_ino = st.st_ino;
    if ((rc = shm_owner_check(&st, name, allow_shared, err)) != 0)
        return rc;
    if ((uint64_t)st.st_size < r->size)
        return ghd_err_set(err, GHD_EUNPROC,
                           "segment '%.64s' is %lld bytes, smaller than the size asked for, %zu",
                           name, (long long)st.st_size, r->size);
    void *p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (p == MAP_FAILED)
        return ghd_err_set(err, GHD_ENOHOSTMEM, "cannot map %zu bytes of segment '%.64s': %s",
                           r->size, name, strerror(errno));
    r->ptr = p;
    /* Locked once, here: transfers are then DMA straight from the client's
     * pages, which stay the server's to read even if the client shrinks the
     * file. A segment that cannot be locked is refused rather than copied
     * from pageable memory: the driver would stage those pages with CPU
     * copies of its own, where a truncated file's SIGBUS cannot be caught
     * (base/fault_guard.h guards only the server's own copies). */
    struct ghd_device *dev = &r->rt->dev;
    struct ghd_err lerr = {0};
    rc = dev->ops->host_register(dev, p, r->size, &lerr);
    if (rc)
        return ghd_err_set(err, GHD_ENOHOSTMEM,
                           "cannot page-lock the %zu bytes of segment '%.64s' (%s); register a "
                           "smaller region or free page-locked memory on the server's host",
                           r->size, name, ghd_err_text(&lerr, rc));
    r->pinned = p;
    return 0;
}

/* Device memory another process exported: mapped, and the size asked for
 * checked against the exported allocation, since a copy past its end would
 * reach whatever else the device holds there. */
static int ipc_open_checked(struct ghd_region *r, const struct ghd_region_spec *spec,
                            struct ghd_err *err)
{
    struct ghd_device *dev = &r->rt->dev;
    size_t avail = 0;
    int rc = dev->ops->ipc_open(dev, spec->ipc_handle, spec->ipc_handle_len, &r->ptr, &avail,
                                err);
    if (rc == 0 && avail < r->size)
        rc = ghd_err_set(err, GHD_EUNPROC,
                         "the exported allocation has %zu bytes from the handle's address, "
                         "fewer than 'size' %zu",
                         avail, r->size);
    return rc; /* on failure region_free closes what was opened */
}

int ghd_region_register_new(struct ghd_region_table *t, struct ghd_runtime *rt,
                            const struct ghd_region_spec *spec, struct ghd_region **out,
                            struct ghd_err *err)
{
    *out = NULL;
    if (!t->allowed)
        return ghd_err_set(err, GHD_EFORBIDDEN,
                           "regions are off on this server (start it with --allow-shm)");
    if (spec->size == 0)
        return ghd_err_set(err, GHD_EUNPROC, "'size' must be at least 1 byte");
    struct ghd_region *r = calloc(1, sizeof(*r));
    if (!r)
        return ghd_err_set(err, GHD_ENOHOSTMEM, "out of host memory");
    r->fd = -1;
    r->kind = spec->kind;
    r->size = spec->size;
    r->rt = rt;
    r->refs = 1;
    r->created = time(NULL);
    snprintf(r->tenant, sizeof(r->tenant), "%s", tenant_or_none(spec->tenant));
    int rc = ghd_owned_id(t->id_prefix, r->id);
    if (rc) {
        ghd_err_set(err, rc, "cannot draw a region id");
        goto fail;
    }
    /* A refusal by limit costs no mapping. */
    pthread_mutex_lock(&t->lock);
    rc = limits_locked(t, r, err);
    pthread_mutex_unlock(&t->lock);
    if (rc)
        goto fail;
    double t0 = ghd_clock_s();
    if (spec->kind == GHD_REGION_SHM)
        rc = shm_open_map(r, spec->shm_name, t->allow_shared, err);
    else
        rc = ipc_open_checked(r, spec, err);
    if (rc)
        goto fail;
    r->register_s = ghd_clock_s() - t0;
    pthread_mutex_lock(&t->lock);
    rc = limits_locked(t, r, err); /* again: others may have registered meanwhile */
    if (rc == 0)
        rc = claimed_locked(t, r, err);
    if (rc == 0) {
        ghd_idmap_insert(&t->by_id, &r->by_id, r->id);
        ghd_list_push_back(&t->all, &r->link);
        r->refs++; /* the caller's */
    }
    pthread_mutex_unlock(&t->lock);
    if (rc)
        goto fail;
    *out = r;
    return 0;
fail:
    region_free(r);
    return rc;
}

static struct ghd_region *find_locked(struct ghd_region_table *t, const char *id,
                                      const char *tenant)
{
    for (struct ghd_idmap_node *n = ghd_idmap_find(&t->by_id, id); n; n = ghd_idmap_find_next(n)) {
        struct ghd_region *r = ghd_container_of(n, struct ghd_region, by_id);
        if (strcmp(r->tenant, tenant_or_none(tenant)) == 0)
            return r;
    }
    return NULL;
}

int ghd_region_find_new(struct ghd_region_table *t, const char *id, const char *tenant,
                        struct ghd_region **out)
{
    pthread_mutex_lock(&t->lock);
    struct ghd_region *r = find_locked(t, id, tenant);
    if (r)
        r->refs++;
    pthread_mutex_unlock(&t->lock);
    *out = r;
    return r ? 0 : GHD_ENOENT;
}

void ghd_region_unref(struct ghd_region_table *t, struct ghd_region *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&t->lock);
    int last = --r->refs == 0;
    pthread_cond_broadcast(&t->released);
    pthread_mutex_unlock(&t->lock);
    if (last)
        region_free(r);
}

int ghd_region_remove(struct ghd_region_table *t, const char *id, const char *tenant)
{
    pthread_mutex_lock(&t->lock);
    struct ghd_region *r = find_locked(t, id, tenant);
    if (!r) {
        pthread_mutex_unlock(&t->lock);
        return GHD_ENOENT;
    }
    ghd_idmap_remove(&t->by_id, &r->by_id);
    ghd_list_remove(&t->all, &r->link);
    /* Only the table's reference left: no transfer touches the memory. */
    while (r->refs > 1)
        pthread_cond_wait(&t->released, &t->lock);
    r->refs = 0;
    pthread_mutex_unlock(&t->lock);
    region_free(r);
    return 0;
}

uint64_t ghd_region_transfers(struct ghd_region_table *t, const struct ghd_region *r)
{
    pthread_mutex_lock(&t->lock);
    uint64_t n = r->transfers;
    pthread_mutex_unlock(&t->lock);
    return n;
}
