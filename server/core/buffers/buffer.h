#ifndef GHD_CORE_BUFFERS_BUFFER_H
#define GHD_CORE_BUFFERS_BUFFER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/idmap.h"
#include "base/list.h"
#include "base/owner.h"
#include "base/tenant.h"
#include "device/runtime.h"
#include "npy.h"

/* Buffers: named regions of device memory, reference counted so that a
 * transfer or a run keeps its buffer alive while a DELETE arrives. The table
 * maps unguessable ids (the instance's owner prefix, base/owner.h, then 128
 * bits from the kernel's CSPRNG as 32 hex digits) to buffers. A deleted
 * buffer leaves the table at once and frees its memory when the last
 * reference goes. Run ids have the same form. */

#define GHD_RANDOM_ID_LEN 32
#define GHD_BUFFER_ID_LEN (GHD_OWNER_PREFIX_LEN + GHD_RANDOM_ID_LEN)
#define GHD_LABEL_MAX 128

struct ghd_buffer {
    char id[GHD_BUFFER_ID_LEN + 1];
    size_t size;
    size_t alignment;
    unsigned device; /* rt->index: the device as the API names it */
    time_t created;
    time_t expires; /* 0 = never; a pending buffer's clock starts at publish */
    time_t ttl_s;   /* as asked for at creation, 0 = never */
    char label[GHD_LABEL_MAX + 1];
    char tenant[GHD_TENANT_MAX + 1];
    void *d_ptr;
    struct ghd_pool_block *block;
    struct ghd_event *zeroed;  /* recorded after the zeroing; NULL until a first use */
    pthread_mutex_t zero_lock; /* the first use queues the zeroing */
    atomic_int zero_done;      /* the zeroing has completed: users need not wait for it */
    struct ghd_runtime *rt;
    atomic_int refs;
    atomic_int writing; /* one writer at a time */
    atomic_int pending; /* created from a body still arriving: invisible until published */
    uint64_t seq;       /* creation order, for listing cursors */
    /* Bumped when a write starts and when it ends, so a reader that saw a
     * version saw exactly those bytes (a strong ETag) and a write in progress
     * never carries the version of a finished state. */
    atomic_uint_fast64_t version;
    /* Bytes [0, uploaded) were written by completed uploads since creation:
     * where a client continues an interrupted one (see ghd_buffer_uploaded_extend). */
    atomic_uint_fast64_t uploaded;
    pthread_mutex_t desc_lock;  /* guards desc: set by PATCH and .npy uploads */
    struct ghd_array_desc desc; /* dtype "" = raw bytes, no description */
    atomic_uint shape_epoch;    /* moved each time desc is set (a graph of it is stale) */
    struct ghd_idmap_node by_id; /* the table's index */
    struct ghd_list_node link;   /* the table's creation order; a release list after */
    /* Tiers (core/tier.h); NULL: off, the buffer stays on its device. The
     * fields below and d_ptr/block are guarded by the tiers' lock. */
    struct ghd_tiers *tiers;
    int tier;       /* enum ghd_tier: where the bytes are */
    int holds;      /* users of d_ptr now: it stays on its device */
    int readers;    /* downloads reading it from the host tier or disk */
    int moving;     /* a copy between tiers is under way: others wait */
    int pinned;     /* kept on its device (POST .../residency with pin) */
    int unreadable; /* its bytes could not be read back: every use is refused */
    struct ghd_pool_block *h_block;  /* the host tier's copy */
    struct ghd_pool_block *h_orphan; /* a host copy paged in: goes once unread and copied */
    struct ghd_event *landing[2];    /* that copy's start and end on the device (tier_in.c) */
    int behind; /* a whole write's hold: the old copy's tier, kept until it ends; 0: none */
    double last_used;                /* Unix seconds of the last hold or read */
    struct ghd_list_node tier_link;  /* its tier's least-recently-used order */
};

struct buffer_tenant; /* per-tenant usage, private to buffer.c */

