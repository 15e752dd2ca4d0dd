/* fill, copy, cast, axpy, scale: one buffer in, one out, n elements. */
#include <math.h>
#include <string.h>

#include "impls.h"
#include "registry.h"
#include "scalar.h"
#include "base/error.h"

/* The fill value as a bit pattern of dtype: integer types take only exact
 * integers in range (a JSON integer keeps all 64 bits); float types take any
 * number that stays finite in the type. */
static int fill_check(struct ghd_kcheck *c)
{
    json_t *v = json_object_get(c->args, "value");
    enum ghd_dtype t = c->a->dtype;
    double d = json_number_value(v);
    uint64_t bits = 0;
    if (!ghd_dtype_is_float(t)) {
        int64_t i;
        if (json_is_integer(v)) {
            i = (int64_t)json_integer_value(v);
        } else if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
            i = (int64_t)d;
        } else {
            return ghd_err_set(c->err, GHD_EUNPROC, "value %g is not an integer of type %s", d,
                               ghd_dtype_name(t));
        }
        int64_t lo = t == GHD_DTYPE_I32 ? INT32_MIN : t == GHD_DTYPE_I64 ? INT64_MIN : 0;
        int64_t hi = t == GHD_DTYPE_I32   ? INT32_MAX
                     : t == GHD_DTYPE_U32 ? (int64_t)UINT32_MAX
                     : t == GHD_DTYPE_U8  ? 255
                                          : INT64_MAX;
        if (i < lo || i > hi)
            return ghd_err_set(c->err, GHD_EUNPROC, "value %lld is out of range for %s",
                               (long long)i, ghd_dtype_name(t));
        bits = (uint64_t)i & (ghd_dtype_size(t) == 8 ? ~(uint64_t)0
                                                     : (((uint64_t)1 << (8 * ghd_dtype_size(t))) - 1));
    } else {
        int finite;
        if (t == GHD_DTYPE_F64) {
            bits = ghd_f64_bits(d);
            finite = 1;
        } else {
            uint8_t out[8];
            ghd_cast_elem(GHD_DTYPE_F64, &d, t, out);
            float back;
            if (t == GHD_DTYPE_F32) {
                uint32_t u;
                memcpy(&u, out, 4);
                bits = u;
                back = ghd_f32_from_bits(u);
            } else {
                uint16_t h;
                memcpy(&h, out, 2);
                bits = h;
                back = t == GHD_DTYPE_F16 ? ghd_f16_to_f32(h) : ghd_bf16_to_f32(h);
            }
            finite = isfinite(back);
        }
        if (!finite)
            return ghd_err_set(c->err, GHD_EUNPROC, "value %g is out of range for %s", d,
                               ghd_dtype_name(t));
    }
    c->a->bits = bits;
    return 0;
}

static const struct ghd_param fill_params[] = {
    GHD_P_BUF("x", GHD_ROLE_OUT, GHD_S_X, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1,
              "Buffer to fill: elements [x_offset, x_offset + n)."),
    GHD_P_DTYPE("dtype", dtype, GHD_DT_ALL, "Element type of x."),
    GHD_P_N,
    GHD_P_NUMBER("value", a,
                 "Value to store. Integer types take exact integers in range; float types "
                 "round to nearest and must stay finite."),
};

static const struct ghd_param copy_params[] = {
    GHD_P_BUF("x", GHD_ROLE_IN, GHD_S_X, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1, "Source."),
    GHD_P_BUF("y", GHD_ROLE_OUT, GHD_S_Y, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1,
              "Destination. May be the same buffer as x, overlapping in any way: the copy "
              "behaves like memmove."),
    GHD_P_DTYPE("dtype", dtype, GHD_DT_ALL, "Element type: sets the element size only."),
    GHD_P_N,
};

static const struct ghd_param cast_params[] = {
    GHD_P_BUF("x", GHD_ROLE_IN, GHD_S_X, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1,
              "Source, of type dtype."),
    GHD_P_BUF("y", GHD_ROLE_OUT, GHD_S_Y, GHD_ELEM_DTYPE2, GHD_COUNT_N, 0, 1,
              "Destination, of type dtype_out. Must not overlap x."),
    GHD_P_DTYPE("dtype", dtype, GHD_DT_ALL, "Element type of x."),
    GHD_P_DTYPE("dtype_out", dtype2, GHD_DT_ALL, "Element type of y."),
    GHD_P_N,
};

static const struct ghd_param axpy_params[] = {
    GHD_P_NUMBER("a", a, "Scale of x (converted to dtype)."),
    GHD_P_BUF("x", GHD_ROLE_IN, GHD_S_X, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1, "Input."),
    GHD_P_BUF("y", GHD_ROLE_INOUT, GHD_S_Y, GHD_ELEM_DTYPE, GHD_COUNT_N, GHD_SLOT(GHD_S_X), 1,
              "Input and output: y = a*x + y. May be exactly x (same buffer and offset)."),
    GHD_P_DTYPE("dtype", dtype, GHD_DT_FLOAT, "Element type of x and y."),
    GHD_P_N,
};

static const struct ghd_param scale_params[] = {
    GHD_P_NUMBER("a", a, "Scale (converted to dtype)."),
    GHD_P_BUF("x", GHD_ROLE_INOUT, GHD_S_X, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1,
              "Input; scaled in place (x = a*x) when y is absent."),
    GHD_P_BUF("y", GHD_ROLE_OUT, GHD_S_Y, GHD_ELEM_DTYPE, GHD_COUNT_N, GHD_SLOT(GHD_S_X), 0,
              "Optional output: y = a*x, leaving x alone. May be exactly x."),
    GHD_P_DTYPE("dtype", dtype, GHD_DT_FLOAT, "Element type of x and y."),
    GHD_P_N,
};

#define DEF(nm, dc, res, fl, ps, chk, host, cuda)                                \
    {.name = nm, .doc = dc, .result_doc = res, .op = GHD_KOP_NONE, .flags = fl,  \
     .params = ps, .nparams = GHD_COUNT_OF(ps), .check = chk,                    \
     .impl = GHD_IMPLS(host, cuda)}

const struct ghd_kernel ghd_kdefs_blas1[] = {
    DEF("fill", "Sets n elements of x to value.", "n", 0, fill_params, fill_check,
        ghd_host_fill, ghd_cuda_fill),
    DEF("copy", "Copies n elements from x to y (memmove semantics within one buffer).", "n",
        GHD_KF_OVERLAP_OK, copy_params, NULL, ghd_kernel_copy, ghd_kernel_copy),
    DEF("cast",
        "Converts n elements of type dtype in x to dtype_out in y. Floats round to nearest "
        "even (f64 to f16/bf16 through f32); float to integer truncates toward zero and "
        "saturates, NaN becomes 0; integer to integer keeps the low bits.",
        "n", 0, cast_params, NULL, ghd_host_cast, ghd_cuda_cast),
    DEF("axpy", "y = a*x + y over n elements. The device may fuse the multiply-add.", "n", 0,
        axpy_params, NULL, ghd_host_axpy, ghd_cuda_axpy),
    DEF("scale", "x = a*x in place, or y = a*x when y is given, over n elements.", "n", 0,
        scale_params, NULL, ghd_host_scale, ghd_cuda_scale),
};
const size_t ghd_kdefs_blas1_count = GHD_COUNT_OF(ghd_kdefs_blas1);
