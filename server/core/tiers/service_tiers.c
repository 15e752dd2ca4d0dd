/* Tiers for tenants: a client's residency request. */
#include "service_tiers.h"

#include "base/error.h"
#include "core/buffers/service_buffers.h"
#include "core/service_internal.h"
#include "tier.h"

int ghd_service_buffer_residency(struct ghd_service *svc, const struct ghd_caller *caller,
                                 const char *id, const char *tier, int pin,
                                 struct ghd_buffer **out, struct ghd_err *err)
{
    enum ghd_tier to;
    if (ghd_tier_parse(tier, &to) != 0)
        return ghd_err_set(err, GHD_EINVAL, "tier must be device, host or disk");
    if (pin && to != GHD_TIER_DEVICE)
        return ghd_err_set(err, GHD_EINVAL, "pin keeps a buffer on its device: only with "
                                            "\"tier\": \"device\"");
    struct ghd_buffer *b;
    int rc = ghd_service_buffer_find(svc, caller, id, &b, err);
    if (rc)
        return rc;
    rc = ghd_tier_move(b, to, pin, err);
    if (rc) {
        ghd_buffer_unref(b);
        return rc;
    }
    *out = b;
    return 0;
}
