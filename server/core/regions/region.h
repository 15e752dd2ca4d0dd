#ifndef GHD_CORE_REGIONS_REGION_H
#define GHD_CORE_REGIONS_REGION_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "base/idmap.h"
#include "base/list.h"
#include "base/tenant.h"
#include "core/buffers/buffer.h"
#include "device/runtime.h"

/* Regions: memory a client on the same host shares with the server, named in
 * transfers instead of a request body. A POSIX shared-memory segment the
 * client created is opened by name, checked against the size asked for,
 * mapped and page-locked once, at registration (so transfers are plain DMA);
 * a CUDA IPC region is device memory another process exported. A region
 * belongs to its tenant: no other tenant finds it.
 *
 * A name is no secret (anyone on the host lists /dev/shm), so what protects
 * a segment is the segment itself: unless --shm-allow-shared, the server
 * takes only segments its own user owns whose mode grants no group or other
 * access, and a segment (its st_dev and st_ino) registered by one tenant
 * cannot be registered by another while that registration lives (409). A
 * client that unlinks the name once registered leaves nothing to name.
 *
 * Lifetimes: the table holds one reference and every transfer one more.
 * Unregistering takes the region out of the table at once (new lookups fail)
 * and then waits until the transfers in flight have dropped theirs, so that
 * when it returns the server no longer touches the client's memory.
 *
 * The client keeps control of its segment and may shrink it at any time:
 * every transfer checks the segment's size first, and CPU copies (the host
 * backend) run under a SIGBUS guard (base/fault_guard.h). */

#define GHD_REGION_ID_LEN GHD_BUFFER_ID_LEN /* the owner prefix, then 128 random bits */
#define GHD_REGION_NAME_MAX 255
#define GHD_REGION_HOST_MAX 36 /* a boot id: a UUID's text */

enum ghd_region_kind {
    GHD_REGION_SHM = 0,
    GHD_REGION_CUDA_IPC = 1
};

struct ghd_region {
    char id[GHD_REGION_ID_LEN + 1];
    char tenant[GHD_TENANT_MAX + 1];
    char name[GHD_REGION_NAME_MAX + 1]; /* the segment's name; "" for CUDA IPC */
    enum ghd_region_kind kind;
    size_t size;
    void *ptr;    /* the mapping (SHM) or the device pointer (CUDA IPC) */
    int fd;       /* the segment, for fstat before each transfer; -1 for IPC */
    dev_t st_dev; /* the segment's identity (SHM), whatever its name */
    ino_t st_ino;
    void *pinned; /* what host_unregister takes (SHM); NULL for IPC */
    double register_s; /* how long mapping and page-locking took */
    struct ghd_runtime *rt;
    time_t created;
    uint64_t transfers; /* completed, under the table lock */
    int refs;           /* under the table lock */
    struct ghd_idmap_node by_id;
    struct ghd_list_node link;
};

struct ghd_region_table {
    pthread_mutex_t lock;
    pthread_cond_t released; /* a reference was dropped */
    struct ghd_idmap by_id;
    struct ghd_list all;
    char id_prefix[GHD_OWNER_PREFIX_LEN + 1]; /* every id starts so (base/owner.h) */
    /* The kernel's boot id (/proc/sys/kernel/random/boot_id), "" when it
     * cannot be read: a client that reads the same one runs on the same
     * host, so its segments can be named here. */
    char host[GHD_REGION_HOST_MAX + 1];
    /* Set once before use. */
    int allowed;               /* --allow-shm */
    int allow_shared;          /* --shm-allow-shared: other owners, modes past 0600 */
    unsigned tenant_max_regions; /* 0 = no limit */
    size_t tenant_max_pinned;    /* bytes, 0 = no limit */
};

/* id_prefix: the owner prefix every id starts with (base/owner.h). Reads
 * the host's boot id into t->host. */
int ghd_region_table_init(struct ghd_region_table *t, const char *id_prefix);
/* Unmaps and unlocks every region still registered.
 * pre: no transfer is in flight. */
void ghd_region_table_destroy(struct ghd_region_table *t);

