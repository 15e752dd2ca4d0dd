/* Host reference: the naive row-major gemm, accumulating in f64 whatever
 * the element type. beta == 0 never reads C and alpha == 0 never reads A or
 * B, as BLAS (cuBLAS on the device) does: their NaNs do not reach C. */
#include <stdint.h>
#include <stdlib.h>

#include "kernels/impls.h"
#include "kernels/scalar.h"
#include "base/error.h"

static double load(enum ghd_dtype t, const void *p, uint64_t i)
{
    switch (t) {
    case GHD_DTYPE_F32:
        return ((const float *)p)[i];
    case GHD_DTYPE_F64:
        return ((const double *)p)[i];
    case GHD_DTYPE_F16:
        return ghd_f16_to_f32(((const uint16_t *)p)[i]);
    default:
        return ghd_bf16_to_f32(((const uint16_t *)p)[i]);
    }
}

static void store(enum ghd_dtype t, void *p, uint64_t i, double v)
{
    switch (t) {
    case GHD_DTYPE_F32:
        ((float *)p)[i] = (float)v;
        break;
    case GHD_DTYPE_F64:
        ((double *)p)[i] = v;
        break;
    case GHD_DTYPE_F16:
        ((uint16_t *)p)[i] = ghd_f32_to_f16((float)v);
        break;
    default:
        ((uint16_t *)p)[i] = ghd_f32_to_bf16((float)v);
        break;
    }
}

int ghd_host_gemm(struct ghd_kexec *x)
{
    const struct ghd_kargs *a = x->args;
    enum ghd_dtype t = a->dtype;
    const void *A = a->p[GHD_S_A], *B = a->p[GHD_S_B];
    void *C = a->p[GHD_S_C];
    if (a->m == 0 || a->n == 0)
        return 0;
    double *row = malloc(a->n * sizeof(*row));
    if (!row)
        return GHD_ENOHOSTMEM;
    for (uint64_t i = 0; i < a->m; i++) {
        for (uint64_t j = 0; j < a->n; j++)
            row[j] = 0;
        for (uint64_t l = 0; a->a != 0 && l < a->k; l++) {
            double av = load(t, A, a->flag_a ? l * a->lda + i : i * a->lda + l);
            for (uint64_t j = 0; j < a->n; j++)
                row[j] += av * load(t, B, a->flag_b ? j * a->ldb + l : l * a->ldb + j);
        }
        for (uint64_t j = 0; j < a->n; j++) {
            double v = a->a * row[j];
            if (a->b != 0)
                v += a->b * load(t, C, i * a->ldc + j);
            store(t, C, i * a->ldc + j, v);
        }
    }
    free(row);
    return 0;
}
