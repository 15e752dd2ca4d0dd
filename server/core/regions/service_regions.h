#ifndef GHD_CORE_REGIONS_SERVICE_REGIONS_H
#define GHD_CORE_REGIONS_SERVICE_REGIONS_H

#include <jansson.h>
#include <stdint.h>

#include "base/err.h"
#include "core/tenancy/caller.h"
#include "region.h"

/* Regions and transfers as the service offers them to its tenants
 * (--allow-shm): registering on a device of the service, lookups and removal
 * as the caller's tenant sees them, a region's public JSON, and a transfer
 * between the ends a request names. Each call that can fail returns 0 or a
 * GHD_E* code and fills err with the detail; create, find and remove refuse
 * first, GHD_EFORBIDDEN naming --allow-shm, while regions are off. */

struct ghd_service;

/* {shm: {enabled, host?}, usage: {regions, pinned}}: whether a same-host
 * client can use regions here (also while they are off: a client asks
 * before it creates a segment), the host to compare with its own, and what
 * the caller's tenant holds. A new reference. */
json_t *ghd_service_region_summary_new(struct ghd_service *svc, const struct ghd_caller *caller);
/* Registers the region `body` describes (ghd_region_request_parse: its
 * GHD_EINVAL and GHD_EUNPROC) for the caller's tenant; *out is a new
 * reference (ghd_service_region_release). GHD_EUNPROC for a device the
 * service does not have; otherwise ghd_region_register_new's. */
int ghd_service_region_create(struct ghd_service *svc, const struct ghd_caller *caller,
                              json_t *body, struct ghd_region **out, struct ghd_err *err);
/* Region `id` as the caller's tenant sees it, a new reference; GHD_ENOENT
 * naming it. */
int ghd_service_region_find(struct ghd_service *svc, const struct ghd_caller *caller,
                            const char *id, struct ghd_region **out, struct ghd_err *err);
void ghd_service_region_release(struct ghd_service *svc, struct ghd_region *r);
/* Unregisters `id`, once no transfer holds it; GHD_ENOENT naming it. */
int ghd_service_region_remove(struct ghd_service *svc, const struct ghd_caller *caller,
                              const char *id, struct ghd_err *err);
/* {id, kind, size, device, pinned, created, register_ms, transfers, shm?}.
 * A new reference. */
json_t *ghd_service_region_json_new(struct ghd_service *svc, const struct ghd_region *r);
/* Finds what one end names (`field` says which, for the detail): a region
 * or buffer of `tenant`, as a reference ghd_service_xfer_end_release drops. */
int ghd_service_xfer_end_find(struct ghd_service *svc, const struct ghd_caller *caller,
                              const char *field,
                              int is_region, const char *id, struct ghd_xfer_end *end,
                              struct ghd_err *err);
void ghd_service_xfer_end_release(struct ghd_service *svc, struct ghd_xfer_end *end);
/* POST /v1/transfers as one operation (transfer_request.c): `body`'s
 * {"from", "to", "bytes", "if_match"} read (GHD_EJSON, GHD_EINVAL naming
 * the field), each end found as the caller's tenant sees it
 * (ghd_service_xfer_end_find), then ghd_service_transfer. *res->version is
 * the destination buffer's version after the write (0 for a region);
 * *current the version found for GHD_EPRECOND. */
int ghd_service_transfer_create(struct ghd_service *svc, const struct ghd_caller *caller,
                                json_t *body, struct ghd_xfer_result *res, uint64_t *current,
                                struct ghd_err *err);
/* ghd_region_transfer over the service's regions. */
int ghd_service_transfer(struct ghd_service *svc, const struct ghd_xfer_end *from,
                         const struct ghd_xfer_end *to, uint64_t bytes,
                         const struct ghd_versions *if_match, struct ghd_xfer_result *res,
                         uint64_t *current, struct ghd_err *err);

#endif
