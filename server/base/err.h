#ifndef GHD_BASE_ERR_H
#define GHD_BASE_ERR_H

/* The error detail of one call, passed down by pointer and filled where the
 * failure happens (Jansson's json_error_t carries text while the return
 * value says that it failed). The rule, everywhere: a function that can fail
 * returns 0 or a negative GHD_E* code, and that return value is the only
 * place the code lives; struct ghd_err carries the detail alone, a bounded
 * sentence saying what went wrong, never a second copy of the code (two
 * copies are two answers that can disagree). A caller that keeps a failure
 * keeps the returned code in its own field beside the detail (a run's
 * error_code). The value lives on the caller's stack or in the object the
 * call reports for (a run), never in shared state, so a request reports its
 * own failure and not another thread's.
 *
 * Every function that takes a `struct ghd_err *` accepts NULL for "the code
 * is enough". A success leaves the value as it was. */
#define GHD_ERR_DETAIL 512 /* the longest details: startup reasons naming paths */

#ifdef __cplusplus
extern "C" { /* kernels/cuda/ fills it too */
#endif

struct ghd_err {
    char detail[GHD_ERR_DETAIL]; /* "" until a failure says something */
};

/* Sets e's detail (when e is not NULL) to the formatted text; returns code,
 * unchanged and not stored, so that `return ghd_err_set(e, GHD_EINVAL,
 * "...")` reads as one step. */
int ghd_err_set(struct ghd_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts "<prefix>: " before e's detail (a caller adding what it was doing),
 * where `code` is what the failed call returned: its title stands in for a
 * detail the callee left empty. The caller returns its code itself. No-op
 * for NULL. */
void ghd_err_prefix(struct ghd_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* e's detail, or the code's title when nothing more was said (or e is NULL). */
const char *ghd_err_text(const struct ghd_err *e, int code);

#ifdef __cplusplus
}
#endif

#endif
