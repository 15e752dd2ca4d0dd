#ifndef GHD_CORE_TIERS_SERVICE_TIERS_H
#define GHD_CORE_TIERS_SERVICE_TIERS_H

#include "core/tenancy/caller.h"
#include "core/service.h"
#include "core/buffers/buffer.h"

/* Tiers as the tenants see them (core/tier.h, README.md "Beyond device
 * memory"). */

/* POST /v1/buffers/{id}/residency: moves buffer `id` to `tier` ("device",
 * "host", "disk"), on the device kept there while `pin`; *out a new
 * reference to it afterwards. GHD_EINVAL for another tier name,
 * ghd_service_buffer_find's codes, GHD_EUNPROC when the server has no such
 * tier (or a disk buffer is asked onto the host), GHD_EBUSY when the buffer
 * is in use, GHD_ENOMEM and GHD_EUNREADABLE as a page-in answers them. */
int ghd_service_buffer_residency(struct ghd_service *svc, const struct ghd_caller *caller,
                                 const char *id, const char *tier, int pin,
                                 struct ghd_buffer **out, struct ghd_err *err);

#endif
