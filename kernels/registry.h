#ifndef GHD_KERNELS_REGISTRY_H
#define GHD_KERNELS_REGISTRY_H

/* The registry's insides, shared by the kernel definitions (defs_*.c), the
 * argument checker (call.c) and the describer (describe.c). A kernel is a
 * name, a list of typed parameters, an optional check hook for the rules a
 * table cannot state, and one implementation per backend. */
#include <jansson.h>
#include <stddef.h>

#include "kernel.h"
#include "kernel_impl.h"

struct ghd_kernel_kind; /* kind.h */

enum ghd_param_kind {
    GHD_PK_BUFFER, /* a buffer id (string); "<name>_offset" comes with it */
    GHD_PK_NUMBER, /* integer or real -> double */
    GHD_PK_COUNT,  /* non-negative integer -> uint64_t */
    GHD_PK_BOOL,   /* true/false -> int */
    GHD_PK_DTYPE,  /* element type name -> enum ghd_dtype */
};

enum ghd_param_role { GHD_ROLE_NONE, GHD_ROLE_IN, GHD_ROLE_OUT, GHD_ROLE_INOUT };

/* Element type of a buffer parameter. */
enum ghd_elem_rule {
    GHD_ELEM_DTYPE,  /* the "dtype" parameter */
    GHD_ELEM_DTYPE2, /* dtype_out / value_dtype */
    GHD_ELEM_RESULT, /* the reduction's result type (scalar.h) */
};

/* Element count a buffer parameter must hold after its offset. */
enum ghd_count_rule {
    GHD_COUNT_N,      /* n */
    GHD_COUNT_ONE,    /* one element */
    GHD_COUNT_CUSTOM, /* set by the check hook (gemm) */
};

struct ghd_param {
    const char *name;
    enum ghd_param_kind kind;
    int required;
    const char *doc;
    /* buffers */
    enum ghd_param_role role;
    int slot;              /* index into ghd_kargs.p */
    enum ghd_elem_rule elem;
    enum ghd_count_rule count;
    unsigned alias_ok;     /* slots this buffer may alias exactly (same range) */
    /* scalars */
    size_t field;          /* offsetof(struct ghd_kargs, ...) */
    int has_default;
    double def;            /* default of a number, count or bool */
    unsigned dtypes;       /* GHD_PK_DTYPE: the accepted types */
    const char *def_name;  /* GHD_PK_DTYPE: default type name, or NULL */
};

/* What a check hook sees. It may read the raw args, adjust a (resolved
 * defaults, fill bits) and set count[] for GHD_COUNT_CUSTOM buffers. */
struct ghd_kcheck {
    const struct ghd_kernel *k;
    json_t *args;
    struct ghd_kargs *a;
    int present[GHD_KARG_BUFFERS]; /* buffer slot was given */
    uint64_t count[GHD_KARG_BUFFERS];
    struct ghd_err *err; /* the call's error value (may be NULL) */
};

/* Kernel flags. */
#define GHD_KF_OVERLAP_OK 1u /* outputs may overlap inputs in any way (memmove) */
#define GHD_KF_FLAT_ORDER 2u /* orders its n elements as one flat range, where NumPy
                                would order each row (the last axis) of a 2-D array:
                                runs refuse buffers described with several rows */

struct ghd_kernel {
    const char *name;
    const char *doc;
    const char *result_doc; /* members added to the run's result */
    int op;                 /* enum ghd_kop */
    unsigned flags;
    const struct ghd_param *params;
    size_t nparams;
    int (*check)(struct ghd_kcheck *c); /* may be NULL */
    ghd_kernel_fn impl[GHD_BACKEND_COUNT];
    /* Its kind's operations (kind.h); NULL in the defs_*.c tables: a
     * built-in. */
    const struct ghd_kernel_kind *kind;
};

/* Bit for parameter `name` in ghd_kargs.given, or 0 if k has none. */
uint64_t ghd_kernel_param_bit(const struct ghd_kernel *k, const char *name);

/* The dtype parameter that names buffer parameter p's element type
 * ("dtype", "dtype_out", "value_dtype"), or NULL when none does (a
 * reduction's result). */
const struct ghd_param *ghd_kernel_type_param(const struct ghd_kernel *k,
                                              const struct ghd_param *p);
/* The element type buffer parameter p holds under `args`: its dtype
 * parameter's value, or the reduction's result type for args' dtype. 0 and
 * *out, or GHD_ENOENT while args do not name a type k takes there. */
int ghd_kernel_buffer_dtype(const struct ghd_kernel *k, const struct ghd_param *p, json_t *args,
                            enum ghd_dtype *out);

/* The kernel tables of each family (defs_*.c). */
extern const struct ghd_kernel ghd_kdefs_blas1[];
extern const size_t ghd_kdefs_blas1_count;
extern const struct ghd_kernel ghd_kdefs_ewise[];
extern const size_t ghd_kdefs_ewise_count;
extern const struct ghd_kernel ghd_kdefs_reduce[];
extern const size_t ghd_kdefs_reduce_count;
extern const struct ghd_kernel ghd_kdefs_order[];
extern const size_t ghd_kdefs_order_count;
extern const struct ghd_kernel ghd_kdefs_gemm[];
extern const size_t ghd_kdefs_gemm_count;

/* Shorthands for parameter tables. */
#define GHD_P_BUF(nm, rl, sl, el, cnt, al, req, dc)                             \
    {.name = (nm), .kind = GHD_PK_BUFFER, .required = (req), .doc = (dc),       \
     .role = (rl), .slot = (sl), .elem = (el), .count = (cnt), .alias_ok = (al)}
#define GHD_P_DTYPE(nm, fld, mask, dc)                                          \
    {.name = (nm), .kind = GHD_PK_DTYPE, .required = 1, .doc = (dc),            \
     .field = offsetof(struct ghd_kargs, fld), .dtypes = (mask)}
#define GHD_P_DTYPE_OPT(nm, fld, mask, dc)                                      \
    {.name = (nm), .kind = GHD_PK_DTYPE, .required = 0, .doc = (dc),            \
     .field = offsetof(struct ghd_kargs, fld), .dtypes = (mask)}
#define GHD_P_COUNT(nm, fld, dc)                                                \
    {.name = (nm), .kind = GHD_PK_COUNT, .required = 1, .doc = (dc),            \
     .field = offsetof(struct ghd_kargs, fld)}
#define GHD_P_COUNT_OPT(nm, fld, dc)                                            \
    {.name = (nm), .kind = GHD_PK_COUNT, .required = 0, .doc = (dc),            \
     .field = offsetof(struct ghd_kargs, fld)}
#define GHD_P_NUMBER(nm, fld, dc)                                               \
    {.name = (nm), .kind = GHD_PK_NUMBER, .required = 1, .doc = (dc),           \
     .field = offsetof(struct ghd_kargs, fld)}
#define GHD_P_NUMBER_DEF(nm, fld, dv, dc)                                       \
    {.name = (nm), .kind = GHD_PK_NUMBER, .required = 0, .doc = (dc),           \
     .field = offsetof(struct ghd_kargs, fld), .has_default = 1, .def = (dv)}
#define GHD_P_BOOL(nm, fld, dc)                                                 \
    {.name = (nm), .kind = GHD_PK_BOOL, .required = 0, .doc = (dc),             \
     .field = offsetof(struct ghd_kargs, fld), .has_default = 1, .def = 0}
#define GHD_P_N                                                                 \
    GHD_P_COUNT("n", n, "Number of elements. Required: it is never derived "  \
                        "from buffer sizes.")
#define GHD_SLOT(s) (1u << (s))
#define GHD_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

#endif
