/* An array description from a request's JSON "dtype" and "shape" (a
 * buffer's creation and PATCH): which names are element types, the shape's
 * form, and its bytes against the buffer's size. */
#include "array_json.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "base/suggest.h"
#include "kernels/kernel.h"

int ghd_array_desc_from_json(json_t *dtype, json_t *shape, uint64_t size,
                             struct ghd_array_desc *out, struct ghd_err *err)
{
    memset(out, 0, sizeof(*out));
    /* A string the schema allows; which names are element types is the
     * server's (a 422, as for a run's dtype). */
    if (!json_is_string(dtype))
        return ghd_err_set(err, GHD_EINVAL, "'dtype' must be a string, one of %s",
                           ghd_array_dtype_names());
    /* NumPy's names ("float32", "<f4") describe it by ours. */
    const char *name = ghd_dtype_canonical(json_string_value(dtype));
    if (!ghd_array_itemsize(name)) {
        char hint[96];
        ghd_suggest_clause(hint, sizeof(hint), ghd_array_dtype_suggest(json_string_value(dtype)));
        return ghd_err_set(err, GHD_EUNPROC,
                           "'dtype': '%.32s' is not an element type%s (one of %s)",
                           json_string_value(dtype), hint, ghd_array_dtype_names());
    }
    snprintf(out->dtype, sizeof(out->dtype), "%s", name);
    size_t item = ghd_array_itemsize(out->dtype);
    if (!shape) { /* one dimension, as many elements as the bytes hold */
        if (!size || size % item)
            return ghd_err_set(err, GHD_EUNPROC,
                               "give 'shape': %llu bytes are not a whole number of "
                               "%zu-byte %s elements",
                               (unsigned long long)size, item, out->dtype);
        out->ndim = 1;
        out->shape[0] = size / item;
        return 0;
    }
    /* What ArrayShape states is a 400; what depends on the size a 422. */
    if (!json_is_array(shape) || json_array_size(shape) > GHD_ARRAY_NDIM_MAX)
        return ghd_err_set(err, GHD_EINVAL,
                           "'shape' must be an array of at most %d non-negative integers",
                           GHD_ARRAY_NDIM_MAX);
    size_t i;
    json_t *v;
    json_array_foreach(shape, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return ghd_err_set(err, GHD_EINVAL,
                               "'shape' must be an array of at most %d non-negative "
                               "integers",
                               GHD_ARRAY_NDIM_MAX);
        out->shape[i] = (uint64_t)json_integer_value(v);
    }
    out->ndim = (unsigned)json_array_size(shape);
    uint64_t bytes;
    if (ghd_array_nbytes(out, NULL, &bytes) != 0)
        return ghd_err_set(err, GHD_EUNPROC, "the shape's byte count overflows");
    if (size && bytes != size)
        return ghd_err_set(err, GHD_EUNPROC,
                           "a %s array of that shape is %llu bytes, but the buffer's size "
                           "is %llu",
                           out->dtype, (unsigned long long)bytes, (unsigned long long)size);
    return 0;
}
