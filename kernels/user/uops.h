#ifndef GHD_KERNELS_USER_UOPS_H
#define GHD_KERNELS_USER_UOPS_H

/* The scalar operations of the user kernel language whose result C leaves
 * undefined or implementation-defined: integer wrap-around, division by
 * zero, shifts by the width or more, float -> integer conversions out of
 * range and NaN, and rounding to f16/bf16. This one file is compiled into
 * the host interpreter (C) and pasted into every generated CUDA program
 * (NVRTC, no headers there), so both backends compute them identically.
 *
 *   integers wrap modulo 2^bits; x / 0 == 0, x % 0 == 0, MIN / -1 == MIN,
 *   MIN % -1 == 0; shift counts are taken modulo the width;
 *   float -> integer truncates toward zero and saturates, NaN -> 0;
 *   a conversion to f16/bf16 rounds the value (as f64, exact for every
 *   f32 and every integer up to 2^53) once, to nearest even; an f16/bf16
 *   operation computes in f32 and rounds its result;
 *   a NaN that an operation, function or conversion makes is the positive
 *   quiet NaN without payload (x86 makes a negative one, the GPU a
 *   positive one with another payload; ghd_u_cnf/ghd_u_cnd). */
#ifdef __CUDACC_RTC__
#define GHD_UFN static __device__ __forceinline__
typedef unsigned long long ghd_u64;
typedef long long ghd_i64;
typedef unsigned int ghd_u32;
#else
#include <stdint.h>
#include "kernels/scalar.h"
#define GHD_UFN static inline
typedef uint64_t ghd_u64;
typedef int64_t ghd_i64;
typedef uint32_t ghd_u32;
#endif

/* The low `bits` of v, sign-extended. */
GHD_UFN ghd_i64 ghd_u_sext(ghd_u64 v, int bits)
{
    if (bits >= 64)
        return (ghd_i64)v;
    ghd_u64 m = (ghd_u64)1 << (bits - 1);
    v &= ((ghd_u64)1 << bits) - 1;
    return (ghd_i64)((v ^ m) - m);
}

GHD_UFN ghd_u64 ghd_u_zext(ghd_u64 v, int bits)
{
    return bits >= 64 ? v : v & (((ghd_u64)1 << bits) - 1);
}

GHD_UFN ghd_i64 ghd_u_sat_s(double v, int bits)
{
    double lim = bits >= 64 ? 9223372036854775808.0 : (double)((ghd_u64)1 << (bits - 1));
    if (!(v == v))
        return 0;
    if (v <= -lim)
        return bits >= 64 ? (ghd_i64)((ghd_u64)1 << 63) : -(ghd_i64)lim;
    if (v >= lim)
        return bits >= 64 ? (ghd_i64)(((ghd_u64)1 << 63) - 1) : (ghd_i64)lim - 1;
    return (ghd_i64)v;
}

GHD_UFN ghd_u64 ghd_u_sat_u(double v, int bits)
{
    double lim = bits >= 64 ? 18446744073709551616.0 : (double)((ghd_u64)1 << bits);
    if (!(v > 0.0))
        return 0;
    if (v >= lim)
        return bits >= 64 ? ~(ghd_u64)0 : ((ghd_u64)1 << bits) - 1;
    return (ghd_u64)v;
}

/* Signed division and remainder of values already in range of `bits`. */
GHD_UFN ghd_i64 ghd_u_div_s(ghd_i64 a, ghd_i64 b, int bits)
{
    if (b == 0)
        return 0;
    if (b == -1)
        return ghd_u_sext(0 - (ghd_u64)a, bits);
    return a / b;
}

GHD_UFN ghd_i64 ghd_u_mod_s(ghd_i64 a, ghd_i64 b)
{
    if (b == 0 || b == -1)
        return 0;
    return a % b;
}

GHD_UFN ghd_u64 ghd_u_div_u(ghd_u64 a, ghd_u64 b)
{
    return b ? a / b : 0;
}

