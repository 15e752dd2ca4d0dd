/* The rules that fill a step's omitted arguments from the array
 * descriptions of the buffers it names, shared by built-in kernels
 * (run_arrays.c) and user kernels (run_arrays_user.c), below both. */
#include "run_arrays_rules.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "core/buffers/service_buffers.h"

void ghd_ra_shape_str(const struct ghd_array_desc *d, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "%s [", d->dtype);
    for (unsigned i = 0; i < d->ndim && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", i ? ", " : "",
                              (unsigned long long)d->shape[i]);
    if (n < len)
        snprintf(buf + n, len - n, "]");
}

void ghd_ra_describe(const struct ghd_ra_ctx *cx, json_t *args, const char *name, int index,
                     struct ghd_described *xs, size_t *count)
{
    json_t *id = json_object_get(args, name);
    struct ghd_buffer *b;
    if (!json_is_string(id) ||
        ghd_service_buffer_find_host(cx->svc, cx->caller, json_string_value(id), &b, NULL) != 0)
        return; /* the call's own check says 422 or 404 */
    struct ghd_described *x = &xs[*count];
    memset(x, 0, sizeof(*x));
    x->name = name;
    x->index = index;
    ghd_buffer_desc_get(b, &x->d);
    ghd_buffer_unref(b);
    char off_key[64];
    snprintf(off_key, sizeof(off_key), "%s_offset", name);
    json_t *off = json_object_get(args, off_key);
    uint64_t elements = 0, offset = json_is_integer(off) && json_integer_value(off) > 0
                                        ? (uint64_t)json_integer_value(off)
                                        : 0;
    if (x->d.dtype[0] && ghd_array_nbytes(&x->d, &elements, NULL) == 0)
        x->avail = elements > offset ? elements - offset : 0;
    if (x->d.dtype[0])
        (*count)++;
}

int ghd_ra_contradiction(const struct ghd_ra_ctx *cx, const char *where,
                         const char *arg, const char *given, const struct ghd_described *x,
                         const char *implies)
{
    char s[256], convert[128] = "";
    ghd_ra_shape_str(&x->d, s, sizeof(s));
    /* A buffer of another element type than the one given: converting it
     * is what a user means far more often than reading its bytes so. */
    if (strstr(arg, "dtype") || (arg[0] >= 'A' && arg[0] <= 'Z' && !arg[1]))
        snprintf(convert, sizeof(convert),
                 "convert it (kernel cast, dtype_out %s; astype in the Python client), ", given);
    return ghd_err_set(cx->err, GHD_EUNPROC,
                       "%s%s %s contradicts buffer argument %s (%s), which implies %s; "
                       "%sleave %s out, or say \"reinterpret\": true to mean it",
                       where, arg, given, x->name, s, implies, convert, arg);
}

int ghd_ra_disagree(const struct ghd_ra_ctx *cx, const char *where,
                    const char *arg, const struct ghd_described *x, const char *xv,
                    const struct ghd_described *y, const char *yv, const char *remedy)
{
    char sx[256], sy[256];
    ghd_ra_shape_str(&x->d, sx, sizeof(sx));
    ghd_ra_shape_str(&y->d, sy, sizeof(sy));
    return ghd_err_set(cx->err, GHD_EUNPROC,
                       "%sbuffer arguments %s (%s) and %s (%s) disagree on %s (%s vs %s), "
                       "so it cannot be taken from them; %s, or give %s with "
                       "\"reinterpret\": true to mean it",
                       where, x->name, sx, y->name, sy, arg, xv, yv, remedy, arg);
}

int ghd_ra_fill_type(const struct ghd_ra_ctx *cx, const char *where,
                     json_t *args, const char *key, const struct ghd_described *xs, size_t nx,
                     int reinterpret)
{
    json_t *given = json_object_get(args, key);
    const struct ghd_described *first = NULL;
    for (size_t i = 0; i < nx; i++) {
        const struct ghd_described *x = &xs[i];
        if (strcmp(x->type_key, key) != 0)
            continue;
        char implies[48];
        snprintf(implies, sizeof(implies), "%s %s", key, x->d.dtype);
        if (json_is_string(given) && !reinterpret &&
            strcmp(json_string_value(given), x->d.dtype) != 0)
            return ghd_ra_contradiction(cx, where, key, json_string_value(given), x,
                                        implies);
        if (!given && first && strcmp(first->d.dtype, x->d.dtype) != 0)
            return ghd_ra_disagree(cx, where, key, first, first->d.dtype, x, x->d.dtype,
                                   "give them one element type: convert one (kernel cast; "
                                   "astype in the Python client)");
        if (!first)
            first = x;
    }
    if (first && !given)
        json_object_set_new(args, key, json_string(first->d.dtype));
    return 0;
}

/* "x (f32 [10])", with ", after x_offset 5" when an offset shortens it. */
static void counted_str(const struct ghd_described *x, json_t *args, char *buf, size_t len)
{
    char s[200], off_key[80];
    ghd_ra_shape_str(&x->d, s, sizeof(s));
    snprintf(off_key, sizeof(off_key), "%s_offset", x->name);
    json_t *off = json_object_get(args, off_key);
    if (json_is_integer(off) && json_integer_value(off) > 0)
        snprintf(buf, len, "%s (%s) after %.70s %lld", x->name, s, off_key,
                 (long long)json_integer_value(off));
    else
        snprintf(buf, len, "%s (%s)", x->name, s);
}

int ghd_ra_fill_n(const struct ghd_ra_ctx *cx, const char *where,
                  json_t *args, const struct ghd_described *xs, size_t nx, int reinterpret)
{
    json_t *n = json_object_get(args, "n");
    const struct ghd_described *first = NULL;
    for (size_t i = 0; i < nx; i++) {
        const struct ghd_described *x = &xs[i];
        if (!x->counts_n)
            continue;
        if (json_is_integer(n) && !reinterpret && (uint64_t)json_integer_value(n) > x->avail) {
            char g[32], implies[64];
            snprintf(g, sizeof(g), "%lld", (long long)json_integer_value(n));
            snprintf(implies, sizeof(implies), "at most %llu elements",
                     (unsigned long long)x->avail);
            return ghd_ra_contradiction(cx, where, "n", g, x, implies);
        }
        /* NumPy's x + y of 10 and 1 elements broadcasts, of 10 and 5 is an
         * error: neither is "the first n of each", so n is not guessed. */
        if (!n && first && x->avail != first->avail) {
            char a[400], b[400];
            counted_str(first, args, a, sizeof(a));
            counted_str(x, args, b, sizeof(b));
            return ghd_err_set(cx->err, GHD_EUNPROC,
                               "%sbuffer arguments %s and %s hold different numbers of "
                               "elements (%llu vs %llu), so n cannot be taken from "
                               "them; give n (at most %llu) to use the first n of each",
                               where, a, b, (unsigned long long)first->avail,
                               (unsigned long long)x->avail,
                               (unsigned long long)(x->avail < first->avail
                                                        ? x->avail
                                                        : first->avail));
        }
        if (!first)
            first = x;
    }
    if (first && !n)
        json_object_set_new(args, "n", json_integer((json_int_t)first->avail));
    return 0;
}
