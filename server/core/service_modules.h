#ifndef GHD_CORE_SERVICE_MODULES_H
#define GHD_CORE_SERVICE_MODULES_H

#include <jansson.h>

#include "base/err.h"
#include "core/tenancy/caller.h"
#include "kernels/kernel.h"

/* Raw CUDA modules (kernels/raw/) as the service offers them to its
 * tenants. A module belongs to its tenant: another tenant's is not found.
 * Each call returns 0 or a GHD_E* code and fills err with the detail; each
 * a caller reaches refuses first, GHD_EFORBIDDEN, a caller without the raw
 * permission (ghd_service_raw_allowed). */

struct ghd_service;

/* Whether `caller` may use raw modules at all: GHD_EFORBIDDEN unless
 * --allow-raw-kernels, and with tokens unless its token has "raw" (the
 * detail says which). */
int ghd_service_raw_allowed(struct ghd_service *svc, const struct ghd_caller *caller,
                            struct ghd_err *err);
/* The module `body` describes ({source, options, name_expressions}): the
 * tenant's own of that id when it has one (*created = 0, nothing is
 * compiled), else one compiled, loaded and stored (*created = 1). *desc is
 * its description (a new reference; its "id" names it). GHD_ELIMIT at
 * --tenant-max-modules (asked of the store before the compile, so a tenant
 * at its limit costs no compile, and again as it adds) or when the compile
 * queue is full; otherwise what ghd_rmodule_new says of the body. */
int ghd_service_module_create(struct ghd_service *svc, const struct ghd_caller *caller,
                              json_t *body,
                              json_t **desc, int *created, struct ghd_err *err);
/* The caller's modules' descriptions as *list, a new array. */
int ghd_service_module_list(struct ghd_service *svc, const struct ghd_caller *caller,
                            json_t **list, struct ghd_err *err);
/* The description of the tenant's module `id` (a new reference), or
 * GHD_ENOENT. */
int ghd_service_module_get(struct ghd_service *svc, const struct ghd_caller *caller,
                           const char *id,
                           json_t **desc, struct ghd_err *err);
int ghd_service_module_delete(struct ghd_service *svc, const struct ghd_caller *caller,
                              const char *id,
                              struct ghd_err *err);
/* Function `name` of the tenant's module `id`, as a kernel for a run step
 * (ghd_service_run_step_raw checks the permission):
 * *out holds a reference to the module, which ghd_kernel_unref drops.
 * GHD_ENOENT (no such module), GHD_EUNPROC (no such function). */
int ghd_service_module_function(struct ghd_service *svc, const char *tenant, const char *id,
                                const char *name, const struct ghd_kernel **out,
                                struct ghd_err *err);

#endif
