#ifndef GHD_KERNELS_SCALAR_H
#define GHD_KERNELS_SCALAR_H

/* Scalar rules shared by the host reference (C) and the CUDA kernels
 * (C++): conversions between element types, the integer corner cases of
 * the arithmetic kernels, and how a reduction's accumulator becomes its
 * result. Both backends call these same functions, so they agree bit for
 * bit wherever the arithmetic itself is exact.
 *
 * Conversions (the "cast" kernel, gemm's f16/bf16, fill values):
 *   float -> float   round to nearest even, once: f64 -> f16/bf16 rounds
 *                    the f64 value directly (NumPy's result), never
 *                    through f32 (which could round twice).
 *   float -> integer truncates toward zero and saturates at the target's
 *                    range; NaN becomes 0.
 *   integer -> float round to nearest even.
 *   integer -> integer keeps the low bits (two's complement wrap).
 * Integer arithmetic wraps modulo 2^bits; x / 0 is 0 and INT_MIN / -1 is
 * INT_MIN. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dtype.h"
#include "kernel_impl.h"

#ifdef __CUDACC__
#define GHD_HD static __host__ __device__ __forceinline__
#else
#define GHD_HD static inline
#endif

GHD_HD uint32_t ghd_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

GHD_HD float ghd_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

GHD_HD uint64_t ghd_f64_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

GHD_HD double ghd_f64_from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* IEEE binary16 -> binary32, exact. */
GHD_HD float ghd_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13); /* inf, NaN (payload kept) */
    } else if (exp != 0) {
        u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while ((man & 0x400u) == 0);
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    return ghd_f32_from_bits(u);
}

/* binary32 -> binary16, round to nearest even (as __float2half_rn). */
GHD_HD uint16_t ghd_f32_to_f16(float f)
{
    uint32_t u = ghd_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: quiet, keep the top of the payload */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x1ffu));
    if (a >= 0x477ff000u) /* rounds to >= 65520: infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* normal half */
        uint32_t r = a - 0x38000000u; /* rebias 127 -> 15 */
        uint32_t h = r >> 13;
        uint32_t rest = r & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
            h++;
        return (uint16_t)(sign | h);
    }
    if (a < 0x33000000u) /* below half the smallest subnormal: zero */
        return sign;
    /* subnormal half: value = man * 2^-24 */
    uint32_t exp = a >> 23;
    uint32_t man = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - exp; /* 14..24 */
    uint32_t h = man >> shift;
    uint32_t rest = man & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (h & 1u)))
        h++;
    return (uint16_t)(sign | h);
}

GHD_HD float ghd_bf16_to_f32(uint16_t b)
{
    return ghd_f32_from_bits((uint32_t)b << 16);
}

