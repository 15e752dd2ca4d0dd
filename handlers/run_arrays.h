#ifndef GHD_HANDLERS_RUN_ARRAYS_H
#define GHD_HANDLERS_RUN_ARRAYS_H

#include <jansson.h>

#include "kernels/kernel.h"
#include "core/run.h"
#include "http/request.h"

/* Runs on described buffers (run_arrays.c): before a step is validated, its
 * omitted arguments are filled from the array descriptions of the buffers it
 * names: `dtype`, `n` (the elements after the offset), and gemm's m, n and k
 * from the shapes of a, b and c. An explicit argument that contradicts a
 * description is a 422 naming both, unless the step says "reinterpret":
 * true. */
int ghd_run_args_from_arrays(struct ghd_request *req, struct ghd_reply *rep,
                             const struct ghd_kernel *k, json_t *step, json_t *args,
                             const char *where);
/* The step's `if_match` ({"<buffer argument>": "\"v7\""}) into out->cond,
 * once the step is prepared (out holds its buffers): a key that is not an
 * argument naming one of them is a 422 naming it, a tag that is not an
 * entity tag a 400. The versions are compared when the queue takes the run,
 * together with their moves (ghd_run_submit: 412). */
int ghd_run_if_match(struct ghd_request *req, struct ghd_reply *rep, json_t *step,
                     json_t *args, struct ghd_run_step *out, const char *where);

#endif