struct ghd_region_spec {
    enum ghd_region_kind kind;
    const char *shm_name;  /* SHM: "/name", as shm_open takes it */
    const void *ipc_handle; /* CUDA IPC: the handle's bytes */
    size_t ipc_handle_len;
    size_t size;
    const char *tenant; /* NULL: the untenanted */
};

/* Registers a region on rt's device; *out is a new reference (the table
 * keeps its own). GHD_EFORBIDDEN when regions are off, GHD_EUNPROC for a name
 * or size that does not fit (a segment or an exported allocation smaller
 * than `size`, a name that is not "/x", a CUDA IPC handle that opens
 * nothing), GHD_ENOENT when no segment has that name, GHD_EFORBIDDEN for a
 * segment of another user or one whose mode grants group or other access
 * (unless allow_shared), GHD_EBUSY for a segment another tenant has
 * registered (by st_dev and st_ino, whatever name either gave), GHD_ENOHOSTMEM when a
 * segment cannot be mapped or page-locked, GHD_ELIMIT or GHD_EQUOTA past the
 * tenant's region count or pinned bytes, GHD_ENOTSUP for CUDA IPC on the
 * host backend. *err says which and why. */
int ghd_region_register_new(struct ghd_region_table *t, struct ghd_runtime *rt,
                            const struct ghd_region_spec *spec, struct ghd_region **out,
                            struct ghd_err *err);
/* The region `id` of `tenant`; *out is a new reference. GHD_ENOENT for an
 * unknown or foreign id. */
int ghd_region_find_new(struct ghd_region_table *t, const char *id, const char *tenant,
                        struct ghd_region **out);
/* Unregisters `id`, waiting for the transfers that hold it. GHD_ENOENT for
 * an unknown or foreign id. */
int ghd_region_remove(struct ghd_region_table *t, const char *id, const char *tenant);
void ghd_region_unref(struct ghd_region_table *t, struct ghd_region *r);
/* What `tenant` holds now: regions and page-locked bytes. */
void ghd_region_tenant_usage(struct ghd_region_table *t, const char *tenant, unsigned *count,
                             size_t *pinned);
/* `tenant`'s regions, oldest first: *out is a malloc'd array of *n new
 * references (NULL when none), each for ghd_region_unref, and *pinned their
 * page-locked bytes (as ghd_region_tenant_usage counts them, at the same
 * moment). GHD_ENOHOSTMEM when the array cannot be allocated. */
int ghd_region_tenant_list_new(struct ghd_region_table *t, const char *tenant,
                               struct ghd_region ***out, unsigned *n, size_t *pinned);
/* Completed transfers that named r. */
uint64_t ghd_region_transfers(struct ghd_region_table *t, const struct ghd_region *r);

/* --- transfers -------------------------------------------------------- */

/* One end of a transfer: a region or a buffer (exactly one is set), from
 * byte `offset`. */
struct ghd_xfer_end {
    struct ghd_region *region;
    struct ghd_buffer *buffer;
    uint64_t offset;
};

struct ghd_xfer_result {
    uint64_t bytes;
    double seconds; /* from the first copy to the last one's completion */
    uint64_t version; /* the destination buffer's version after the write; 0: none */
};

/* The most bytes one device copy of a transfer moves. */
#define GHD_XFER_CHUNK ((size_t)64 << 20)

/* Moves `bytes` from `from` to `to` by DMA in chunks of GHD_XFER_CHUNK on a
 * stream of the buffer's runtime (region->buffer, buffer->region,
 * buffer->buffer). A write into a buffer takes its single-writer flag
 * (GHD_EBUSY while an upload holds it) and moves its version at the start
 * and at the end, as a PUT does; `if_match` (NULL: none) names the versions
 * the destination may have (GHD_EPRECOND and *current when it has another).
 * Ranges past an end are GHD_ERANGE naming "from.offset", "to.offset" or
 * "bytes"; a segment shrunk below the range is GHD_EBUSY naming the region.
 * The caller keeps its references. */
int ghd_region_transfer(struct ghd_region_table *t, const struct ghd_xfer_end *from,
                        const struct ghd_xfer_end *to, uint64_t bytes,
                        const struct ghd_versions *if_match, struct ghd_xfer_result *res,
                        uint64_t *current, struct ghd_err *err);

#endif
