/* Names and sizes of element types. */
#include "kernel.h"

#include <string.h>

#include "base/error.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[GHD_DTYPE_COUNT] = {
    [GHD_DTYPE_F32] = {"f32", 4}, [GHD_DTYPE_F64] = {"f64", 8},
    [GHD_DTYPE_I32] = {"i32", 4}, [GHD_DTYPE_U32] = {"u32", 4},
    [GHD_DTYPE_I64] = {"i64", 8}, [GHD_DTYPE_U8] = {"u8", 1},
    [GHD_DTYPE_F16] = {"f16", 2}, [GHD_DTYPE_BF16] = {"bf16", 2},
};

size_t ghd_dtype_size(enum ghd_dtype t)
{
    return (unsigned)t < GHD_DTYPE_COUNT ? dtypes[t].size : 0;
}

const char *ghd_dtype_name(enum ghd_dtype t)
{
    return (unsigned)t < GHD_DTYPE_COUNT ? dtypes[t].name : "unknown";
}

int ghd_dtype_parse(const char *name, enum ghd_dtype *out)
{
    for (int t = 0; t < GHD_DTYPE_COUNT; t++) {
        if (name && strcmp(name, dtypes[t].name) == 0) {
            *out = (enum ghd_dtype)t;
            return 0;
        }
    }
    return GHD_EINVAL;
}

int ghd_dtype_is_float(enum ghd_dtype t)
{
    return ((GHD_DT_FLOAT | GHD_DT_HALF) & GHD_DT(t)) != 0;
}

int ghd_dtype_is_signed(enum ghd_dtype t)
{
    return t == GHD_DTYPE_I32 || t == GHD_DTYPE_I64 || ghd_dtype_is_float(t);
}
