/* A raw launch's grid, block and dynamic shared memory, checked against the
 * function's and the device's limits before anything is queued: a launch
 * the driver would refuse is a 422 naming the field, not a failed run. */
#include "raw.h"

#include <string.h>

#include "base/err.h"
#include "base/error.h"

static int dims(json_t *v, const char *field, const unsigned *max, unsigned out[3],
                struct ghd_err *err)
{
    out[0] = out[1] = out[2] = 1;
    if (!v)
        return ghd_err_set(err, GHD_EINVAL, "'%s' is required: [x, y, z]", field);
    if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > 3)
        return ghd_err_set(err, GHD_EINVAL, "'%s' must be an array of 1 to 3 integers", field);
    size_t i;
    json_t *d;
    json_array_foreach(v, i, d) {
        if (!json_is_integer(d))
            return ghd_err_set(err, GHD_EINVAL, "%s[%zu] must be an integer", field, i);
        json_int_t x = json_integer_value(d);
        if (x < 1 || (uint64_t)x > max[i])
            return ghd_err_set(err, GHD_EUNPROC, "%s[%zu] is %lld; it must be 1 to %u", field, i,
                               (long long)x, max[i]);
        out[i] = (unsigned)x;
    }
    return 0;
}

int ghd_raw_shape_parse(json_t *launch, const struct ghd_raw_limits *lim, struct ghd_raw_shape *out,
                        struct ghd_err *err)
{
    memset(out, 0, sizeof(*out));
    int rc = dims(json_object_get(launch, "grid"), "grid", lim->max_grid, out->grid, err);
    if (rc == 0)
        rc = dims(json_object_get(launch, "block"), "block", lim->max_block, out->block, err);
    if (rc)
        return rc;
    uint64_t threads = (uint64_t)out->block[0] * out->block[1] * out->block[2];
    if (threads > lim->max_threads)
        return ghd_err_set(err, GHD_EUNPROC,
                           "block: %llu threads per block; this function takes at most %u (its "
                           "registers and the device bound it)",
                           (unsigned long long)threads, lim->max_threads);
    json_t *sm = json_object_get(launch, "shared_mem");
    if (sm) {
        if (!json_is_integer(sm) || json_integer_value(sm) < 0)
            return ghd_err_set(err, GHD_EINVAL, "'shared_mem' must be a byte count >= 0");
        if ((uint64_t)json_integer_value(sm) > lim->max_dyn_shared)
            return ghd_err_set(err, GHD_EUNPROC,
                               "shared_mem: %lld bytes of dynamic shared memory; this function "
                               "may have at most %zu (beside its %zu static bytes)",
                               (long long)json_integer_value(sm), lim->max_dyn_shared,
                               lim->static_shared);
        out->shared_mem = (size_t)json_integer_value(sm);
    }
    return 0;
}
