/* Host reference: reductions, into the accumulator scalar.h defines. Float
 * sums, and means of any type, add in f64, pairwise (NumPy's order: blocks
 * of 128 one after another, then halves), so the reference's error grows
 * with log n like the GPU's tree, not with n. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/impls.h"
#include "kernels/scalar.h"
#include "base/error.h"

static uint64_t get_u(enum ghd_dtype t, const void *p, uint64_t i);

/* One element as f64 (integers converted, rounding past 2^53) or as a
 * 64-bit two's complement integer. */
static double get_f(enum ghd_dtype t, const void *p, uint64_t i)
{
    if (t == GHD_DTYPE_F32)
        return ((const float *)p)[i];
    if (t == GHD_DTYPE_F64)
        return ((const double *)p)[i];
    if (t == GHD_DTYPE_U32 || t == GHD_DTYPE_U8)
        return (double)get_u(t, p, i);
    return (double)ghd_i64_wrap(get_u(t, p, i));
}

static uint64_t get_u(enum ghd_dtype t, const void *p, uint64_t i)
{
    switch (t) {
    case GHD_DTYPE_I32:
        return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case GHD_DTYPE_U32:
        return ((const uint32_t *)p)[i];
    case GHD_DTYPE_I64:
        return (uint64_t)((const int64_t *)p)[i];
    default:
        return ((const uint8_t *)p)[i];
    }
}

/* The f64 sum of elements [lo, lo + n): pairwise above 128 elements. */
static double sum_pairwise(const struct ghd_kargs *a, uint64_t lo, uint64_t n)
{
    const void *xs = a->p[GHD_S_X], *ys = a->p[GHD_S_Y];
    if (n > 128) {
        uint64_t h = n / 2;
        return sum_pairwise(a, lo, h) + sum_pairwise(a, lo + h, n - h);
    }
    double acc = 0;
    for (uint64_t i = lo; i < lo + n; i++)
        acc += a->op == GHD_KOP_DOT ? get_f(a->dtype, xs, i) * get_f(a->dtype, ys, i)
                                    : get_f(a->dtype, xs, i);
    return acc;
}

static uint64_t sum_like(const struct ghd_kargs *a, int in_f64)
{
    const void *xs = a->p[GHD_S_X], *ys = a->p[GHD_S_Y];
    int dot = a->op == GHD_KOP_DOT;
    if (in_f64)
        return ghd_f64_bits(sum_pairwise(a, 0, a->n));
    uint64_t acc = 0;
    for (uint64_t i = 0; i < a->n; i++)
        acc += dot ? get_u(a->dtype, xs, i) * get_u(a->dtype, ys, i) : get_u(a->dtype, xs, i);
    return acc;
}

static uint64_t min_max(const struct ghd_kargs *a, int is_float)
{
    const void *xs = a->p[GHD_S_X];
    int is_min = a->op == GHD_KOP_RMIN;
    if (a->dtype == GHD_DTYPE_F32) {
        float r = NAN;
        for (uint64_t i = 0; i < a->n; i++)
            r = is_min ? fminf(r, ((const float *)xs)[i]) : fmaxf(r, ((const float *)xs)[i]);
        return ghd_f32_bits(r);
    }
    if (is_float) {
        double r = NAN;
        for (uint64_t i = 0; i < a->n; i++)
            r = is_min ? fmin(r, ((const double *)xs)[i]) : fmax(r, ((const double *)xs)[i]);
        return ghd_f64_bits(r);
    }
    /* integers: compare as signed or unsigned 64-bit values */
    int is_signed = a->dtype == GHD_DTYPE_I32 || a->dtype == GHD_DTYPE_I64;
    uint64_t r = get_u(a->dtype, xs, 0);
    for (uint64_t i = 1; i < a->n; i++) {
        uint64_t v = get_u(a->dtype, xs, i);
        int less = is_signed ? ghd_i64_wrap(v) < ghd_i64_wrap(r) : v < r;
        int greater = is_signed ? ghd_i64_wrap(v) > ghd_i64_wrap(r) : v > r;
        if (is_min ? less : greater)
            r = v;
    }
    /* keep only the type's own bytes, as the device does */
    size_t es = ghd_dtype_size(a->dtype);
    return es == 8 ? r : r & (((uint64_t)1 << (8 * es)) - 1);
}

int ghd_host_reduce(struct ghd_kexec *x)
{
    const struct ghd_kargs *a = x->args;
    int is_float = a->dtype == GHD_DTYPE_F32 || a->dtype == GHD_DTYPE_F64;
    if (!ghd_reduce_is_sum(a->op) && a->n == 0)
        return GHD_EINTERNAL; /* refused at prepare */
    x->acc = ghd_reduce_is_sum(a->op) ? sum_like(a, ghd_reduce_acc_is_f64(a->op, a->dtype))
                                      : min_max(a, is_float);
    x->has_acc = 1;
    if (a->p[GHD_S_OUT])
        ghd_reduce_store(a->op, a->dtype, x->acc, a->n, a->p[GHD_S_OUT]);
    return 0;
}
