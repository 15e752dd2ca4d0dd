/* Names and sizes of element types. */
#include "dtype.h"

#include <jansson.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/suggest.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[GHD_DTYPE_COUNT] = {
    [GHD_DTYPE_F32] = {"f32", 4}, [GHD_DTYPE_F64] = {"f64", 8},
    [GHD_DTYPE_I32] = {"i32", 4}, [GHD_DTYPE_U32] = {"u32", 4},
    [GHD_DTYPE_I64] = {"i64", 8}, [GHD_DTYPE_U8] = {"u8", 1},
    [GHD_DTYPE_F16] = {"f16", 2}, [GHD_DTYPE_BF16] = {"bf16", 2},
};

size_t ghd_dtype_size(enum ghd_dtype t)
{
    return (unsigned)t < GHD_DTYPE_COUNT ? dtypes[t].size : 0;
}

const char *ghd_dtype_name(enum ghd_dtype t)
{
    return (unsigned)t < GHD_DTYPE_COUNT ? dtypes[t].name : "unknown";
}

int ghd_dtype_parse(const char *name, enum ghd_dtype *out)
{
    name = ghd_dtype_canonical(name);
    for (int t = 0; t < GHD_DTYPE_COUNT; t++) {
        if (name && strcmp(name, dtypes[t].name) == 0) {
            *out = (enum ghd_dtype)t;
            return 0;
        }
    }
    return GHD_EINVAL;
}

int ghd_dtype_is_float(enum ghd_dtype t)
{
    return ((GHD_DT_FLOAT | GHD_DT_HALF) & GHD_DT(t)) != 0;
}

int ghd_dtype_is_signed(enum ghd_dtype t)
{
    return t == GHD_DTYPE_I32 || t == GHD_DTYPE_I64 || ghd_dtype_is_float(t);
}

/* NumPy's names (numpy.dtype(...).name and the scalar types' names) for the
 * element types a buffer may have (core/npy.c), and the "fp32" of machine
 * learning code; ours on the right. Requests may name a type either way
 * (ghd_dtype_canonical); openapi.yaml lists these. */
static const struct {
    const char *from, *to;
} aliases[] = {
    {"bool_", "bool"},    {"bool8", "bool"},   {"boolean", "bool"},  {"int8", "i8"},
    {"int16", "i16"},     {"int32", "i32"},    {"int64", "i64"},     {"uint8", "u8"},
    {"uint16", "u16"},    {"uint32", "u32"},   {"uint64", "u64"},    {"float16", "f16"},
    {"half", "f16"},      {"fp16", "f16"},     {"float32", "f32"},   {"single", "f32"},
    {"fp32", "f32"},      {"float64", "f64"},  {"double", "f64"},    {"fp64", "f64"},
    {"bfloat16", "bf16"}, {"complex64", "c64"}, {"complex128", "c128"},
};
#define ALIAS_COUNT (sizeof(aliases) / sizeof(aliases[0]))

/* NumPy's array-interface type strings (numpy.dtype(...).str, "<f4"), with
 * or without their byte-order mark, which is '<' or '|' here: the server
 * keeps little-endian numbers only. */
static const struct {
    const char *code, *to;
} typestrs[] = {
    {"b1", "bool"}, {"i1", "i8"},  {"u1", "u8"},  {"i2", "i16"},  {"u2", "u16"},
    {"i4", "i32"},  {"u4", "u32"}, {"i8", "i64"}, {"u8", "u64"},  {"f2", "f16"},
    {"f4", "f32"},  {"f8", "f64"}, {"c8", "c64"}, {"c16", "c128"},
};

const char *ghd_dtype_canonical(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < ALIAS_COUNT; i++)
        if (strcmp(name, aliases[i].from) == 0)
            return aliases[i].to;
    /* "i8" and "u8" are our names (one byte) before NumPy's codes (eight):
     * only "<i8" and "|u1" forms reach NumPy's meaning for those two. */
    const char *code = name[0] == '<' || name[0] == '|' ? name + 1 : name;
    for (size_t i = 0; i < sizeof(typestrs) / sizeof(typestrs[0]); i++)
        if (strcmp(code, typestrs[i].code) == 0 &&
            (code != name || (strcmp(code, "i8") != 0 && strcmp(code, "u8") != 0)))
            return typestrs[i].to;
    return name;
}

void ghd_dtype_args_canonical(json_t *args)
{
    const char *key;
    json_t *v;
    json_object_foreach(args, key, v) {
        int placeholder = key[0] >= 'A' && key[0] <= 'Z' && !key[1];
        if (json_is_string(v) && (placeholder || strstr(key, "dtype")) &&
            ghd_dtype_canonical(json_string_value(v)) != json_string_value(v))
            json_object_set_new(args, key, json_string(ghd_dtype_canonical(json_string_value(v))));
    }
}

/* Whether a and b have the same digits in the same order ("float32" and
 * "f32"): a type's width is never a typo worth guessing at. */
static int same_digits(const char *a, const char *b)
{
    for (;;) {
        while (*a && (*a < '0' || *a > '9'))
            a++;
        while (*b && (*b < '0' || *b > '9'))
            b++;
        if (*a != *b)
            return 0;
        if (!*a)
            return 1;
        a++;
        b++;
    }
}

static const char *among(const char *s, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return names[i];
    return NULL;
}

/* Our names are too short for near misses ("f128" is one letter from
 * "c128"): only their case may differ. NumPy's longer names may be
 * misspelt, but not in their width. */
const char *ghd_dtype_suggest(const char *name, const char *const *names, size_t n)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(name, names[i]) == 0)
            return names[i];
    const char *from[ALIAS_COUNT], *to[ALIAS_COUNT];
    size_t k = 0;
    for (size_t i = 0; i < ALIAS_COUNT; i++) {
        const char *t = among(aliases[i].to, names, n);
        if (t && same_digits(name, aliases[i].from)) {
            from[k] = aliases[i].from;
            to[k++] = t;
        }
    }
    const char *near = ghd_suggest(name, from, k);
    for (size_t i = 0; near && i < k; i++)
        if (from[i] == near)
            return to[i];
    return NULL;
}

size_t ghd_dtype_names(unsigned mask, const char **names)
{
    size_t n = 0;
    for (int t = 0; t < GHD_DTYPE_COUNT; t++)
        if (mask & GHD_DT(t))
            names[n++] = dtypes[t].name;
    return n;
}

void ghd_dtype_list(unsigned mask, char *buf, size_t len)
{
    const char *names[GHD_DTYPE_COUNT];
    buf[0] = '\0';
    ghd_join_names(buf, 0, len, "", names, ghd_dtype_names(mask, names));
}
