#ifndef GHD_CORE_SERVICE_INLINE_H
#define GHD_CORE_SERVICE_INLINE_H

#include <jansson.h>

#include "base/err.h"
#include "kernels/kernel.h"
#include "core/runs/run.h"

/* Run steps that carry their kernel or raw module by value (the cache
 * behind them: core/inline_defs.h), so that a step runs on any instance
 * without a definition having reached it first. A refusal is what POST
 * /v1/kernels or POST /v1/modules says of the same body, with the same
 * code; its detail starts with `path`, where the definition sits in the
 * request ("kernel", "steps[1].module"), joined to the field it names:
 * "steps[1].kernel.body, column 3: ...". */

struct ghd_service;

/* The user kernel `def` (a KernelDefinition) as *out: a
 * new reference that ghd_kernel_unref drops. */
int ghd_service_kernel_inline(struct ghd_service *svc, const char *tenant, json_t *def,
                              const char *path, const struct ghd_kernel **out,
                              struct ghd_err *err);
/* A raw step whose "module" is {source, options, name_expressions}: its
 * function as step->kernel (the step's reference, one on the module), as
 * ghd_service_module_function finds it for a module id. GHD_EUNPROC when
 * the module has no such function. For ghd_service_run_step_raw, which
 * checks the raw permission first and prepares the call. */
int ghd_service_run_step_inline_module(struct ghd_service *svc, const char *tenant,
                                       struct ghd_run_step *step, json_t *launch,
                                       const char *path, struct ghd_err *err);

#endif