struct ghd_buffer_table {
    pthread_mutex_t lock;
    struct ghd_idmap by_id;
    size_t count;
    size_t bytes;
    uint64_t next_seq;
    struct ghd_list all; /* creation order */
    /* Limits (0 = none), set once before use. A buffer counts against the
     * table and its tenant from creation until it leaves the table. */
    size_t max_buffers;        /* buffers in all */
    size_t tenant_max_bytes;   /* a tenant's bytes on all devices */
    size_t tenant_device_max[GHD_MAX_DEVICES]; /* a tenant's bytes on device i (rt->index) */
    size_t tenant_max_buffers;
    size_t reserved; /* buffers counted against the limits: in the table or being created */
    struct buffer_tenant *tenants;
    char id_prefix[GHD_OWNER_PREFIX_LEN + 1]; /* every id starts so; set once before use */
    struct ghd_tiers *tiers; /* NULL: tiers off (a full pool refuses); set once before use */
    /* Told, under the table's lock, of each buffer that leaves the table
     * (deleted, expired, discarded): what keeps it by address forgets it
     * (the run graphs, core/run_graph.h). Set once before use; NULL: none. */
    void (*on_leave)(void *ctx, const struct ghd_buffer *b);
    void *on_leave_ctx;
};

/* id_prefix: the owner prefix every id starts with (base/owner.h). */
int ghd_buffer_table_init(struct ghd_buffer_table *t, const char *id_prefix);
/* Frees every buffer still in the table. */
void ghd_buffer_table_destroy(struct ghd_buffer_table *t);

struct ghd_buffer_spec {
    size_t size;
    size_t alignment; /* 0 = the pool's */
    const char *label;  /* may be NULL */
    const char *tenant; /* may be NULL */
    time_t ttl_s;       /* 0 = never expires */
    int pending;        /* hidden from lookups and lists until ghd_buffer_publish */
    const struct ghd_array_desc *desc; /* may be NULL; its bytes must equal size */
    /* The device (core/service_devices.h) when the client named one; without
     * it the service places the buffer (--placement). */
    int has_device;
    long long device;
    /* The id of a buffer of the tenant to place it beside (?near=): its
     * device (service_buffers.h); NULL for none. */
    const char *near;
};

/* Allocates device memory from rt's pool (zeroed by its first use, see
 * ghd_buffer_order) and inserts a new
 * buffer; *out is a new reference (the table holds its own). GHD_ELIMIT when the table
 * holds max_buffers or the tenant tenant_max_buffers already, GHD_EQUOTA when the size
 * would take the tenant past tenant_max_bytes or, on rt's device, past
 * tenant_device_max, GHD_ENOMEM when the pool refuses. */
int ghd_buffer_create_new(struct ghd_buffer_table *t, struct ghd_runtime *rt,
                          const struct ghd_buffer_spec *spec, struct ghd_buffer **out);
/* Looks up an id visible to `tenant` (NULL sees only untenanted buffers);
 * *out is a new reference. GHD_ENOENT for unknown, expired or foreign ids. */
int ghd_buffer_find_new(struct ghd_buffer_table *t, const char *id, const char *tenant,
                        struct ghd_buffer **out);
/* Removes the id from the table; the memory goes back to the pool when the
 * last reference is dropped. */
int ghd_buffer_remove(struct ghd_buffer_table *t, const char *id, const char *tenant);
/* As ghd_buffer_remove, but only while match(ctx, version) holds for the
 * buffer's version (match NULL: always); GHD_EPRECOND, the buffer kept,
 * when not. `match` runs under the table's lock: it only compares.
 * *current (may be NULL) gets the version compared. */
int ghd_buffer_remove_match(struct ghd_buffer_table *t, const char *id, const char *tenant,
                            int (*match)(const void *ctx, uint64_t version), const void *ctx,
                            uint64_t *current);
/* The version now (see struct ghd_buffer) and one step on it. */
uint64_t ghd_buffer_version(const struct ghd_buffer *b);
void ghd_buffer_bump(struct ghd_buffer *b);

#define GHD_VERSIONS_MAX 8

/* The versions a conditional write accepts (write_conds.h compares and
 * starts it). */
struct ghd_versions {
    int any;    /* "*": whatever version the buffer has */
    unsigned n; /* versions[0..n) */
    uint64_t versions[GHD_VERSIONS_MAX];
};

