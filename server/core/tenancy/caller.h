#ifndef GHD_CORE_TENANCY_CALLER_H
#define GHD_CORE_TENANCY_CALLER_H

/* Who asks: the identity every core operation a tenant can reach takes
 * (Redis's one client object per connection, checked in processCommand
 * rather than in each command). The HTTP layer builds it once per request
 * from the authenticated token (http/access.c); the core decides with it
 * what the caller may see and do: tenancy (a resource of another tenant is
 * not found), permissions (raw modules, the figures that tell of every
 * tenant's work), quotas and preconditions. No handler checks them. */

/* What a caller may do beyond its tenant's own resources. */
enum ghd_perm {
    GHD_PERM_RAW = 1u << 0,     /* "raw" on its token: raw CUDA modules (--allow-raw-kernels) */
    GHD_PERM_FIGURES = 1u << 1, /* may read the figures that sum every tenant's work: the
                                 * pools' use in /readyz and GET /v1/devices (no tokens,
                                 * --metrics-public, or the --metrics-token) */
};

/* A tenant's weight in each device's share (core/run_pick.c): the word
 * "weight=N" (1 to GHD_WEIGHT_MAX) among its token's permissions, kept in
 * the bits from GHD_PERM_WEIGHT_SHIFT on; 1 where it gives none. */
#define GHD_PERM_WEIGHT_SHIFT 16
#define GHD_WEIGHT_MAX 1000
static inline unsigned ghd_perm_weight(unsigned perms)
{
    unsigned w = perms >> GHD_PERM_WEIGHT_SHIFT;
    return w ? w : 1;
}

struct ghd_caller {
    const char *tenant; /* the token's tenant; NULL without authentication */
    unsigned perms;     /* GHD_PERM_* */
};

#endif
