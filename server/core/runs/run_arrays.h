#ifndef GHD_CORE_RUNS_RUN_ARRAYS_H
#define GHD_CORE_RUNS_RUN_ARRAYS_H

#include <jansson.h>

#include "kernels/kernel.h"
#include "run.h"
#include "run_arrays_rules.h"

/* Runs on described buffers (run_arrays.c): before a step is validated, its
 * omitted arguments are filled from the array descriptions of the buffers it
 * names: `dtype`, `n` (the elements after the offset), and gemm's m, n and k
 * from the shapes of a, b and c. An explicit argument that contradicts a
 * description is GHD_EUNPROC (422) naming both, unless the step says "reinterpret":
 * true. */
int ghd_run_args_from_arrays(const struct ghd_ra_ctx *cx, const struct ghd_kernel *k,
                             json_t *step, json_t *args, const char *where);
/* The step's `if_match` ({"<buffer argument>": "\"v7\""}) into out->cond,
 * once the step is prepared (out holds its buffers): a key that is not an
 * argument naming one of them is a 422 naming it, a tag that is not an
 * entity tag a 400. The versions are compared when the queue takes the run,
 * together with their moves (ghd_run_submit: 412). */
int ghd_run_if_match(const struct ghd_ra_ctx *cx, json_t *step, json_t *args,
                     struct ghd_run_step *out, const char *where);

#endif
