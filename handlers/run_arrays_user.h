#ifndef GHD_HANDLERS_RUN_ARRAYS_USER_H
#define GHD_HANDLERS_RUN_ARRAYS_USER_H

#include <jansson.h>

#include "http/request.h"

/* Run arguments of a user kernel from the buffers' array descriptions
 * (run_arrays_user.c, which run_arrays.c calls for a step whose kernel is
 * a user kernel): its placeholder types and n, as run_arrays.h says of a
 * built-in's dtype and n. */
struct ghd_ukernel;
int ghd_ra_user(struct ghd_request *req, struct ghd_reply *rep, const struct ghd_ukernel *k,
                json_t *args, int reinterpret, const char *where);

#endif
