#ifndef GHD_CORE_REGIONS_REGION_REQUEST_H
#define GHD_CORE_REGIONS_REGION_REQUEST_H

#include <jansson.h>

#include "base/err.h"
#include "region.h"

/* The body of POST /v1/regions, {"shm": "/name"} or {"cuda_ipc": base64
 * handle}, with "size" and, for CUDA IPC, "device". */

struct ghd_region_request {
    struct ghd_region_spec spec; /* its tenant left NULL; the handle points into `handle` */
    unsigned device;
    unsigned char handle[64];
};

/* Reads `body` into *out: GHD_EJSON when it is not an object, GHD_EINVAL
 * for an unknown field or one of the wrong type, GHD_EUNPROC for a handle
 * that is not the base64 of a cudaIpcMemHandle_t; the detail names the
 * field. pre: `body` outlives out->spec.shm_name. */
int ghd_region_request_parse(json_t *body, struct ghd_region_request *out, struct ghd_err *err);

#endif
