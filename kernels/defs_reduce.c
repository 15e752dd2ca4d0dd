/* Reductions over n elements: the result comes back as "value" in the run's
 * result and, when "out" is given, is also written to out[out_offset]. */
#include "impls.h"
#include "registry.h"
#include "base/error.h"

static int reduce_check(struct ghd_kcheck *c)
{
    int op = c->k->op;
    if ((op == GHD_KOP_RMIN || op == GHD_KOP_RMAX || op == GHD_KOP_MEAN) && c->a->n == 0)
        return ghd_err_set(c->err, GHD_EUNPROC, "n must be at least 1 for %s", c->k->name);
    return 0;
}

#define OUT_DOC(t)                                                               \
    "Optional buffer that receives the result as one element of type " t "."
#define X_PARAM                                                                  \
    GHD_P_BUF("x", GHD_ROLE_IN, GHD_S_X, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1, "Input.")
#define DTYPE_PARAM GHD_P_DTYPE("dtype", dtype, GHD_DT_NUMERIC, "Element type of the input.")

static const struct ghd_param sum_params[] = {
    X_PARAM,
    GHD_P_BUF("out", GHD_ROLE_OUT, GHD_S_OUT, GHD_ELEM_RESULT, GHD_COUNT_ONE, 0, 0,
              OUT_DOC("dtype for f32/f64, i64 for integer types")),
    DTYPE_PARAM,
    GHD_P_COUNT("n", n, "Number of elements (0 gives 0). Required."),
};

static const struct ghd_param minmax_params[] = {
    X_PARAM,
    GHD_P_BUF("out", GHD_ROLE_OUT, GHD_S_OUT, GHD_ELEM_RESULT, GHD_COUNT_ONE, 0, 0,
              OUT_DOC("dtype")),
    DTYPE_PARAM,
    GHD_P_COUNT("n", n, "Number of elements, at least 1. Required."),
};

static const struct ghd_param mean_params[] = {
    X_PARAM,
    GHD_P_BUF("out", GHD_ROLE_OUT, GHD_S_OUT, GHD_ELEM_RESULT, GHD_COUNT_ONE, 0, 0,
              OUT_DOC("f32 for f32 input, f64 otherwise")),
    DTYPE_PARAM,
    GHD_P_COUNT("n", n, "Number of elements, at least 1. Required."),
};

static const struct ghd_param dot_params[] = {
    X_PARAM,
    GHD_P_BUF("y", GHD_ROLE_IN, GHD_S_Y, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1, "Second input."),
    GHD_P_BUF("out", GHD_ROLE_OUT, GHD_S_OUT, GHD_ELEM_RESULT, GHD_COUNT_ONE, 0, 0,
              OUT_DOC("dtype for f32/f64, i64 for integer types")),
    GHD_P_DTYPE("dtype", dtype, GHD_DT_NUMERIC, "Element type of x and y."),
    GHD_P_COUNT("n", n, "Number of elements (0 gives 0). Required."),
};

#define RED(nm, kop, ps, dc, res)                                                \
    {.name = nm, .doc = dc, .result_doc = res, .op = kop, .params = ps,          \
     .nparams = GHD_COUNT_OF(ps), .check = reduce_check,                         \
     .impl = GHD_IMPLS(ghd_host_reduce, ghd_cuda_reduce)}

#define SUM_RESULT \
    "value (number; f32 sums accumulate in f64 and value is that f64 sum; integer " \
    "sums accumulate in 64 bits and wrap), value_dtype (type written to out), n"

const struct ghd_kernel ghd_kdefs_reduce[] = {
    RED("sum", GHD_KOP_SUM, sum_params, "Sum of n elements of x.", SUM_RESULT),
    RED("min", GHD_KOP_RMIN, minmax_params,
        "Smallest of n elements of x. NaNs are ignored unless all are NaN.",
        "value (in dtype), value_dtype, n"),
    RED("max", GHD_KOP_RMAX, minmax_params,
        "Largest of n elements of x. NaNs are ignored unless all are NaN.",
        "value (in dtype), value_dtype, n"),
    RED("mean", GHD_KOP_MEAN, mean_params, "Mean of n elements of x: the sum over n, in f64 (every element converted to f64 and added in f64, as NumPy does, so 64-bit integers never wrap).",
        "value (f64), value_dtype, n"),
    RED("dot", GHD_KOP_DOT, dot_params,
        "Sum of x[i]*y[i]. f32 products are formed and summed in f64.", SUM_RESULT),
};
const size_t ghd_kdefs_reduce_count = GHD_COUNT_OF(ghd_kdefs_reduce);

