#ifndef GHD_CORE_BUFFERS_ARRAY_JSON_H
#define GHD_CORE_BUFFERS_ARRAY_JSON_H

#include <jansson.h>
#include <stdint.h>

#include "base/err.h"
#include "npy.h"

/* An array description from a JSON "dtype" (one of the element types) and
 * "shape" (NULL: one dimension as many elements as `size` bytes hold); a
 * non-zero `size` must equal the shape's bytes. GHD_EINVAL for what the
 * API's schemas state (types, the shape's form), GHD_EUNPROC for what they
 * cannot (an unknown dtype, with a suggestion; a size that disagrees). */
int ghd_array_desc_from_json(json_t *dtype, json_t *shape, uint64_t size,
                             struct ghd_array_desc *out, struct ghd_err *err);

#endif
