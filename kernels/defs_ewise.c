/* Elementwise kernels: z = x op y and y = f(x), n elements each. The output
 * may be exactly one of the inputs (in place); any partial overlap is
 * refused. */
#include "impls.h"
#include "registry.h"

static const struct ghd_param binary_params[] = {
    GHD_P_BUF("x", GHD_ROLE_IN, GHD_S_X, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1, "Left operand."),
    GHD_P_BUF("y", GHD_ROLE_IN, GHD_S_Y, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1, "Right operand."),
    GHD_P_BUF("z", GHD_ROLE_OUT, GHD_S_Z, GHD_ELEM_DTYPE, GHD_COUNT_N,
              GHD_SLOT(GHD_S_X) | GHD_SLOT(GHD_S_Y), 1,
              "Result. May be exactly x or y (same buffer and offset)."),
    GHD_P_DTYPE("dtype", dtype, GHD_DT_NUMERIC, "Element type of x, y and z."),
    GHD_P_N,
};

static const struct ghd_param unary_int_params[] = {
    GHD_P_BUF("x", GHD_ROLE_IN, GHD_S_X, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1, "Input."),
    GHD_P_BUF("y", GHD_ROLE_OUT, GHD_S_Y, GHD_ELEM_DTYPE, GHD_COUNT_N, GHD_SLOT(GHD_S_X), 1,
              "Result. May be exactly x."),
    GHD_P_DTYPE("dtype", dtype,
                GHD_DT_FLOAT | GHD_DT(GHD_DTYPE_I32) | GHD_DT(GHD_DTYPE_I64),
                "Element type of x and y."),
    GHD_P_N,
};

static const struct ghd_param unary_float_params[] = {
    GHD_P_BUF("x", GHD_ROLE_IN, GHD_S_X, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1, "Input."),
    GHD_P_BUF("y", GHD_ROLE_OUT, GHD_S_Y, GHD_ELEM_DTYPE, GHD_COUNT_N, GHD_SLOT(GHD_S_X), 1,
              "Result. May be exactly x."),
    GHD_P_DTYPE("dtype", dtype, GHD_DT_FLOAT, "Element type of x and y."),
    GHD_P_N,
};

#define BIN(nm, kop, dc)                                                         \
    {.name = nm, .doc = dc, .result_doc = "n", .op = kop, .params = binary_params, \
     .nparams = GHD_COUNT_OF(binary_params),                                     \
     .impl = GHD_IMPLS(ghd_host_binary, ghd_cuda_binary)}
#define UN(nm, kop, ps, dc)                                                      \
    {.name = nm, .doc = dc, .result_doc = "n", .op = kop, .params = ps,            \
     .nparams = GHD_COUNT_OF(ps), .impl = GHD_IMPLS(ghd_host_unary, ghd_cuda_unary)}

const struct ghd_kernel ghd_kdefs_ewise[] = {
    BIN("add", GHD_KOP_ADD, "z = x + y. Integers wrap."),
    BIN("sub", GHD_KOP_SUB, "z = x - y. Integers wrap."),
    BIN("mul", GHD_KOP_MUL, "z = x * y. Integers wrap."),
    BIN("div", GHD_KOP_DIV,
        "z = x / y. Integers truncate toward zero; x / 0 is 0 and INT_MIN / -1 is INT_MIN."),
    BIN("minimum", GHD_KOP_MIN,
        "z = min(x, y) elementwise. Floats follow fmin: a NaN operand yields the other."),
    BIN("maximum", GHD_KOP_MAX,
        "z = max(x, y) elementwise. Floats follow fmax: a NaN operand yields the other."),
    UN("abs", GHD_KOP_ABS, unary_int_params, "y = |x|. abs(INT_MIN) is INT_MIN."),
    UN("neg", GHD_KOP_NEG, unary_int_params, "y = -x. Integers wrap."),
    UN("sqrt", GHD_KOP_SQRT, unary_float_params, "y = sqrt(x), correctly rounded."),
    UN("exp", GHD_KOP_EXP, unary_float_params,
       "y = e^x (device f32 within 2 ulp, f64 within 1 ulp of the host's)."),
    UN("log", GHD_KOP_LOG, unary_float_params,
       "y = ln(x) (device within 1 ulp of the host's)."),
};
const size_t ghd_kdefs_ewise_count = GHD_COUNT_OF(ghd_kdefs_ewise);
