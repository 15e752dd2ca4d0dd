/* gemm, described row-major: C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C.
 * A is stored m x k (k x m when trans_a) with row stride lda, B k x n
 * (n x k when trans_b) with ldb, C m x n with ldc; strides are in elements. */
#include <inttypes.h>

#include "impls.h"
#include "registry.h"
#include "base/error.h"

/* Elements a rows x cols matrix with row stride ld spans. */
static int matrix_span(uint64_t rows, uint64_t cols, uint64_t ld, uint64_t *out)
{
    uint64_t span;
    if (rows == 0 || cols == 0) {
        *out = 0;
        return 0;
    }
    if (__builtin_mul_overflow(rows - 1, ld, &span) || __builtin_add_overflow(span, cols, &span))
        return -1;
    *out = span;
    return 0;
}

static int resolve_ld(struct ghd_kcheck *c, const char *name, uint64_t *ld, uint64_t rows,
                      uint64_t cols, int slot)
{
    uint64_t min = cols ? cols : 1;
    if (!(c->a->given & ghd_kernel_param_bit(c->k, name)))
        *ld = min;
    if (*ld < min)
        return ghd_err_set(c->err, GHD_EUNPROC,
                           "%s must be at least %" PRIu64 " (the stored row length)", name, min);
    if (*ld > INT32_MAX)
        return ghd_err_set(c->err, GHD_EUNPROC, "%s exceeds %d", name, INT32_MAX);
    if (matrix_span(rows, cols, *ld, &c->count[slot]))
        return ghd_err_set(c->err, GHD_EUNPROC, "the matrix with %s %" PRIu64 " overflows", name,
                           *ld);
    return 0;
}

static int gemm_check(struct ghd_kcheck *c)
{
    struct ghd_kargs *a = c->a;
    const char *names[3] = {"m", "n", "k"};
    uint64_t dims[3] = {a->m, a->n, a->k};
    for (int i = 0; i < 3; i++)
        if (dims[i] > INT32_MAX)
            return ghd_err_set(c->err, GHD_EUNPROC, "%s exceeds %d", names[i], INT32_MAX);
    int rc = resolve_ld(c, "lda", &a->lda, a->flag_a ? a->k : a->m, a->flag_a ? a->m : a->k,
                        GHD_S_A);
    if (!rc)
        rc = resolve_ld(c, "ldb", &a->ldb, a->flag_b ? a->n : a->k, a->flag_b ? a->k : a->n,
                        GHD_S_B);
    if (!rc)
        rc = resolve_ld(c, "ldc", &a->ldc, a->m, a->n, GHD_S_C);
    return rc;
}

static const struct ghd_param gemm_params[] = {
    GHD_P_BUF("a", GHD_ROLE_IN, GHD_S_A, GHD_ELEM_DTYPE, GHD_COUNT_CUSTOM, 0, 1,
              "A, row-major: m x k, or k x m when trans_a."),
    GHD_P_BUF("b", GHD_ROLE_IN, GHD_S_B, GHD_ELEM_DTYPE, GHD_COUNT_CUSTOM, 0, 1,
              "B, row-major: k x n, or n x k when trans_b."),
    GHD_P_BUF("c", GHD_ROLE_INOUT, GHD_S_C, GHD_ELEM_DTYPE, GHD_COUNT_CUSTOM, 0, 1,
              "C, row-major m x n; read only when beta != 0. Must not overlap A or B."),
    GHD_P_DTYPE("dtype", dtype, GHD_DT_FLOAT | GHD_DT_HALF,
                "Element type of A, B and C. f16 and bf16 multiply on tensor cores and "
                "accumulate in f32."),
    GHD_P_COUNT("m", m, "Rows of C and op(A)."),
    GHD_P_COUNT("n", n, "Columns of C and op(B)."),
    GHD_P_COUNT("k", k, "Columns of op(A), rows of op(B)."),
    GHD_P_BOOL("trans_a", flag_a, "op(A) = A^T: A is stored k x m."),
    GHD_P_BOOL("trans_b", flag_b, "op(B) = B^T: B is stored n x k."),
    GHD_P_NUMBER_DEF("alpha", a, 1.0,
                     "Scale of op(A)*op(B); 0 means A and B are not read (BLAS: NaNs in them "
                     "vanish, where NumPy's 0 * (A @ B) is NaN)."),
    GHD_P_NUMBER_DEF("beta", b, 0.0, "Scale of C; 0 means C is not read (NaNs in it vanish)."),
    GHD_P_COUNT_OPT("lda", lda, "Row stride of A in elements; default: its row length."),
    GHD_P_COUNT_OPT("ldb", ldb, "Row stride of B in elements; default: its row length."),
    GHD_P_COUNT_OPT("ldc", ldc, "Row stride of C in elements; default: n."),
};

const struct ghd_kernel ghd_kdefs_gemm[] = {
    {.name = "gemm",
     .doc = "General matrix product, row-major: C = alpha*op(A)*op(B) + beta*C (cuBLAS on "
            "the device, a naive f64-accumulating loop on the host).",
     .result_doc = "m, n, k",
     .params = gemm_params,
     .nparams = GHD_COUNT_OF(gemm_params),
     .check = gemm_check,
     .impl = GHD_IMPLS(ghd_host_gemm, ghd_cuda_gemm)},
};
const size_t ghd_kdefs_gemm_count = GHD_COUNT_OF(ghd_kdefs_gemm);