GHD_UFN ghd_u64 ghd_u_mod_u(ghd_u64 a, ghd_u64 b)
{
    return b ? a % b : 0;
}

GHD_UFN ghd_u64 ghd_u_shl(ghd_u64 a, ghd_u32 c, int bits)
{
    return a << (c & (ghd_u32)(bits - 1));
}

/* a >> c for a value in range of `bits`: arithmetic when signed. */
GHD_UFN ghd_u64 ghd_u_shr(ghd_u64 a, ghd_u32 c, int bits, int is_signed)
{
    c &= (ghd_u32)(bits - 1);
    if (is_signed)
        return (ghd_u64)((ghd_i64)a >> c);
    return a >> c;
}

#ifdef __CUDACC_RTC__
GHD_UFN float ghd_u_rh(float f) /* round to f16 and back */
{
    unsigned short h;
    float r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
    return r;
}

GHD_UFN float ghd_u_rbh(float f) /* round to bf16 and back */
{
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return __uint_as_float((u | 0x00400000u) & 0xffff0000u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return __uint_as_float(u & 0xffff0000u);
}

GHD_UFN float ghd_u_rhd(double d) /* an f64 rounded once to f16, as f32 */
{
    unsigned short h;
    float r;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d));
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
    return r;
}

GHD_UFN float ghd_u_rbhd(double d) /* an f64 rounded once to bf16, as f32 */
{
#if __CUDA_ARCH__ >= 900
    unsigned short b;
    asm("cvt.rn.bf16.f64 %0, %1;" : "=h"(b) : "d"(d));
    return __uint_as_float((unsigned int)b << 16);
#else /* no such instruction before sm_90: through f32 (may round twice) */
    return ghd_u_rbh((float)d);
#endif
}

GHD_UFN unsigned short ghd_u_h_bits(float f)
{
    unsigned short h;
    if (f != f) { /* as the host's ghd_f32_to_f16: sign and payload top kept */
        unsigned int u = __float_as_uint(f);
        return (unsigned short)(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x1ffu));
    }
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

GHD_UFN float ghd_u_h_float(unsigned short h)
{
    float r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
    return r;
}

GHD_UFN unsigned short ghd_u_bh_bits(float f)
{
    return (unsigned short)(__float_as_uint(ghd_u_rbh(f)) >> 16);
}

GHD_UFN float ghd_u_bh_float(unsigned short b)
{
    return __uint_as_float((unsigned int)b << 16);
}
#else
GHD_UFN float ghd_u_rh(float f)
{
    return ghd_f16_to_f32(ghd_f32_to_f16(f));
}

GHD_UFN float ghd_u_rbh(float f)
{
    return ghd_bf16_to_f32(ghd_f32_to_bf16(f));
}

GHD_UFN float ghd_u_rhd(double d)
{
    return ghd_f16_to_f32(ghd_f64_to_f16(d));
}

GHD_UFN float ghd_u_rbhd(double d)
{
    return ghd_bf16_to_f32(ghd_f64_to_bf16(d));
}
#endif

#ifdef __CUDACC_RTC__
#define GHD_U_F32_BITS(u) __uint_as_float(u)
#define GHD_U_F64_BITS(u) __longlong_as_double((long long)(u))
#else
#define GHD_U_F32_BITS(u) ghd_f32_from_bits(u)
#define GHD_U_F64_BITS(u) ghd_f64_from_bits(u)
#endif

/* A float result, its NaN made the positive quiet NaN without payload. */
GHD_UFN float ghd_u_cnf(float f)
{
    return f != f ? GHD_U_F32_BITS(0x7fc00000u) : f;
}

GHD_UFN double ghd_u_cnd(double d)
{
    return d != d ? GHD_U_F64_BITS(0x7ff8000000000000ull) : d;
}

/* Rounded to f16 / bf16, then made canonical. */
GHD_UFN float ghd_u_rhc(float f)
{
    return ghd_u_cnf(ghd_u_rh(f));
}

GHD_UFN float ghd_u_rbhc(float f)
{
    return ghd_u_cnf(ghd_u_rbh(f));
}

#endif
