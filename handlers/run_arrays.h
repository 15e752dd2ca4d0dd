#ifndef GHD_HANDLERS_RUN_ARRAYS_H
#define GHD_HANDLERS_RUN_ARRAYS_H

#include <jansson.h>

#include "kernels/kernel.h"
#include "http/request.h"

/* Runs on described buffers (run_arrays.c): before a step is validated, its
 * omitted arguments are filled from the array descriptions of the buffers it
 * names: `dtype`, `n` (the elements after the offset), and gemm's m, n and k
 * from the shapes of a, b and c. An explicit argument that contradicts a
 * description is a 422 naming both, unless the step says "reinterpret":
 * true. `if_match` ({"<buffer argument>": "\"v7\""}) is checked here too,
 * at submission: 412 when a named buffer's version moved. */
int ghd_run_args_from_arrays(struct ghd_request *req, struct ghd_reply *rep,
                             const struct ghd_kernel *k, json_t *step, json_t *args,
                             const char *where);

#endif
