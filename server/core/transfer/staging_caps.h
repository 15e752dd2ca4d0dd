#ifndef GHD_CORE_TRANSFER_STAGING_CAPS_H
#define GHD_CORE_TRANSFER_STAGING_CAPS_H

#include <pthread.h>

#include "base/err.h"

/* How many chunks of each staging ring one client address and one tenant
 * hold at once, and the caps on them (32 slow uploads from
 * one address held every chunk, and every other client got 503). A cap is a
 * share of the ring, in percent, so it scales with --staging-chunks and
 * applies to the small ring as to the main one; it is at least one chunk.
 * A holder at its cap waits for one of its own chunks to come back, as a
 * transfer waits for a busy ring, and is refused after the timeout; other
 * holders are not slowed. Thread-safe. */

struct staging_holder; /* private to staging_caps.c */
struct ghd_metrics;

struct ghd_staging_caps {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    unsigned address_share; /* percent of a ring one address may hold; 0 = no cap */
    unsigned tenant_share;  /* percent of a ring one tenant may hold; 0 = no cap */
    struct staging_holder *holders;
    struct ghd_metrics *metrics; /* refusals and overlap misses are counted there; may be NULL */
};

void ghd_staging_caps_init(struct ghd_staging_caps *c, unsigned address_share,
                           unsigned tenant_share, struct ghd_metrics *metrics);
/* pre: every chunk counted has been given back. */
void ghd_staging_caps_destroy(struct ghd_staging_caps *c);

/* Counts one more chunk of `ring` (which has `ring_chunks` chunks) for
 * `address` and `tenant` (either NULL or "" is not counted), waiting up to
 * timeout_ms (0: only tries) while either is at its cap. GHD_ELIMIT, with a
 * detail naming the cap, when the wait ran out; GHD_ENOHOSTMEM. */
int ghd_staging_caps_take(struct ghd_staging_caps *c, const void *ring, unsigned ring_chunks,
                          const char *address, const char *tenant, unsigned timeout_ms,
                          struct ghd_err *err);
/* Gives back one chunk counted by ghd_staging_caps_take with the same names. */
void ghd_staging_caps_give(struct ghd_staging_caps *c, const void *ring, const char *address,
                           const char *tenant);

#endif
