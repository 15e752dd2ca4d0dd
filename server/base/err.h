#ifndef GHD_BASE_ERR_H
#define GHD_BASE_ERR_H

/* The error detail of one call, passed down by pointer and filled where the
 * failure happens (Jansson's json_error_t): the code that was returned and a
 * bounded sentence saying what went wrong. It lives on the caller's stack or
 * in the object the call reports for (a run), never in shared state, so a
 * request reports its own failure and not another thread's.
 *
 * Every function that takes a `struct ghd_err *` accepts NULL for "the code
 * is enough". A success leaves the value as it was. */
#define GHD_ERR_DETAIL 512 /* the longest details: startup reasons naming paths */

#ifdef __cplusplus
extern "C" { /* kernels/cuda/ fills it too */
#endif

struct ghd_err {
    int code;                    /* 0, or the GHD_E* code the call returned */
    char detail[GHD_ERR_DETAIL]; /* "" until a failure says something */
};

/* Sets e (when not NULL) to code and the formatted detail; returns code, so
 * that `return ghd_err_set(e, GHD_EINVAL, "...")` reads as one step. */
int ghd_err_set(struct ghd_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts "<prefix>: " before e's detail (a caller adding what it was doing);
 * returns e's code. No-op for NULL. */
int ghd_err_prefix(struct ghd_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* e's detail, or the code's title when nothing more was said (or e is NULL). */
const char *ghd_err_text(const struct ghd_err *e, int code);

#ifdef __cplusplus
}
#endif

#endif