/* binary32 -> bfloat16, round to nearest even (as __float2bfloat16_rn). */
GHD_HD uint16_t ghd_f32_to_bf16(float f)
{
    uint32_t u = ghd_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* binary64 -> a 16-bit float of `mb` mantissa bits and exponent bias
 * `bias` (f16: 10, 15; bf16: 7, 127), rounded once to nearest even. NaN
 * stays a quiet NaN with the top of its payload. */
GHD_HD uint16_t ghd_f64_to_narrow(double d, int mb, int bias)
{
    uint64_t u = ghd_f64_bits(d);
    uint16_t sign = (uint16_t)((u >> 48) & 0x8000u);
    uint64_t a = u & 0x7fffffffffffffffull;
    uint64_t inf = (uint64_t)(2 * bias + 1) << mb;
    if (a > 0x7ff0000000000000ull)
        return (uint16_t)(sign | inf | (1u << (mb - 1)) |
                          ((a >> (52 - mb)) & ((1u << (mb - 1)) - 1u)));
    int e = (int)(a >> 52) - 1023;
    if (e > bias) /* at least 2^(bias + 1), infinity included */
        return (uint16_t)(sign | inf);
    uint64_t man = (a & 0xfffffffffffffull) | (1ull << 52);
    /* normal: keep mb bits after the leading one; subnormal: fewer */
    int shift = 52 - mb + (e >= 1 - bias ? 0 : 1 - bias - e);
    if (shift > 53) /* below half the smallest subnormal (zero too) */
        return sign;
    uint64_t h = man >> shift, rest = man & ((1ull << shift) - 1u), half = 1ull << (shift - 1);
    if (e >= 1 - bias)
        h += (uint64_t)(e + bias - 1) << mb; /* the leading one lifts it to e + bias */
    if (rest > half || (rest == half && (h & 1u)))
        h++; /* a carry rounds up into the next binade, or to infinity */
    return (uint16_t)(sign | h);
}

GHD_HD uint16_t ghd_f64_to_f16(double d)
{
    return ghd_f64_to_narrow(d, 10, 15);
}

GHD_HD uint16_t ghd_f64_to_bf16(double d)
{
    return ghd_f64_to_narrow(d, 7, 127);
}

/* Saturating, truncating float -> integer conversions; NaN -> 0. */
GHD_HD int32_t ghd_sat_i32(double v)
{
    if (!(v == v))
        return 0;
    if (v <= -2147483648.0)
        return INT32_MIN;
    if (v >= 2147483647.0)
        return INT32_MAX;
    return (int32_t)v;
}

GHD_HD uint32_t ghd_sat_u32(double v)
{
    if (!(v > 0.0)) /* NaN and everything <= 0 */
        return 0;
    if (v >= 4294967295.0)
        return UINT32_MAX;
    return (uint32_t)v;
}

GHD_HD int64_t ghd_sat_i64(double v)
{
    if (!(v == v))
        return 0;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    if (v >= 9223372036854775808.0)
        return INT64_MAX;
    return (int64_t)v;
}

GHD_HD uint8_t ghd_sat_u8(double v)
{
    if (!(v > 0.0))
        return 0;
    if (v >= 255.0)
        return 255;
    return (uint8_t)v;
}

/* Integer corner cases; the arithmetic runs on unsigned types so that it
 * wraps instead of overflowing. */
GHD_HD int32_t ghd_i32_wrap(uint32_t u)
{
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}

GHD_HD int64_t ghd_i64_wrap(uint64_t u)
{
    int64_t v;
    memcpy(&v, &u, 8);
    return v;
}

GHD_HD int32_t ghd_div_i32(int32_t a, int32_t b)
{
    if (b == 0)
        return 0;
    if (b == -1)
        return ghd_i32_wrap(0u - (uint32_t)a);
    return a / b;
}

GHD_HD int64_t ghd_div_i64(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;
    if (b == -1)
        return ghd_i64_wrap(0u - (uint64_t)a);
    return a / b;
}

/* One element's value on its way from one type to another: integers sign-
 * or zero-extended into i, floats exactly into f. */
struct ghd_elem_value {
    int64_t i;
    double f;
    int is_int;
};

/* The value of one element of type st at src. */
GHD_HD struct ghd_elem_value ghd_elem_widen(enum ghd_dtype st, const void *src)
{
    struct ghd_elem_value w = {0, 0, 1};
    switch (st) {
    case GHD_DTYPE_F32: {
        float f;
        memcpy(&f, src, 4);
        w.f = f;
        w.is_int = 0;
        break;
    }
    case GHD_DTYPE_F64:
        memcpy(&w.f, src, 8);
        w.is_int = 0;
        break;
    case GHD_DTYPE_F16:
    case GHD_DTYPE_BF16: {
        uint16_t h;
        memcpy(&h, src, 2);
        w.f = st == GHD_DTYPE_F16 ? ghd_f16_to_f32(h) : ghd_bf16_to_f32(h);
        w.is_int = 0;
        break;
    }
    case GHD_DTYPE_I32: {
        int32_t v;
        memcpy(&v, src, 4);
        w.i = v;
        break;
    }
    case GHD_DTYPE_U32: {
        uint32_t v;
        memcpy(&v, src, 4);
        w.i = v;
        break;
    }
    case GHD_DTYPE_I64:
        memcpy(&w.i, src, 8);
        break;
    default: {
        uint8_t v;
        memcpy(&v, src, 1);
        w.i = v;
        break;
    }
    }
    return w;
}

/* Stores `w` at dst as type dt, by the rules at the top of this file. */
GHD_HD void ghd_elem_narrow(struct ghd_elem_value w, enum ghd_dtype dt, void *dst)
{
    switch (dt) {
    case GHD_DTYPE_F32: {
        float f = w.is_int ? (float)w.i : (float)w.f;
        memcpy(dst, &f, 4);
        break;
    }
    case GHD_DTYPE_F64: {
        double d = w.is_int ? (double)w.i : w.f;
        memcpy(dst, &d, 8);
        break;
    }
    case GHD_DTYPE_F16:
    case GHD_DTYPE_BF16: { /* integers past 2^53 round twice, only for bf16 */
        double f = w.is_int ? (double)w.i : w.f;
        uint16_t h = dt == GHD_DTYPE_F16 ? ghd_f64_to_f16(f) : ghd_f64_to_bf16(f);
        memcpy(dst, &h, 2);
        break;
    }
    case GHD_DTYPE_I32: {
        int32_t v = w.is_int ? ghd_i32_wrap((uint32_t)(uint64_t)w.i) : ghd_sat_i32(w.f);
        memcpy(dst, &v, 4);
        break;
    }
    case GHD_DTYPE_U32: {
        uint32_t v = w.is_int ? (uint32_t)(uint64_t)w.i : ghd_sat_u32(w.f);
        memcpy(dst, &v, 4);
        break;
    }
    case GHD_DTYPE_I64: {
        int64_t v = w.is_int ? w.i : ghd_sat_i64(w.f);
        memcpy(dst, &v, 8);
        break;
    }
    default: {
        uint8_t v = w.is_int ? (uint8_t)(uint64_t)w.i : ghd_sat_u8(w.f);
        memcpy(dst, &v, 1);
        break;
    }
    }
}


/* Converts one element of type st at src to type dt at dst, by the rules at
 * the top of this file. With constant types the switches fold away. */
GHD_HD void ghd_cast_elem(enum ghd_dtype st, const void *src, enum ghd_dtype dt, void *dst)
{
    ghd_elem_narrow(ghd_elem_widen(st, src), dt, dst);
}

/* Reductions. The accumulator (struct ghd_kexec.acc) holds:
 *   mean:           f64 bits of the sum, every input type: each element
 *                   converted to f64 and added in f64 (NumPy's rule), so
 *                   the mean of 64-bit integers never wraps;
 *   sum, dot:       f64 bits for float inputs (f32 accumulates in f64),
 *                   the 64-bit two's complement sum for integer inputs
 *                   (wraps modulo 2^64);
 *   min, max:       the result in the input type, zero-extended bits. */
GHD_HD int ghd_reduce_is_sum(int op)
{
    return op == GHD_KOP_SUM || op == GHD_KOP_MEAN || op == GHD_KOP_DOT;
}

/* Whether the accumulator holds f64 bits. */
GHD_HD int ghd_reduce_acc_is_f64(int op, enum ghd_dtype t)
{
    return op == GHD_KOP_MEAN || t == GHD_DTYPE_F32 || t == GHD_DTYPE_F64;
}

/* The element type a reduction writes to its "out" buffer. */
GHD_HD enum ghd_dtype ghd_reduce_out_dtype(int op, enum ghd_dtype t)
{
    int is_float = t == GHD_DTYPE_F32 || t == GHD_DTYPE_F64;
    if (op == GHD_KOP_RMIN || op == GHD_KOP_RMAX)
        return t;
    if (op == GHD_KOP_MEAN)
        return t == GHD_DTYPE_F32 ? GHD_DTYPE_F32 : GHD_DTYPE_F64;
    return is_float ? t : GHD_DTYPE_I64;
}

/* Writes the reduction's result, in ghd_reduce_out_dtype, to `out`.
 * pre: n > 0 for mean. */
GHD_HD void ghd_reduce_store(int op, enum ghd_dtype t, uint64_t acc, uint64_t n, void *out)
{
    enum ghd_dtype ot = ghd_reduce_out_dtype(op, t);
    if (op == GHD_KOP_MEAN) {
        double mean = ghd_f64_from_bits(acc) / (double)n;
        if (ot == GHD_DTYPE_F32) {
            float f = (float)mean;
            memcpy(out, &f, 4);
        } else {
            memcpy(out, &mean, 8);
        }
        return;
    }
    if (ghd_reduce_is_sum(op) && t == GHD_DTYPE_F32) {
        float f = (float)ghd_f64_from_bits(acc);
        memcpy(out, &f, 4);
        return;
    }
    /* f64 sums, integer sums (i64) and min/max: the accumulator's low bytes */
    switch (ot) {
    case GHD_DTYPE_U8: {
        uint8_t v = (uint8_t)acc;
        memcpy(out, &v, 1);
        break;
    }
    case GHD_DTYPE_F32:
    case GHD_DTYPE_I32:
    case GHD_DTYPE_U32: {
        uint32_t v = (uint32_t)acc;
        memcpy(out, &v, 4);
        break;
    }
    default:
        memcpy(out, &acc, 8);
        break;
    }
}

#endif
