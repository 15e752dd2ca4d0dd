#ifndef GHD_CORE_SERVICE_KERNELS_H
#define GHD_CORE_SERVICE_KERNELS_H

#include <jansson.h>

#include "base/err.h"
#include "core/tenancy/caller.h"
#include "kernels/kernel.h"

/* The kernels the service offers a tenant: the built-ins, and the tenant's
 * own user kernels (kernels/user/), which no other tenant sees. Each call
 * that can fail returns 0 or a GHD_E* code and fills err with the detail. */

struct ghd_service;

/* The built-ins' descriptions, then the tenant's kernels'; a new array. */
json_t *ghd_service_kernel_list_new(struct ghd_service *svc, const struct ghd_caller *caller);
/* Kernel `name` as the tenant sees it: a new reference that
 * ghd_kernel_unref drops, or GHD_ENOENT. */
int ghd_service_kernel_find(struct ghd_service *svc, const struct ghd_caller *caller,
                            const char *name,
                            const struct ghd_kernel **out, struct ghd_err *err);
/* Its description, a new reference; GHD_ENOENT. */
int ghd_service_kernel_get(struct ghd_service *svc, const struct ghd_caller *caller,
                           const char *name,
                           json_t **desc, struct ghd_err *err);
/* Defines the user kernel `def` describes for the tenant and stores it:
 * *desc is its description with what the build did on this backend ("build":
 * the host interprets; CUDA compiles the binding without placeholder types
 * or scalars now, the rest when first run). GHD_EBUSY when the name is a
 * built-in's or the tenant has a kernel of that name, GHD_ELIMIT at
 * --tenant-max-kernels; else what the definition or its compile says. */
int ghd_service_kernel_create(struct ghd_service *svc, const struct ghd_caller *caller, json_t *def,
                              json_t **desc, struct ghd_err *err);
/* POST /v1/kernels: ghd_service_kernel_create, unless the tenant has a
 * kernel of that name already: then a definition that is the same (every
 * member equal, members in any order) is that kernel (0, *created 0, its
 * description in *desc: defining is idempotent, a notebook cell may run
 * again), and another is GHD_EBUSY naming the first member that differs.
 * *created is 1 when a kernel was defined. */
int ghd_service_kernel_define(struct ghd_service *svc, const struct ghd_caller *caller,
                              json_t *def, json_t **desc, int *created, struct ghd_err *err);
/* GHD_EBUSY (409) with the detail when `name` is a built-in kernel's,
 * which no user kernel may take (defined or by value); else 0. */
int ghd_service_kernel_not_builtin(const char *name, struct ghd_err *err);
/* What defining k costs on this backend, done now and said in `build`
 * (the 201's "build" object): the host interprets; CUDA compiles and loads
 * the binding without placeholder types or scalars (its "cache" says
 * whether NVRTC ran), the rest when first run. */
struct ghd_ukernel;
int ghd_service_kernel_build(struct ghd_service *svc, struct ghd_ukernel *k, json_t *build,
                             struct ghd_err *err);
/* GHD_EBUSY for a built-in (it cannot be deleted), GHD_ENOENT. */
int ghd_service_kernel_delete(struct ghd_service *svc, const struct ghd_caller *caller,
                              const char *name,
                              struct ghd_err *err);

#endif
