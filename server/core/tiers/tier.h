#ifndef GHD_CORE_TIERS_TIER_H
#define GHD_CORE_TIERS_TIER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/list.h"
#include "tier_buffer.h"
#include "device/runtime.h"

/* Tiers: device memory as a cache over host memory and disk (README.md,
 * "Beyond device memory"). A buffer lives whole in one tier: its device's
 * pool, the host tier (page-locked on CUDA, from a pool of its own) or a
 * file of the disk tier. When a pool allocation (a new buffer, a page-in)
 * finds the pool full, the least recently used buffer of that device that
 * nobody uses is copied out on a stream of the tier's own and its block
 * freed once the copy is done; the host tier overflows to disk the same
 * way. Every user of a buffer's device memory (a run, a transfer, a copy)
 * holds it (ghd_tier_hold) while it uses it: a held buffer is on its device
 * and never moves. A download of a spilled buffer reads it where it is
 * (ghd_tier_read_begin). Both backends go through the same code: the
 * device ops' copies and host_alloc, nothing backend-specific.
 *
 * One lock (struct ghd_tiers.lock) guards every buffer's tier state and the
 * lists; copies and file I/O run outside it while the buffer is marked
 * moving, which every other user waits out. */

enum ghd_tier { GHD_TIER_DEVICE = 0, GHD_TIER_HOST = 1, GHD_TIER_DISK = 2, GHD_TIER_COUNT };

struct ghd_buffer;
struct ghd_tiers;

struct ghd_tier_config {
    size_t host_bytes;    /* the host tier's capacity; 0 = none */
    const char *disk_dir; /* the disk tier's folder; NULL or "" = none */
    size_t disk_bytes;    /* its capacity */
    unsigned wait_ms;     /* how long an allocation waits for held buffers to be let go */
    /* Room kept free ahead of need, in the background: this many of the
     * largest allocations seen on a device, at most a sixteenth of its pool
     * unless one allocation needs more (0: buffers move out only when an
     * allocation needs the room). */
    unsigned ahead;
    /* O_DIRECT for the disk tier's files (where the filesystem takes it):
     * 1 on, 0 off, GHD_TIER_DIRECT_AUTO on when the tier may hold more than
     * half the host's memory (the page cache could not keep it: buffered
     * I/O would only copy every byte twice and crowd out the rest; a tier
     * the cache holds is read back at memory speed without it). */
    int direct;
};
#define GHD_TIER_DIRECT_AUTO (-1)

/* What the tiers counted on one device: the moves out of it (evictions)
 * and back (page-ins) by the tier moved to or from, with their bytes and
 * seconds. */
struct ghd_tier_stats {
    uint64_t evictions[GHD_TIER_COUNT]; /* [HOST]: device -> host, [DISK]: device or host -> disk */
    uint64_t evicted_bytes[GHD_TIER_COUNT];
    double evict_s[GHD_TIER_COUNT];
    uint64_t page_ins[GHD_TIER_COUNT]; /* from [HOST] or [DISK] to the device */
    uint64_t page_in_bytes[GHD_TIER_COUNT];
    double page_in_s[GHD_TIER_COUNT];
    uint64_t failures; /* a spill or page-in that did not happen */
};

/* Opens the tiers over the service's runtimes; *out NULL when both
 * capacities are 0 (tiers off). The disk folder is created if missing;
 * GHD_EINVAL (the reason in *err) when it cannot be. */
int ghd_tiers_new(const struct ghd_tier_config *cfg, struct ghd_runtime *rts, unsigned count,
                  struct ghd_tiers **out, struct ghd_err *err);
/* How long an allocation waits for held buffers to be let go before 507. */
#define GHD_TIER_WAIT_MS 2000
/* The room the options' tiers keep ahead: two of the largest allocations. */
#define GHD_TIER_AHEAD 2
struct ghd_config;
/* The tiers the options ask for (--spill, --host-tier, --disk-tier,
 * --disk-tier-size); *out NULL when none. */
int ghd_tiers_open(const struct ghd_config *cfg, struct ghd_runtime *rts, unsigned count,
                   struct ghd_tiers **out, struct ghd_err *err);
/* pre: every buffer is gone (ghd_tier_forget was called for each). */
void ghd_tiers_free(struct ghd_tiers *tiers);


/* Brings b onto its device if it is not there and keeps it there until
 * ghd_tier_release: b->d_ptr is valid in between, and its bytes are there
 * for work queued after ghd_buffer_order on the user's stream (a copy from
 * the host tier may still be running on the device's copy stream when this
 * returns; the CPU does not wait for it). GHD_ENOMEM when no room
 * can be made, GHD_EUNREADABLE when its bytes cannot be read back (the
 * buffer stays unreadable; never stale bytes). No-op without tiers. */
int ghd_tier_hold(struct ghd_buffer *b, struct ghd_err *err);
void ghd_tier_release(struct ghd_buffer *b);
/* As ghd_tier_hold, for a write of every byte from byte 0 (an upload of the
 * whole buffer): a spilled buffer gets device memory without its old bytes
 * being copied in (*fresh 1; its first user zeroes it, so no other bytes
 * show), and its old copy stays where it was until
 * ghd_tier_release_whole: the write kept bytes [0, kept) (the whole size:
 * it completed), and the rest comes back from the old copy, which then
 * goes. So a write cut short leaves the bytes it did not write as they
 * were, as on the device. Release with ghd_tier_release when *fresh is 0. */
int ghd_tier_hold_whole(struct ghd_buffer *b, int *fresh, struct ghd_err *err);
void ghd_tier_release_whole(struct ghd_buffer *b, uint64_t kept);

/* Where a download reads from: the device (b->d_ptr, held as by
 * ghd_tier_hold), host memory or a file descriptor of the disk tier (data
 * at `offset` of the file). Either way the buffer does not move until
 * ghd_tier_read_end. */
struct ghd_tier_read {
    enum ghd_tier tier;
    const char *h_ptr; /* GHD_TIER_HOST */
    int fd;            /* GHD_TIER_DISK; -1 otherwise */
    uint64_t offset;   /* of the first byte in fd */
};
int ghd_tier_read_begin(struct ghd_buffer *b, struct ghd_tier_read *r, struct ghd_err *err);
void ghd_tier_read_end(struct ghd_buffer *b, struct ghd_tier_read *r);

/* POST /v1/buffers/{id}/residency: to the device (pin: keep it there until
 * asked otherwise), or out to the host or disk tier. */
int ghd_tier_move(struct ghd_buffer *b, enum ghd_tier to, int pin, struct ghd_err *err);

/* What a buffer's JSON shows: its tier, last use (Unix seconds, fractional),
 * whether it is pinned. */
void ghd_tier_state(const struct ghd_buffer *b, enum ghd_tier *tier, double *last_used,
                    int *pinned);
const char *ghd_tier_name(enum ghd_tier t);
/* "device", "host" or "disk"; GHD_EINVAL for anything else. */
int ghd_tier_parse(const char *name, enum ghd_tier *out);
/* Bytes held in each tier beside the devices', and the counts of device i. */
void ghd_tiers_stats(struct ghd_tiers *tiers, unsigned device, struct ghd_tier_stats *out);
void ghd_tiers_usage(struct ghd_tiers *tiers, size_t *host_bytes, size_t *host_cap,
                     size_t *disk_bytes, size_t *disk_cap);

#endif
