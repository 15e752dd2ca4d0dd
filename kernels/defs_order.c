/* Order-dependent kernels: prefix sums and sorting. */
#include "impls.h"
#include "registry.h"
#include "base/error.h"

#define SCAN_TYPES                                                               \
    (GHD_DT_FLOAT | GHD_DT(GHD_DTYPE_I32) | GHD_DT(GHD_DTYPE_U32) | GHD_DT(GHD_DTYPE_I64))
#define VALUE_TYPES                                                              \
    (GHD_DT_FLOAT | GHD_DT(GHD_DTYPE_I32) | GHD_DT(GHD_DTYPE_U32) | GHD_DT(GHD_DTYPE_I64))

static const struct ghd_param scan_params[] = {
    GHD_P_BUF("x", GHD_ROLE_IN, GHD_S_X, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1, "Input."),
    GHD_P_BUF("y", GHD_ROLE_OUT, GHD_S_Y, GHD_ELEM_DTYPE, GHD_COUNT_N, GHD_SLOT(GHD_S_X), 1,
              "Prefix sums. May be exactly x (in place)."),
    GHD_P_DTYPE("dtype", dtype, SCAN_TYPES,
                "Element type; sums stay in it (integers wrap; f32 adds in f32 on the device)."),
    GHD_P_N,
    GHD_P_BOOL("exclusive", flag_a,
               "false: y[i] = x[0] + ... + x[i]; true: y[i] = x[0] + ... + x[i-1], y[0] = 0."),
};

static int sort_check(struct ghd_kcheck *c)
{
    const struct ghd_kernel *k = c->k;
    int has_vdt = (c->a->given & ghd_kernel_param_bit(k, "value_dtype")) != 0;
    if (c->present[GHD_S_VALUES_OUT] && !c->present[GHD_S_VALUES])
        return ghd_err_set(c->err, GHD_EINVAL, "values_out given without values");
    if (c->present[GHD_S_VALUES] && !has_vdt)
        return ghd_err_set(c->err, GHD_EINVAL, "value_dtype is required with values");
    if (!c->present[GHD_S_VALUES] && has_vdt)
        return ghd_err_set(c->err, GHD_EINVAL, "value_dtype given without values");
    return 0;
}

static const struct ghd_param sort_params[] = {
    GHD_P_BUF("keys", GHD_ROLE_INOUT, GHD_S_KEYS, GHD_ELEM_DTYPE, GHD_COUNT_N, 0, 1,
              "Keys; sorted in place unless keys_out is given."),
    GHD_P_BUF("keys_out", GHD_ROLE_OUT, GHD_S_KEYS_OUT, GHD_ELEM_DTYPE, GHD_COUNT_N,
              GHD_SLOT(GHD_S_KEYS), 0, "Optional destination of the sorted keys."),
    GHD_P_BUF("values", GHD_ROLE_INOUT, GHD_S_VALUES, GHD_ELEM_DTYPE2, GHD_COUNT_N, 0, 0,
              "Optional values moved with their keys; in place unless values_out is given."),
    GHD_P_BUF("values_out", GHD_ROLE_OUT, GHD_S_VALUES_OUT, GHD_ELEM_DTYPE2, GHD_COUNT_N,
              GHD_SLOT(GHD_S_VALUES), 0, "Optional destination of the permuted values."),
    GHD_P_DTYPE("dtype", dtype, GHD_DT_NUMERIC, "Key type."),
    GHD_P_DTYPE_OPT("value_dtype", dtype2, VALUE_TYPES,
                    "Value type (only its size matters); required with values."),
    GHD_P_N,
    GHD_P_BOOL("descending", flag_a, "Sort from largest to smallest."),
};

const struct ghd_kernel ghd_kdefs_order[] = {
    {.name = "scan",
     .doc = "Inclusive or exclusive prefix sum of n elements.",
     .result_doc = "n",
     .params = scan_params,
     .nparams = GHD_COUNT_OF(scan_params),
     .impl = GHD_IMPLS(ghd_host_scan, ghd_cuda_scan)},
    {.name = "sort",
     .doc = "Stable radix sort of n keys as one flat range, optionally carrying values. "
            "Floats: -0.0 and +0.0 compare equal; NaNs sort by their bits (positive NaNs "
            "after +inf, negative ones before -inf). A buffer described with several rows "
            "(shape [2, 5]; NumPy would sort each row) is refused unless \"reinterpret\": "
            "true asks for the flat sort.",
     .flags = GHD_KF_FLAT_ORDER,
     .result_doc = "n",
     .params = sort_params,
     .nparams = GHD_COUNT_OF(sort_params),
     .check = sort_check,
     .impl = GHD_IMPLS(ghd_host_sort, ghd_cuda_sort)},
};
const size_t ghd_kdefs_order_count = GHD_COUNT_OF(ghd_kdefs_order);
