#ifndef GHD_CORE_TIERS_TIER_BUFFER_H
#define GHD_CORE_TIERS_TIER_BUFFER_H

/* What the buffer table asks of the tiers (core/tier.h) as its buffers come
 * and go: a header of its own, below both, so that the buffer table does not
 * include the tiers that work on its buffers. */
#include <stddef.h>

struct ghd_buffer;
struct ghd_err;
struct ghd_pool_block;
struct ghd_runtime;
struct ghd_tiers;

/* A pool block for `size` bytes on rt's device, spilling the least
 * recently used idle buffers of that device while the pool refuses.
 * GHD_ENOMEM (with the detail) when nothing more can be spilled; tiers NULL:
 * the pool's answer alone. */
int ghd_tier_alloc(struct ghd_tiers *tiers, struct ghd_runtime *rt, size_t size, size_t alignment,
                   struct ghd_pool_block **out, struct ghd_err *err);
/* A new buffer's block, just allocated: it is on its device, unheld, the
 * most recently used. No-op when b->tiers is NULL. */
void ghd_tier_adopt(struct ghd_buffer *b);
/* The buffer leaves: its block, host memory or file go back.
 * pre: last reference gone. */
void ghd_tier_forget(struct ghd_buffer *b);

#endif
