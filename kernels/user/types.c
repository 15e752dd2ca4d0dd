/* The language's element types and its function table. */
#include "ulang.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/error.h"

static const struct {
    const char *name;
    unsigned size, bits;
    int is_float, is_signed;
} types[GHD_UT_COUNT] = {
    [GHD_UT_BOOL] = {"bool", 1, 8, 0, 0},   [GHD_UT_I8] = {"i8", 1, 8, 0, 1},
    [GHD_UT_I16] = {"i16", 2, 16, 0, 1},    [GHD_UT_I32] = {"i32", 4, 32, 0, 1},
    [GHD_UT_I64] = {"i64", 8, 64, 0, 1},    [GHD_UT_U8] = {"u8", 1, 8, 0, 0},
    [GHD_UT_U16] = {"u16", 2, 16, 0, 0},    [GHD_UT_U32] = {"u32", 4, 32, 0, 0},
    [GHD_UT_U64] = {"u64", 8, 64, 0, 0},    [GHD_UT_F16] = {"f16", 2, 16, 1, 1},
    [GHD_UT_BF16] = {"bf16", 2, 16, 1, 1},  [GHD_UT_F32] = {"f32", 4, 32, 1, 1},
    [GHD_UT_F64] = {"f64", 8, 64, 1, 1},
};

const char *const ghd_ufield_name[GHD_UF_COUNT] = {"in", "out", "body", "map", "reduce",
                                                   "identity", "post"};

const char *ghd_utype_name(int t)
{
    if (t >= 0 && t < GHD_UT_COUNT)
        return types[t].name;
    if (t == GHD_UT_INTLIT)
        return "integer literal";
    if (t == GHD_UT_FLTLIT)
        return "float literal";
    return "?";
}

int ghd_utype_parse(const char *s, size_t len)
{
    for (int t = 0; t < GHD_UT_COUNT; t++)
        if (strlen(types[t].name) == len && memcmp(types[t].name, s, len) == 0)
            return t;
    return GHD_UT_NONE;
}

size_t ghd_utype_size(int t)
{
    return t >= 0 && t < GHD_UT_COUNT ? types[t].size : 0;
}

int ghd_utype_is_float(int t)
{
    return (t >= 0 && t < GHD_UT_COUNT && types[t].is_float) || t == GHD_UT_FLTLIT;
}

int ghd_utype_is_int(int t)
{
    return (t > GHD_UT_BOOL && t < GHD_UT_COUNT && !types[t].is_float) || t == GHD_UT_INTLIT;
}

int ghd_utype_is_signed(int t)
{
    return t >= 0 && t < GHD_UT_COUNT && types[t].is_signed;
}

int ghd_utype_bits(int t)
{
    return t >= 0 && t < GHD_UT_COUNT ? (int)types[t].bits : 64;
}

const struct ghd_ufn_info ghd_ufn_table[GHD_UFN_COUNT] = {
    [GHD_UFN_SQRT] = {"sqrt", 1, GHD_UFF_MATH},     [GHD_UFN_RSQRT] = {"rsqrt", 1, GHD_UFF_MATH},
    [GHD_UFN_CBRT] = {"cbrt", 1, GHD_UFF_MATH},     [GHD_UFN_EXP] = {"exp", 1, GHD_UFF_MATH},
    [GHD_UFN_EXP2] = {"exp2", 1, GHD_UFF_MATH},     [GHD_UFN_EXPM1] = {"expm1", 1, GHD_UFF_MATH},
    [GHD_UFN_LOG] = {"log", 1, GHD_UFF_MATH},       [GHD_UFN_LOG2] = {"log2", 1, GHD_UFF_MATH},
    [GHD_UFN_LOG10] = {"log10", 1, GHD_UFF_MATH},   [GHD_UFN_LOG1P] = {"log1p", 1, GHD_UFF_MATH},
    [GHD_UFN_SIN] = {"sin", 1, GHD_UFF_MATH},       [GHD_UFN_COS] = {"cos", 1, GHD_UFF_MATH},
    [GHD_UFN_TAN] = {"tan", 1, GHD_UFF_MATH},       [GHD_UFN_ASIN] = {"asin", 1, GHD_UFF_MATH},
    [GHD_UFN_ACOS] = {"acos", 1, GHD_UFF_MATH},     [GHD_UFN_ATAN] = {"atan", 1, GHD_UFF_MATH},
    [GHD_UFN_SINH] = {"sinh", 1, GHD_UFF_MATH},     [GHD_UFN_COSH] = {"cosh", 1, GHD_UFF_MATH},
    [GHD_UFN_TANH] = {"tanh", 1, GHD_UFF_MATH},     [GHD_UFN_ERF] = {"erf", 1, GHD_UFF_MATH},
    [GHD_UFN_ERFC] = {"erfc", 1, GHD_UFF_MATH},     [GHD_UFN_FLOOR] = {"floor", 1, GHD_UFF_MATH},
    [GHD_UFN_CEIL] = {"ceil", 1, GHD_UFF_MATH},     [GHD_UFN_ROUND] = {"round", 1, GHD_UFF_MATH},
    [GHD_UFN_TRUNC] = {"trunc", 1, GHD_UFF_MATH},   [GHD_UFN_POW] = {"pow", 2, GHD_UFF_MATH},
    [GHD_UFN_ATAN2] = {"atan2", 2, GHD_UFF_MATH},   [GHD_UFN_HYPOT] = {"hypot", 2, GHD_UFF_MATH},
    [GHD_UFN_FMOD] = {"fmod", 2, GHD_UFF_MATH},     [GHD_UFN_COPYSIGN] = {"copysign", 2, GHD_UFF_MATH},
    [GHD_UFN_FMA] = {"fma", 3, GHD_UFF_MATH},       [GHD_UFN_ABS] = {"abs", 1, GHD_UFF_ANY},
    [GHD_UFN_MIN] = {"min", 2, GHD_UFF_ANY},        [GHD_UFN_MAX] = {"max", 2, GHD_UFF_ANY},
    [GHD_UFN_ISNAN] = {"isnan", 1, GHD_UFF_CLASS},  [GHD_UFN_ISINF] = {"isinf", 1, GHD_UFF_CLASS},
    [GHD_UFN_ISFINITE] = {"isfinite", 1, GHD_UFF_CLASS},
};

int ghd_ufn_find(const char *s, size_t len)
{
    for (int f = 0; f < GHD_UFN_COUNT; f++)
        if (strlen(ghd_ufn_table[f].name) == len && memcmp(ghd_ufn_table[f].name, s, len) == 0)
            return f;
    return -1;
}

int ghd_uerr_at(struct ghd_err *e, int field, int line, int col, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *f = field >= 0 && field < GHD_UF_COUNT ? ghd_ufield_name[field] : "definition";
    if (line > 1)
        return ghd_err_set(e, GHD_EUNPROC, "%s, line %d, column %d: %s", f, line, col, msg);
    return ghd_err_set(e, GHD_EUNPROC, "%s, column %d: %s", f, col, msg);
}
