#ifndef GHD_CORE_RUNS_RUN_ARRAYS_USER_H
#define GHD_CORE_RUNS_RUN_ARRAYS_USER_H

#include <jansson.h>

#include "run_arrays_rules.h"


/* Run arguments of a user kernel from the buffers' array descriptions
 * (run_arrays_user.c, which run_arrays.c calls for a step whose kernel is
 * a user kernel): its placeholder types and n, as run_arrays.h says of a
 * built-in's dtype and n. */
struct ghd_ukernel;
int ghd_ra_user(const struct ghd_ra_ctx *cx, const struct ghd_ukernel *k,
                json_t *args, int reinterpret, const char *where);

#endif
