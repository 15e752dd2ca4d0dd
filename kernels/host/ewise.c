/* Host reference: elementwise binary and unary operations. Integer
 * arithmetic runs on the unsigned type of the same width, so it wraps
 * (scalar.h states the rules the CUDA kernels share). */
#include <math.h>
#include <stdint.h>

#include "kernels/impls.h"
#include "kernels/scalar.h"
#include "base/error.h"

#define FLOAT_BINARY(T, MIN, MAX)                                                \
    static T bin_##T(int op, T x, T y)                                           \
    {                                                                            \
        switch (op) {                                                            \
        case GHD_KOP_ADD:                                                        \
            return x + y;                                                        \
        case GHD_KOP_SUB:                                                        \
            return x - y;                                                        \
        case GHD_KOP_MUL:                                                        \
            return x * y;                                                        \
        case GHD_KOP_DIV:                                                        \
            return x / y;                                                        \
        case GHD_KOP_MIN:                                                        \
            return MIN(x, y);                                                    \
        default:                                                                 \
            return MAX(x, y);                                                    \
        }                                                                        \
    }
FLOAT_BINARY(float, fminf, fmaxf)
FLOAT_BINARY(double, fmin, fmax)

/* T: the type, U: its unsigned twin, W: U back to T, DIV: x / y by the rules. */
#define INT_BINARY(T, U, W, DIV)                                                 \
    static T bin_##T(int op, T x, T y)                                           \
    {                                                                            \
        switch (op) {                                                            \
        case GHD_KOP_ADD:                                                        \
            return W((U)((U)x + (U)y));                                          \
        case GHD_KOP_SUB:                                                        \
            return W((U)((U)x - (U)y));                                          \
        case GHD_KOP_MUL:                                                        \
            return W((U)((U)x * (U)y));                                          \
        case GHD_KOP_DIV:                                                        \
            return DIV(x, y);                                                    \
        case GHD_KOP_MIN:                                                        \
            return x < y ? x : y;                                                \
        default:                                                                 \
            return x > y ? x : y;                                                \
        }                                                                        \
    }
#define SAME(v) (v)
#define UDIV(x, y) ((y) ? (x) / (y) : 0)
INT_BINARY(int32_t, uint32_t, ghd_i32_wrap, ghd_div_i32)
INT_BINARY(uint32_t, uint32_t, SAME, UDIV)
INT_BINARY(int64_t, uint64_t, ghd_i64_wrap, ghd_div_i64)
INT_BINARY(uint8_t, uint8_t, SAME, UDIV)

#define BINARY_LOOP(T)                                                           \
    do {                                                                         \
        const T *xs = a->p[GHD_S_X], *ys = a->p[GHD_S_Y];                        \
        T *zs = a->p[GHD_S_Z];                                                   \
        for (uint64_t i = 0; i < a->n; i++)                                      \
            zs[i] = bin_##T(a->op, xs[i], ys[i]);                                \
    } while (0)

int ghd_host_binary(struct ghd_kexec *x)
{
    const struct ghd_kargs *a = x->args;
    switch (a->dtype) {
    case GHD_DTYPE_F32:
        BINARY_LOOP(float);
        break;
    case GHD_DTYPE_F64:
        BINARY_LOOP(double);
        break;
    case GHD_DTYPE_I32:
        BINARY_LOOP(int32_t);
        break;
    case GHD_DTYPE_U32:
        BINARY_LOOP(uint32_t);
        break;
    case GHD_DTYPE_I64:
        BINARY_LOOP(int64_t);
        break;
    case GHD_DTYPE_U8:
        BINARY_LOOP(uint8_t);
        break;
    default:
        return GHD_EINTERNAL;
    }
    return 0;
}

static float un_float(int op, float v)
{
    switch (op) {
    case GHD_KOP_ABS:
        return fabsf(v);
    case GHD_KOP_NEG:
        return -v;
    case GHD_KOP_SQRT:
        return sqrtf(v);
    case GHD_KOP_EXP:
        return expf(v);
    default:
        return logf(v);
    }
}

static double un_double(int op, double v)
{
    switch (op) {
    case GHD_KOP_ABS:
        return fabs(v);
    case GHD_KOP_NEG:
        return -v;
    case GHD_KOP_SQRT:
        return sqrt(v);
    case GHD_KOP_EXP:
        return exp(v);
    default:
        return log(v);
    }
}

static int32_t un_int32_t(int op, int32_t v)
{
    if (op == GHD_KOP_ABS && v >= 0)
        return v;
    return ghd_i32_wrap(0u - (uint32_t)v);
}

static int64_t un_int64_t(int op, int64_t v)
{
    if (op == GHD_KOP_ABS && v >= 0)
        return v;
    return ghd_i64_wrap(0u - (uint64_t)v);
}

#define UNARY_LOOP(T, F)                                                         \
    do {                                                                         \
        const T *xs = a->p[GHD_S_X];                                             \
        T *ys = a->p[GHD_S_Y];                                                   \
        for (uint64_t i = 0; i < a->n; i++)                                      \
            ys[i] = F(a->op, xs[i]);                                             \
    } while (0)

int ghd_host_unary(struct ghd_kexec *x)
{
    const struct ghd_kargs *a = x->args;
    switch (a->dtype) {
    case GHD_DTYPE_F32:
        UNARY_LOOP(float, un_float);
        break;
    case GHD_DTYPE_F64:
        UNARY_LOOP(double, un_double);
        break;
    case GHD_DTYPE_I32:
        UNARY_LOOP(int32_t, un_int32_t);
        break;
    case GHD_DTYPE_I64:
        UNARY_LOOP(int64_t, un_int64_t);
        break;
    default:
        return GHD_EINTERNAL;
    }
    return 0;
}
