#ifndef GHD_CORE_RUNS_RUN_ARRAYS_RULES_H
#define GHD_CORE_RUNS_RUN_ARRAYS_RULES_H

/* What run_arrays.c (built-in kernels) and run_arrays_user.c (user kernels)
 * share (run_arrays_rules.c): the described buffer arguments of a step and
 * the rules that fill an omitted type or n from them, or refuse an explicit
 * one they contradict. */
#include <jansson.h>

#include "base/err.h"
#include "core/tenancy/caller.h"
#include "core/buffers/npy.h"

struct ghd_service;

/* Where a step's arguments are read: the service and tenant whose buffers
 * they name, and the detail of a refusal (each function returns its code). */
struct ghd_ra_ctx {
    struct ghd_service *svc;
    const struct ghd_caller *caller;
    struct ghd_err *err;
};

struct ghd_described {
    const char *name;   /* the buffer argument */
    int index;          /* its parameter in the kernel's own table */
    char type_key[16];  /* the argument that names its element type ("dtype",
                         * "dtype_out", a placeholder "T"), "" when none does */
    int counts_n;       /* holds n elements (so it bounds n) */
    struct ghd_array_desc d;
    uint64_t avail;     /* elements after the buffer's offset argument */
};

/* Argument `name` (parameter `index`) when it names a described buffer:
 * appended to xs[*count]. An argument that is not a buffer id, or no
 * buffer, is left to the call's own checks. */
void ghd_ra_describe(const struct ghd_ra_ctx *cx, json_t *args, const char *name, int index,
                     struct ghd_described *xs, size_t *count);

/* 422: "<arg> <given> contradicts buffer argument <x> (<dtype> [<shape>]),
 * which implies <implies>". */
int ghd_ra_contradiction(const struct ghd_ra_ctx *cx, const char *where,
                         const char *arg, const char *given, const struct ghd_described *x,
                         const char *implies);

/* 422: "buffer arguments <x> (<dtype> [<shape>]) and <y> (...) disagree on
 * <arg> (<xv> vs <yv>), so it cannot be taken from them; <remedy>, or give
 * <arg> with "reinterpret": true to mean it" (an omitted argument the
 * buffers would fill in two ways). */
int ghd_ra_disagree(const struct ghd_ra_ctx *cx, const char *where,
                    const char *arg, const struct ghd_described *x, const char *xv,
                    const struct ghd_described *y, const char *yv, const char *remedy);

/* "f32 [2, 3]" */
void ghd_ra_shape_str(const struct ghd_array_desc *d, char *buf, size_t len);

/* The type argument `key`: every described buffer typed by it must agree
 * with it (unless reinterpret) and, when it is omitted, with each other;
 * then it is set from them. */
int ghd_ra_fill_type(const struct ghd_ra_ctx *cx, const char *where,
                     json_t *args, const char *key, const struct ghd_described *xs, size_t nx,
                     int reinterpret);

/* n: at most the elements of every buffer that counts n (unless
 * reinterpret); when omitted, the count they all hold after their offsets
 * (422 naming two that differ). */
int ghd_ra_fill_n(const struct ghd_ra_ctx *cx, const char *where,
                  json_t *args, const struct ghd_described *xs, size_t nx, int reinterpret);

#endif