int ghd_versions_has(const struct ghd_versions *s, uint64_t version);
/* The upload prefix (struct ghd_buffer's `uploaded`), and its growth by a
 * completed upload of [offset, offset + len): the prefix reaches the end of a
 * write that starts inside it or right after it, and stays for one past a
 * gap (the bytes between are not known to be written). It never shrinks.
 * pre: the caller holds the buffer's single-writer flag. */
uint64_t ghd_buffer_uploaded(const struct ghd_buffer *b);
void ghd_buffer_uploaded_extend(struct ghd_buffer *b, uint64_t offset, uint64_t len);
/* Copies the array description out, or replaces it (NULL clears it); a
 * change is a write, so it bumps the version.
 * pre: a new description's bytes equal b->size (the caller checks and says why). */
void ghd_buffer_desc_get(const struct ghd_buffer *b, struct ghd_array_desc *out);
void ghd_buffer_desc_set(struct ghd_buffer *b, const struct ghd_array_desc *d);
/* Makes a buffer created with spec.pending visible, and starts its time to
 * live now: an upload that outlasts the TTL must not publish a buffer that
 * has already expired (its 201 would carry an `expires` in the past). */
void ghd_buffer_publish(struct ghd_buffer *b);
/* Removes `b` itself from the table if it is still there, visible or not
 * (a pending buffer whose upload failed). */
void ghd_buffer_discard(struct ghd_buffer_table *t, struct ghd_buffer *b);
/* Every user of b->d_ptr calls this on its stream before its first copy or
 * launch: the first one queues the buffer's zeroing there, later ones wait
 * for that zeroing on the device (the host does not wait). A device failure
 * fills *error (NULL: the code is enough). */
int ghd_buffer_order(struct ghd_buffer *b, struct ghd_stream *s, struct ghd_err *error);
/* Every byte of b was written by its first user (a copy) before anyone else
 * could see it: b needs no zeroing, and later users no wait for one.
 * pre: b is pending and nothing called ghd_buffer_order on it. */
void ghd_buffer_mark_written(struct ghd_buffer *b);
/* b has new device memory (the tiers gave it a block, core/tiers/tier.h).
 * With e (stolen), its bytes are being written on the device until e's
 * point, and every later user's ghd_buffer_order waits for e on its own
 * stream, as for a zeroing: the CPU does not wait. With NULL, its next
 * user zeroes it first, as a new buffer's.
 * pre: nothing uses b's memory; an event it had before has completed. */
void ghd_buffer_reorder(struct ghd_buffer *b, struct ghd_event *e);
void ghd_buffer_ref(struct ghd_buffer *b);
void ghd_buffer_unref(struct ghd_buffer *b);

/* Calls fn for up to `limit` buffers of `tenant` created after `after_seq`,
 * in creation order, under the table lock; fn must not call back into the
 * table. Returns how many it visited. *more says whether any remain. */
size_t ghd_buffer_list(struct ghd_buffer_table *t, const char *tenant, uint64_t after_seq,
                       size_t limit, void (*fn)(const struct ghd_buffer *b, void *ctx),
                       void *ctx, int *more);
/* What `tenant` (NULL: the untenanted) holds now: bytes and buffers. */
void ghd_buffer_tenant_usage(struct ghd_buffer_table *t, const char *tenant, size_t *bytes,
                             size_t *count);
/* The bytes of `tenant`'s buffers (NULL: the untenanted) on device `device`
 * (an rt->index). */
size_t ghd_buffer_tenant_bytes_on(struct ghd_buffer_table *t, const char *tenant,
                                  unsigned device);
/* What the table holds now: buffers and their bytes (the metrics' gauges). */
void ghd_buffer_table_totals(struct ghd_buffer_table *t, size_t *count, size_t *bytes);
/* Removes expired buffers; returns how many. */
size_t ghd_buffer_expire(struct ghd_buffer_table *t, time_t now);

/* Fills `out` with 32 hex digits of CSPRNG output and a NUL. */
int ghd_random_id(char out[GHD_RANDOM_ID_LEN + 1]);
/* Fills `out` with `prefix` (GHD_OWNER_PREFIX_LEN characters, base/owner.h)
 * and ghd_random_id's digits: a buffer's or a run's id. */
int ghd_owned_id(const char *prefix, char out[GHD_BUFFER_ID_LEN + 1]);

#endif
