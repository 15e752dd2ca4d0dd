/* The per-tenant limits from the options. The limits are the core's to
 * enforce (the buffer table and the run queue, given them at start). */
#include "tenant_limits.h"

/* `percent` of `capacity`, at least 1. */
static size_t share_of(size_t capacity, unsigned percent)
{
    size_t n = capacity / 100 * percent + capacity % 100 * percent / 100;
    return n ? n : 1;
}

void ghd_tenant_limits_init(struct ghd_tenant_limits *l, const struct ghd_config *cfg, int tokens,
                            const struct ghd_runtime *rts, unsigned count)
{
    unsigned share = tokens ? cfg->tenant_share : 0;
    *l = (struct ghd_tenant_limits){.max_bytes = cfg->tenant_max_bytes,
                                    .max_buffers = cfg->tenant_max_buffers,
                                    .max_runs = cfg->tenant_max_runs};
    for (unsigned i = 0; i < count && !l->max_bytes && share; i++)
        if (rts[i].pool.cfg.limit) /* a pool without a limit has no share */
            l->device_max_bytes[i] = share_of(rts[i].pool.cfg.limit, share);
    if (!l->max_buffers && share) {
        l->max_buffers = share_of(cfg->max_buffers, share);
        l->buffers_shared = 1;
    }
    if (!l->max_runs && share) {
        l->max_runs = (unsigned)share_of(cfg->run_queue_limit, share);
        l->runs_shared = 1;
    }
}
