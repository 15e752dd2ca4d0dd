#ifndef GHD_KERNELS_DTYPE_H
#define GHD_KERNELS_DTYPE_H

/* Element types of kernel operands: the types, their names and sizes
 * (dtype.c). Plain C, also included by the CUDA sources (kernels/cuda/),
 * so it pulls in nothing but <stddef.h>. */
#include <stddef.h>

enum ghd_dtype {
    GHD_DTYPE_F32,
    GHD_DTYPE_F64,
    GHD_DTYPE_I32,
    GHD_DTYPE_U32,
    GHD_DTYPE_I64,
    GHD_DTYPE_U8,
    GHD_DTYPE_F16,
    GHD_DTYPE_BF16,
    GHD_DTYPE_COUNT
};

/* A set of element types, as a bit mask. */
#define GHD_DT(t) (1u << (t))
#define GHD_DT_FLOAT (GHD_DT(GHD_DTYPE_F32) | GHD_DT(GHD_DTYPE_F64))
#define GHD_DT_HALF (GHD_DT(GHD_DTYPE_F16) | GHD_DT(GHD_DTYPE_BF16))
#define GHD_DT_INT                                                              \
    (GHD_DT(GHD_DTYPE_I32) | GHD_DT(GHD_DTYPE_U32) | GHD_DT(GHD_DTYPE_I64) |    \
     GHD_DT(GHD_DTYPE_U8))
#define GHD_DT_NUMERIC (GHD_DT_FLOAT | GHD_DT_INT) /* everything but f16/bf16 */
#define GHD_DT_ALL (GHD_DT_NUMERIC | GHD_DT_HALF)

#ifdef __cplusplus
extern "C" {
#endif

struct json_t; /* jansson's json_t */

size_t ghd_dtype_size(enum ghd_dtype t);
const char *ghd_dtype_name(enum ghd_dtype t);
/* 0 and *out set, or GHD_EINVAL for an unknown name. */
int ghd_dtype_parse(const char *name, enum ghd_dtype *out);
/* Our name for one of NumPy's ("float32", "bool_", "<f4", "f4", "|u1"...:
 * the aliases openapi.yaml lists), else `name` itself (NULL for NULL). The
 * one place that maps them: buffer descriptions and run arguments both
 * pass through it. */
const char *ghd_dtype_canonical(const char *name);
/* Replaces NumPy's names by ours in a run's args: the string values of
 * members whose key names a dtype ("dtype", "dtype_out", "value_dtype")
 * or a placeholder type ("T"). */
void ghd_dtype_args_canonical(struct json_t *args);
/* f32, f64, f16 and bf16. */
int ghd_dtype_is_float(enum ghd_dtype t);
/* The float types, i32 and i64. */
int ghd_dtype_is_signed(enum ghd_dtype t);
/* The element type among names[0..n) that `name` (not one of them) was
 * probably meant to be: one of them in another case ("F32"), or the
 * counterpart of a NumPy name ("float32", "uint8", "bool_"; "fp32" too),
 * near misses of those included ("flaot32") but never another width; NULL
 * when none is, or for a NULL name. Any element type names, not only the
 * kernels'. */
const char *ghd_dtype_suggest(const char *name, const char *const *names, size_t n);
/* The names of the types in `mask` (GHD_DT bits), in enum order, into
 * names[0..GHD_DTYPE_COUNT); returns how many. */
size_t ghd_dtype_names(unsigned mask, const char **names);
/* Those names as "f32, f64, i32" into buf[len]. pre: len > 8. */
void ghd_dtype_list(unsigned mask, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
